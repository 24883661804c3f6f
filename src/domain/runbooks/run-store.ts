import { randomBytes, randomInt } from 'node:crypto';
import type { RedisClient } from '../../infra/redis.js';
import type { ReplyBlock } from '../../core/reply.js';
import type { MessageRef } from '../../core/notifier.js';
import { keyBase } from '../../infra/redis.js';
import type { ParamValue } from './params.js';
import { RollcallError } from '../../core/errors.js';
import { suggest } from '../../core/suggest.js';
import type { Surface } from '../../core/access.js';

/** An app a run touches, locked from confirmation to the end. */
export interface RunTarget {
  instance: string;
  app: string;
  cluster?: string;
}

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
  /**
   * A wave under watch after its gate (a bake, or verifiers without one), or every synced app under watch after
   * the last wave (`watch`): when it ends, and each verifier's latest verdict (a metric check's with its figure).
   */
  watch?: {
    wave: number;
    kind: 'bake' | 'verify' | 'watch';
    endsAt: string;
    /** How many apps are watched (the wave's, or every app the run synced). */
    apps?: number;
    verdicts: { name: string; verdict: 'pass' | 'fail' | 'inconclusive'; reason: string; figure?: string }[];
  };
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
  surface: Surface;
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
  preview?: {
    summary: string;
    data: Record<string, unknown>;
    blocks: ReplyBlock[];
    byStep?: Record<string, Record<string, unknown>>;
  };
  progress?: RunProgress;
  /** The one live message in Slack (thread of the preview). */
  progressMessage?: MessageRef;
  pausedBy?: string;
  pausedReason?: string;
  endedBy?: string;
  error?: string;
  /** The lease token of the step attempt that may act (also kept in its own key, checked by every write of the attempt). */
  lease?: string;
  /** Optimistic-concurrency version; every write bumps it. */
  version: number;
}

/** The one wording of an unknown run id, whichever surface or path met it; `recent` ids give the suggestions. */
export class RunNotFoundError extends RollcallError {
  declare readonly code: 'run_not_found';
  constructor(
    readonly runId: string,
    recent: string[] = [],
  ) {
    super('run_not_found', `No run ${runId}: \`runs\` lists recent runs.`, { suggestions: suggest(runId, recent) });
  }
}

/**
 * The lease: one small key per run naming the step attempt that may act (`<n>.<nonce>`), or
 * `revoked:<token>` once a pause, an abort or the run's end took it from that attempt. The nonce
 * makes tokens unique even if Redis loses its last writes and hands out a number twice.
 */
const LEASE_CHECK = `
local function leaseOk(key, token, level)
  if token == '' then return true end
  local cur = redis.call('GET', key) or ''
  if cur == token then return true end
  return level == 'report' and cur == 'revoked:' .. token
end
`;

/** Redis's TIME; KEYS[1] only routes it to the master holding rollcall's keys. */
const NOW = `local t = redis.call('TIME') return {t[1], t[2]}`;

/**
 * Writes `ARGV[2]` only when the stored version equals ARGV[1] and the lease (KEYS[2]) is ARGV[3]
 * at level ARGV[4] (empty = no fence); ARGV[5] sets the lease: a token, '!revoke' or empty.
 * Returns 1 on success, 0 on a version race, -1 when the run is gone, -2 when the lease is lost.
 */
const CAS = `${LEASE_CHECK}
local cur = redis.call('GET', KEYS[1])
if not cur then return -1 end
if not leaseOk(KEYS[2], ARGV[3], ARGV[4]) then return -2 end
local v = cjson.decode(cur)['version']
if tostring(v) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
if ARGV[5] == '!revoke' then
  local lease = redis.call('GET', KEYS[2])
  if lease and string.sub(lease, 1, 8) ~= 'revoked:' then redis.call('SET', KEYS[2], 'revoked:' .. lease) end
elseif ARGV[5] ~= '' then
  redis.call('SET', KEYS[2], ARGV[5])
end
return 1
`;

/**
 * Compare-and-set of checkpoint fields under the lease: KEYS[1] the hash, KEYS[2] the lease;
 * ARGV[1] the token (empty = unfenced), then triples (field, expected state or '' for absent,
 * JSON value). Each written value gets `at`, Redis's own time in ms (comparable across workers).
 * Returns -2 when the lease is lost (nothing written), else the time, then one 1/0 per triple.
 */
const TRANSITION = `${LEASE_CHECK}
if not leaseOk(KEYS[2], ARGV[1], 'act') then return -2 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {now}
for i = 2, #ARGV, 3 do
  local cur = redis.call('HGET', KEYS[1], ARGV[i])
  local state = ''
  if cur then state = cjson.decode(cur)['state'] or '' end
  if ARGV[i + 1] == '*' or state == ARGV[i + 1] then
    local v = cjson.decode(ARGV[i + 2])
    v['at'] = now
    redis.call('HSET', KEYS[1], ARGV[i], cjson.encode(v))
    table.insert(out, 1)
  else
    table.insert(out, 0)
  end
end
return out
`;

