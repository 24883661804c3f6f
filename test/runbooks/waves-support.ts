import { dispatch } from '../../src/commands/index.js';
import '../../src/commands/runbooks.js';
import type { CommandContext } from '../../src/commands/registry.js';
import type { Application } from '../../src/infra/argocd/types.js';
import {
  startEngine,
  type EngineHandle,
  type EngineOptions,
  type RunService,
} from '../../src/domain/runbooks/engine.js';
import { loadRunbooks, SHIPPED_RUNBOOKS_DIR } from '../../src/domain/runbooks/loader.js';
import type { Run } from '../../src/domain/runbooks/run-store.js';
import type { Fixture } from '../../src/sim/fixture-types.js';
import { application, cluster, commit, serviceResources } from '../../src/sim/scenarios/builders.js';
import type { SimServer } from '../../src/sim/server.js';
import type { SimOperation } from '../../src/sim/store.js';
import { simOperations, startTestSim } from '../support/sim.js';
import { cleanPrefix, testPrefix } from './fake-argo.js';
import { FAST, RecordingNotifier } from './harness.js';
import { servicesForSim } from './sim-support.js';

export const INSTANCE = 'prod';
const REPO = 'https://git.example.com/shop/deploy.git';
/** What the apps ran two deployments ago, what they run now, and the commit they are OutOfSync to. */
export const REV = { old: commit('shop: v1.3'), current: commit('shop: v1.4'), next: commit('shop: v1.5') };

/** shop-01 is the canary, 02-05 take little traffic, 06-13 most of it: one app per cluster (prod-01 ...). */
export const TIER: Record<string, 'canary' | 'low-traffic' | 'high-traffic'> = Object.fromEntries(
  Array.from({ length: 13 }, (_, i) => {
    const n = i + 1;
    return [`shop-${String(n).padStart(2, '0')}`, n === 1 ? 'canary' : n <= 5 ? 'low-traffic' : 'high-traffic'];
  }),
);
export const appsOfTier = (tier: string) => Object.keys(TIER).filter((a) => TIER[a] === tier);
export const clusterOf = (app: string) => `prod-${app.slice('shop-'.length)}`;

/**
 * Thirteen `shop` apps labelled by tier, each OutOfSync to REV.next with two deployments in its history
 * (REV.old, then REV.current), auto-sync off (as Argo CD requires for a rollback).
 */
export function tieredFixture(now = new Date()): Fixture {
  const names = Object.keys(TIER);
  return {
    instances: [
      {
        name: INSTANCE,
        clusters: names.map((a) =>
          cluster({ name: clusterOf(a), server: `https://${clusterOf(a)}.k8s.example.com`, now }),
        ),
        applications: names.map((name) =>
          application({
            name,
            now,
            source: { repoURL: REPO, path: 'apps/shop', targetRevision: 'main' },
            destination: { name: clusterOf(name), namespace: 'shop' },
            labels: { app: 'shop', tier: TIER[name] },
            resources: serviceResources({ name: 'shop', namespace: 'shop', sync: 'OutOfSync' }),
            sync: 'OutOfSync',
            revision: REV.next,
            health: 'Healthy',
            history: [
              { revision: REV.old, minutesAgo: 3 * 24 * 60 },
              { revision: REV.current, minutesAgo: 24 * 60 },
            ],
          }),
        ),
      },
    ],
  };
}

export interface WavesEnv {
  sim: SimServer;
  runs: () => RunService;
  engine: EngineHandle;
  services: Awaited<ReturnType<typeof servicesForSim>>['services'];
  notifier: RecordingNotifier;
  prefix: string;
  redisUrl: string;
  /** Another engine on the same Redis, fleet and clock: the worker that takes over after a crash. */
  startAnother(): Promise<EngineHandle>;
  ctx(user?: string, assumeYes?: boolean): CommandContext;
  /** Simulated time now (ms): the simulator's clock, which the engine's steps read too. */
  now(): number;
  simApp(name: string): Application;
  close(): Promise<void>;
}

/**
 * The tiered fleet on a simulator whose time moves only when the test says (`drive`), and a rollcall
 * engine whose steps read that same clock: a bake of 30 s is 30 simulated seconds, whatever the machine does.
 */
