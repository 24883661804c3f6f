import { createHash } from 'node:crypto';
import type { RedisClient } from '../../infra/redis.js';
import { RollcallError } from '../../core/errors.js';
import { suggest } from '../../core/suggest.js';
import { keyBase } from '../../infra/redis.js';
import { applyChange, type AlertChange, type AlertRecord } from './lifecycle.js';

/**
 * Compare-and-set of one alert group: writes ARGV[2] (or deletes, when empty) only if the stored text
 * is still ARGV[1] ('' = absent), and keeps the index in step. Every worker reads, computes the next
 * state with the same pure function, and writes through this; a lost race re-reads and recomputes.
 */
const CAS = `
local cur = redis.call('GET', KEYS[1]) or ''
if cur ~= ARGV[1] then return 0 end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[2], ARGV[3])
else
  redis.call('SET', KEYS[1], ARGV[2])
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
end
return 1
`;

/** The one wording of an unknown alert id; `known` ids give the suggestions. */
export class AlertNotFoundError extends RollcallError {
  constructor(
    readonly alertId: string,
    known: string[] = [],
  ) {
    super('alert_not_found', `No alert ${alertId}: \`alerts\` lists the active and recently resolved ones.`, {
      suggestions: suggest(alertId, known),
    });
  }
}

/** Alert state in Redis: one JSON record per group key, and an index sorted by last change. */
export class AlertStore {
  private readonly base: string;
  constructor(
    readonly redis: RedisClient,
    prefix: string,
  ) {
    this.base = keyBase(prefix);
  }

  /** Group keys can be long (appset names, revisions): records are keyed by a hash of them. */
  static slot(groupKey: string): string {
    return createHash('sha1').update(groupKey).digest('hex').slice(0, 20);
  }

  private recordKey(slot: string) {
    return `${this.base}alert:${slot}`;
  }
  private indexKey() {
    return `${this.base}alerts`;
  }

  async get(groupKey: string): Promise<AlertRecord | undefined> {
    const text = await this.redis.get(this.recordKey(AlertStore.slot(groupKey)));
    return text ? (JSON.parse(text) as AlertRecord) : undefined;
  }

  /** Every stored alert (pending, active and resolved), newest change first. */
  async all(): Promise<AlertRecord[]> {
    const slots = await this.redis.zrevrange(this.indexKey(), 0, -1);
    if (!slots.length) return [];
    const texts = await this.redis.mget(slots.map((s) => this.recordKey(s)));
    return texts.filter((t): t is string => !!t).map((t) => JSON.parse(t) as AlertRecord);
  }

  async byId(id: string): Promise<AlertRecord | undefined> {
    return (await this.all()).find((a) => a.id === id);
  }

  /** The error for an id no stored alert has, with the closest ids there are. */
  async notFound(id: string): Promise<AlertNotFoundError> {
    return new AlertNotFoundError(
      id,
      (await this.all()).map((a) => a.id),
    );
  }

  /**
   * Read-modify-write of one group. `change` gets the stored record (or undefined) and returns the next
   * one, null to delete it, or the same object / undefined to leave it. Returns what is stored after.
   */
  async mutate(
    groupKey: string,
    change: (current: AlertRecord | undefined) => AlertRecord | null | undefined,
  ): Promise<AlertRecord | undefined> {
    const slot = AlertStore.slot(groupKey);
    const key = this.recordKey(slot);
    for (let tries = 0; tries < 50; tries++) {
      const text = (await this.redis.get(key)) ?? '';
      const current = text ? (JSON.parse(text) as AlertRecord) : undefined;
      const next = change(current ? structuredClone(current) : undefined);
      if (next === undefined || (current && next && JSON.stringify(next) === text)) return current;
      if (next === null && !current) return undefined;
      const score = next ? Date.parse(next.updatedAt) || Date.now() : 0;
      const ok = Number(
        await this.redis.eval(
          CAS,
          2,
          key,
          this.indexKey(),
          text,
          next ? JSON.stringify(next) : '',
          slot,
          String(score),
        ),
      );
      if (ok === 1) return next ?? undefined;
    }
    throw new Error(`alert group ${groupKey} is being changed by too many writers at once`);
  }

  /** Ack or snooze by id, for the person who pressed the button. */
  async change(id: string, change: AlertChange, now = new Date()): Promise<AlertRecord> {
    const found = await this.byId(id);
    if (!found) throw new AlertNotFoundError(id);
    const after = await this.mutate(found.key, (current) =>
      current && current.id === id ? applyChange(current, change, now) : undefined,
    );
    if (!after || after.id !== id) throw new AlertNotFoundError(id);
    return after;
  }

  private archiveSlot(id: string) {
    return `id-${id}`;
  }

  /**
   * Keeps a resolved alert under its own id before a new alert of its group takes the group's record,
   * so `alerts` still lists it. Idempotent: every worker archiving it writes the same thing.
   */
  async archive(alert: AlertRecord): Promise<void> {
    const slot = this.archiveSlot(alert.id);
    const kept: AlertRecord = { ...alert, archived: true, renderLease: undefined };
    await this.redis
      .multi()
      .set(this.recordKey(slot), JSON.stringify(kept))
      .zadd(this.indexKey(), String(Date.parse(alert.updatedAt) || Date.now()), slot)
      .exec();
  }

  async removeArchived(id: string): Promise<void> {
    const slot = this.archiveSlot(id);
    await this.redis.multi().del(this.recordKey(slot)).zrem(this.indexKey(), slot).exec();
  }

  /** Forgets resolved alerts older than `keepMs`. */
  async prune(keepMs: number, now = Date.now()): Promise<void> {
    for (const a of await this.all()) {
      if (a.state !== 'resolved' || now - Date.parse(a.resolvedAt ?? a.updatedAt) < keepMs) continue;
      if (a.archived) {
        await this.removeArchived(a.id);
        continue;
      }
      await this.mutate(a.key, (current) =>
        current && current.state === 'resolved' && current.id === a.id ? null : undefined,
      );
    }
  }
}
