/**
 * The change recorder's cost on a 10,000-app mirror while 1,000 apps change at once (the same burst
 * with and without the recorder: added CPU, RSS, and the events per second it keeps up with), and
 * `incident report` over a 2,000-entry timeline (analysis, Markdown and the PNG chart).
 */
import { dispatch } from '../src/commands/index.js';
import type { CommandContext } from '../src/commands/registry.js';
import type { FleetEvent } from '../src/fleet/events.js';
import { ChangeLog } from '../src/domain/incidents/change-log.js';
import type { ChangeRecord } from '../src/domain/incidents/changes.js';
import { ChangeRecorder } from '../src/domain/incidents/recorder.js';
import { IncidentService } from '../src/domain/incidents/service.js';
import { IncidentStore } from '../src/domain/incidents/store.js';
import { closeRedis, createRedis } from '../src/infra/redis.js';
import type { SimChildChange } from './sim-child.js';
import {
  buildMirror,
  cleanPrefix,
  header,
  isMain,
  loadLine,
  machineLine,
  ms,
  rssMb,
  simConfig,
  startSimChild,
  stats,
  table,
} from './lib.js';

const APPS = 10_000;
const CHANGING = 1_000;
const ROUNDS = 4;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Heap in use after a full GC when node runs with --expose-gc (npm run bench does not; RSS is shown either way). */
function heapAfterGcMb(): string {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) return '-';
  gc();
  return (process.memoryUsage().heapUsed / 2 ** 20).toFixed(0);
}

interface Burst {
  wallMs: number;
  cpuMs: number;
  rssMb: number;
}

