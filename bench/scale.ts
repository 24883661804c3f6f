/**
 * How the bot's cost grows with the fleet: 1,000, 10,000 and 50,000 apps (the last over 5 Argo CD instances, as
 * CNOE's 50,000-app scale test spread its apps). Each size runs in a fresh process (`--one N`), so its RSS is that
 * size's alone, against the simulator in another process:
 * - mirror build (FleetMirror.start: every list, streams connected) against the floor: bare node fetching and
 *   JSON.parse-ing the same three lists from the same instances in the same process, taking turns with the builds;
 *   the first build (cold: its code not yet compiled) is shown apart from the warm ones the target is judged on;
 * - warm `status` and `rollout <RollingSync appset>` p95 through dispatch(), each run computing its answer;
 * - a bot process's memory (`rollcall start --role bot` in a process of its own, `bot-process.ts`): RSS after its
 *   start-up and a full GC, its peak (VmHWM) and V8 heap in use; every app has ten deployments in its history;
 * - watch events absorbed per second: the simulator changes 2,000 apps at once, timed until the mirror has seen
 *   every one of them (the first instance's apps).
 *
 * `node --expose-gc --import tsx bench/scale.ts [--sizes 1000,10000,50000] [--latency-ms 20]`: with a latency, every
 * request to the simulator is answered that much later (its latency fault), as an Argo CD across a network is.
 */
import { fork } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parse } from 'yaml';
import type { FleetEvent } from '../src/fleet/events.js';
import { summarizeApps } from '../src/fleet/status.js';
import {
  BENCH_DIR,
  cleanPrefix,
  buildMirror,
  header,
  isMain,
  loadLine,
  machineLine,
  ms,
  simConfig,
  startSimChild,
  table,
  type SimChild,
} from './lib.js';
import { REDIS_URL, ask, idleMemory, quiet, sleep, startBot, startSlackApi, type Bot } from './bot-process.js';
import { benchContext, benchFreezes, measure, pickRollingSyncAppSet } from './queries.js';
import type { SimChildChange, SimChildDelete, SimChildDeleted } from './sim-child.js';

const RUNS = 50;
const CHANGING = 2000;
/** Apps deleted at once, as deleting a large ApplicationSet does. */
const DELETING = 500;
const BURSTS = 3;
/**
 * Warm builds per size. A 1,000-app build takes about a tenth of a second, where one scheduling hiccup on a shared
 * 2-CPU machine is a large share of it (two runs minutes apart gave 1.25× and 1.36×): nine of them, and nine floors
 * between, make its median steadier. Larger fleets take seconds each: three.
 */
const warmBuildsFor = (apps: number) => (apps <= 1000 ? 9 : 3);
const DIAGNOSE_RUNS = 20;
const TARGETS = { buildVsFloor: 1.3, statusP95At50k: 50, eventsPerS: 2000, rss10k: 180, rss50k: 450 };

