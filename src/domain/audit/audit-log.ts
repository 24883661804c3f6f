import { AsyncLocalStorage } from 'node:async_hooks';
import { z } from 'zod';
import { isRollcallError } from '../../core/errors.js';
import { decodeStored, jsonField, storedTime, type MalformedEntryLogger } from '../../core/stored-record.js';
import type { RedisClient } from '../../infra/redis.js';
import { keyBase, redisClockOffset } from '../../infra/redis.js';

export type AuditKind =
  | 'run.start'
  | 'run.confirm'
  | 'run.cancel'
  | 'run.approve'
  | 'run.refused'
  /** A run asked for whose preview found nothing to do: no run was kept. */
  | 'run.noop'
  | 'run.pause'
  | 'run.resume'
  | 'run.abort'
  | 'run.end'
  | 'step.start'
  | 'step.end'
  /** A milestone inside a step's wave: a bake started, passed or failed, a wave failed, its apps rolled back. */
  | 'step.wave'
  | 'argocd.sync'
  /** Any other Argo CD change (patch, appset upsert, terminate, rollback). */
  | 'argocd.mutation'
  /** An app refresh (normal or hard) asked of Argo CD: no change to the app, load on the repo-server. */
  | 'argocd.refresh'
  /** A Kubernetes API change (sealed-secrets keys, controller restart). */
  | 'kube.mutation'
  /** Someone acknowledged or snoozed an alert. */
  | 'alert.ack'
  | 'alert.snooze'
  /** A guard on a RollingSync rollout was set or removed. */
  | 'guard.set'
  | 'guard.remove'
  /** A guard's checks failed on the apps a rollout updated (and it paused the rollout or said so). */
  | 'guard.trip';

const AUDIT_KINDS = {
  'run.start': true,
  'run.confirm': true,
  'run.cancel': true,
  'run.approve': true,
  'run.refused': true,
  'run.noop': true,
  'run.pause': true,
  'run.resume': true,
  'run.abort': true,
  'run.end': true,
  'step.start': true,
  'step.end': true,
  'step.wave': true,
  'argocd.sync': true,
  'argocd.mutation': true,
  'argocd.refresh': true,
  'kube.mutation': true,
  'alert.ack': true,
  'alert.snooze': true,
  'guard.set': true,
  'guard.remove': true,
  'guard.trip': true,
} as const satisfies Record<AuditKind, true>;

/**
 * Where an action came from: `slack` and `terminal` are people; `schedule` is a cron in rollcall.yaml;
 * `engine` is the runbook engine acting on its own (steps, Argo CD calls, ends of runs).
 */
export type AuditSurface = 'slack' | 'terminal' | 'schedule' | 'engine';

/** Who is behind a request, as far as its surface can tell. */
export interface AuditOrigin {
  surface: AuditSurface;
  /** Terminal: the operating-system account that ran rollcall, whoever `who` says it acted as. */
  osUser?: string;
  /** Terminal: `who` was chosen with `--as` (allowed by access.terminal.allowActAs). */
  actAs?: boolean;
}

const origins = new AsyncLocalStorage<AuditOrigin>();

/**
 * Runs `fn` with everything it audits stamped with `origin`. The surface is known where a request
 * enters (Slack listener, `rollcall ask`, a schedule tick); the engine's API speaks only of user ids,
 * so the entries it writes on the request's behalf (start, confirm, abort ...) learn it from here.
 * Work the engine does on its own (a worker running steps) runs outside any request: `engine`.
 */
export function withAuditOrigin<T>(origin: AuditOrigin, fn: () => T): T {
  return origins.run(origin, fn);
}

export interface AuditEvent {
  kind: AuditKind;
  /** Slack user id or terminal user; `rollcall` for the engine itself. */
  who: string;
  /** Set from the request's origin (withAuditOrigin) when the event does not say. */
  surface?: AuditSurface;
  osUser?: string;
  actAs?: boolean;
  runId?: string;
  /** What was acted on: `argocd-prod/auth-config-prod-eu1`. */
  target?: string;
  params?: Record<string, unknown>;
  result?: string;
  message?: string;
  at: string;
}

export interface AuditEntry extends AuditEvent {
  id: string;
}

const SECRET_KEY = /token|secret|password|key$|tls\.|private/i;

/** Audit entries must never carry credentials: values under secret-looking keys are dropped. */
function scrub(value: unknown, key = ''): unknown {
  if (SECRET_KEY.test(key)) return '[redacted]';
  if (Array.isArray(value)) return value.map((v) => scrub(v));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, scrub(v, k)]));
  return value;
}

/**
 * The audit log: a Redis Stream `<prefix>:audit`, trimmed approximately to `maxLen` entries. Every
 * mutation and refusal is recorded here, whoever makes it; incidents and digests read it back.
 */
/** Writing and reading the audit stream; what the rest of rollcall holds (AuditLog implements it). */
export interface AuditStream {
  record(event: Omit<AuditEvent, 'at'> & { at?: string }): Promise<string>;
  read(query?: AuditQuery): Promise<AuditEntry[]>;
  latest(n?: number): Promise<AuditEntry[]>;
}

export class AuditLog implements AuditStream {
  readonly key: string;
  constructor(
    private readonly redis: RedisClient,
    prefix: string,
    private readonly maxLen = 100_000,
    private readonly logger?: MalformedEntryLogger,
  ) {
    this.key = `${keyBase(prefix)}audit`;
  }

