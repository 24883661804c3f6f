/**
 * 50 concurrent signed `/argo` commands against a whole bot process: `rollcall start --role bot` with Slack over
 * HTTP, its own Redis prefix, mirroring a simulated fleet (10,000 apps by default) served by the simulator in
 * another process. Slack's side (the signing clients and the fake Web API receiving the answers on response_url)
 * runs in a third process (bench/slack-client.ts). Everything the bot does per request is in the numbers: Bolt's
 * receiver, the signature and replay checks on Redis, authorization, logging at the level it ships with, the
 * command and the answer's POST. A row of crowds asking ten different commands at once shows what a crowd whose
 * answers cannot be shared costs. In the last variant, while the fleet changes, a row of single commands asked one
 * at a time shows what an ack waits for behind the mirror's work alone.
 *
 * `node --import tsx bench/slack-bot.ts [--apps N] [--rounds N] [--firer curl|node]`. Targets: ack p99 ≤ 50 ms, answer p95 ≤ 300 ms.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parse } from 'yaml';
import {
  BENCH_DIR,
  buildMirror,
  cleanPrefix,
  header,
  isMain,
  loadLine,
  machineLine,
  ms,
  percentile,
  simConfig,
  startSimChild,
  table,
  type SimChild,
} from './lib.js';
import { pickRollingSyncAppSet } from './queries.js';
import { curlCanFire, defaultFirer, firerLine, type BurstResult, type Firer } from './slack-client.js';
import { REDIS_URL, SECRET, ask, cpuMsOf, memOf, quiet, startBot } from './bot-process.js';

const ROOT = path.resolve(BENCH_DIR, '..');
const CONCURRENT = 50;
const COMMANDS = ['status', 'status auth-*', 'help'];
const ACK_P99_TARGET_MS = 50;
const ANSWER_P95_TARGET_MS = 300;

const statusCounts = (r: BotBurstRow) =>
  Object.entries(r.statuses)
    .map(([s, n]) => `${s}×${n}`)
    .join(' ');

/**
 * The floor: bare node serving the same endpoint, checking the same signature (HMAC-SHA256 of `v0:ts:body`) and
 * acking with an empty 200, nothing else. Fired at in the same rounds as the bot, so both see the same machine load:
 * what a loaded 2-CPU machine allows any ack, which no bot can beat.
 */
const FLOOR_SCRIPT = `
import { createServer } from 'node:http';
import { createHmac, timingSafeEqual } from 'node:crypto';
const secret = process.env.FLOOR_SECRET;
const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString();
    const want = Buffer.from('v0=' + createHmac('sha256', secret).update('v0:' + req.headers['x-slack-request-timestamp'] + ':' + body).digest('hex'));
    const got = Buffer.from(String(req.headers['x-slack-signature'] ?? ''));
    res.statusCode = got.length === want.length && timingSafeEqual(got, want) ? 200 : 401;
    res.end();
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
`;

