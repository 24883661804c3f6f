/**
 * A whole rollcall process for the benchmarks, as a pod runs it: `dist/main.js start --role bot` (or the sources
 * through tsx without a build) with Slack over HTTP, its own Redis prefix and the simulated fleet in another
 * process, read from outside (/proc) and through a preloaded probe.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { freePort } from '../src/infra/redis-server.js';
import { BENCH_DIR, type SimChild } from './lib.js';
import type { SlackClientRequest } from './slack-client.js';

export const SECRET = 'bench-signing-secret-0123456789abcdef';
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
let started = 0;
const ROOT = path.resolve(BENCH_DIR, '..');

/**
 * The compiled build when there is one (`npm run build`), as a pod runs it; else the sources through tsx.
 * `BENCH_BOT_DIST=/path/to/dist/main.js` runs another build (a worktree's, to compare two versions in one run).
 */
export function botCommand(): { args: string[]; env: NodeJS.ProcessEnv } {
  const dist = process.env.BENCH_BOT_DIST ?? path.join(ROOT, 'dist/main.js');
  return existsSync(dist)
    ? { args: [dist], env: { NODE_ENV: 'production' } }
    : { args: [path.join(ROOT, 'bin/rollcall.js')], env: { NODE_ENV: 'development' } };
}

/** A process's own CPU time so far (user + system), ms, from /proc. */
export function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/**
 * Preloaded into the bot: on SIGUSR2 a full GC (the bot runs with --expose-gc), then V8's heap in use and the pages
 * it holds, to stderr. After a full GC what is still in use is what the bot keeps: a leak shows there first, and
 * it does not move with the machine's load or how much freed memory the C allocator keeps. `external` is what lives
 * outside V8's heap and is tied to JS objects (Buffers of HTTP bodies and streams).
 */
export const HEAP_PROBE = [
  '--expose-gc',
  '--import',
  `data:text/javascript,${encodeURIComponent("import v8 from 'node:v8'; process.on('SIGUSR2', () => { globalThis.gc(); const h = v8.getHeapStatistics(); const m = process.memoryUsage(); process.stderr.write(`soak-heap ${h.used_heap_size} ${h.total_physical_size} ${m.external}\\n`); });")}`,
];

export interface Bot {
  child: ChildProcess;
  slackUrl: string;
  /** After a full GC: V8 heap [used, held] and external memory, MB. */
  heap(): Promise<[number, number, number]>;
  /** SIGTERM, and resolves once the process is gone. */
  stop(): Promise<void>;
}

/** Slack's side (`slack-client.ts`) in a process of its own: the fake Web API the bot posts to, and signed requests. */
export async function startSlackApi(): Promise<{ client: ChildProcess; apiUrl: string; stop(): void }> {
  const client = fork(path.join(BENCH_DIR, 'slack-client.ts'), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const { apiUrl } = await ask<{ apiUrl: string }>(client, { kind: 'start' } satisfies SlackClientRequest);
  return { client, apiUrl, stop: () => client.disconnect() };
}

export function ask<T>(child: ChildProcess, req: unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    child.once('message', (m: unknown) =>
      (m as { error?: string }).error ? reject(new Error((m as { error: string }).error)) : resolve(m as T),
    );
    child.send(req as object);
  });
}

export function memOf(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)![1]) / 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

export const sleep = (msec: number) => new Promise((r) => setTimeout(r, msec));

/**
 * What an idle process holds, as a pod idle after its start-up does: a full GC, 20 s for V8's memory reducer to give
 * the freed pages back to the system, then RSS, its peak (VmHWM) and V8 heap in use, MB.
 */
export async function idleMemory(bot: Bot): Promise<{ rssMb: number; peakMb: number; heapMb: number }> {
  await bot.heap();
  await sleep(20_000);
  const [heapMb] = await bot.heap();
  await sleep(1000);
  const { rss, hwm } = memOf(bot.child.pid!);
  return { rssMb: rss, peakMb: hwm, heapMb };
}

/** Waits until the bot uses under 5% of a CPU (its watch backlog and answers done), at most `maxMs`. */
export async function quiet(pid: number, maxMs = 60_000): Promise<void> {
  const deadline = Date.now() + maxMs;
  for (let cpu = cpuMsOf(pid); Date.now() < deadline;) {
    await sleep(1000);
    const next = cpuMsOf(pid);
    if (next - cpu < 50) return;
    cpu = next;
  }
}

export async function startBot(
  sim: Pick<SimChild, 'instances'>,
  apiUrl: string,
  dir: string,
  prefix: string,
  opts: { flags?: string[]; role?: 'bot' | 'worker' | 'all' } = {},
): Promise<Bot> {
  const slackPort = await freePort();
  const httpPort = await freePort();
  const config = path.join(dir, `bot-${process.pid}-${++started}.yaml`);
  const lines = ['instances:'];
  for (const i of sim.instances)
    lines.push(`  - name: ${i.name}`, `    url: ${i.url}`, `    token: "${i.token}"`, '    timeout: 60s');
  lines.push(
    'redis:',
    `  url: ${REDIS_URL}`,
    `  prefix: ${prefix}`,
    'slack:',
    '  mode: http',
    '  botToken: xoxb-bench',
    `  signingSecret: ${SECRET}`,
    `  port: ${slackPort}`,
    `  apiUrl: ${apiUrl}`,
    'http:',
    `  port: ${httpPort}`,
  );
  writeFileSync(config, lines.join('\n') + '\n');
  const cmd = botCommand();
  const child = spawn(
    process.execPath,
    [...HEAP_PROBE, ...(opts.flags ?? []), ...cmd.args, 'start', '--role', opts.role ?? 'bot', '--config', config],
    {
      env: { ...process.env, ...cmd.env },
      cwd: path.resolve(BENCH_DIR, '..'),
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  const waiting: ((h: [number, number, number]) => void)[] = [];
  let err = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    err += chunk;
    for (let nl = err.indexOf('\n'); nl >= 0; nl = err.indexOf('\n')) {
      const line = err.slice(0, nl);
      err = err.slice(nl + 1);
      const m = /^soak-heap (\d+) (\d+) (\d+)$/.exec(line);
      if (m) waiting.shift()?.([Number(m[1]) / 2 ** 20, Number(m[2]) / 2 ** 20, Number(m[3]) / 2 ** 20]);
      // The bot's own log: only what went wrong is worth a line here.
      else if (!/^\{"level":[34]0,/.test(line)) process.stderr.write(`  [bot] ${line}\n`);
    }
  });
  const deadline = Date.now() + 180_000;
  while ((await fetch(`http://127.0.0.1:${httpPort}/readyz`).catch(() => undefined))?.status !== 200) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error('the bot did not become ready');
    await sleep(100);
  }
  return {
    child,
    slackUrl: `http://127.0.0.1:${slackPort}/slack/events`,
    heap: () =>
      new Promise((resolve) => {
        waiting.push(resolve);
        child.kill('SIGUSR2');
      }),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
