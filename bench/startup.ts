/**
 * Start-up cost of the compiled build (`npm run build`, dist/main.js), side by side with what node alone needs:
 * - one-shot `rollcall ask status` on a 1,000-app fleet against `node` fetching and parsing the same list
 *   (both are whole processes, started the same way, timed from spawn to exit); the same in a clone (bin/rollcall.js
 *   over its build cache, scripts/dev-build.mjs), up to date and right after an edit, and through tsx;
 * - the bot's RSS once started (Slack connected through the fake Web API, Redis, /healthz) on a fleet with no
 *   apps, i.e. before loading any: 1 s after it is ready, and again once it has idled long enough for V8 to shrink
 *   its heap (start-up leaves a grown young generation and garbage behind for several seconds). The bot runs
 *   as the Helm chart starts it, with node's flags from values.yaml (bot.nodeFlags), and with node's defaults.
 * Targets: ask within 1.5x of fetch+parse; a clone within 1.2x of the installed build; bot RSS under 80 MB.
 * `node --import tsx bench/startup.ts ask` runs the one-shot table only.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { freePort } from '../src/infra/redis-server.js';
import { startFakeSlack } from '../test/support/fake-slack.js';
import {
  BENCH_DIR,
  cleanPrefix,
  header,
  isMain,
  loadLine,
  machineLine,
  ms,
  startSimChild,
  stats,
  table,
} from './lib.js';

const exec = promisify(execFile);
const ROOT = path.resolve(BENCH_DIR, '..');
const MAIN = path.join(ROOT, 'dist/main.js');
/** Runs of each one-shot row; the clone and installed rows differ by a few percent, which fewer runs at load would hide. */
const RUNS = 15;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
/** The bots' keys, removed at the end. */
const PREFIX = `rollcall-bench-${process.pid}`;

async function timed(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const t0 = performance.now();
  await exec(process.execPath, args, { env, cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
  return performance.now() - t0;
}

function configYaml(instances: { name: string; url: string; token: string }[], extra = ''): string {
  const lines = ['instances:'];
  for (const i of instances)
    lines.push(`  - name: ${i.name}`, `    url: ${i.url}`, `    token: "${i.token}"`, '    timeout: 60s');
  return `${lines.join('\n')}\nredis:\n  url: ${REDIS_URL}\n  prefix: ${PREFIX}\n${extra}`;
}

/** What `start --role bot` cannot run without: Slack, the run queue and its Redis client, config, Argo CD client, logs, metrics. */
const BOT_DEPENDENCIES = ['@slack/bolt', 'bullmq', 'ioredis', 'zod', 'yaml', 'pino', 'prom-client', 'commander'];

/** Seconds after start at which an idle process is read: by then V8's memory reducer has run and shrunk the heap. */
const SETTLED_S = 20;
/** How many bots are started, one after another, for the RSS rows: the figure varies by several MB from run to run. */
const BOT_RUNS = 5;

interface RssReading {
  /** 1 s after ready: start-up's garbage and a grown young generation still resident. */
  early: number;
  /** After SETTLED_S s idle. */
  settled: number;
  /** The process's high-water mark (VmHWM) at that point: what a memory limit must allow for at start. */
  peak: number;
  /**
   * V8's heap (pages in use, after idle) at that point. Unlike RSS it does not move with how much freed memory
   * the C allocator keeps, so it shows what loading less code saves.
   */
  heap: number;
}

/** Preloaded into each measured process: on SIGUSR2 it writes the size of V8's heap to stderr. */
const HEAP_PROBE = [
  '--import',
  `data:text/javascript,${encodeURIComponent("import v8 from 'node:v8'; process.on('SIGUSR2', () => process.stderr.write(`heap ${v8.getHeapSpaceStatistics().reduce((a, s) => a + s.physical_space_size, 0)}\\n`));")}`,
];

/** RSS of an idle process `child` (started with HEAP_PROBE, stderr piped), read once it said it is ready (`ready`). */
async function idleReadings(child: ChildProcess, ready: Promise<unknown>): Promise<RssReading> {
  try {
    await ready;
    const t0 = Date.now();
    await new Promise((r) => setTimeout(r, 1000));
    const early = rssOf(child.pid!).rss;
    await new Promise((r) => setTimeout(r, SETTLED_S * 1000 - (Date.now() - t0)));
    const { rss: settled, hwm: peak } = rssOf(child.pid!);
    const heap = await new Promise<number>((resolve) => {
      let err = '';
      child.stderr!.on('data', (c) => {
        err += c;
        const m = /heap (\d+)/.exec(err);
        if (m) resolve(Number(m[1]) / 1024 / 1024);
      });
      child.kill('SIGUSR2');
    });
    return { early, settled, peak, heap };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r(undefined) : child.once('exit', r)));
  }
}

