/**
 * Issue 2: the mirror of a 10,000-app fleet. Time to build it from the simulator (list + watch through
 * the real ArgoClient and FleetMirror), the first `status` over it, and the bot process's RSS.
 * Each variant runs in a fresh process so RSS before/after is that variant's alone.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dispatch } from '../src/commands/index.js';
import type { CommandContext } from '../src/commands/registry.js';
import {
  buildMirror,
  header,
  isMain,
  loadLine,
  machineLine,
  ms,
  rssMb,
  simConfig,
  startSimChild,
  table,
} from './lib.js';

export interface FleetVariantResult {
  instances: number;
  apps: number;
  clusters: number;
  simStartMs: number;
  buildMs: number;
  firstStatusMs: number;
  secondStatusMs: number;
  statusTotal: number;
  rssBeforeMb: number;
  rssAfterMb: number;
  heapUsedAfterMb: number;
  calls: Record<string, number>;
}

const APPS = 10_000;
const CLUSTERS = 200;

async function variant(instances: number): Promise<FleetVariantResult> {
  // Streams answered at once: the build times the mirror's work, not the wait for quiet streams (sim-child.ts).
  const sim = await startSimChild({ kind: 'fleet', apps: APPS, clusters: CLUSTERS, instances, watchAnswer: 'at-once' });
  try {
    const config = simConfig(sim);
    const rssBeforeMb = rssMb();
    const bot = await buildMirror(config);
    const rssAfterMb = rssMb();
    const heapUsedAfterMb = process.memoryUsage().heapUsed / 2 ** 20;
    const ctx: CommandContext = {
      services: { config, fleet: bot.mirror, argocd: bot.argocd, now: () => new Date() },
      user: 'U_BENCH',
      surface: 'terminal',
    };
    let t = performance.now();
    const reply = await dispatch('status', ctx);
    const firstStatusMs = performance.now() - t;
    t = performance.now();
    await dispatch('status', ctx);
    const secondStatusMs = performance.now() - t;
    const data = reply.data as { total?: { apps?: number } } | undefined;
    if (!reply.ok || data?.total?.apps !== APPS)
      throw new Error(
        `status over the mirror answered ${reply.ok ? `${data?.total?.apps} apps` : JSON.stringify(reply.error)}, expected ${APPS}`,
      );
    const calls = bot.counter.byMethod();
    await bot.mirror.stop();
    return {
      instances,
      apps: bot.mirror.apps().length,
      clusters: bot.mirror.clusters().length,
      simStartMs: sim.info.startMs,
      buildMs: bot.buildMs,
      firstStatusMs,
      secondStatusMs,
      statusTotal: data.total.apps,
      rssBeforeMb,
      rssAfterMb,
      heapUsedAfterMb,
      calls,
    };
  } finally {
    await sim.stop();
  }
}

/** Runs one variant in a fresh child process (clean RSS). */
function variantInChild(instances: number): Promise<FleetVariantResult> {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), ['--variant', String(instances)], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    });
    let result: FleetVariantResult | undefined;
    child.on('message', (m) => (result = m as FleetVariantResult));
    child.stdout!.on('data', (d: Buffer) => process.stdout.write(d));
    child.on('exit', (code) =>
      result ? resolve(result) : reject(new Error(`fleet variant (${instances} instances) exited with ${code}`)),
    );
  });
}

export async function runFleetBench(): Promise<FleetVariantResult[]> {
  header(`fleet mirror: ${APPS} apps on ${CLUSTERS} clusters`);
  console.log(`  ${machineLine()}`);
  const results = [await variantInChild(1), await variantInChild(2)];
  table([
    [
      'instances',
      'apps',
      'clusters',
      'mirror build ms',
      '1st status ms',
      '2nd status ms',
      'RSS before MB',
      'RSS after MB',
      'heap used MB',
      'Argo CD calls',
    ],
    ...results.map((r) => [
      r.instances,
      r.apps,
      r.clusters,
      ms(r.buildMs),
      ms(r.firstStatusMs),
      ms(r.secondStatusMs),
      r.rssBeforeMb.toFixed(0),
      r.rssAfterMb.toFixed(0),
      r.heapUsedAfterMb.toFixed(0),
      Object.entries(r.calls)
        .map(([k, v]) => `${k}×${v}`)
        .join(' '),
    ]),
  ]);
  console.log(
    `  (simulator start in its own process: ${results.map((r) => `${(r.simStartMs / 1000).toFixed(1)} s`).join(', ')}; ${loadLine()})`,
  );
  return results;
}

if (isMain(import.meta.url)) {
  const i = process.argv.indexOf('--variant');
  if (i > 0) {
    variant(Number(process.argv[i + 1]))
      .then((r) => {
        process.send!(r);
        process.disconnect();
      })
      .catch((error: unknown) => {
        console.error(error);
        process.exit(1);
      });
  } else {
    runFleetBench().catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
  }
}
