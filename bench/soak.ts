/**
 * A whole bot process (`rollcall start --role bot`, Slack over HTTP, its own Redis prefix) mirroring a simulated
 * fleet that never stops changing, for minutes: does its memory stay where it started, and does its view keep up?
 *
 * 1. Soak: the simulator (another process) changes `--rate` apps every second, in turn across the fleet (health
 *    flips, a new history entry, a finished operation). The bot's RSS (and VmHWM) and V8 heap are read after the
 *    initial load and a settle, then every minute; `/argo status` is asked over Slack's HTTP a few times a minute.
 * 2. Bursts: what a 540-app sync sends, several events per app per second, a few times over; memory is read after
 *    each once the bot is idle again.
 * After each part the bot's `/argo status` must give the simulator's own health and sync counts.
 *
 * `node --import tsx bench/soak.ts [--minutes 10] [--apps 10000] [--rate 200] [--bursts 5]`.
 * Target: the soak ends within 10% of where it started: the soaked bot idle against a bot started afresh on the fleet
 * the churn left (a full GC and 20 s each), and the churn's last minute against its first.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { HEALTH_ORDER, SYNC_ORDER, countsLine, formatCount } from '../src/core/format.js';
import { cleanPrefix, header, isMain, loadLine, machineLine, ms, percentile, startSimChild, table } from './lib.js';
import type { SimChildCounts } from './sim-child.js';
import { REDIS_URL, SECRET, ask, memOf, quiet, sleep, startBot, startSlackApi, type Bot } from './bot-process.js';
import type { BurstResult, SlackClientRequest } from './slack-client.js';

/** The target: the soak's last reading within this fraction of its first. */
const GROWTH_TARGET = 0.1;
/** The reading after the churn, taken as the first one was. */
const IDLE_AFTER = 'churn stopped, idle (GC, 20 s)';
/** A bot started after the churn on the fleet it left, read as the soaked one. */
const FRESH = 'a fresh bot on that fleet, idle';
/** Seconds between two `/argo status` asked during the soak. */
const ASK_EVERY_S = 15;
/** A burst: this many apps (the seed outage's 540-app sync), changed this often, for this long. */
const BURST_APPS = 540;
const BURST_EVERY_MS = 333;
const BURST_MS = 3000;

interface Reading {
  label: string;
  /** VmRSS as the bot runs, MB. */
  rss: number;
  hwm: number;
  /** V8 heap in use after a full GC, MB. */
  heapUsed: number;
  /** V8 heap pages held after that GC, MB. */
  heapHeld: number;
  /** Memory outside V8's heap owned by JS objects (Buffers), after that GC, MB. */
  external: number;
  /** Apps the simulator changed since the previous reading (each one watch event to the bot). */
  events: number;
  /** `/argo status` answers since the previous reading: fire → answer on response_url, ms. */
  answers: number[];
  load: string;
}

const load1 = () => os.loadavg()[0].toFixed(2);

export interface SoakResult {
  readings: Reading[];
  burstReadings: Reading[];
  checks: string[];
}