export interface ScaleResult {
  apps: number;
  instances: number;
  /** Median of the floors taken between the builds. */
  floorMs: number;
  /** The first mirror this process builds: its code not yet compiled, as at a bot's start-up. */
  coldBuildMs: number;
  /** Median of the builds after it, each taken between two floors. */
  buildMs: number;
  statusP95: number;
  statusP50: number;
  rolloutP95: number;
  /** A bot process mirroring the fleet: RSS after a full GC, its peak (VmHWM) and V8 heap in use, MB. */
  rssMb: number;
  peakMb: number;
  heapMb: number;
  /** The same with the chart's `bot.nodeFlags` (its V8 heap cap), as a pod runs it. */
  chart: { rssMb: number; peakMb: number };
  eventsPerS: number;
  /**
   * `status` and `diagnose` once most of the fleet is failing (the churn swept it, flipping each app's health): as
   * an incident asks.
   */
  incident: { problems: number; p50: number; p95: number; diagnose: { p50: number; p95: number } };
  /** An ApplicationSet's apps deleted at once: how many, until the mirror removed them all, its longest stall. */
  deletion: { apps: number; ms: number; stallMs: number };
  /** The bot's own CPU (user + system) per 1,000 app events absorbed: robust to the machine's load, unlike events/s. */
  cpuMsPerKEvents: number;
  load: string;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const instancesFor = (apps: number) => (apps >= 50_000 ? 5 : 1);

/** Bare node: the three lists the mirror starts from, fetched and parsed, every instance at once. */
async function floor(sim: SimChild): Promise<number> {
  const t0 = performance.now();
  await Promise.all(
    sim.instances.flatMap((i) =>
      ['applications', 'applicationsets', 'clusters'].map(async (list) => {
        const res = await fetch(`${i.url}/api/v1/${list}`, { headers: { authorization: `Bearer ${i.token}` } });
        const parsed = JSON.parse(await res.text()) as { items?: unknown[] };
        if (!res.ok || !Array.isArray(parsed.items)) throw new Error(`${list} of ${i.name}: HTTP ${res.status}`);
      }),
    ),
  );
  return performance.now() - t0;
}

/**
 * `status` and `diagnose` mid-incident: the simulator's churn sweeps the whole fleet once, flipping each app's health,
 * so most apps end up Degraded, each with a reason of its own; the answers are timed once the mirror has every change.
 */
async function midIncidentStatus(sim: Awaited<ReturnType<typeof startSimChild>>): Promise<ScaleResult['incident']> {
  const bot = await buildMirror(simConfig(sim));
  const store = benchFreezes();
  try {
    return await sweptStatus(benchContext(bot, store.freezes), bot, sim);
  } finally {
    await store.close();
    await bot.mirror.stop();
  }
}

async function sweptStatus(
  ctx: ReturnType<typeof benchContext>,
  bot: Awaited<ReturnType<typeof buildMirror>>,
  sim: Awaited<ReturnType<typeof startSimChild>>,
): Promise<ScaleResult['incident']> {
  const apps = bot.mirror.apps().length;
  const perSecond = Math.min(5000, Math.ceil(apps / 5));
  sim.child.send({ kind: 'churn', perSecond });
  await sleep(Math.ceil(apps / perSecond) * 1000 + 1000);
  sim.child.send({ kind: 'churn', perSecond: 0 });
  // Caught up: no change for a second.
  for (let seen = -1; seen !== bot.mirror.version();) {
    seen = bot.mirror.version();
    await sleep(1000);
  }
  const problems = summarizeApps(bot.mirror.apps()).problems.length;
  const status = await measure(ctx, 'status', () => '', RUNS);
  const diagnose = await measure(ctx, 'diagnose', () => '', DIAGNOSE_RUNS);
  return {
    problems,
    p50: status.answer.p50,
    p95: status.answer.p95,
    diagnose: { p50: diagnose.answer.p50, p95: diagnose.answer.p95 },
  };
}

/**
 * An ApplicationSet deleted with its apps: `count` apps of the first instance deleted at once, timed until the mirror
 * has removed every one, along with the bot's longest stall meanwhile (node's event-loop delay, its max); then created again
 * (untimed), so the fleet the next measures read is the same.
 */
async function timedDeletion(
  bot: Awaited<ReturnType<typeof buildMirror>>,
  sim: SimChild,
  count: number,
): Promise<ScaleResult['deletion']> {
  let removed = 0;
  let added = 0;
  const unsubscribe = bot.mirror.subscribe((e: FleetEvent) => {
    if (e.kind === 'app-removed') removed++;
    else if (e.kind === 'app-added') added++;
  });
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  try {
    const t0 = performance.now();
    await ask<SimChildDeleted>(sim.child, { kind: 'delete', count, restore: false } satisfies SimChildDelete);
    while (removed < count) await sleep(2);
    const ms = performance.now() - t0;
    loop.disable();
    const stallMs = loop.max / 1e6;
    await ask<SimChildDeleted>(sim.child, { kind: 'delete', count, restore: true } satisfies SimChildDelete);
    while (added < count) await sleep(2);
    return { apps: count, ms, stallMs };
  } finally {
    loop.disable();
    unsubscribe();
  }
}

/** One size, in this process: prints nothing, returns its numbers. */
async function measureOne(apps: number, latencyMs: number): Promise<ScaleResult> {
  const instances = instancesFor(apps);
  // Every app with ten deployments in its history, Argo CD's default limit, as a fleet that has run a while. Streams
  // answered at once, as a fleet's apps stream is within moments of its apps reconciling: the build times the
  // mirror's work, not the wait for a stream over objects that do not change (sim-child.ts).
  const sim = await startSimChild({
    kind: 'fleet',
    apps,
    clusters: Math.max(1, Math.round(apps / 50)),
    instances,
    fullHistory: true,
    watchAnswer: 'at-once',
  });
  try {
    // An Argo CD across a network answers every request some milliseconds late: the floor and the bot both wait.
    if (latencyMs > 0) await addLatency(sim, latencyMs);
    // Both sides compared like with like: the simulator answers each list once before any is timed (its own first
    // answer is slower), the first build is the cold one, and then floors and builds take turns, so each warm build
    // is timed between two floors at the machine's load of that moment.
    await floor(sim);
    const coldBuildMs = await buildOnce(sim);
    const floors = [await floor(sim)];
    const builds: number[] = [];
    for (let i = 1; i < warmBuildsFor(apps); i++) {
      builds.push(await buildOnce(sim));
      floors.push(await floor(sim));
    }
    // The last build is kept for the answers and the events: one mirror in the heap, as in a bot, collected clean.
    const bot = await buildMirror(simConfig(sim));
    builds.push(bot.buildMs);
    floors.push(await floor(sim));
    globalThis.gc?.();
    const store = benchFreezes();
    let inProcess: ScaleResult;
    try {
      const ctx = benchContext(bot, store.freezes);
      const status = await measure(ctx, 'status', () => '', RUNS);
      // An appset of the same name on several instances needs its instance named.
      const appSet = pickRollingSyncAppSet(bot);
      const on = instances > 1 ? ` instance=${bot.mirror.appSetsNamed(appSet)[0].instance}` : '';
      const rollout = await measure(ctx, `rollout ${appSet}${on}`, () => '', RUNS);
      let events = 0;
      bot.mirror.subscribe((e: FleetEvent) => {
        if (e.kind === 'app-changed') events++;
      });
      const perS: number[] = [];
      const cpuPerK: number[] = [];
      for (let round = 0; round <= BURSTS; round++) {
        const count = Math.min(CHANGING, Math.floor(apps / instances));
        const target = events + count;
        const t0 = performance.now();
        const cpu0 = process.cpuUsage();
        const changed = new Promise<void>((resolve) => sim.child.once('message', () => resolve()));
        sim.child.send({ kind: 'change', count: CHANGING, round } satisfies SimChildChange);
        await changed;
        while (events < target) await new Promise((r) => setTimeout(r, 2));
        // The first burst warms the stream's parsing; the rest are measured.
        const cpu = process.cpuUsage(cpu0);
        if (round > 0) {
          perS.push(count / ((performance.now() - t0) / 1000));
          cpuPerK.push((cpu.user + cpu.system) / 1000 / (count / 1000));
        }
      }
      const deletion = await timedDeletion(bot, sim, Math.min(DELETING, Math.floor(apps / instances / 2)));
      const result = {
        apps,
        deletion,
        incident: { problems: 0, p50: 0, p95: 0, diagnose: { p50: 0, p95: 0 } },
        instances,
        floorMs: median(floors),
        coldBuildMs,
        buildMs: median(builds),
        statusP50: status.answer.p50,
        statusP95: status.answer.p95,
        rolloutP95: rollout.answer.p95,
        rssMb: 0,
        peakMb: 0,
        heapMb: 0,
        chart: { rssMb: 0, peakMb: 0 },
        eventsPerS: median(perS),
        cpuMsPerKEvents: median(cpuPerK),
        load: loadLine().replace('load avg now ', ''),
      };
      inProcess = result;
    } finally {
      await store.close();
      await bot.mirror.stop();
    }
    const defaults = await botProcessMemory(sim, []);
    // The chart's heap cap is sized for its memory limit, not for every fleet: past it the bot stops at start-up.
    const chart = await botProcessMemory(sim, chartBotFlags()).catch(() => ({ rssMb: NaN, peakMb: NaN }));
    // Last: the churn leaves another fleet behind (most apps failing), which the measures above must not read.
    const incident = await midIncidentStatus(sim);
    return { ...inProcess, ...defaults, chart: { rssMb: chart.rssMb, peakMb: chart.peakMb }, incident };
  } finally {
    await sim.stop();
  }
}

/** `bot.nodeFlags` of the Helm chart's values. */
function chartBotFlags(): string[] {
  const values = parse(readFileSync(path.join(BENCH_DIR, '../deploy/helm/rollcall/values.yaml'), 'utf8')) as {
    bot: { nodeFlags: string[] };
  };
  return values.bot.nodeFlags;
}

/**
 * What a bot pod holds with this fleet mirrored: `rollcall start --role bot` (node's defaults) in a process of its
 * own, read once it is idle after its start-up (lists, streams, the unhealthy apps' details) and a full GC. The bench
 * process itself holds a mirror too, and the floor's own lists, so its RSS is not a bot's.
 */
async function botProcessMemory(
  sim: SimChild,
  flags: string[],
): Promise<{ rssMb: number; peakMb: number; heapMb: number }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-bench-scale-'));
  const prefix = `rollcall-bench-scale-${process.pid}`;
  const slack = await startSlackApi();
  let bot: Bot | undefined;
  try {
    bot = await startBot(sim, slack.apiUrl, dir, prefix, { flags });
    await quiet(bot.child.pid!);
    return await idleMemory(bot);
  } finally {
    await bot?.stop();
    slack.stop();
    await cleanPrefix(REDIS_URL, prefix);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One mirror built, timed and stopped: none is alive while the next is built. */
async function buildOnce(sim: SimChild): Promise<number> {
  const built = await buildMirror(simConfig(sim));
  await built.mirror.stop();
  return built.buildMs;
}

/** Every request to the simulator answered `ms` later (its latency fault), as a remote API server answers. */
async function addLatency(sim: SimChild, ms: number): Promise<void> {
  const res = await fetch(`${sim.url}/_sim/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ kind: 'latency', ms }),
  });
  if (!res.ok) throw new Error(`the simulator refused the latency fault: HTTP ${res.status} ${await res.text()}`);
}

/** Runs one size in a fresh process (RSS of its own) and returns its numbers. */
function inChild(apps: number, latencyMs: number): Promise<ScaleResult> {
  const child = fork(path.join(BENCH_DIR, 'scale.ts'), ['--one', String(apps), '--latency-ms', String(latencyMs)], {
    execArgv: ['--expose-gc', '--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('message', (m: unknown) => {
      const msg = m as ScaleResult | { error: string };
      if ('error' in msg) reject(new Error(msg.error));
      else resolve(msg);
    });
    child.once('exit', (code) => reject(new Error(`the ${apps}-app run exited with ${code}`)));
  });
}

export async function runScaleBench(sizes = [1000, 10_000, 50_000], latencyMs = 0): Promise<ScaleResult[]> {
  header(
    `fleet scale: ${sizes.map((n) => n.toLocaleString('en')).join(' / ')} apps, each in a fresh process${latencyMs ? `, every Argo CD request answered ${latencyMs} ms late` : ''} (targets: build ≤ ${TARGETS.buildVsFloor}× floor, status p95 ≤ ${TARGETS.statusP95At50k} ms at 50,000, RSS ≤ ${TARGETS.rss10k} MB at 10,000 and ≤ ${TARGETS.rss50k} MB at 50,000, ≥ ${TARGETS.eventsPerS} events/s at 10,000)`,
  );
  console.log(`  ${machineLine()}`);
  const results: ScaleResult[] = [];
  for (const n of sizes) results.push(await inChild(n, latencyMs));
  const rows = results.map((r) => {
    const ratio = r.buildMs / r.floorMs;
    const notes = [`build ${ratio <= TARGETS.buildVsFloor ? 'met' : 'NOT met'}`];
    if (r.coldBuildMs / r.floorMs > TARGETS.buildVsFloor) notes.push('cold build NOT within');
    if (r.apps === 50_000) notes.push(`status ${r.statusP95 <= TARGETS.statusP95At50k ? 'met' : 'NOT met'}`);
    if (r.apps === 10_000 || r.apps === 50_000) {
      const limit = r.apps === 10_000 ? TARGETS.rss10k : TARGETS.rss50k;
      notes.push(
        `RSS ${r.rssMb <= limit ? 'met' : 'NOT met'} (chart flags: ${r.chart.rssMb <= limit ? 'met' : 'NOT met'})`,
      );
    }
    if (r.apps === 10_000) notes.push(`events ${r.eventsPerS >= TARGETS.eventsPerS ? 'met' : 'NOT met'}`);
    return [
      `${r.apps.toLocaleString('en')} apps / ${r.instances} inst.`,
      ms(r.floorMs),
      `${ms(r.coldBuildMs)} (${(r.coldBuildMs / r.floorMs).toFixed(2)}x)`,
      ms(r.buildMs),
      `${ratio.toFixed(2)}x`,
      ms(r.statusP50),
      ms(r.statusP95),
      ms(r.rolloutP95),
      `${r.rssMb.toFixed(0)} / ${r.chart.rssMb.toFixed(0)}`,
      `${r.peakMb.toFixed(0)} / ${r.chart.peakMb.toFixed(0)}`,
      r.heapMb.toFixed(0),
      r.eventsPerS.toFixed(0),
      ms(r.cpuMsPerKEvents),
      r.load,
      notes.join(', '),
    ];
  });
  table([
    [
      'fleet',
      'floor ms',
      'cold build ms',
      'build ms',
      'build/floor',
      'status p50',
      'status p95',
      'rollout p95',
      'bot RSS MB (defaults / chart)',
      'bot peak MB (defaults / chart)',
      'bot heap MB',
      'events/s',
      'CPU ms/1k events',
      'load avg',
      'targets',
    ],
    ...rows,
  ]);
  console.log(
    `  (floor = bare node fetching and parsing the same lists in the same process, median of those taken between the builds; cold build = the process's first mirror (its code not yet compiled, as at a bot's start-up); build = median of the ${warmBuildsFor(1000)} after it at 1,000 apps, ${warmBuildsFor(10_000)} at more, the target's measure (like with like: the floor's code is warm too); status/rollout over ${RUNS} warm runs, each computing its answer; bot RSS and heap: 'rollcall start --role bot' in its own process, with node's defaults and with the chart's bot.nodeFlags, idle after start-up, a full GC and 20 s, every app with 10 history entries; peak = its VmHWM; events/s = ${CHANGING.toLocaleString('en')} apps changed at once, median of ${BURSTS} bursts, with the bot's CPU per 1,000 of them; ${loadLine()})`,
  );
  for (const r of results) {
    console.log(
      `  ${r.apps.toLocaleString('en')} apps, ${r.deletion.apps.toLocaleString('en')} of them deleted at once (an ApplicationSet deleted): all removed from the mirror in ${ms(r.deletion.ms)} ms, its longest stall meanwhile ${ms(r.deletion.stallMs)} ms`,
    );
    console.log(
      `  ${r.apps.toLocaleString('en')} apps mid-incident (the churn swept the fleet once): ${r.incident.problems.toLocaleString('en')} problem apps, status p50 ${ms(r.incident.p50)} / p95 ${ms(r.incident.p95)} ms, diagnose p50 ${ms(r.incident.diagnose.p50)} / p95 ${ms(r.incident.diagnose.p95)} ms`,
    );
  }
  return results;
}

if (isMain(import.meta.url)) {
  const { values } = parseArgs({
    options: { one: { type: 'string' }, sizes: { type: 'string' }, 'latency-ms': { type: 'string', default: '0' } },
  });
  const latencyMs = Number(values['latency-ms']);
  if (!Number.isFinite(latencyMs) || latencyMs < 0) throw new Error(`--latency-ms must be a number of ms >= 0`);
  if (values.one) {
    measureOne(Number(values.one), latencyMs).then(
      (r) => process.send!(r, () => process.exit(0)),
      (error: unknown) =>
        process.send!({ error: error instanceof Error ? (error.stack ?? error.message) : String(error) }, () =>
          process.exit(1),
        ),
    );
  } else {
    runScaleBench(values.sizes?.split(',').map(Number), latencyMs).then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  }
}