  async record(event: Omit<AuditEvent, 'at'> & { at?: string }): Promise<string> {
    const origin = origins.getStore() ?? { surface: 'engine' };
    const entry = {
      ...event,
      surface: event.surface ?? origin.surface,
      osUser: event.osUser ?? origin.osUser,
      actAs: event.actAs ?? origin.actAs,
      at: event.at ?? new Date().toISOString(),
    };
    const fields: string[] = [];
    for (const [k, v] of Object.entries(entry)) {
      if (v === undefined) continue;
      fields.push(k, typeof v === 'string' ? v : JSON.stringify(k === 'params' ? scrub(v) : v));
    }
    return (await this.redis.xadd(this.key, 'MAXLEN', '~', String(this.maxLen), '*', ...fields)) as string;
  }

  /** Latest n entries, newest first. */
  async latest(n = 20): Promise<AuditEntry[]> {
    return this.read({ limit: n });
  }

  /**
   * Entries recorded in a time range that match every filter given, newest first (oldest first with
   * `order: 'oldest'`), at most `limit`. The range is by when an entry was written (its stream id), so it
   * is cheap however long the stream is; filters are applied while reading, in pages.
   */
  async read(query: AuditQuery = {}): Promise<AuditEntry[]> {
    const limit = Math.max(0, Math.min(query.limit ?? 100, MAX_READ));
    // Stream ids carry Redis' time; the range asked is in this process' time.
    const offset = query.since === undefined && query.until === undefined ? 0 : await redisClockOffset(this.redis);
    const from = query.since === undefined ? '-' : String(Math.max(0, timeOf(query.since) + offset));
    const to = query.until === undefined ? '+' : String(Math.max(0, timeOf(query.until) + offset));
    const oldestFirst = query.order === 'oldest';
    const kinds = query.kinds?.length ? new Set<string>(query.kinds) : undefined;
    const matches = (e: AuditEntry) =>
      (!kinds || kinds.has(e.kind)) && (!query.runId || e.runId === query.runId) && (!query.who || e.who === query.who);
    const found: AuditEntry[] = [];
    // Each page starts after the last id read: '(' makes the bound exclusive (Redis 6.2+).
    let cursor = oldestFirst ? from : to;
    while (found.length < limit) {
      const page = oldestFirst
        ? await this.redis.xrange(this.key, cursor, to, 'COUNT', PAGE)
        : await this.redis.xrevrange(this.key, cursor, from, 'COUNT', PAGE);
      for (const [id, fields] of page) {
        const entry = readAuditEntry(id, fields, this.logger);
        if (entry && matches(entry)) found.push(entry);
        if (found.length === limit) break;
      }
      if (page.length < PAGE) break;
      cursor = `(${page[page.length - 1][0]}`;
    }
    return found;
  }
}

/** What to read from the audit stream (AuditLog.read). Every filter given must match. */
export interface AuditQuery {
  /** Written at or after (an RFC3339 time, a Date or epoch ms). */
  since?: string | Date | number;
  /** Written at or before. */
  until?: string | Date | number;
  kinds?: AuditKind[];
  runId?: string;
  who?: string;
  /** @defaultValue 100 (at most 10,000) */
  limit?: number;
  /** @defaultValue 'newest' */
  order?: 'newest' | 'oldest';
}

const PAGE = 500;
const MAX_READ = 10_000;

function timeOf(at: string | Date | number): number {
  const ms = typeof at === 'number' ? at : typeof at === 'string' ? Date.parse(at) : at.getTime();
  if (!Number.isFinite(ms)) throw new RangeError(`not a time: ${String(at)}`);
  return Math.max(0, Math.floor(ms));
}

/** An entry as AuditLog.record writes it: strings, `params` as JSON, `actAs` as `true`/`false`. */
const STORED_ENTRY = z.object({
  id: z.string(),
  kind: z.string().refine((k): k is AuditKind => Object.hasOwn(AUDIT_KINDS, k), 'not an audit kind'),
  who: z.string(),
  surface: z.enum(['slack', 'terminal', 'schedule', 'engine']).optional(),
  osUser: z.string().optional(),
  actAs: z
    .enum(['true', 'false'])
    .transform((v) => v === 'true')
    .optional(),
  runId: z.string().optional(),
  target: z.string().optional(),
  params: jsonField(z.record(z.string(), z.unknown())).optional(),
  result: z.string().optional(),
  message: z.string().optional(),
  at: storedTime,
});

/** One audit stream entry decoded; a malformed one is a stored_record_invalid error naming its id and fields. */
export function decodeAuditEntry(id: string, fields: string[]): AuditEntry {
  const raw: Record<string, string> = { id };
  for (let i = 0; i < fields.length; i += 2) raw[fields[i]] = fields[i + 1];
  return decodeStored(STORED_ENTRY, raw, `audit entry ${id}`);
}

/**
 * The entry, or undefined for a malformed one, which is logged and skipped: one bad entry must not
 * hide the rest of the stream from `history` or an incident timeline.
 */
export function readAuditEntry(id: string, fields: string[], logger?: MalformedEntryLogger): AuditEntry | undefined {
  try {
    return decodeAuditEntry(id, fields);
  } catch (error) {
    if (!isRollcallError(error, 'stored_record_invalid')) throw error;
    logger?.warn({ entry: id, err: error.message }, 'skipped a malformed audit entry');
    return undefined;
  }
}