export async function runSoakBench(
  opts: { apps?: number; minutes?: number; rate?: number; bursts?: number } = {},
): Promise<SoakResult> {
  const apps = opts.apps ?? 10_000;
  const minutes = opts.minutes ?? 10;
  const rate = opts.rate ?? 200;
  const bursts = opts.bursts ?? 5;
  header(
    `soak: \`rollcall start --role bot\` mirroring ${apps.toLocaleString('en')} apps, ${rate} changed every second for ${minutes} min, then ${bursts} bursts of a ${BURST_APPS}-app sync (target: ends within ${GROWTH_TARGET * 100}% of start)`,
  );
  console.log(`  ${machineLine()}`);
  const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-bench-soak-'));
  const prefix = `rollcall-bench-soak-${process.pid}`;
  const sim = await startSimChild({
    kind: 'fleet',
    apps,
    clusters: Math.max(1, Math.round(apps / 50)),
    fullHistory: true,
  });
  const slack = await startSlackApi();
  const client = slack.client;
  let bot: Bot | undefined;
  try {
    const { apiUrl } = slack;
    const t0 = performance.now();
    bot = await startBot(sim, apiUrl, dir, prefix);
    const pid = bot.child.pid!;
    console.log(`  bot ready in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    let round = 0;
    const status = async (body = false, to: Bot = bot!) => {
      const r = await ask<BurstResult>(client, {
        kind: 'burst',
        url: to.slackUrl,
        secret: SECRET,
        text: 'status',
        n: 1,
        round: `soak-${round++}`,
        timeoutMs: 60_000,
        body,
      } satisfies SlackClientRequest);
      if (r.missing || !r.firstAnswer?.blocks) throw new Error('`/argo status` got no answer with blocks');
      return r;
    };
    const simCounts = () => ask<SimChildCounts>(sim.child, { kind: 'counts' });
    const read = async (label: string, events: number, answers: number[], of: Bot = bot!): Promise<Reading> => {
      const { rss, hwm } = memOf(of.child.pid!);
      const [heapUsed, heapHeld, external] = await of.heap();
      return { label, rss, hwm, heapUsed, heapHeld, external, events, answers, load: load1() };
    };
    const checks: string[] = [];
    /** The bot's `/argo status` against the simulator's own counts, once both are still. */
    const verify = async (when: string) => {
      await quiet(pid);
      const want = await simCounts();
      const answer = JSON.stringify((await status(true)).firstAnswer?.body);
      const lines = [
        `${formatCount(want.apps)} on`,
        countsLine(want.health, HEALTH_ORDER),
        countsLine(want.sync, SYNC_ORDER),
      ];
      const missing = lines.filter((l) => !answer.includes(l));
      const said = /(Healthy|Progressing|Degraded|Missing|Suspended|Unknown) [\d,]+( · \w+ [\d,]+)*/.exec(answer)?.[0];
      checks.push(
        missing.length
          ? `${when}: the bot's view differs from the simulator's: the simulator has ${lines.join(' / ')}, the bot says ${said ?? '(no health line)'}`
          : `${when}: the bot's /argo status equals the simulator's counts (${lines.join(' / ')})`,
      );
    };

    // Start: the lists loaded, the unhealthy apps fetched, a few answers given, then a full GC and a settle, so the
    // first RSS is not the load's garbage (every later reading follows a minute with a GC in it too).
    const idleReading = async (label: string, of: Bot) => {
      await quiet(of.child.pid!);
      for (let i = 0; i < 3; i++) await status(false, of);
      await of.heap();
      await sleep(20_000);
      return read(label, 0, [], of);
    };
    const readings: Reading[] = [await idleReading('start', bot)];

    await ask(sim.child, { kind: 'churn', perSecond: rate });
    let sent = 0;
    for (let minute = 1; minute <= minutes; minute++) {
      const answers: number[] = [];
      const end = Date.now() + 60_000;
      while (Date.now() < end) {
        const next = Date.now() + ASK_EVERY_S * 1000;
        answers.push(...(await status()).answerMs);
        await sleep(Math.max(0, Math.min(next, end) - Date.now()));
      }
      const { churned } = await simCounts();
      readings.push(await read(`${minute}`, churned - sent, answers));
      sent = churned;
    }
    const { changed } = await ask<{ changed: number }>(sim.child, { kind: 'churn', perSecond: 0 });
    const { replaced } = await simCounts();
    await verify('after the soak');
    // Read as the start was (idle, a full GC, a settle): what the soak left behind, told apart from what the churn
    // holds while it runs.
    readings.push({ ...(await idleReading(IDLE_AFTER, bot)), events: changed - sent });
    // The churn left another fleet than the one the soak started on (other health, every history entry new, other
    // names): a bot started on it now holds what the soaked bot should, had it kept nothing of the soak.
    const freshPrefix = `${prefix}-fresh`;
    const fresh = await startBot(sim, apiUrl, dir, freshPrefix);
    try {
      readings.push(await idleReading(FRESH, fresh));
    } finally {
      await fresh.stop();
      await cleanPrefix(REDIS_URL, freshPrefix);
    }

    const burstReadings: Reading[] = [];
    for (let b = 1; b <= bursts; b++) {
      let events = 0;
      const until = Date.now() + BURST_MS;
      while (Date.now() < until) {
        const tick = Date.now() + BURST_EVERY_MS;
        events += (await ask<{ changed: number }>(sim.child, { kind: 'change', count: BURST_APPS, round: round++ }))
          .changed;
        await sleep(Math.max(0, tick - Date.now()));
      }
      await quiet(pid);
      burstReadings.push(await read(`burst ${b}, idle after`, events, [(await status()).answerMs[0]]));
    }
    if (bursts) await verify('after the bursts');

    printTables(readings, burstReadings, [
      `apps deleted and created anew under another name during the soak: ${replaced}`,
      ...checks,
    ]);
    return { readings, burstReadings, checks };
  } finally {
    if (bot) {
      await bot.stop();
    }
    client.disconnect();
    await sim.stop();
    await cleanPrefix(REDIS_URL, prefix);
    rmSync(dir, { recursive: true, force: true });
  }
}

function printTables(readings: Reading[], burstReadings: Reading[], checks: string[]): void {
  const row = (r: Reading) => {
    const a = [...r.answers].sort((x, y) => x - y);
    return [
      r.label,
      r.rss.toFixed(1),
      r.hwm.toFixed(1),
      r.heapUsed.toFixed(1),
      r.heapHeld.toFixed(1),
      r.external.toFixed(1),
      r.events ? r.events.toLocaleString('en') : '',
      a.length ? `${ms(percentile(a, 50))} / ${ms(a[a.length - 1])}` : '',
      r.load,
    ];
  };
  const head = [
    'minute',
    'RSS MB',
    'VmHWM MB',
    'heap used MB',
    'heap held MB',
    'external MB',
    'events',
    'status answer p50 / max ms',
    'load 1m',
  ];
  table([head, ...readings.map(row)]);
  const start = readings[0];
  const minutes = readings.filter((r) => /^\d+$/.test(r.label));
  const [first, end] = [minutes[0] ?? start, minutes.at(-1) ?? start];
  const idleEnd = readings.find((r) => r.label === IDLE_AFTER) ?? end;
  const fresh = readings.find((r) => r.label === FRESH) ?? start;
  const growth = (a: number, b: number) => `${b >= a ? '+' : ''}${(((b - a) / a) * 100).toFixed(1)}%`;
  const within = (a: Reading, b: Reading) =>
    b.rss <= a.rss * (1 + GROWTH_TARGET) && b.heapUsed <= a.heapUsed * (1 + GROWTH_TARGET);
  const compare = (what: string, a: Reading, b: Reading) =>
    `${what}: RSS ${a.rss.toFixed(1)} → ${b.rss.toFixed(1)} MB (${growth(a.rss, b.rss)}), heap used ${a.heapUsed.toFixed(1)} → ${b.heapUsed.toFixed(1)} MB (${growth(a.heapUsed, b.heapUsed)})`;
  // Like with like: the soaked bot idle against a fresh bot on the same fleet (what the soak left behind), and the
  // churn's first and last minute (whether it keeps growing while it runs). Idle before against idle after also
  // counts what the churn changed in the fleet; idle against running is what the churn holds while it runs.
  const leftBehind = within(fresh, idleEnd);
  const whileRunning = within(first, end);
  console.log(
    `  ${compare(`soak, a fresh bot → the soaked bot, both idle on the fleet the churn left`, fresh, idleEnd)}: ${leftBehind ? 'within' : 'NOT within'} ${GROWTH_TARGET * 100}%`,
  );
  console.log(`  ${compare(`idle before the soak → idle after it (the fleet changed in between)`, start, idleEnd)}`);
  console.log(
    `  ${compare(`soak, under churn, minute ${first.label} → minute ${end.label}`, first, end)}: ${whileRunning ? 'within' : 'NOT within'} ${GROWTH_TARGET * 100}%`,
  );
  console.log(`  ${compare(`idle → under churn (what the churn holds while it runs)`, start, end)}`);
  console.log(
    `  target (ends within ${GROWTH_TARGET * 100}% of where it started: against a fresh bot, and minute to minute): ${leftBehind && whileRunning ? 'met' : 'NOT met'}`,
  );
  if (burstReadings.length) {
    table([['after burst', ...head.slice(1)], ...burstReadings.map(row)]);
    const first = burstReadings[0];
    const last = burstReadings[burstReadings.length - 1];
    console.log(
      `  bursts (${BURST_APPS} apps every ${BURST_EVERY_MS} ms for ${BURST_MS / 1000} s each), first → last: heap used ${first.heapUsed.toFixed(1)} → ${last.heapUsed.toFixed(1)} MB (${growth(first.heapUsed, last.heapUsed)}), external ${first.external.toFixed(1)} → ${last.external.toFixed(1)} MB, RSS ${first.rss.toFixed(1)} → ${last.rss.toFixed(1)} MB (${growth(first.rss, last.rss)})`,
    );
  }
  for (const c of checks) console.log(`  ${c}`);
  console.log(
    `  (events = apps the simulator changed, one watch event each; heap and external = after a full GC in the bot, RSS just before it; ${loadLine()})`,
  );
}

if (isMain(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      minutes: { type: 'string' },
      apps: { type: 'string' },
      rate: { type: 'string' },
      bursts: { type: 'string' },
    },
  });
  const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
  runSoakBench({
    minutes: num(values.minutes),
    apps: num(values.apps),
    rate: num(values.rate),
    bursts: num(values.bursts),
  }).then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
