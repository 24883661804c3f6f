import { afterEach, describe, expect, it } from 'vitest';
import { dispatch } from '../../src/commands/index.js';
import '../../src/commands/runbooks.js';
import type { CommandContext } from '../../src/commands/registry.js';
import { startEngine, type EngineHandle, type RunService } from '../../src/domain/runbooks/engine.js';
import { loadRunbooks, SHIPPED_RUNBOOKS_DIR } from '../../src/domain/runbooks/loader.js';
import type { SimServer } from '../../src/sim/server.js';
import { simFault, simOperations, startTestSim } from '../support/sim.js';
import { cleanPrefix, testPrefix } from './fake-argo.js';
import { FAST, RecordingNotifier } from './harness.js';
import { servicesForSim } from './sim-support.js';

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
  cleanup = [];
});

async function setup(opts: { speed?: number } = {}) {
  const sim: SimServer = await startTestSim({ scenario: 'seed-outage', manual: false, speed: opts.speed ?? 50 });
  cleanup.push(() => sim.stop());
  const notifier = new RecordingNotifier();
  const { services, fleet } = await servicesForSim(sim, { notifier });
  cleanup.push(() => fleet.stop());
  const prefix = testPrefix();
  const redisUrl = process.env.REDIS_URL!;
  cleanup.push(() => cleanPrefix(redisUrl, prefix));
  const engine: EngineHandle = await startEngine(services, {
    role: 'all',
    redisUrl,
    prefix,
    runbooks: loadRunbooks(SHIPPED_RUNBOOKS_DIR),
    ...FAST,
  });
  cleanup.push(() => engine.stop());
  services.runs = engine.runs;
  services.audit = engine.runs.audit;
  const ctx = (user: string): CommandContext => ({
    services,
    user,
    surface: 'terminal',
    channel: 'terminal',
    assumeYes: true,
  });
  return { sim, services, fleet, engine, runs: engine.runs as RunService, ctx, notifier };
}

const syncPosts = async (sim: SimServer) =>
  (await simOperations(sim)).filter((o) => o.method === 'POST' && /\/sync$/.test(o.path));

describe('bulk-sync against the simulator (seed-outage)', () => {
  it('syncs exactly the 12 auth-config apps, each once and with prune, and succeeds', async () => {
    const { sim, runs, ctx, fleet } = await setup();
    const reply = await dispatch('sync auth-config-* prune=true', ctx('U_OP'));
    expect(reply.ok, JSON.stringify(reply.error)).toBe(true);
    expect(reply.command).toBe('sync');
    const runId = (reply.data as any).runId;
    const preview = (await runs.get(runId))!.preview!.data as any;
    expect(preview.waves[0].apps).toHaveLength(12);
    expect(preview.clusters).toHaveLength(12);
    expect(preview.prune.resources).toBeGreaterThanOrEqual(12);

    const end = await runs.waitForEnd(runId, 25_000);
    expect(end.status, end.error).toBe('succeeded');
    const posts = await syncPosts(sim);
    const apps = posts.map((p) => p.app).sort();
    expect(apps).toHaveLength(12);
    expect(new Set(apps).size).toBe(12);
    expect(apps.every((a) => a!.startsWith('auth-config-'))).toBe(true);
    // Argo CD's own history says who asked, not only the bot's account.
    for (const p of posts)
      expect(p.body).toMatchObject({
        prune: true,
        infos: [
          { name: 'rollcall-run', value: runId },
          { name: 'Requested by', value: `U_OP (terminal, via rollcall run ${runId})` },
        ],
      });
    // The fix worked: every auth-config app is Synced and Healthy in the mirror.
    const configs = fleet.apps().filter((a) => a.app.metadata.name.startsWith('auth-config-'));
    expect(
      configs.every((a) => a.app.status?.sync?.status === 'Synced' && a.app.status?.health?.status === 'Healthy'),
    ).toBe(true);
  });

  it('refuses a user without permission and nothing reaches Argo CD', async () => {
    const { sim, ctx } = await setup();
    const reply = await dispatch('sync auth-config-* prune=true', ctx('U_INTRUDER'));
    expect(reply.ok).toBe(false);
    expect(reply.error!.code).toBe('forbidden');
    expect(await syncPosts(sim)).toEqual([]);
    // A typo'd glob is answered with suggestions a sync can take as they are.
    const typo = await dispatch('sync auth-confg-*', ctx('U_OP'));
    expect(typo.error).toMatchObject({
      code: 'unknown_target',
      suggestions: expect.arrayContaining(['appset=auth-config']),
    });
  });

  it('completes through a spell of Argo CD 503s and 429s, syncing each app once', async () => {
    const { sim, runs, ctx } = await setup();
    const instance = sim.instances[0].name;
    // Longer than the client's own retries last, so bulk-sync sees failed POSTs and must verify before re-sending.
    const r1 = await simFault(sim, {
      instance,
      kind: 'http5xx',
      status: 503,
      forMs: 3000,
      method: 'POST',
      match: '/sync',
    });
    const r2 = await simFault(sim, {
      instance,
      kind: 'http429',
      count: 30,
      retryAfterSeconds: 0,
      method: 'POST',
      match: '/sync',
    });
    expect([r1.status, r2.status]).toEqual([200, 200]);
    const started = Date.now();
    const reply = await dispatch('sync auth-config-* prune=true', ctx('U_OP'));
    const runId = (reply.data as any).runId;
    const end = await runs.waitForEnd(runId, 25_000);
    expect(end.status, end.error).toBe('succeeded');
    expect(Date.now() - started).toBeGreaterThan(3000);
    // Every fault was spent on our POSTs.
    expect(((await (await fetch(`${sim.url}/_sim/faults`)).json()) as any).http).toEqual([]);
    const accepted = (await syncPosts(sim)).filter((p) => !p.status || p.status < 300);
    expect(accepted.map((p) => p.app).sort()).toEqual([...new Set(accepted.map((p) => p.app))].sort());
    expect(accepted).toHaveLength(12);
  });
});