/** Thrown when a step attempt's lease was taken (by a newer attempt, a pause, an abort): it must stop. */
export class LeaseLostError extends RollcallError {
  constructor(readonly runId: string) {
    super(
      'lease_lost',
      `run ${runId}: this step attempt lost its lease (a newer attempt, a pause or an abort took it) and stops`,
    );
  }
}

/** What a checkpoint entry holds: a state, whatever the action keeps beside it, and the time of its last write. */
export interface CheckpointEntry {
  state: string;
  /** Redis time (ms) of the write, set by the store. */
  at?: number;
}

/** Per-step durable state that survives a crash of the worker: one hash field per key, written under the attempt's lease. */
export interface Checkpoint<T extends CheckpointEntry = CheckpointEntry & Record<string, unknown>> {
  all(): Promise<Map<string, T>>;
  get(key: string): Promise<T | undefined>;
  /** Writes whatever is stored (for entries only this attempt writes, e.g. a phase's result). */
  set(key: string, value: T): Promise<void>;
  /** Writes `value` only when the stored state equals `expectedState` (`undefined` = absent). Atomic. */
  transition(key: string, expectedState: string | undefined, value: T): Promise<boolean>;
  /** Many transitions in one round trip; returns which were written, and sets `at` on the values written. */
  transitionMany(changes: { key: string; expected: string | undefined; value: T }[]): Promise<boolean[]>;
}

const ID_ALPHABET = '23456789abcdefghjkmnpqrstuvwxyz';

/** `r-7f3k2`: short enough to type in `/argo runs show`, no 0/o/1/l/i confusion. */
export function newRunId(): string {
  let s = '';
  for (let i = 0; i < 5; i++) s += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
  return `r-${s}`;
}

/**
 * Run records: one JSON key per run, an index of all runs and one per runbook sorted by creation time, and one
 * checkpoint hash per step.
 */
