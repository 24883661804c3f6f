import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startPrivateRedis, type PrivateRedis } from '../../src/infra/redis-server.js';
import { startEngine, type RunService } from '../../src/domain/runbooks/engine.js';
import { loadRunbooks, SHIPPED_RUNBOOKS_DIR } from '../../src/domain/runbooks/loader.js';
import type { SimServer } from '../../src/sim/server.js';
import { simOperations, startTestSim } from '../support/sim.js';
import { cleanPrefix, testPrefix } from './fake-argo.js';
import { FAST } from './harness.js';
import { servicesForSim } from './sim-support.js';

const here = path.dirname(fileURLToPath(import.meta.url));
let cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
  cleanup = [];
});

async function seedOutage(speed = 50): Promise<SimServer> {
  const sim = await startTestSim({ scenario: 'seed-outage', manual: false, speed });
  cleanup.push(() => sim.stop());
  return sim;
}

async function syncCounts(sim: SimServer): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const o of await simOperations(sim))
    if (o.method === 'POST' && /\/sync$/.test(o.path) && (!o.status || o.status < 300))
      counts.set(o.app!, (counts.get(o.app!) ?? 0) + 1);
  return counts;
}

/** A worker process, modules loaded; `start()` starts its engine and resolves when it is ready. */
async function spawnWorker(
  sim: SimServer,
  redisUrl: string,
  prefix: string,
): Promise<{ child: ChildProcess; start(): Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(here, 'worker-child.ts')], {
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

describe('runs survive crashes', () => {
  it(
    'SIGKILL of the worker process mid-way through a 540-app sync: a new worker finishes it, each app synced exactly once',
    { timeout: 90_000 },
    async () => {
      const sim = await seedOutage(200);
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
        runbook: 'bulk-sync',
        params: {
          selector: '*',
          prune: 'true',
          includeSynced: 'true',
          concurrency: '60',
          gate: 'synced',
          confirm: '540',
        },
        user: 'U_OP',
        surface: 'terminal',
      });
      expect((run.preview!.data as any).waves[0].apps).toHaveLength(540);
      await runs.confirm(run.id, 'U_OP');
      await expect
        .poll(async () => [...(await syncCounts(sim)).values()].length, { timeout: 30_000, interval: 100 })
        .toBeGreaterThan(100);
      first.child.kill('SIGKILL');
      await new Promise((r) => first.child.once('exit', r));
      const atKill = (await syncCounts(sim)).size;
      expect(atKill).toBeLessThan(540);

      const killedAt = Date.now();
      await second.start();
      // What the run did after the kill, every 2 s: said if the run does not end, as the engine's logs go to stderr.
      const timeline: string[] = [`second worker ready after ${Date.now() - killedAt} ms`];
      const sampler = setInterval(() => {
        void Promise.all([syncCounts(sim), runs.get(run.id)]).then(([counts, now]) =>
          timeline.push(
            `${Date.now() - killedAt} ms: ${counts.size} apps synced, run ${now?.status}, ` +
              `attempts ${now?.steps.map((s) => s.attempts).join('/')}, ` +
              `progress ${JSON.stringify(now?.progress ?? {}).slice(0, 200)}`,
          ),
        );
      }, 2000);
      const end = await runs
        .waitForEnd(run.id, 60_000)
        .catch((e: Error) => {
          throw new Error([e.message, ...timeline].join('\n'));
        })
        .finally(() => clearInterval(sampler));
      expect(end.status, [end.error, ...timeline].join('\n')).toBe('succeeded');
      const counts = await syncCounts(sim);
      expect(counts.size).toBe(540);
      expect([...counts.values()].every((n) => n === 1)).toBe(true);
    },
  );

  it(
    'a Redis restart (with persistence) mid-run: the run completes, each app synced exactly once',
    { timeout: 90_000 },
    async () => {
      const sim = await seedOutage();
      const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-redis-restart-'));
      cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
      let redis: PrivateRedis = await startPrivateRedis({ persistent: true, dir });
      cleanup.push(() => redis.stop());
      const prefix = testPrefix();
      const { services, fleet } = await servicesForSim(sim);
      cleanup.push(() => fleet.stop());
      const engine = await startEngine(services, {
        role: 'all',
        redisUrl: redis.url,
        prefix,
        runbooks: loadRunbooks(SHIPPED_RUNBOOKS_DIR),
        ...FAST,
      });
      cleanup.push(() => engine.stop());
      const runs = engine.runs as RunService;

      const run = await runs.start({
        runbook: 'bulk-sync',
        params: {
          selector: 'auth-config-*,sessions-*,accounts-*',
          prune: 'true',
          includeSynced: 'true',
          concurrency: '10',
        },
        user: 'U_OP',
        surface: 'terminal',
      });
      const total = (run.preview!.data as any).waves[0].apps.length as number;
      expect(total).toBe(36);
      await runs.confirm(run.id, 'U_OP');
      await expect
        .poll(async () => (await syncCounts(sim)).size, { timeout: 30_000, interval: 50 })
        .toBeGreaterThanOrEqual(10);
      await redis.stop();
      await new Promise((r) => setTimeout(r, 800));
      redis = await startPrivateRedis({ persistent: true, dir, port: redis.port });
      const end = await runs.waitForEnd(run.id, 60_000);
      expect(end.status, end.error).toBe('succeeded');
      const counts = await syncCounts(sim);
      expect(counts.size).toBe(total);
      expect([...counts.values()].every((n) => n === 1)).toBe(true);
    },
  );
});
