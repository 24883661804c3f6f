import { afterEach, describe, expect, it } from 'vitest';
import { startEngine, type RunService } from '../../src/domain/runbooks/engine.js';
import { loadRunbooks, SHIPPED_RUNBOOKS_DIR } from '../../src/domain/runbooks/loader.js';
import { simOperations, startTestSim } from '../support/sim.js';
import { cleanPrefix, testPrefix } from './fake-argo.js';
import { FAST } from './harness.js';
import { servicesForSim } from './sim-support.js';

let cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
  cleanup = [];
});

/** A 540-app sync at concurrency 30 behind a rate limit of 2 per second: ~28 apps are always waiting on the limiter. */
async function rateLimitedRun() {
  const sim = await startTestSim({ scenario: 'seed-outage', manual: false, speed: 20 });
  cleanup.push(() => sim.stop());
  const redisUrl = process.env.REDIS_URL!;
  const prefix = testPrefix();
  cleanup.push(() => cleanPrefix(redisUrl, prefix));
  const { services, fleet } = await servicesForSim(sim, { rateLimit: { max: 2, per: 1000 } });
  cleanup.push(() => fleet.stop());
  const engine = await startEngine(services, {
    role: 'all',
    redisUrl,
    prefix,
    runbooks: loadRunbooks(SHIPPED_RUNBOOKS_DIR),
    ...FAST,
    concurrency: 30,
  });
  cleanup.push(() => engine.stop());
  const runs = engine.runs as RunService;
  const run = await runs.start({
    runbook: 'bulk-sync',
    params: { selector: '*', includeSynced: 'true', concurrency: '30', gate: 'none', confirm: '540' },
    user: 'U_OP',
    surface: 'terminal',
  });
  await runs.confirm(run.id, 'U_OP');
  const posts = async () =>
    (await simOperations(sim)).filter((o) => o.method === 'POST' && o.path.endsWith('/sync')).length;
  await expect.poll(posts, { timeout: 15_000, interval: 50 }).toBeGreaterThanOrEqual(4);
  return { runs, run, posts };
}

describe('abort and pause stop every call not yet sent, including those waiting on the rate limiter', () => {
  it('abort: not one POST after the abort is recorded', { timeout: 60_000 }, async () => {
    const { runs, run, posts } = await rateLimitedRun();
    const ended = await runs.abort(run.id, 'U_OP');
    expect(ended.status).toBe('aborted');
    const atAbort = await posts();
    await new Promise((r) => setTimeout(r, 3000));
    expect(await posts()).toBe(atAbort);
    expect(atAbort).toBeLessThan(20);
  });

  it('pause: not one POST while paused; resume continues', { timeout: 60_000 }, async () => {
    const { runs, run, posts } = await rateLimitedRun();
    expect((await runs.pause(run.id, 'U_OP')).status).toBe('paused');
    const atPause = await posts();
    await new Promise((r) => setTimeout(r, 3000));
    expect(await posts()).toBe(atPause);
    await runs.resume(run.id, 'U_OP');
    await expect.poll(posts, { timeout: 10_000, interval: 100 }).toBeGreaterThan(atPause);
    await runs.abort(run.id, 'U_OP');
  });
});
