import { z } from 'zod';
import { keyBase, type RedisClient } from '../../infra/redis.js';

/**
 * A metric check failing on apps rollcall is watching (a guarded rollout, the watch after a bulk sync).
 * Whoever watches raises it while the check fails and clears it when the check passes again or the watch
 * ends; the alert rules read the current set, so the alert resolves the way every other alert does.
 */
export const regressionSchema = z.object({
  key: z.string(),
  source: z.enum(['guard', 'watch']),
  instance: z.string(),
  appSet: z.string().optional(),
  runId: z.string().optional(),
  checks: z.array(z.string()),
  apps: z.array(z.string()),
  since: z.string(),
  summary: z.string(),
  details: z.array(z.string()),
  /** Epoch ms after which the regression is dropped even if nobody cleared it (a watcher that died). */
  expiresAt: z.number(),
});
export type Regression = z.infer<typeof regressionSchema>;

/** The regressions every process sees, in one Redis hash keyed by who raised them. */
export class RegressionStore {
  private readonly key: string;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
  ) {
    this.key = `${keyBase(prefix)}regressions`;
  }

  /** Raises or refreshes one; a regression already raised keeps its `since`. */
  async raise(regression: Regression): Promise<void> {
    const before = await this.get(regression.key);
    const since = before?.since ?? regression.since;
    await this.redis.hset(this.key, regression.key, JSON.stringify({ ...regression, since }));
  }

  async clear(key: string): Promise<void> {
    await this.redis.hdel(this.key, key);
  }

  async get(key: string): Promise<Regression | undefined> {
    const json = await this.redis.hget(this.key, key);
    return json ? parse(json) : undefined;
  }

  /** The regressions in force at `nowMs`; expired ones are removed as they are met. */
  async list(nowMs: number): Promise<Regression[]> {
    const all = await this.redis.hgetall(this.key);
    const out: Regression[] = [];
    for (const [field, json] of Object.entries(all)) {
      const r = parse(json);
      if (!r || r.expiresAt <= nowMs) await this.redis.hdel(this.key, field);
      else out.push(r);
    }
    return out.sort((a, b) => a.key.localeCompare(b.key));
  }
}

function parse(json: string): Regression | undefined {
  try {
    const parsed = regressionSchema.safeParse(JSON.parse(json));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
