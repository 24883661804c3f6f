import { createHash } from 'node:crypto';
import type { RedisClient } from '../../infra/redis.js';
import { keyBase, redisClockOffset } from '../../infra/redis.js';
import { readAuditEntry, type AuditEntry } from '../audit/audit-log.js';
import type { MalformedEntryLogger } from '../../core/stored-record.js';
import type { ChangeRecord } from './changes.js';

/** @defaultValue 7 days */
export const DEFAULT_RETENTION_MS = 7 * 86_400_000;

/**
 * Claims each change id and appends its record in one step, so a process that dies between the two
 * cannot leave a change claimed and unrecorded. MINID trims what is older than the retention on
 * every write (approximately, the cheap way: whole stream nodes). KEYS[1] is the stream, KEYS[2..]
 * the claims; ARGV[1] the claims' lifetime, ARGV[2] the MINID, ARGV[3..] the records in the claims' order.
 * A batch is one command: a backfill of 100,000 records sent as one command each left about a kilobyte
 * of garbage per record that outlived the young generation.
 */
const RECORD_EACH_ONCE = `
local added = 0
for i = 2, #KEYS do
  if redis.call('SET', KEYS[i], '1', 'NX', 'PX', ARGV[1]) then
    redis.call('XADD', KEYS[1], 'MINID', '~', ARGV[2], '*', 'r', ARGV[i + 1])
    added = added + 1
  end
end
return added`;

/** Records per script call: each call holds Redis for its SETs and XADDs, about a millisecond per 500. */
const RECORDS_PER_CALL = 500;

/**
 * The fleet change log: one Redis Stream of ChangeRecords, kept for `retentionMs`. A record is
 * appended once per change id, however many processes offer it: each id is claimed with SET NX,
 * for as long as any process could still offer it again (Argo CD's own memory of it, bounded by
 * the retention: backfill never reaches further back).
 *
 * The audit stream is not copied: `read` merges its entries in as `run`/`step` changes, so what
 * rollcall did is in the log exactly once by construction.
 */
export class ChangeLog {
  readonly key: string;
  private readonly claimBase: string;
  private readonly auditKey: string;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
    readonly retentionMs: number = DEFAULT_RETENTION_MS,
    private readonly logger?: MalformedEntryLogger,
  ) {
    const base = keyBase(prefix);
    this.key = `${base}changes`;
    this.claimBase = `${base}change:`;
    this.auditKey = `${base}audit`;
  }

  /** Appends those not recorded yet; returns how many were new. */
  async record(records: readonly ChangeRecord[], nowMs = Date.now()): Promise<number> {
    if (!records.length) return 0;
    const minId = String(nowMs + (await redisClockOffset(this.redis)) - this.retentionMs);
    // A claim outlives the record by a day: a late backfill of a record just trimmed stays a duplicate.
    const claimTtl = String(this.retentionMs + 86_400_000);
    let added = 0;
    for (let i = 0; i < records.length; i += RECORDS_PER_CALL) {
      const part = records.slice(i, i + RECORDS_PER_CALL);
      const keys = [this.key, ...part.map((r) => this.claimKey(r.id))];
      const args = [claimTtl, minId, ...part.map((r) => JSON.stringify(r))];
      added += Number(await this.redis.eval(RECORD_EACH_ONCE, keys.length, ...keys, ...args));
    }
    return added;
  }

  /** Drops what is older than the retention even when nothing is written (a quiet fleet). */
  async trim(nowMs = Date.now()): Promise<void> {
    const minId = nowMs + (await redisClockOffset(this.redis)) - this.retentionMs;
    await this.redis.xtrim(this.key, 'MINID', '~', String(minId));
  }

  /**
   * Fleet changes and rollcall's own actions that happened since `sinceMs` and were seen by
   * `untilMs`, oldest first. A record is appended when it is seen, never before it happened, so
   * scanning stream ids from `sinceMs` finds every record that happened since (backfilled ones
   * included). The end is when rollcall saw it, not Argo CD's timestamp: a controller whose clock
   * runs ahead must not push what happened before a close out of the incident.
   */
  async read(sinceMs: number, untilMs = Number.MAX_SAFE_INTEGER): Promise<ChangeRecord[]> {
    // Stream ids are Redis' time; `sinceMs` and `untilMs` are this process'. Another process's clock may run a
    // little ahead of the one that appended.
    const offset = await redisClockOffset(this.redis);
    const start = String(Math.max(0, sinceMs + offset - 60_000));
    const seenAfter = (id: string) => streamMs(id) - offset > untilMs;
    const out: ChangeRecord[] = [];
    for await (const [id, fields] of this.scan(this.key, start)) {
      if (seenAfter(id)) break;
      const json = fieldOf(fields, 'r');
      if (!json) continue;
      const record = JSON.parse(json) as ChangeRecord;
      if (Date.parse(record.at) >= sinceMs) out.push(record);
    }
    for await (const [id, fields] of this.scan(this.auditKey, start)) {
      if (seenAfter(id)) break;
      const entry = readAuditEntry(id, fields, this.logger);
      if (!entry) continue;
      const record = auditChange(entry);
      const t = Date.parse(record.at);
      if (t >= sinceMs && t <= untilMs) out.push(record);
    }
    return out.sort(byTime);
  }

  private async *scan(key: string, start: string): AsyncGenerator<[string, string[]]> {
    let from = start;
    for (;;) {
      const rows = await this.redis.xrange(key, from, '+', 'COUNT', 2000);
      for (const row of rows) yield row;
      if (rows.length < 2000) return;
      from = `(${rows[rows.length - 1][0]}`;
    }
  }

  private claimKey(id: string): string {
    return this.claimBase + createHash('sha1').update(id).digest('hex');
  }
}

