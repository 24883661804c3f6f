import type { z } from 'zod';
import type { Reply, ReplyBlock } from '../../../core/reply.js';
import type { RunbookServices as Services } from '../services.js';
import type { InstanceRateLimiter } from '../../../infra/rate-limit.js';
import type { AuditEvent } from '../../audit/audit-log.js';
import type { Checkpoint, CheckpointEntry, Run, RunProgress, RunTarget } from '../run-store.js';

export type { RunTarget } from '../run-store.js';

/** An app a run acts on; it is locked for the whole run. */
export interface ActionPreview {
  /** What the run will touch, locked from confirmation to the end. */
  targets: RunTarget[];
  /** One line: "sync 12 apps on 12 clusters (prune)". */
  summary: string;
  /** Machine-readable preview for --json and tests. */
  data: Record<string, unknown>;
  blocks: ReplyBlock[];
  /** Nothing to do (everything already in the wanted state): the run can be refused politely. */
  empty?: boolean;
}

export interface PreviewContext {
  services: Services;
  input: Record<string, unknown>;
  runId: string;
}

export type { Checkpoint, CheckpointEntry } from '../run-store.js';

export type StepOutcome =
  | { status: 'succeeded'; output?: Record<string, unknown> }
  | { status: 'failed'; error: string; output?: Record<string, unknown> }
  /** The step stopped itself (its onFailure=pause) or saw a pause; resuming re-runs it from its checkpoint. */
  | { status: 'paused'; reason: string; output?: Record<string, unknown> }
  /** The step saw an abort and stopped. */
  | { status: 'aborted'; output?: Record<string, unknown> }
  /** The attempt lost its lease (a pause, an abort, a newer attempt) and stopped before its next call; the engine reads which. */
  | { status: 'interrupted'; output?: Record<string, unknown> };

export interface ActionContext {
  run: Run;
  stepId: string;
  input: Record<string, unknown>;
  services: Services;
  /**
   * The step's durable state, written under the attempt's lease: a write after the lease was lost
   * throws LeaseLostError. `part` keeps entries of another shape in their own hash.
   */
  checkpoint<T extends CheckpointEntry = CheckpointEntry & Record<string, unknown>>(part?: string): Checkpoint<T>;
  /** Throws LeaseLostError unless this attempt still holds the lease: call it right before an outside call that a checkpoint write does not already fence. */
  assertLease(): Promise<void>;
  /** Redis's clock (ms), the clock of checkpoint `at` times, shared by every worker. */
  redisNow(): Promise<number>;
  /** Aborted with reason 'pause' | 'abort' | 'timeout' | 'stale' | 'shutdown' | 'lease-lost'. */
  signal: AbortSignal;
  /** Absolute ms deadline of the step (its timeout), if any. */
  deadline?: number;
  progress(p: RunProgress): void;
  /**
   * Posts a reply in the run's thread (under its live message) through the services' notifier: what a step
   * has to tell people beyond its progress, such as a regression it found. Never throws: a run without a
   * channel or a notifier, or a post that fails, says nothing (the failure is logged).
   */
  say(reply: Reply): Promise<void>;
  audit(event: Omit<AuditEvent, 'runId' | 'at'>): Promise<void>;
  limiter: InstanceRateLimiter;
  now(): number;
}

/**
 * A runbook step implementation. Like Backstage's actions, it declares whether it mutates, so the
 * engine knows what needs a preview and a confirmation.
 */
export interface RunbookAction {
  name: string;
  description: string;
  destructive: boolean;
  /**
   * The step works through many calls (waves, apps) and checks for a pause between them, so Pause holds
   * the rest for later. A step of one or two calls (pause a rollout, restore a key) or one request Argo CD
   * then carries out on its own (a rollback, a terminate) has nothing to hold: its run offers Abort only.
   * @defaultValue false
   */
  pausable?: boolean;
  /** Validates the step's `with` after params are substituted. */
  input: z.ZodType<Record<string, unknown>>;
  defaultTimeoutMs?: number;
  preview?(ctx: PreviewContext): Promise<ActionPreview>;
  execute(ctx: ActionContext): Promise<StepOutcome>;
}
