import { createHash } from 'node:crypto';
import { z } from 'zod';
import { isRollcallError } from '../../core/errors.js';
import { decodeStored, jsonField, storedTime, type MalformedEntryLogger } from '../../core/stored-record.js';
import type { RedisClient } from '../../infra/redis.js';
import type { AppSelector } from '../../fleet/select.js';
import { keyBase } from '../../infra/redis.js';

export const INCIDENT_STATES = ['investigating', 'identified', 'mitigated', 'monitoring'] as const;
export type IncidentStatus = (typeof INCIDENT_STATES)[number];
export type IncidentState = IncidentStatus | 'closed';

/** Where a message about the incident lives (Slack); mirrors the Notifier's MessageRef. */
export interface IncidentMessage {
  channel: string;
  ts: string;
  threadTs?: string;
}

export interface Incident {
  id: string;
  n: number;
  title: string;
  severity: number;
  state: IncidentState;
  /** The scope as typed (`auth-service-*`, `-l team=identity`, `appset=auth-service`); none = the whole fleet. */
  scope?: string;
  /** The scope, parsed. */
  scopeSelector?: AppSelector;
  /** Apps the scope matched at declaration (`instance/name`), so a later report still knows them. */
  scopeApps: string[];
  lead?: string;
  declaredBy: string;
  declaredAt: string;
  /** How far before the declaration the timeline and impactStart reach. */
  lookbackMs: number;
  closedAt?: string;
  summary?: string;
  /** `incident set impact=<time>`: a human knows impact started elsewhere than the fleet shows. */
  impactOverride?: string;
  /** Slack: the header message that stays updated, and its thread. */
  header?: IncidentMessage;
  /** Slack: the incident's own channel (incidents.createChannel). */
  channel?: string;
  /** rollcall suggested `status mitigated` (once). */
  mitigationSuggestedAt?: string;
}

/** Kinds an incident's own timeline holds; fleet changes come from the change log. */
export type IncidentEntryKind = 'declared' | 'note' | 'status' | 'alert' | 'closed';

export interface IncidentEntry {
  id: string;
  at: string;
  kind: IncidentEntryKind;
  /** `human` (a person through Slack or the terminal), `rollcall`, `alert`. */
  source: 'human' | 'rollcall' | 'alert';
  by?: string;
  text: string;
  /** For status entries: the state set. */
  state?: IncidentState;
  /** Slack permalink or message of a note taken from a message. */
  ref?: string;
  /** For an alert whose problem began before it fired (a stuck step): when the impact began. */
  impactAt?: string;
}

const RECORD_FIELDS = new Set(['scopeApps', 'scopeSelector', 'header', 'n', 'severity', 'lookbackMs']);

/**
 * Incidents in Redis: a hash per incident (one field per attribute, so two processes changing
 * severity and lead at once do not overwrite each other), a Stream for its own timeline entries,
 * ids INC-n from one INCR counter, and a set of the open ones.
 */
