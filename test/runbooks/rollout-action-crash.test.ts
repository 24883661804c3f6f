import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startEngine, type RunService } from '../../src/domain/runbooks/engine.js';
import { loadRunbooks, SHIPPED_RUNBOOKS_DIR } from '../../src/domain/runbooks/loader.js';
import type { SimServer } from '../../src/sim/server.js';
import { simOperations, startTestSim } from '../support/sim.js';
import { cleanPrefix, testPrefix } from './fake-argo.js';
import { FAST } from './harness.js';
import { servicesForSim } from './sim-support.js';

// A worker killed mid-way through `abort storefront-*`: the worker that takes the run over sends abort to the
// Rollouts not yet done and never a second time to one the dead worker already sent it to.

const here = path.dirname(fileURLToPath(import.meta.url));
let cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
  cleanup = [];
});

/** A worker process (worker-child.ts), modules loaded; `start()` starts its engine. */
async function spawnWorker(sim: SimServer, redisUrl: string, prefix: string) {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', path.join(here, 'worker-child.ts')], {
    env: { ...process.env, SIM_INSTANCES: JSON.stringify(sim.instances), REDIS_URL: redisUrl, PREFIX: prefix },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  cleanup.push(async () => child.exitCode === null && child.kill('SIGKILL'));
  const seen = (word: string) =>
    new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (d) => String(d).includes(word) && resolve());
      child.once('exit', (code) => reject(new Error(`worker exited early (${code})`)));
    });
  await seen('loaded');
  return {
    child,
    start: async () => {
      const ready = seen('ready');
      child.stdin!.write('start\n');
      await ready;
    },
  };
}

/** Abort requests that reached the simulator's Argo CD, per app. */
async function aborts(sim: SimServer): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const o of await simOperations(sim))
    if (
      o.method === 'POST' &&
      o.path.endsWith('/resource/actions/v2') &&
      (o.body as { action?: string }).action === 'abort'
    )
      counts.set(o.app!, (counts.get(o.app!) ?? 0) + 1);
  return counts;
}

describe('Rollout actions survive a worker crash', () => {
  it(
    'SIGKILL of the worker after a few aborts: a new worker finishes the run, each Rollout sent abort exactly once',
    { timeout: 90_000 },
    async () => {
      const sim = await startTestSim({ scenario: 'canary-rollouts', manual: false, speed: 30 });
      cleanup.push(() => sim.stop());
      const redisUrl = process.env.REDIS_URL!;
      const prefix = testPrefix();
      cleanup.push(() => cleanPrefix(redisUrl, prefix));
      const { services, fleet } = await servicesForSim(sim);
      cleanup.push(() => fleet.stop());
      const bot = await startEngine(services, {
        role: 'bot',
        redisUrl,
        prefix,
        runbooks: loadRunbooks(SHIPPED_RUNBOOKS_DIR),
        ...FAST,
      });
      cleanup.push(() => bot.stop());
      const runs = bot.runs as RunService;
      const [first, second] = await Promise.all([
        spawnWorker(sim, redisUrl, prefix),
        spawnWorker(sim, redisUrl, prefix),
      ]);
      await first.start();
      const run = await runs.start({
        runbook: 'rollout-action',
        params: { selector: 'storefront-*', verb: 'abort', concurrency: '1' },
        user: 'U_OP',
        surface: 'terminal',
      });
      const offered = (run.preview!.data as any).plan.waves[0].rollouts.length as number;
      expect(offered).toBe(10);
      await runs.confirm(run.id, 'U_OP');
      await expect
        .poll(async () => (await aborts(sim)).size, { timeout: 30_000, interval: 50 })
        .toBeGreaterThanOrEqual(3);
      first.child.kill('SIGKILL');
      await new Promise((r) => first.child.once('exit', r));
      expect((await aborts(sim)).size).toBeLessThan(offered);

      await second.start();
      const end = await runs.waitForEnd(run.id, 60_000);
      expect(end.status, end.error).toBe('succeeded');
      const counts = await aborts(sim);
      expect(counts.size).toBe(offered);
      expect([...counts.values()].every((n) => n === 1)).toBe(true);
    },
  );
});