export class RunStore {
  private readonly base: string;
  constructor(
    readonly redis: RedisClient,
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
  /**
   * The runs of one runbook, by creation time: what asks for one runbook's runs (the newest key backup of each
   * cluster, the freezes being written) finds them however many other runs came since. Runs stored before this index
   * existed are in `runs` only.
   */
  private runbookIndexKey(runbook: string) {
    return `${this.base}runs:runbook:${runbook}`;
  }

  /** Stores a new run under a fresh id. */
  async create(fields: Omit<Run, 'id' | 'version' | 'createdAt' | 'updatedAt'>): Promise<Run> {
    for (let tries = 0; tries < 20; tries++) {
      const now = new Date().toISOString();
      const run: Run = { ...fields, id: newRunId(), version: 1, createdAt: now, updatedAt: now };
      const ok = await this.redis.set(this.runKey(run.id), JSON.stringify(run), 'NX');
      if (ok) {
        const at = Date.now();
        await this.redis.zadd(this.indexKey(), at, run.id);
        await this.redis.zadd(this.runbookIndexKey(run.runbook), at, run.id);
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

  leaseKey(id: string) {
    return `${this.base}run:${id}:lease`;
  }

  /**
   * Read-modify-write with optimistic concurrency: the bot (buttons) and workers (progress) write
   * the same record. `change` returns the new run, or undefined to leave it as is. A write made by
   * a step attempt passes its `fence` and fails with LeaseLostError once the attempt lost its lease
   * (`report` also accepts a lease revoked by a pause or abort: the attempt may still say how it
   * stopped). `lease` sets the lease in the same atomic write: a new token, or 'revoke'.
   */
  async update(
    id: string,
    change: (run: Run) => Run | undefined,
    opts: { fence?: { token: string; level: 'act' | 'report' }; lease?: string | 'revoke' } = {},
  ): Promise<Run> {
    for (let tries = 0; tries < 50; tries++) {
      const current = await this.require(id);
      const next = change(structuredClone(current));
      if (!next) return current;
      next.version = current.version + 1;
      next.updatedAt = new Date().toISOString();
      const lease = opts.lease === 'revoke' ? '!revoke' : (opts.lease ?? '');
      const result = Number(
        await this.redis.eval(
          CAS,
          2,
          this.runKey(id),
          this.leaseKey(id),
          String(current.version),
          JSON.stringify(next),
          opts.fence?.token ?? '',
          opts.fence?.level ?? 'act',
          lease,
        ),
      );
      if (result === 1) return next;
      if (result === -1) throw new RunNotFoundError(id);
      if (result === -2) throw new LeaseLostError(id);
    }
    throw new Error(`run ${id} is being changed by too many writers at once; try again`);
  }

  /**
   * Gives the step attempt a fresh lease when the run is still running that step at that
   * generation, marking the step running: the previous holder's next write fails. Undefined when
   * the job is stale.
   */
  async acquireLease(
    id: string,
    stepId: string,
    generation: number,
    now = new Date().toISOString(),
  ): Promise<{ run: Run; token: string } | undefined> {
    const current = await this.get(id);
    if (!current) return undefined;
    const token = `${(Number.parseInt(current.lease ?? '0', 10) || 0) + 1}.${randomBytes(4).toString('hex')}`;
    let acquired = false;
    const run = await this.update(
      id,
      (r) => {
        acquired = false;
        if (r.status !== 'running' || r.currentStep !== stepId || r.generation !== generation) return undefined;
        acquired = true;
        return {
          ...r,
          lease: token,
          steps: r.steps.map((s) =>
            s.id === stepId ? { ...s, status: 'running', attempts: s.attempts + 1, startedAt: s.startedAt ?? now } : s,
          ),
        };
      },
      { lease: token },
    );
    return acquired ? { run, token } : undefined;
  }

  /** The lease as stored now: a token, `revoked:<token>`, or undefined. */
  async leaseOf(id: string): Promise<string | undefined> {
    return (await this.redis.get(this.leaseKey(id))) ?? undefined;
  }

  /** Throws LeaseLostError unless `token` still holds the run's lease. */
  async assertLease(id: string, token: string): Promise<void> {
    if ((await this.leaseOf(id)) !== token) throw new LeaseLostError(id);
  }

  /**
   * Redis's clock in ms, the one checkpoint `at` times use: read by a script on the run index's key, so that on a
   * Cluster it is the clock of the master holding the runs (a bare TIME goes to any node, whose clock may differ).
   */
  async now(): Promise<number> {
    const [s, us] = (await this.redis.eval(NOW, 1, this.indexKey())) as [number, number];
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  }

  /** Forgets a run that never became one (its preview failed): no record, no index entry, no checkpoints. */
  async discard(run: Pick<Run, 'id' | 'runbook'>, stepIds: string[]): Promise<void> {
    const { id } = run;
    await this.redis.del(this.runKey(id), this.leaseKey(id), ...stepIds.map((s) => this.checkpointKey(id, s)));
    await this.redis.zrem(this.indexKey(), id);
    await this.redis.zrem(this.runbookIndexKey(run.runbook), id);
  }

  /** The newest `n` runs, newest first. */
  async list(n = 20): Promise<Run[]> {
    return this.read(await this.redis.zrevrange(this.indexKey(), 0, n - 1));
  }

  /**
   * The newest `n` runs of each of `runbooks`, newest first, with any of theirs among the newest `n` of all runs (those
   * stored before the runbooks' own indexes existed). The index of all runs is read once, however many runbooks.
   */
  async listOf(runbooks: readonly string[], n = 20): Promise<Run[]> {
    const ids = await Promise.all(runbooks.map((r) => this.redis.zrevrange(this.runbookIndexKey(r), 0, n - 1)));
    const [own, recent] = await Promise.all([this.read([...new Set(ids.flat())]), this.list(n)]);
    const seen = new Set(own.map((r) => r.id));
    const wanted = new Set(runbooks);
    const older = recent.filter((r) => wanted.has(r.runbook) && !seen.has(r.id));
    return [...own, ...older].sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  }

  private async read(ids: string[]): Promise<Run[]> {
    if (!ids.length) return [];
    const texts = await this.redis.mget(ids.map((id) => this.runKey(id)));
    return texts.filter((t): t is string => !!t).map((t) => JSON.parse(t) as Run);
  }

  /**
   * A step's checkpoint (one hash per `part`), every write fenced by the attempt's lease `token`
   * (undefined: unfenced, for readers).
   */
  checkpoint<T extends CheckpointEntry>(runId: string, stepId: string, token?: string, part?: string): Checkpoint<T> {
    const key = part ? `${this.checkpointKey(runId, stepId)}:${part}` : this.checkpointKey(runId, stepId);
    const leaseKey = this.leaseKey(runId);
    const redis = this.redis;
    const transitionMany = async (
      changes: { key: string; expected: string | undefined; value: T }[],
    ): Promise<boolean[]> => {
      if (!changes.length) return [];
      const args = changes.flatMap((c) => [c.key, c.expected ?? '', JSON.stringify(c.value)]);
      const result = (await redis.eval(TRANSITION, 2, key, leaseKey, token ?? '', ...args)) as number | number[];
      if (!Array.isArray(result)) throw new LeaseLostError(runId);
      const [at, ...written] = result.map(Number);
      return changes.map((c, i) => {
        if (written[i] === 1) c.value.at = at;
        return written[i] === 1;
      });
    };
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
        await transitionMany([{ key: field, expected: '*', value }]);
      },
      async transition(field: string, expectedState: string | undefined, value: T): Promise<boolean> {
        return (await transitionMany([{ key: field, expected: expectedState, value }]))[0];
      },
      transitionMany,
    };
  }
}