function streamMs(id: string): number {
  return Number(id.slice(0, id.indexOf('-')));
}

export function byTime(a: { at: string }, b: { at: string }): number {
  return Date.parse(a.at) - Date.parse(b.at);
}

function fieldOf(fields: string[], name: string): string | undefined {
  for (let i = 0; i < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}

const AUDIT_VERB: Record<string, string> = {
  'run.start': 'requested',
  'run.confirm': 'confirmed',
  'run.cancel': 'cancelled',
  'run.approve': 'approved',
  'run.refused': 'refused',
  'run.noop': 'found nothing to do',
  'run.pause': 'paused',
  'run.resume': 'resumed',
  'run.abort': 'aborted',
  'run.end': 'ended',
  'step.start': 'step started',
  'step.end': 'step ended',
  'step.wave': 'wave',
  'argocd.sync': 'synced',
  'argocd.mutation': 'changed',
  'argocd.refresh': 'refreshed',
  'kube.mutation': 'changed',
  'guard.set': 'guard set on',
  'guard.remove': 'guard removed from',
  'guard.trip': 'guard tripped on',
};

/** What rollcall tried when an Argo CD or Kubernetes call it audited failed (`result: error: <kind>`). */
const AUDIT_ATTEMPT: Record<string, string> = {
  'argocd.sync': 'sync',
  'argocd.mutation': 'change',
  'argocd.refresh': 'refresh',
  'kube.mutation': 'change',
};

/** An audit entry as a change: what rollcall did, who asked, on what. */
export function auditChange(e: AuditEntry): ChangeRecord {
  const [instance, app] = e.target?.includes('/')
    ? [e.target.slice(0, e.target.indexOf('/')), e.target.slice(e.target.indexOf('/') + 1)]
    : [undefined, undefined];
  const verb = AUDIT_VERB[e.kind] ?? e.kind;
  const step = e.kind.startsWith('step.');
  const who = e.who && e.who !== 'rollcall' ? e.who : undefined;
  const params = e.params && typeof e.params === 'object' ? (e.params as Record<string, unknown>) : {};
  const detail =
    e.kind === 'argocd.sync' && params.prune
      ? ' (prune)'
      : e.kind === 'argocd.refresh' && params.refresh === 'hard'
        ? ' (hard)'
        : // What a change was (a rollback, a pause, a terminate): "changed" alone says nothing.
          e.kind === 'argocd.mutation' && e.message
          ? `: ${e.message}`
          : '';
  let text: string;
  const failed =
    AUDIT_ATTEMPT[e.kind] && e.result?.startsWith('error') ? e.result.replace(/^error:?\s*/, '') || 'error' : undefined;
  if (e.kind.startsWith('argocd.') || e.kind.endsWith('.mutation'))
    text = `rollcall ${failed ? `could not ${AUDIT_ATTEMPT[e.kind]}` : verb} ${app ?? e.target ?? ''}${detail}${failed ? ` (${failed})` : ''}${e.runId ? ` (run ${e.runId}${who ? `, requested by ${who}` : ''})` : ''}`;
  else if (e.kind.startsWith('guard.'))
    text = `${verb} ${app ?? e.target ?? ''}${who ? ` by ${who}` : ''}${e.message ? ` — ${e.message}` : ''}`;
  else if (e.kind === 'step.wave')
    text = `run ${e.runId ?? ''} ${e.message ?? `${e.target ?? 'wave'} ${e.result ?? ''}`}`;
  else if (step)
    text = `run ${e.runId ?? ''} ${verb}${e.target ? `: ${e.target}` : ''}${e.result ? ` (${e.result})` : ''}`;
  else
    text = `run ${e.runId ?? ''}${e.kind === 'run.start' && e.target ? ` (${e.target})` : ''} ${verb}${who ? ` by ${who}` : ''}${e.result && e.kind === 'run.end' ? `: ${e.result}` : ''}${e.message && e.kind !== 'run.end' ? ` — ${e.message}` : ''}`;
  return {
    id: `audit/${e.id}`,
    at: e.at,
    kind: step ? 'step' : 'run',
    ...(instance ? { instance } : {}),
    // A guard's target is an ApplicationSet, not an app.
    ...(app ? (e.kind.startsWith('guard.') ? { appSet: app } : { app }) : {}),
    ...(who ? { by: who } : {}),
    ...(e.runId ? { runId: e.runId } : {}),
    ...(e.surface ? { surface: e.surface } : {}),
    text: text.replace(/\s+/g, ' ').trim(),
  };
}