export class IncidentStore {
  private readonly base: string;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
    /** Where lists report an incident they skipped because its stored record is malformed. */
    private readonly logger?: MalformedEntryLogger,
  ) {
    this.base = `${keyBase(prefix)}incident`;
  }

  private key(id: string): string {
    return `${this.base}:${id}`;
  }

  private timelineKey(id: string): string {
    return `${this.base}:${id}:timeline`;
  }

  private get openKey(): string {
    return `${this.base}s:open`;
  }

  private get allKey(): string {
    return `${this.base}s:all`;
  }

  /** Closed incidents by when they closed (a digest asks which closed in its period). */
  private get closedKey(): string {
    return `${this.base}s:closed`;
  }

  async create(fields: Omit<Incident, 'id' | 'n' | 'state'>): Promise<Incident> {
    const n = await this.redis.incr(`${this.base}:seq`);
    const incident: Incident = { ...fields, id: `INC-${n}`, n, state: 'investigating' };
    await this.redis
      .multi()
      .hset(this.key(incident.id), serialize(incident))
      .sadd(this.openKey, incident.id)
      .zadd(this.allKey, Date.parse(incident.declaredAt), incident.id)
      .exec();
    return incident;
  }

  async get(id: string): Promise<Incident | undefined> {
    const hash = await this.redis.hgetall(this.key(id));
    return Object.keys(hash).length ? deserialize(hash) : undefined;
  }

  /** Sets some fields (undefined deletes one); keeps the open set in step with the state. */
  async update(id: string, fields: Partial<Omit<Incident, 'id' | 'n'>>): Promise<Incident> {
    const set: Record<string, string> = {};
    const del: string[] = [];
    for (const [k, v] of Object.entries(fields)) {
      if (v === undefined) del.push(k);
      else set[k] = RECORD_FIELDS.has(k) ? JSON.stringify(v) : String(v);
    }
    const tx = this.redis.multi();
    if (Object.keys(set).length) tx.hset(this.key(id), set);
    if (del.length) tx.hdel(this.key(id), ...del);
    if (fields.state === 'closed')
      tx.srem(this.openKey, id).zadd(this.closedKey, Date.parse(fields.closedAt ?? new Date().toISOString()), id);
    else if (fields.state) tx.sadd(this.openKey, id).zrem(this.closedKey, id);
    await tx.exec();
    const incident = await this.get(id);
    if (!incident) throw new Error(`incident ${id} vanished from Redis`);
    return incident;
  }

  /** True for the first caller within `ttlMs` (one header refresh per tick across bot processes). */
  async claim(name: string, ttlMs: number): Promise<boolean> {
    return (await this.redis.set(`${this.base}s:claim:${name}`, '1', 'PX', ttlMs, 'NX')) === 'OK';
  }

  /** Sets a field only if it is not set yet; true when this call set it (a once-only suggestion). */
  async setOnce(id: string, field: keyof Incident, value: string): Promise<boolean> {
    return (await this.redis.hsetnx(this.key(id), field, value)) === 1;
  }

  async open(): Promise<Incident[]> {
    return (await this.readable(await this.redis.smembers(this.openKey))).sort((a, b) => a.n - b.n);
  }

  /** The latest `count` incidents, newest first. */
  async recent(count = 10): Promise<Incident[]> {
    return this.readable(await this.redis.zrevrange(this.allKey, 0, count - 1));
  }

  /** Incidents closed at or after `fromMs`, in the order they closed. */
  async closedSince(fromMs: number): Promise<Incident[]> {
    return this.readable(await this.redis.zrangebyscore(this.closedKey, fromMs, '+inf'));
  }

  /** The incidents of `ids` that exist; a malformed one is logged and left out, so one bad record does not hide the rest. */
  private async readable(ids: string[]): Promise<Incident[]> {
    const all = await Promise.all(
      ids.map((id) =>
        this.get(id).catch((error: unknown) => {
          if (!isRollcallError(error, 'stored_record_invalid')) throw error;
          this.logger?.warn({ incident: id, err: error.message }, 'skipped a malformed incident record');
          return undefined;
        }),
      ),
    );
    return all.filter((i): i is Incident => !!i);
  }

  /**
   * Appends an entry. With `dedupeKey` (a Slack message's channel and ts, an alert id) the same
   * entry offered twice, by a retry or by a second process, is kept once. Returns false then.
   */
  async append(id: string, entry: Omit<IncidentEntry, 'id'>, dedupeKey?: string): Promise<boolean> {
    const json = JSON.stringify(entry);
    if (dedupeKey) {
      const claim = `${this.base}:${id}:seen:${createHash('sha1').update(dedupeKey).digest('hex')}`;
      const added = await this.redis.eval(
        `if redis.call('SET', KEYS[1], '1', 'NX') then redis.call('XADD', KEYS[2], '*', 'e', ARGV[1]) return 1 end return 0`,
        2,
        claim,
        this.timelineKey(id),
        json,
      );
      return added === 1;
    }
    await this.redis.xadd(this.timelineKey(id), '*', 'e', json);
    return true;
  }

  async entries(id: string): Promise<IncidentEntry[]> {
    const rows = await this.redis.xrange(this.timelineKey(id), '-', '+');
    return rows.map(([streamId, fields]) => ({
      id: `${id}/${streamId}`,
      ...(JSON.parse(fields[1]) as Omit<IncidentEntry, 'id'>),
    }));
  }

  /** The fleet part of the timeline frozen at close, so the report outlives the change log's retention. */
  async saveFleetSnapshot(id: string, json: string): Promise<void> {
    await this.redis.set(`${this.base}:${id}:fleet`, json);
  }

  async fleetSnapshot(id: string): Promise<string | undefined> {
    return (await this.redis.get(`${this.base}:${id}:fleet`)) ?? undefined;
  }
}

function serialize(incident: Incident): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(incident)) {
    if (v === undefined) continue;
    out[k] = RECORD_FIELDS.has(k) ? JSON.stringify(v) : String(v);
  }
  return out;
}

/** An incident hash as serialize writes it: RECORD_FIELDS as JSON, the rest as plain strings. */
const STORED_INCIDENT = z.object({
  id: z.string(),
  n: jsonField(z.number().int().positive()),
  title: z.string(),
  severity: jsonField(z.number()),
  state: z.enum([...INCIDENT_STATES, 'closed']),
  scope: z.string().optional(),
  scopeSelector: jsonField(
    z.custom<AppSelector>((v) => !!v && typeof v === 'object' && !Array.isArray(v), 'not a selector'),
  ).optional(),
  scopeApps: jsonField(z.array(z.string())),
  lead: z.string().optional(),
  declaredBy: z.string(),
  declaredAt: storedTime,
  lookbackMs: jsonField(z.number().nonnegative()),
  closedAt: storedTime.optional(),
  summary: z.string().optional(),
  impactOverride: z.string().optional(),
  header: jsonField(z.object({ channel: z.string(), ts: z.string(), threadTs: z.string().optional() })).optional(),
  channel: z.string().optional(),
  mitigationSuggestedAt: z.string().optional(),
}) satisfies z.ZodType<Incident, Record<string, string>>;

function deserialize(hash: Record<string, string>): Incident {
  return decodeStored(STORED_INCIDENT, hash, `incident ${hash.id ?? '(no id)'}`);
}