async function startFloor(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', FLOOR_SCRIPT], {
    env: { ...process.env, FLOOR_SECRET: SECRET },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()));
    child.once('exit', (code) => reject(new Error(`the floor server exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}/slack/events`, child };
}

export interface BotBurstRow {
  variant: string;
  command: string;
  acks: number[];
  answers: number[];
  statuses: Record<number, number>;
  botCpuMs: number;
  load: string;
}

/** Apps the simulator changes every second for the rounds asked while the fleet changes. */
const CHURN_PER_S = 1000;
const CHURN_LABEL = `, the fleet changing ${CHURN_PER_S.toLocaleString('en')} apps/s`;

type Burst = (
  text: string | readonly string[],
  round: string,
  n?: number,
  spreadMs?: number,
) => Promise<{ r: BurstResult; cpuMs: number }>;

/**
 * People reading the same alert do not all type at once: the same crowd of `status`, its requests spread evenly over
 * this long (one every 10 ms), fired by node:http (curl fires all at once); each answer timed from its own request.
 */
const SPREAD_MS = 500;
const SPREAD_LABEL = `, asked over ${SPREAD_MS} ms (node:http)`;

/**
 * A crowd as an incident makes it: not everyone asks the same. Ten commands, five askers each, every one answered
 * from the mirror (`app` and `history` also read the app live): ten answers to compute per crowd, where a crowd of
 * one command computes one. The answer target is for a crowd of `status`; this row shows what a mixed one costs.
 */
async function mixedCrowd(sim: SimChild): Promise<string[]> {
  const probe = await buildMirror(simConfig(sim), { follow: false, enrichLimit: 0 });
  try {
    const apps = probe.mirror.apps();
    const named = (health: string) => apps.find((a) => a.app.status?.health?.status === health)?.app.metadata.name;
    const appSet = pickRollingSyncAppSet(probe);
    const degraded = named('Degraded');
    const healthy = named('Healthy');
    if (!degraded || !healthy) throw new Error('the generated fleet has no Degraded or no Healthy app');
    return [
      'status',
      'status auth-*',
      `app ${degraded}`,
      'diagnose',
      `rollout ${appSet}`,
      'clusters',
      `history ${healthy}`,
      'rollouts',
      `plan ${appSet}`,
      'help',
    ];
  } finally {
    await probe.mirror.stop();
  }
}

const MIXED = 'a mixed crowd';

/** Single commands asked one after the other while the fleet changes, at moments that do not follow its bursts. */
const SINGLE_ASKS = 240;

/**
 * `SINGLE_ASKS` commands one at a time, 13–43 ms apart, as one row: what an ack waits for when no crowd competes with
 * it, only the mirror taking in the fleet's changes. Its CPU is per 50 asks, to compare with a crowd's.
 */
async function singleAsks(variant: string, text: string, burst: Burst, label: string): Promise<BotBurstRow> {
  const row: BotBurstRow = {
    variant,
    command: `${text}, one at a time${label}`,
    acks: [],
    answers: [],
    statuses: {},
    botCpuMs: 0,
    load: '',
  };
  for (let i = 0; i < SINGLE_ASKS; i++) {
    const { r, cpuMs } = await burst(text, `${text}-single-${i}`, 1);
    row.acks.push(...r.ackMs);
    row.answers.push(...r.answerMs);
    for (const [st, n] of Object.entries(r.statuses)) row.statuses[+st] = (row.statuses[+st] ?? 0) + n;
    row.botCpuMs += (cpuMs * CONCURRENT) / SINGLE_ASKS;
    await new Promise((resolve) => setTimeout(resolve, 13 + (i % 7) * 5));
  }
  row.load = loadLine().replace('load avg now ', '');
  return row;
}

/** `rounds` crowds of one command (or a mix) a second apart (a floor crowd before each, when given), as one row. */
async function crowdRounds(
  variant: string,
  text: string | readonly string[],
  rounds: number,
  burst: Burst,
  floorCrowd?: (round: number) => Promise<void>,
  label = '',
): Promise<BotBurstRow> {
  const row: BotBurstRow = {
    variant,
    command: `${typeof text === 'string' ? text : `${MIXED} (${text.map((t) => t.split(' ')[0]).join(', ')})`}${label}`,
    acks: [],
    answers: [],
    statuses: {},
    botCpuMs: 0,
    load: '',
  };
  const name = typeof text === 'string' ? text : 'mixed';
  for (let i = 0; i < rounds; i++) {
    // A second apart, as separate crowds would be, so one round's answers do not overlap the next.
    await new Promise((r) => setTimeout(r, 1000));
    await floorCrowd?.(i);
    const { r, cpuMs } = await burst(text, `${name}${label.replace(/[^a-z0-9]+/gi, '-')}-${i}`);
    row.acks.push(...r.ackMs);
    row.answers.push(...r.answerMs);
    for (const [s, n] of Object.entries(r.statuses)) row.statuses[+s] = (row.statuses[+s] ?? 0) + n;
    row.botCpuMs += cpuMs / rounds;
  }
  row.load = loadLine().replace('load avg now ', '');
  return row;
}

export async function runSlackBotBench(
  opts: { apps?: number; rounds?: number; role?: 'bot' | 'all'; firer?: Firer } = {},
): Promise<BotBurstRow[]> {
  const apps = opts.apps ?? 10_000;
  const rounds = opts.rounds ?? 5;
  const role = opts.role ?? 'bot';
  const firer = opts.firer ?? defaultFirer();
  header(
    `${CONCURRENT} concurrent signed /argo commands against \`rollcall start --role ${role}\` over HTTP, ${apps.toLocaleString('en')}-app fleet (targets: ack p99 ≤ ${ACK_P99_TARGET_MS} ms, answer p95 ≤ ${ANSWER_P95_TARGET_MS} ms)`,
  );
  console.log(`  ${machineLine()}`);
  console.log(`  ${firerLine(firer)}`);
  const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-bench-slack-bot-'));
  const prefix = `rollcall-bench-bot-${process.pid}`;
  const sim = await startSimChild({ kind: 'fleet', apps, clusters: Math.max(1, Math.round(apps / 50)) });
  const client = fork(path.join(BENCH_DIR, 'slack-client.ts'), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const rows: BotBurstRow[] = [];
  const floor = await startFloor();
  const floorRow: BotBurstRow = {
    variant: 'floor: bare node, signature check + empty 200',
    command: '(any, fired in every round)',
    acks: [],
    answers: [],
    statuses: {},
    botCpuMs: 0,
    load: '',
  };
  try {
    const { apiUrl } = await ask<{ apiUrl: string }>(client, { kind: 'start' });
    const mix = await mixedCrowd(sim);
    const chartFlags = (
      parse(readFileSync(path.join(ROOT, 'deploy/helm/rollcall/values.yaml'), 'utf8')) as {
        bot: { nodeFlags: string[] };
      }
    ).bot.nodeFlags;
    // The chart's flags only when it sets any: without, a bot pod runs with node's defaults.
    const variants: [string, string[]][] = [
      ["node's defaults", []],
      ...(chartFlags.length ? [[`chart flags (${chartFlags.join(' ')})`, chartFlags] as [string, string[]]] : []),
    ];
    for (const [variant, flags] of variants) {
      const t0 = performance.now();
      const bot = await startBot(sim, apiUrl, dir, prefix, {
        role,
        flags: [...(process.env.BENCH_BOT_FLAGS?.split(' ').filter(Boolean) ?? []), ...flags],
      });
      const pid = bot.child.pid!;
      try {
        const readyMs = performance.now() - t0;
        const url = bot.slackUrl;
        const burst: Burst = async (text, round, n = CONCURRENT, spreadMs = 0) => {
          const cpu0 = cpuMsOf(pid);
          const r = await ask<BurstResult>(client, {
            kind: 'burst',
            url,
            secret: SECRET,
            text,
            n,
            round: `${variant.length}-${round}`,
            timeoutMs: 60_000,
            firer: spreadMs ? 'node' : firer,
            spreadMs,
          });
          if (r.missing) throw new Error(`${r.missing}/${n} answers to "${text}" never reached response_url`);
          if (!r.firstAnswer?.blocks) throw new Error(`the answer to "${text}" has no blocks`);
          return { r, cpuMs: cpuMsOf(pid) - cpu0 };
        };
        // The first crowds after start-up pay for what a bot does once (compiling the paths a crowd takes, growing
        // its pools). The first comes the moment the bot says it is ready, as an incident's first crowd meets a bot
        // that has just restarted; then one of each other command, a second apart. Said apart and left out of the
        // rounds, so the rounds compare the commands and not their order.
        const firstCrowds: string[] = [];
        for (const [i, text] of COMMANDS.entries()) {
          if (i > 0) await new Promise((r) => setTimeout(r, 1000));
          const { r, cpuMs } = await burst(text, `first-${text}`);
          const sorted = (a: number[]) => [...a].sort((x, y) => x - y);
          firstCrowds.push(
            `${text} ${ms(percentile(sorted(r.ackMs), 99))} / ${ms(percentile(sorted(r.answerMs), 95))} (bot CPU ${ms(cpuMs)})`,
          );
        }
        // The rounds measure a bot in its steady state: they wait until it uses under 5% of a CPU.
        await quiet(pid);
        const rssBefore = memOf(pid).rss;
        const floorBurst = (text: string, i: number) =>
          ask<BurstResult>(client, {
            kind: 'burst',
            url: floor.url,
            secret: SECRET,
            text,
            n: CONCURRENT,
            round: `floor-${variant.length}-${text}-${i}`,
            timeoutMs: 0,
            answers: false,
            firer,
          });
        for (const text of COMMANDS) {
          const row = await crowdRounds(variant, text, rounds, burst, async (i) => {
            const f = await floorBurst(text, i);
            floorRow.acks.push(...f.ackMs);
            for (const [st, n] of Object.entries(f.statuses))
              floorRow.statuses[+st] = (floorRow.statuses[+st] ?? 0) + n;
          });
          rows.push(row);
        }
        rows.push(await crowdRounds(variant, mix, rounds, burst));
        const spread: Burst = (text, round, n) => burst(text, round, n, SPREAD_MS);
        rows.push(await crowdRounds(variant, 'status', rounds, spread, undefined, SPREAD_LABEL));
        // Mid-incident the fleet never stands still: a crowd asks while the mirror absorbs a sync's watch events, then
        // single commands come one at a time, their acks competing with nothing but those events. Only
        // in the last variant: the churn leaves another fleet behind (other health), which a next variant would read.
        if (variant === variants[variants.length - 1][0]) {
          await ask(sim.child, { kind: 'churn', perSecond: CHURN_PER_S });
          try {
            await new Promise((r) => setTimeout(r, 2000));
            rows.push(await crowdRounds(variant, 'status', rounds, burst, undefined, CHURN_LABEL));
            rows.push(await singleAsks(variant, 'help', burst, CHURN_LABEL));
          } finally {
            await ask(sim.child, { kind: 'churn', perSecond: 0 });
          }
        }
        console.log(
          `  ${variant}: ready in ${(readyMs / 1000).toFixed(1)} s; bot RSS ${rssBefore.toFixed(0)} MB before the rounds, ${memOf(pid).rss.toFixed(0)} MB after; the first crowd of each command, the first at readiness, ack p99 / answer p95 ms: ${firstCrowds.join(', ')} (not in the table)`,
        );
      } finally {
        await bot.stop();
      }
    }
    floorRow.load = loadLine().replace('load avg now ', '');
    rows.push(floorRow);
    const sorted = (a: number[]) => [...a].sort((x, y) => x - y);
    table([
      [
        `×${CONCURRENT} at once, ${rounds} rounds (or one at a time)`,
        'command',
        'HTTP',
        'ack p50',
        'ack p99',
        'ack max',
        'answer p50',
        'answer p95',
        'answer max',
        'bot CPU ms/round',
        'load avg',
        'target',
      ],
      ...rows.map((r) => {
        const a = sorted(r.acks);
        const b = sorted(r.answers);
        if (r === floorRow)
          return [
            r.variant,
            r.command,
            statusCounts(r),
            ms(percentile(a, 50)),
            ms(percentile(a, 99)),
            ms(a[a.length - 1]),
            '',
            '',
            '',
            '',
            r.load,
            '',
          ];
        const met = percentile(a, 99) <= ACK_P99_TARGET_MS && percentile(b, 95) <= ANSWER_P95_TARGET_MS;
        const target = r.command.startsWith(MIXED) ? (met ? 'within' : 'beyond') : met ? 'met' : 'NOT met';
        return [
          r.variant,
          `/argo ${r.command}`,
          statusCounts(r),
          ms(percentile(a, 50)),
          ms(percentile(a, 99)),
          ms(a[a.length - 1]),
          ms(percentile(b, 50)),
          ms(percentile(b, 95)),
          ms(b[b.length - 1]),
          ms(r.botCpuMs),
          r.load,
          target,
        ];
      }),
    ]);
    console.log(
      `  (ack = signed POST → HTTP 200 at the client; answer = fire → the answer's POST received on response_url; one at a time = ${SINGLE_ASKS} asks 13–43 ms apart, its bot CPU per 50 of them; ${loadLine()})`,
    );
    return rows;
  } finally {
    floor.child.kill('SIGTERM');
    client.disconnect();
    await sim.stop();
    await cleanPrefix(REDIS_URL, prefix);
    rmSync(dir, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      apps: { type: 'string' },
      rounds: { type: 'string' },
      role: { type: 'string' },
      firer: { type: 'string' },
    },
  });
  if (values.role && values.role !== 'bot' && values.role !== 'all') throw new Error('--role is bot or all');
  if (values.firer && values.firer !== 'node' && values.firer !== 'curl') throw new Error('--firer is node or curl');
  if (values.firer === 'curl' && !curlCanFire()) throw new Error('--firer curl needs curl 7.68 or later on PATH');
  runSlackBotBench({
    apps: values.apps ? Number(values.apps) : undefined,
    rounds: values.rounds ? Number(values.rounds) : undefined,
    role: values.role as 'bot' | 'all' | undefined,
    firer: values.firer as Firer | undefined,
  }).then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
