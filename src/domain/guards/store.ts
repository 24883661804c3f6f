import { z } from 'zod';
import { keyBase, type RedisClient } from '../../infra/redis.js';

/**
 * What a guard on a RollingSync rollout holds: the checks its updated apps must pass, what to do when they
 * do not, and who set it (the pause runs in that person's name, as if they had typed it).
 */
export const guardSchema = z.object({
  instance: z.string(),
  appSet: z.string(),
  checks: z.array(z.string()).min(1),
  onFail: z.enum(['pause', 'notify']),
  createdBy: z.string(),
  createdAt: z.string(),
  /** Where to say that it tripped: the channel (and thread) it was set from. */
  channel: z.string().optional(),
  threadTs: z.string().optional(),
  /** The last sweep's outcome, for `guards`. */
  last: z
    .object({
      at: z.string(),
      apps: z.number(),
      failing: z.number(),
      inconclusive: z.number(),
      note: z.string().optional(),
    })
    .optional(),
});
export type Guard = z.infer<typeof guardSchema>;

/** One failing app of a trip, as it was said. */
export interface TripApp {
  app: string;
  cluster: string;
  check: string;
  value?: number;
  threshold: number;
  reason: string;
  link: string;
}

export const tripSchema = z.object({
  at: z.string(),
  step: z.number().nullable(),
  /** The revisions the failing apps ran: a trip is said once per rollout of them. */
  revisions: z.array(z.string()),
  apps: z.array(
    z.object({
      app: z.string(),
      cluster: z.string(),
      check: z.string(),
      value: z.number().optional(),
      threshold: z.number(),
      reason: z.string(),
      link: z.string(),
    }),
  ),
  action: z.string(),
  runId: z.string().optional(),
});
export type GuardTrip = z.infer<typeof tripSchema>;

export const guardKey = (g: Pick<Guard, 'instance' | 'appSet'>) => `${g.instance}/${g.appSet}`;

/** Guards live in one Redis hash, so every bot and worker sees the same set; trips are claimed with SET NX. */
export class GuardStore {
  private readonly key: string;
  private readonly tripBase: string;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
  ) {
    const base = keyBase(prefix);
    this.key = `${base}guards`;
    this.tripBase = `${base}guard-trip:`;
  }

  async put(guard: Guard): Promise<void> {
    await this.redis.hset(this.key, guardKey(guard), JSON.stringify(guard));
  }

  /** Whether there was a guard to remove. */
  async remove(instance: string, appSet: string): Promise<boolean> {
    return (await this.redis.hdel(this.key, guardKey({ instance, appSet }))) > 0;
  }

  async list(): Promise<Guard[]> {
    const all = await this.redis.hgetall(this.key);
    return Object.values(all)
      .map((json) => guardSchema.safeParse(safeJson(json)))
      .filter((p) => p.success)
      .map((p) => p.data)
      .sort((a, b) => guardKey(a).localeCompare(guardKey(b)));
  }

  /** Records the last sweep only while the guard still exists (a sweep must not bring back a removed guard). */
  async noteSweep(guard: Guard, last: NonNullable<Guard['last']>): Promise<void> {
    const field = guardKey(guard);
    const stored = await this.redis.hget(this.key, field);
    const parsed = stored ? guardSchema.safeParse(safeJson(stored)) : undefined;
    if (!parsed?.success || parsed.data.createdAt !== guard.createdAt) return;
    await this.redis.hset(this.key, field, JSON.stringify({ ...parsed.data, last }));
  }

  /**
   * Claims the trip of this guard for these revisions: true for exactly one caller however many processes
   * sweep, so the rollout is paused and the failure said once. Kept a week, then the guard may trip again.
   */
  async claimTrip(guard: Guard, trip: GuardTrip): Promise<boolean> {
    const key = this.tripKey(guard, trip.revisions);
    return (await this.redis.set(key, JSON.stringify(trip), 'PX', 7 * 86_400_000, 'NX')) === 'OK';
  }

  async updateTrip(guard: Guard, trip: GuardTrip): Promise<void> {
    await this.redis.set(this.tripKey(guard, trip.revisions), JSON.stringify(trip), 'KEEPTTL');
  }

  async trip(guard: Guard, revisions: string[]): Promise<GuardTrip | undefined> {
    const json = await this.redis.get(this.tripKey(guard, revisions));
    const parsed = json ? tripSchema.safeParse(safeJson(json)) : undefined;
    return parsed?.success ? parsed.data : undefined;
  }

  private tripKey(guard: Guard, revisions: string[]): string {
    return `${this.tripBase}${guardKey(guard)}:${guard.createdAt}:${[...revisions].sort().join(',')}`;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
