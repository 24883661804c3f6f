import type { z } from 'zod';
import type { ReplyBlock } from '../../core/reply.js';
import type { Services } from '../../commands/registry.js';
import type { InstanceRateLimiter } from '../../jobs/rate-limit.js';
import type { AuditEvent } from '../audit.js';
import type { Run, RunProgress } from '../run-store.js';

/** An app a run acts on; it is locked for the whole run. */
export interface RunTarget {
  instance: string;
  app: string;
  cluster?: string;
}

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

/** Per-step durable state that survives a crash of the worker: one hash field per key. */
export interface Checkpoint<T = Record<string, unknown>> {
  all(): Promise<Map<string, T>>;
  get(key: string): Promise<T | undefined>;
  set(key: string, value: T): Promise<void>;
  setMany(entries: [string, T][]): Promise<void>;
  /** Writes `value` only when the stored `state` field equals `expectedState` (`undefined` = absent). Atomic. */
  transition(key: string, expectedState: string | undefined, value: T & { state: string }): Promise<boolean>;
}

export type StepOutcome =
  | { status: 'succeeded'; output?: Record<string, unknown> }
  | { status: 'failed'; error: string; output?: Record<string, unknown> }
  /** The step stopped itself (its onFailure=pause) or saw a pause; resuming re-runs it from its checkpoint. */
  | { status: 'paused'; reason: string; output?: Record<string, unknown> }
  /** The step saw an abort and stopped. */
  | { status: 'aborted'; output?: Record<string, unknown> };

export interface ActionContext {
  run: Run;
  stepId: string;
  input: Record<string, unknown>;
  services: Services;
  checkpoint: Checkpoint;
  /** Aborted with reason 'pause' | 'abort' | 'timeout' | 'stale' | 'shutdown'. */
  signal: AbortSignal;
  /** Absolute ms deadline of the step (its timeout), if any. */
  deadline?: number;
  progress(p: RunProgress): void;
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
  /** Validates the step's `with` after params are substituted. */
  input: z.ZodType<Record<string, unknown>>;
  defaultTimeoutMs?: number;
  preview?(ctx: PreviewContext): Promise<ActionPreview>;
  execute(ctx: ActionContext): Promise<StepOutcome>;
}