export async function runIncidentsBench(): Promise<void> {
  header(
    `change recorder on a ${APPS.toLocaleString('en-US')}-app mirror, ${CHANGING.toLocaleString('en-US')} apps changing at once; incident report over 2,000 timeline entries`,
  );
  console.log(`  ${machineLine()}`);
  const prefix = `rollcall-bench-${Math.random().toString(36).slice(2, 8)}`;
  const redis = createRedis(REDIS_URL);
  const sim = await startSimChild({ kind: 'fleet', apps: APPS, clusters: 200 });
  const bot = await buildMirror(simConfig(sim));
  let events = 0;
  bot.mirror.subscribe((e: FleetEvent) => {
    if (e.kind === 'app-changed') events++;
  });
  let round = 0;
  const burst = async (waitFor: () => Promise<void>): Promise<Burst> => {
    const target = events + CHANGING;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const changed = new Promise<void>((resolve) => sim.child.once('message', () => resolve()));
    sim.child.send({ kind: 'change', count: CHANGING, round: round++ } satisfies SimChildChange);
    await changed;
    while (events < target) await new Promise((r) => setTimeout(r, 5));
    await waitFor();
    const cpu = process.cpuUsage(cpu0);
    return { wallMs: performance.now() - t0, cpuMs: (cpu.user + cpu.system) / 1000, rssMb: rssMb() };
  };

  try {
    // Warm-up: JIT and the mirror's indexes, without the recorder.
    await burst(async () => undefined);
    const without: Burst[] = [];
    for (let i = 0; i < ROUNDS; i++) without.push(await burst(async () => undefined));
    const rssWithout = rssMb();
    const heapWithout = heapAfterGcMb();

    const log = new ChangeLog(redis, prefix);
    const recorder = new ChangeRecorder(bot.mirror, log);
    const b0 = performance.now();
    const cpuB = process.cpuUsage();
    await recorder.start();
    await recorder.backfilled;
    const backfillMs = performance.now() - b0;
    const backfillCpu = process.cpuUsage(cpuB);
    const backfilled = recorder.stats().recorded;
    const withRecorder: Burst[] = [];
    const writeTimes: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const before = recorder.stats();
      const result = await burst(() => recorder.flush());
      const after = recorder.stats();
      writeTimes.push(
        (after.recorded + after.duplicates - (before.recorded + before.duplicates)) / (result.wallMs / 1000),
      );
      withRecorder.push(result);
    }
    const rssWith = rssMb();
    const heapWith = heapAfterGcMb();
    await recorder.stop();
    const totals = recorder.stats();

    const w = stats(without.map((b) => b.wallMs));
    const r = stats(withRecorder.map((b) => b.wallMs));
    const cpuW = stats(without.map((b) => b.cpuMs)).mean;
    const cpuR = stats(withRecorder.map((b) => b.cpuMs)).mean;
    table([
      [
        'variant',
        'burst wall ms p50',
        'max',
        'CPU ms / burst',
        'fleet events/s',
        'records/s written',
        'RSS MB',
        'heap after GC MB',
      ],
      [
        'mirror only',
        ms(w.p50),
        ms(w.max),
        ms(cpuW),
        (CHANGING / (w.p50 / 1000)).toFixed(0),
        '-',
        rssWithout.toFixed(0),
        heapWithout,
      ],
      [
        'mirror + recorder',
        ms(r.p50),
        ms(r.max),
        ms(cpuR),
        (CHANGING / (r.p50 / 1000)).toFixed(0),
        stats(writeTimes).p50.toFixed(0),
        rssWith.toFixed(0),
        heapWith,
      ],
    ]);
    console.log(
      `  recorder adds ${ms(cpuR - cpuW)} ms CPU per burst of ${CHANGING} changed apps (${((cpuR - cpuW) / CHANGING).toFixed(3)} ms per app event), ${(rssWith - rssWithout).toFixed(0)} MB RSS; ` +
        `${totals.recorded.toLocaleString('en-US')} records written in all, ${totals.failures} failures`,
    );
    console.log(
      `  start-up backfill of ${APPS.toLocaleString('en-US')} apps: ${backfilled.toLocaleString('en-US')} records in ${ms(backfillMs)} ms (${ms((backfillCpu.user + backfillCpu.system) / 1000)} ms CPU)`,
    );

    // ---- incident report over 2,000 timeline entries ----
    // Its own log: exactly these 2,000 changes in the window, on a fleet-wide incident over the 10,000 apps.
    const reportLog = new ChangeLog(redis, `${prefix}-report`);
    const store = new IncidentStore(redis, `${prefix}-report`);
    const service = new IncidentService(store, reportLog, bot.mirror);
    const incident = await service.declare({ title: 'bench: bad deploy on 1,000 apps', severity: 1, by: 'U_BENCH' });
    const apps = bot.mirror.apps().slice(0, 400);
    const t = Date.parse(incident.declaredAt) - 50 * 60_000;
    const records: ChangeRecord[] = [];
    apps.forEach((a, i) => {
      const base = { instance: a.instance, app: a.app.metadata.name, appSet: a.appSet, cluster: a.cluster };
      const at = (m: number) => new Date(t + m * 60_000 + i * 200).toISOString();
      records.push(
        {
          id: `bench-deploy-${i}`,
          at: at(0),
          kind: 'deploy',
          ...base,
          revision: 'v2',
          previousRevision: 'v1',
          by: 'applicationset-controller',
          text: `${base.app} deployed v1 → v2`,
        },
        {
          id: `bench-bad-${i}`,
          at: at(3),
          kind: 'health',
          ...base,
          from: 'Healthy',
          to: 'Degraded',
          bad: true,
          text: `${base.app} Healthy → Degraded`,
        },
        {
          id: `bench-op-${i}`,
          at: at(40),
          kind: 'operation',
          ...base,
          to: 'Succeeded',
          text: `${base.app} sync Succeeded`,
        },
        {
          id: `bench-sync-${i}`,
          at: at(40),
          kind: 'sync',
          ...base,
          from: 'OutOfSync',
          to: 'Synced',
          text: `${base.app} OutOfSync → Synced`,
        },
        {
          id: `bench-good-${i}`,
          at: at(42),
          kind: 'health',
          ...base,
          from: 'Degraded',
          to: 'Healthy',
          text: `${base.app} Degraded → Healthy`,
        },
      );
    });
    await reportLog.record(records);
    const timeline = await service.timeline(incident);
    const ctx: CommandContext = {
      services: {
        config: bot.config,
        fleet: bot.mirror,
        argocd: bot.argocd,
        incidents: service,
        changes: reportLog,
        now: () => new Date(),
      },
      user: 'U_BENCH',
      surface: 'terminal',
    };
    const times: number[] = [];
    let pngBytes = 0;
    let mdBytes = 0;
    for (let i = 0; i < 6; i++) {
      const t1 = performance.now();
      const reply = await dispatch(`incident report ${incident.id}`, ctx);
      if (!reply.ok) throw new Error(JSON.stringify(reply.error));
      times.push(performance.now() - t1);
      pngBytes = reply.files!.find((f) => f.name.endsWith('.png'))!.content.length;
      mdBytes = reply.files!.find((f) => f.name.endsWith('.md'))!.content.length;
    }
    const first = times.shift()!;
    const rep = stats(times);
    table([
      ['timeline entries', 'fleet apps', '1st report ms', 'p50 ms', 'max ms', 'Markdown KB', 'PNG KB'],
      [
        timeline.length,
        APPS,
        ms(first),
        ms(rep.p50),
        ms(rep.max),
        (mdBytes / 1024).toFixed(0),
        (pngBytes / 1024).toFixed(0),
      ],
    ]);
    console.log(`  (${loadLine()})`);
  } finally {
    await cleanPrefix(redis, prefix);
    await cleanPrefix(redis, `${prefix}-report`);
    await closeRedis(redis);
    await bot.mirror.stop();
    await sim.stop();
  }
}

if (isMain(import.meta.url)) {
  runIncidentsBench()
    .then(() => process.exit(0))
    .catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
}
