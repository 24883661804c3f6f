import { randomInt } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { ReplyBlock } from '../core/reply.js';
import type { MessageRef } from '../core/notifier.js';
import { keyBase } from '../jobs/redis.js';
import type { RunTarget } from './actions/types.js';
import type { ParamValue } from './params.js';
import { RollcallError } from '../core/errors.js';

export type RunStatus =
  | 'previewing'
  | 'awaiting-confirmation'
  | 'awaiting-approval'
  | 'running'
  | 'paused'
  | 'succeeded'
  | 'failed'
  | 'aborted'
  | 'cancelled';

export const TERMINAL_STATUSES: readonly RunStatus[] = ['succeeded', 'failed', 'aborted', 'cancelled'];
export const isTerminal = (s: RunStatus) => TERMINAL_STATUSES.includes(s);

/** How long a preview may be confirmed: after that the fleet may have moved on from what it shows. */
export const PREVIEW_TTL_MS = 30 * 60_000;

export const previewExpired = (run: Pick<Run, 'status' | 'createdAt'>, now = Date.now()) =>
  run.status === 'awaiting-confirmation' && now - Date.parse(run.createdAt) > PREVIEW_TTL_MS;

export type StepStatus = 'pending' | 'running' | 'succeeded' | 'failed' | 'paused' | 'aborted' | 'skipped';

export interface StepState {
  id: string;
  action: string;
  status: StepStatus;
  attempts: number;
  startedAt?: string;
  endedAt?: string;
  output?: Record<string, unknown>;
  error?: string;
}

/** What a long step reports while it works; shown in the live message and `runs show`. */
export interface RunProgress {
  /** "wave 2/3 · 8/12 done" */
  headline: string;
  /** Apps per state: {pending: 3, syncing: 2, done: 7, failed: 1, skipped: 4}. */
  counts: Record<string, number>;
  failing: { app: string; instance: string; cluster?: string; reason: string }[];
  wave?: { index: number; total: number };
  updatedAt: string;
}

export interface Run {
  id: string;
  runbook: string;
  /** The Argo CD URL of each instance of the requesting deployment's config; a worker configured otherwise refuses the run. */
  instanceUrls?: Record<string, string>;
  title: string;
  params: Record<string, ParamValue>;
  /** The params as the user would type them (durations as `10m`), for messages. */
  paramsText?: string;
  requester: string;
  surface: 'slack' | 'terminal';
  channel?: string;
  threadTs?: string;
  status: RunStatus;
  createdAt: string;
  updatedAt: string;
  confirmedBy?: string;
  confirmedAt?: string;
  startedAt?: string;
  endedAt?: string;
  approvalsRequired: number;
  approvals: { user: string; at: string }[];
  steps: StepState[];
  currentStep?: string;
  /** Bumped on each resume; a job carrying an older generation stops. */
  generation: number;
  targets: RunTarget[];
  preview?: { summary: string; data: Record<string, unknown>; blocks: ReplyBlock[]; byStep?: Record<string, Record<string, unknown>> };
  progress?: RunProgress;
  /** The one live message in Slack (thread of the preview). */
  progressMessage?: MessageRef;
  pausedBy?: string;
  pausedReason?: string;
  endedBy?: string;
  error?: string;
  /** Optimistic-concurrency version; every write bumps it. */
  version: number;
}

export class RunNotFoundError extends RollcallError {
  declare readonly code: 'run_not_found';
  constructor(readonly runId: string) {
    super('run_not_found', `no run ${runId} (see /argo runs for recent runs)`);
  }
}

/** Writes `ARGV[2]` only when the stored version equals ARGV[1]; returns 1 on success. */
const CAS = `
local cur = redis.call('GET', KEYS[1])
if not cur then return -1 end
local v = cjson.decode(cur)['version']
if tostring(v) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
`;

/** HSET field only when its JSON `state` equals ARGV[2] ('' = field absent). */
const TRANSITION = `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
local state = ''
if cur then state = cjson.decode(cur)['state'] or '' end
if state ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
`;

const ID_ALPHABET = '23456789abcdefghjkmnpqrstuvwxyz';