/** A node process that runs module script `code` and then idles. */
async function idleRss(code: string, env: NodeJS.ProcessEnv): Promise<RssReading> {
  const child = spawn(
    process.execPath,
    [
      ...HEAP_PROBE,
      '--input-type=module',
      '-e',
      `${code}; process.stdout.write('ready\\n'); setInterval(() => {}, 1000);`,
    ],
    { env, cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const ready = new Promise((resolve, reject) => {
    child.stdout.once('data', resolve);
    child.once('exit', (code) => reject(new Error(`floor process exited with ${code}`)));
  });
  return idleReadings(child, ready);
}

function rssOf(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)![1]) / 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const spread = (values: number[], digits = 0) =>
  `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}-${Math.max(...values).toFixed(digits)})`;

export async function runStartupBench(opts: { askOnly?: boolean } = {}): Promise<void> {
  if (!existsSync(MAIN)) throw new Error('dist/main.js is missing: run `npm run build` first (npm run bench does)');
  header('startup: one-shot ask and bot RSS, compiled build (dist/)');
  console.log(`  ${machineLine()}`);
  const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-bench-startup-'));
  const env = { ...process.env, NODE_ENV: 'production', LOG_LEVEL: 'warn' };

  const sim = await startSimChild({ kind: 'fleet', apps: 1000, clusters: 20 });
  try {
    const config = path.join(dir, 'rollcall.yaml');
    writeFileSync(config, configYaml(sim.instances));
    const [instance] = sim.instances;
    // What node alone needs: start, fetch the list Argo CD serves, parse it. The same endpoint the mirror lists.
    const fetchScript = `const r = await fetch(${JSON.stringify(`${instance.url}/api/v1/applications`)}, { headers: { authorization: 'Bearer ${instance.token}' } }); const l = JSON.parse(await r.text()); if (l.items.length !== 1000) throw new Error('expected 1000 apps, got ' + l.items.length);`;

    const askStatus = ['dist/main.js', 'ask', 'status', '--json', '--config', config];
    const check = JSON.parse(
      (await exec(process.execPath, askStatus, { env, cwd: ROOT, maxBuffer: 64 * 1024 * 1024 })).stdout,
    ) as { data: { total?: { apps?: number } } };
    if (check.data.total?.apps !== 1000)
      throw new Error(`ask status saw ${check.data.total?.apps} apps, expected 1000`);

    const clone = { ...env, NODE_ENV: 'development' };
    const cloneAsk = ['bin/rollcall.js', ...askStatus.slice(1)];
    const currentBuild = path.join(ROOT, '.rollcall/build/current.json');
    // The clone's first run builds its cache (or finds it up to date); the runs timed below reuse it.
    await timed(cloneAsk, clone);
    const fetchMs: number[] = [];
    const askMs: number[] = [];
    const cloneMs: number[] = [];
    const rebuildMs: number[] = [];
    const tsxMs: number[] = [];
    // Interleaved, so a change in machine load hits every row alike.
    for (let i = 0; i < RUNS; i++) {
      fetchMs.push(await timed(['--input-type=module', '-e', fetchScript], env));
      askMs.push(await timed(askStatus, env));
      cloneMs.push(await timed(cloneAsk, clone));
      if (i < 3) {
        // What the first run after an edit pays: without its record the cache counts as out of date.
        rmSync(currentBuild, { force: true });
        rebuildMs.push(await timed(cloneAsk, clone));
        tsxMs.push(await timed(['--import', 'tsx', 'src/main.ts', ...askStatus.slice(1)], clone));
      }
    }
    const f = stats(fetchMs);
    const a = stats(askMs);
    const c = stats(cloneMs);
    const r = stats(rebuildMs);
    const t = stats(tsxMs);
    const ratio = a.p50 / f.p50;
    const cloneRatio = c.p50 / a.p50;
    const row = (name: string, s: typeof f, target = '') => [
      name,
      s.n,
      ms(s.p50),
      ms(s.max),
      `${(s.p50 / f.p50).toFixed(2)}x`,
      `${(s.p50 / a.p50).toFixed(2)}x`,
      target,
    ];
    table([
      ['1,000 apps, whole process', 'runs', 'p50 ms', 'max ms', 'vs node fetch+parse', 'vs installed', 'target'],
      row('node: fetch + JSON.parse the list', f),
      row(
        'rollcall ask status, installed (dist/)',
        a,
        ratio <= 1.5 ? 'met (<= 1.5x fetch)' : 'NOT met (<= 1.5x fetch)',
      ),
      row(
        'rollcall ask status, clone (bin/, build up to date)',
        c,
        cloneRatio <= 1.2 ? 'met (<= 1.2x installed)' : 'NOT met (<= 1.2x installed)',
      ),
      row('clone, first run after an edit (rebuilds)', r, 'for reference'),
      row('tsx on src/ (the fallback when it cannot build)', t, 'for reference'),
    ]);
  } finally {
    await sim.stop();
  }

  if (opts.askOnly) {
    rmSync(dir, { recursive: true, force: true });
    console.log(`  ${loadLine()}`);
    return;
  }
  // The bot before it has any app: a fleet of none, Slack over HTTP through the fake Web API.
  const empty = await startSimChild({ kind: 'fleet', apps: 0, clusters: 1 });
  const slack = await startFakeSlack();
  const httpPort = await freePort();
  try {
    const config = path.join(dir, 'bot.yaml');
    writeFileSync(
      config,
      configYaml(
        empty.instances,
        `slack:\n  mode: http\n  botToken: xoxb-bench\n  signingSecret: bench-secret\n  port: 0\n  apiUrl: ${slack.apiUrl}\nhttp:\n  port: ${httpPort}\n`,
      ),
    );
    /** `start --role bot` with node's flags `flags`, read as it idles once /readyz first answers 200. */
    const botRss = async (flags: string[]): Promise<RssReading> => {
      const bot = spawn(
        process.execPath,
        [...HEAP_PROBE, ...flags, MAIN, 'start', '--role', 'bot', '--config', config],
        { env, cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] },
      );
      const ready = (async () => {
        const deadline = Date.now() + 60_000;
        while ((await fetch(`http://127.0.0.1:${httpPort}/readyz`).catch(() => undefined))?.status !== 200) {
          if (Date.now() > deadline || bot.exitCode !== null) throw new Error('the bot did not become ready');
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      return idleReadings(bot, ready);
    };
    // As the chart starts a bot pod (values.yaml bot.nodeFlags), and with node's defaults; interleaved, so a
    // change in machine load hits both alike.
    const chartFlags = (
      parse(readFileSync(path.join(ROOT, 'deploy/helm/rollcall/values.yaml'), 'utf8')) as {
        bot: { nodeFlags: string[] };
      }
    ).bot.nodeFlags;
    const bots: RssReading[] = [];
    const plain: RssReading[] = [];
    for (let i = 0; i < BOT_RUNS; i++) {
      bots.push(await botRss(chartFlags));
      plain.push(await botRss([]));
    }
    // The floor the target stands on: node idle, and node holding only the libraries a bot process needs.
    const bare = await idleRss('', env);
    const deps = await idleRss(`for (const m of ${JSON.stringify(BOT_DEPENDENCIES)}) await import(m)`, env);
    const settled = median(bots.map((b) => b.settled));
    const early = median(bots.map((b) => b.early));
    const met = (mb: number) => (mb < 80 ? 'met (< 80 MB)' : 'NOT met (< 80 MB)');
    table([
      [
        `RSS MB, median (min-max) of ${BOT_RUNS}`,
        '1 s after ready',
        `idle ${SETTLED_S} s`,
        'peak (VmHWM)',
        `V8 heap, idle`,
        'target',
      ],
      [
        `bot as the chart starts it (node ${chartFlags.join(' ')})`,
        spread(bots.map((b) => b.early)),
        spread(bots.map((b) => b.settled)),
        spread(bots.map((b) => b.peak)),
        spread(
          bots.map((b) => b.heap),
          1,
        ),
        `1 s: ${met(early)}; idle: ${met(settled)}`,
      ],
      [
        "bot with node's defaults",
        spread(plain.map((b) => b.early)),
        spread(plain.map((b) => b.settled)),
        spread(plain.map((b) => b.peak)),
        spread(
          plain.map((b) => b.heap),
          1,
        ),
        'for reference',
      ],
      [
        'floor: node alone',
        bare.early.toFixed(0),
        bare.settled.toFixed(0),
        bare.peak.toFixed(0),
        bare.heap.toFixed(1),
        '',
      ],
      [
        "floor: node + the bot's libraries imported",
        deps.early.toFixed(0),
        deps.settled.toFixed(0),
        deps.peak.toFixed(0),
        deps.heap.toFixed(1),
        BOT_DEPENDENCIES.join(' '),
      ],
    ]);
  } finally {
    await empty.stop();
    await slack.stop();
    await cleanPrefix(REDIS_URL, PREFIX);
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`  ${loadLine()}`);
}

if (isMain(import.meta.url)) {
  runStartupBench({ askOnly: process.argv[2] === 'ask' }).then(
    () => process.exit(0),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}
