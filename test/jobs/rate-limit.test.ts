import { afterAll, describe, expect, it } from 'vitest';
import { InstanceRateLimiter } from '../../src/infra/rate-limit.js';
import { createRedis, closeRedis, type RedisClient } from '../../src/infra/redis.js';
import { cleanPrefix, testPrefix } from '../runbooks/fake-argo.js';

const prefix = testPrefix();
const connections: RedisClient[] = [];
afterAll(async () => {
  for (const c of connections) await closeRedis(c);
  await cleanPrefix(process.env.REDIS_URL!, prefix);
});

describe('per-instance rate limit shared by every worker', () => {
  it('two workers on separate connections draw from one bucket: 10 per 500 ms, 30 calls take at least 1 s', async () => {
    const limits = new Map([['argo-prod', { max: 10, perMs: 500 }]]);
    const workers = [0, 1].map(() => {
      const c = createRedis(process.env.REDIS_URL!);
      connections.push(c);
      return new InstanceRateLimiter(c, prefix, limits);
    });
    const started = Date.now();
    const at: number[] = [];
    await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        await workers[i % 2].acquire('argo-prod');
        at.push(Date.now() - started);
      }),
    );
    at.sort((a, b) => a - b);
    // The bucket starts full (10 at once), then refills at 20/s: the 30th call waits ~1 s.
    expect(at[9]).toBeLessThan(300);
    expect(at[29]).toBeGreaterThanOrEqual(900);
    // No 500 ms window holds more than the bucket plus what refills in it.
    for (let i = 0; i + 21 < at.length; i++) expect(at[i + 21] - at[i]).toBeGreaterThan(450);
  });

  it('leaves instances without a limit alone and honours an abort', async () => {
    const c = createRedis(process.env.REDIS_URL!);
    connections.push(c);
    const limiter = new InstanceRateLimiter(c, prefix, new Map([['slow', { max: 1, perMs: 10_000 }]]));
    const t = Date.now();
    for (let i = 0; i < 20; i++) await limiter.acquire('unlimited');
    expect(Date.now() - t).toBeLessThan(200);
    await limiter.acquire('slow');
    const abort = new AbortController();
    setTimeout(() => abort.abort('pause'), 100);
    await expect(limiter.acquire('slow', abort.signal)).rejects.toBeDefined();
  });
});
