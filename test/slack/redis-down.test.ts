import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRuntime, type Runtime } from '../../src/surfaces/cli/bootstrap.js';
import { startPrivateRedis, type PrivateRedis } from '../../src/infra/redis-server.js';
import { metricsRegistry } from '../../src/infra/metrics.js';
import type { SimServer } from '../../src/sim/server.js';
import { postSlashCommand } from '../support/slack-request.js';
import { startTestSim } from '../support/sim.js';
import { startHarness, SECRET, type Harness } from './harness.js';
import { allText } from './limits.js';

// A bot on a Redis of its own, which the test stops for real: Bolt's HTTP path in, the fake Web API out.
let redis: PrivateRedis;
let sim: SimServer;
let h: Harness;
let runtime: Runtime;

beforeAll(async () => {
  // Counting starts when the registry is made (as `rollcall start` does first).
  metricsRegistry();
  redis = await startPrivateRedis();
  sim = await startTestSim({ fixture: 'sim-multi-instance.json', speed: 1 });
  h = await startHarness({
    fleet: [],
    access: { operators: ['U0ALICE'] },
    redisUrl: redis.url,
    config: { instances: sim.instances.map((i) => ({ name: i.name, url: i.url, token: i.token })) },
    configure: async (services) => {
      // What `rollcall start --role bot` builds: the mirror, the run engine and the Redis stores.
      runtime = await startRuntime(services.config, { logger: pino({ level: 'silent' }) });
      await runtime.enableRuns({ role: 'bot', redisUrl: redis.url });
      Object.assign(services, runtime.services);
    },
  });
}, 30_000);
afterAll(async () => {
  await h?.stop();
  await runtime?.stop();
  await sim?.stop();
  await redis?.stop();
});

/** How many `runs` commands this process answered with the error code `result` (its metric carries the code). */
async function answered(result: string): Promise<number> {
  const metric = await metricsRegistry().getSingleMetric('rollcall_commands_total')!.get();
  return metric.values.find((v) => v.labels.command === 'runs' && v.labels.result === result)?.value ?? 0;
}

/** A signed `/argo <text>`, and the answer posted to its response_url, with how long that took from the request. */
async function slash(text: string): Promise<{ body: any; ms: number }> {
  const id = `r-${Math.random().toString(36).slice(2)}`;
  const started = performance.now();
  const res = await postSlashCommand(h.url, SECRET, { text, response_url: h.fake.responseUrl(id) });
  expect(res.status).toBe(200);
  await expect.poll(() => h.fake.responsesTo(id).length, { timeout: 10_000, interval: 20 }).toBe(1);
  return { body: h.fake.responsesTo(id)[0].body, ms: performance.now() - started };
}

describe('/argo with Redis down', () => {
  it(
    'answers `runs` with redis_unavailable within 2 s, `status` as ever, and `runs` again once Redis is back',
    { timeout: 60_000 },
    async () => {
      const up = await slash('runs');
      expect(allText(up.body.blocks)).not.toMatch(/redis_unavailable|Cannot reach Redis/);

      await redis.stop();
      const refusedBefore = await answered('redis_unavailable');
      const down = await slash('runs');
      const text = allText(down.body.blocks);
      expect(await answered('redis_unavailable')).toBe(refusedBefore + 1);
      expect(text).toContain(`Cannot reach Redis at 127.0.0.1:${redis.port}`);
      expect(text).toContain('Read-only fleet questions (status, app, clusters');
      expect(down.ms).toBeLessThan(2500);

      const status = await slash('status');
      expect(allText(status.body.blocks)).not.toMatch(/redis_unavailable|Cannot reach Redis/);
      expect(allText(status.body.blocks)).toMatch(/payments-prod-eu1|apps?/);
      expect(status.ms).toBeLessThan(2500);

      redis = await startPrivateRedis({ port: redis.port });
      await expect
        .poll(async () => allText((await slash('runs')).body.blocks), { timeout: 15_000, interval: 500 })
        .not.toMatch(/redis_unavailable|Cannot reach Redis/);
    },
  );
});