/** `r-7f3k2`: short enough to type in `/argo runs show`, no 0/o/1/l/i confusion. */
export function newRunId(): string {
  let s = '';
  for (let i = 0; i < 5; i++) s += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
  return `r-${s}`;
}

/** Run records: one JSON key per run, an index sorted by creation time, and one checkpoint hash per step. */
export class RunStore {
  private readonly base: string;
  constructor(
    readonly redis: Redis,
    prefix: string,
  ) {
    this.base = keyBase(prefix);
  }

  runKey(id: string) {
    return `${this.base}run:${id}`;
  }
  checkpointKey(id: string, stepId: string) {
    return `${this.base}run:${id}:step:${stepId}`;
  }
  private indexKey() {
    return `${this.base}runs`;
  }

  /** Stores a new run under a fresh id. */
  async create(fields: Omit<Run, 'id' | 'version' | 'createdAt' | 'updatedAt'>): Promise<Run> {
    for (let tries = 0; tries < 20; tries++) {
      const now = new Date().toISOString();
      const run: Run = { ...fields, id: newRunId(), version: 1, createdAt: now, updatedAt: now };
      const ok = await this.redis.set(this.runKey(run.id), JSON.stringify(run), 'NX');
      if (ok) {
        await this.redis.zadd(this.indexKey(), Date.now(), run.id);
        return run;
      }
    }
    throw new Error('could not allocate a run id');
  }

  async get(id: string): Promise<Run | undefined> {
    const text = await this.redis.get(this.runKey(id));
    return text ? (JSON.parse(text) as Run) : undefined;
  }

  async require(id: string): Promise<Run> {
    const run = await this.get(id);
    if (!run) throw new RunNotFoundError(id);
    return run;
  }

  /**
   * Read-modify-write with optimistic concurrency: the bot (buttons) and workers (progress) write
   * the same record. `change` returns the new run, or undefined to leave it as is.
   */
  async update(id: string, change: (run: Run) => Run | undefined): Promise<Run> {
    for (let tries = 0; tries < 50; tries++) {
      const current = await this.require(id);
      const next = change(structuredClone(current));
      if (!next) return current;
      next.version = current.version + 1;
      next.updatedAt = new Date().toISOString();
      const result = Number(await this.redis.eval(CAS, 1, this.runKey(id), String(current.version), JSON.stringify(next)));
      if (result === 1) return next;
      if (result === -1) throw new RunNotFoundError(id);
    }
    throw new Error(`run ${id} is being changed by too many writers at once; try again`);
  }

  /** Forgets a run that never became one (its preview failed): no record, no index entry, no checkpoints. */
  async discard(id: string, stepIds: string[]): Promise<void> {
    await this.redis.del(this.runKey(id), ...stepIds.map((s) => this.checkpointKey(id, s)));
    await this.redis.zrem(this.indexKey(), id);
  }

  async list(n = 20): Promise<Run[]> {
    const ids = await this.redis.zrevrange(this.indexKey(), 0, n - 1);
    if (!ids.length) return [];
    const texts = await this.redis.mget(ids.map((id) => this.runKey(id)));
    return texts.filter((t): t is string => !!t).map((t) => JSON.parse(t) as Run);
  }

  checkpoint<T extends Record<string, unknown>>(runId: string, stepId: string) {
    const key = this.checkpointKey(runId, stepId);
    const redis = this.redis;
    return {
      async all(): Promise<Map<string, T>> {
        const raw = await redis.hgetall(key);
        return new Map(Object.entries(raw).map(([k, v]) => [k, JSON.parse(v) as T]));
      },
      async get(field: string): Promise<T | undefined> {
        const v = await redis.hget(key, field);
        return v ? (JSON.parse(v) as T) : undefined;
      },
      async set(field: string, value: T): Promise<void> {
        await redis.hset(key, field, JSON.stringify(value));
      },
      async setMany(entries: [string, T][]): Promise<void> {
        if (!entries.length) return;
        await redis.hset(key, ...entries.flatMap(([k, v]) => [k, JSON.stringify(v)]));
      },
      async transition(field: string, expectedState: string | undefined, value: T & { state: string }): Promise<boolean> {
        return Number(await redis.eval(TRANSITION, 1, key, field, expectedState ?? '', JSON.stringify(value))) === 1;
      },
    };
  }
}