export async function startWaves(): Promise<WavesEnv> {
  const cleanup: (() => Promise<unknown>)[] = [];
  const close = async () => {
    for (const c of cleanup.reverse()) await c().catch(() => {});
  };
  try {
    const sim = await startTestSim({ fixture: tieredFixture(), manual: true });
    cleanup.push(() => sim.stop());
    const notifier = new RecordingNotifier();
    const { services, fleet } = await servicesForSim(sim, { notifier });
    cleanup.push(() => fleet.stop());
    const prefix = testPrefix();
    const redisUrl = process.env.REDIS_URL!;
    cleanup.push(() => cleanPrefix(redisUrl, prefix));
    const now = () => sim.controller.clock.now().getTime();
    const options: EngineOptions = {
      role: 'all',
      redisUrl,
      prefix,
      runbooks: loadRunbooks(SHIPPED_RUNBOOKS_DIR),
      ...FAST,
      clock: now,
    };
    const engines: EngineHandle[] = [await startEngine(services, options)];
    cleanup.push(async () => {
      for (const e of engines) await e.stop().catch(() => {});
    });
    const attach = (e: EngineHandle) => {
      services.runs = e.runs;
      services.audit = e.runs.audit;
    };
    attach(engines[0]);
    return {
      sim,
      runs: () => services.runs as RunService,
      engine: engines[0],
      services,
      notifier,
      prefix,
      redisUrl,
      async startAnother() {
        const e = await startEngine(services, options);
        engines.push(e);
        attach(e);
        return e;
      },
      ctx: (user = 'U_OP', assumeYes = true) => ({
        services,
        user,
        surface: 'terminal',
        channel: 'terminal',
        assumeYes,
      }),
      now,
      simApp: (name) => sim.state.instance(INSTANCE)!.apps.get(name)!,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** Starts `sync` as U_OP (confirmed) and returns the run id. */
export async function startSync(env: WavesEnv, text: string): Promise<string> {
  const reply = await dispatch(text, env.ctx());
  if (!reply.ok) throw new Error(`${text}: ${JSON.stringify(reply.error)}`);
  return (reply.data as { runId: string }).runId;
}

/**
 * Moves simulated time a second at a time, letting rollcall (mirror, engine) react in between, until
 * `done` holds. `each` runs before every step (to sample what the simulator shows). Throws after
 * `maxSimMs` of simulated time or `realMs` of real time.
 */
export async function drive(
  env: WavesEnv,
  done: () => boolean | Promise<boolean>,
  opts: { what?: string; maxSimMs?: number; realMs?: number; each?: () => void } = {},
): Promise<void> {
  const { maxSimMs = 10 * 60_000, realMs = 45_000, what = 'condition' } = opts;
  const startSim = env.now();
  const deadline = Date.now() + realMs;
  for (;;) {
    opts.each?.();
    if (await done()) return;
    if (env.now() - startSim > maxSimMs || Date.now() > deadline)
      throw new Error(`timed out driving the simulator until ${what}`);
    env.sim.controller.advance(1000);
    await new Promise((r) => setTimeout(r, 40));
  }
}

/** Waits in real time (the simulator's clock stands still) until `done` holds. */
export async function settle(done: () => boolean | Promise<boolean>, what = 'condition', realMs = 15_000) {
  const deadline = Date.now() + realMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export const syncPosts = async (sim: SimServer): Promise<SimOperation[]> =>
  (await simOperations(sim)).filter((o) => o.method === 'POST' && /\/sync$/.test(o.path));
export const rollbackPosts = async (sim: SimServer): Promise<SimOperation[]> =>
  (await simOperations(sim)).filter((o) => o.method === 'POST' && /\/rollback$/.test(o.path));

export async function runOf(env: WavesEnv, runId: string): Promise<Run> {
  return (await env.runs().get(runId))!;
}

/** The wave the run is watching now (1-based), as its live progress says. */
export async function watching(env: WavesEnv, runId: string): Promise<Run['progress']> {
  return (await runOf(env, runId)).progress;
}
