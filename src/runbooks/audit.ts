import { AsyncLocalStorage } from 'node:async_hooks';
import type { Redis } from 'ioredis';
import { keyBase } from '../jobs/redis.js';

export type AuditKind =
  | 'run.start'
  | 'run.confirm'
  | 'run.cancel'
  | 'run.approve'
  | 'run.refused'
  | 'run.pause'
  | 'run.resume'
  | 'run.abort'
  | 'run.end'
  | 'step.start'
  | 'step.end'
  | 'argocd.sync'
  /** Any other Argo CD change (patch, appset upsert, terminate). */
  | 'argocd.mutation'
  /** A Kubernetes API change (sealed-secrets keys, controller restart). */
  | 'kube.mutation'
  /** Someone acknowledged or snoozed an alert. */
  | 'alert.ack'
  | 'alert.snooze';

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
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, scrub(v, k)]));
  return value;
}

/** The audit log: a Redis Stream `<prefix>:audit`, trimmed approximately to `maxLen` entries. */
export class AuditLog {
  readonly key: string;
  constructor(
    private readonly redis: Redis,
    prefix: string,
    private readonly maxLen = 100_000,
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
    const rows = await this.redis.xrevrange(this.key, '+', '-', 'COUNT', n);
    return rows.map(([id, fields]) => {
      const obj: Record<string, unknown> = { id };
      for (let i = 0; i < fields.length; i += 2) {
        const k = fields[i];
        const v = fields[i + 1];
        obj[k] = k === 'params' ? JSON.parse(v) : k === 'actAs' ? v === 'true' : v;
      }
      return obj as unknown as AuditEntry;
    });
  }
}
