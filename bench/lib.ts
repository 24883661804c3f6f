import { fork, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ArgoApi } from '../src/infra/argocd/api.js';
import { createClients, type ArgoClient } from '../src/infra/argocd/client.js';
import { parseConfig } from '../src/infra/config/load.js';
import type { RollcallConfig } from '../src/infra/config/schema.js';
import { FleetMirror } from '../src/fleet/mirror.js';
import { closeRedis, createRedis, type RedisClient } from '../src/infra/redis.js';
import type { SimChildRequest, SimChildReady } from './sim-child.js';

export const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));

export const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);
export const ms = (n: number) => (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2));

export function rssMb(): number {
  return process.memoryUsage().rss / 1024 / 1024;
}

/** The machine is shared with other engineers' test runs: every bench prints the load it ran under. */
export function machineLine(): string {
  const load = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  return `node ${process.version} · ${os.cpus().length} CPUs (${os.cpus()[0]?.model.trim() ?? '?'}) · load avg ${load} · ${(os.totalmem() / 2 ** 30).toFixed(0)} GB RAM`;
}

export function loadLine(): string {
  return `load avg now ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`;
}

export function header(title: string): void {
  console.log(`\n== ${title}`);
}

/** Prints rows as an aligned table; the first row is the header. */
export function table(rows: (string | number)[][]): void {
  const cells = rows.map((r) => r.map(String));
  const widths = cells[0].map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  cells.forEach((r, n) => {
    console.log('  ' + r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  '));
    if (n === 0) console.log('  ' + widths.map((w) => '-'.repeat(w)).join('  '));
  });
}

export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

export function stats(samples: number[]): { n: number; p50: number; p95: number; max: number; mean: number } {
  const s = [...samples].sort((a, b) => a - b);
  return {
    n: s.length,
    p50: percentile(s, 50),
    p95: percentile(s, 95),
    max: s[s.length - 1],
    mean: s.reduce((a, b) => a + b, 0) / (s.length || 1),
  };
}

// ---------- the simulator in its own process ----------

export interface SimChild {
  url: string;
  instances: SimChildReady['instances'];
  info: SimChildReady;
  child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * The simulator runs in a child process, as Argo CD would run apart from the bot: the bot's RSS is its
 * own, and serializing 10,000 apps does not borrow the bot's event loop.
 */
export async function startSimChild(req: SimChildRequest): Promise<SimChild> {
  const child = fork(path.join(BENCH_DIR, 'sim-child.ts'), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const info = await new Promise<SimChildReady>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`simulator child exited with ${code} before it was ready`)));
    child.on('message', (m: unknown) => {
      const msg = m as SimChildReady | { error: string };
      if ('error' in msg) reject(new Error(`simulator child: ${msg.error}`));
      else resolve(msg);
    });
    child.send(req);
  });
  child.removeAllListeners('exit');
  return {
    url: info.url,
    instances: info.instances,
    info,
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.disconnect();
        setTimeout(() => child.kill('SIGKILL'), 5000).unref();
      }),
  };
}

/** A rollcall.yaml for the simulator, parsed by the real config loader. */
export function simConfig(
  sim: { instances: { name: string; url: string; token: string }[] },
  extra = '',
): RollcallConfig {
  const lines = ['instances:'];
  for (const i of sim.instances) {
    lines.push(
      `  - name: ${i.name}`,
      `    url: ${i.url}`,
      `    token: "${i.token}"`,
      `    timeout: 60s`,
      `    rateLimit: { max: 100, per: 1s }`,
    );
  }
  lines.push('access:', '  operators: [U_BENCH]', '  admins: [U_BENCH]');
  return parseConfig(lines.join('\n') + '\n' + extra, 'bench-rollcall.yaml', {});
}

/** Counts every call the bot makes to Argo CD, per instance and method, at the ArgoApi boundary. */
export class CallCounter {
  readonly counts = new Map<string, number>();
  reset(): void {
    this.counts.clear();
  }
  total(filter: (method: string) => boolean = () => true): number {
    let n = 0;
    for (const [k, v] of this.counts) if (filter(k.split(' ')[1])) n += v;
    return n;
  }
  byMethod(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [k, v] of this.counts) {
      const m = k.split(' ')[1];
      out[m] = (out[m] ?? 0) + v;
    }
    return out;
  }
  /** Called for every call with its arguments and when it started (performance.now()). */
  onCall?: (instance: string, method: string, args: unknown[], startedAt: number, result: unknown) => void;
  wrap(instance: string, api: ArgoApi): ArgoApi {
    return new Proxy(api, {
      get: (target, prop, receiver) => {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          const key = `${instance} ${String(prop)}`;
          this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
          const startedAt = performance.now();
          const result = (value as (...a: unknown[]) => unknown).apply(target, args);
          this.onCall?.(instance, String(prop), args, startedAt, result);
          return result;
        };
      },
    });
  }
}

export interface BotFleet {
  config: RollcallConfig;
  clients: Map<string, ArgoClient>;
  argocd: Map<string, ArgoApi>;
  mirror: FleetMirror;
  counter: CallCounter;
  buildMs: number;
}

/** createClients + FleetMirror.start(), exactly as `rollcall start` wires them; timed. */
export async function buildMirror(
  config: RollcallConfig,
  mirrorOpts: ConstructorParameters<typeof FleetMirror>[2] = {},
): Promise<BotFleet> {
  const clients = createClients(config);
  const counter = new CallCounter();
  const argocd = new Map<string, ArgoApi>([...clients].map(([name, c]) => [name, counter.wrap(name, c)]));
  const mirror = new FleetMirror(
    argocd,
    config.instances.map((i) => ({ name: i.name, uiUrl: i.uiUrl ?? i.url })),
    mirrorOpts,
  );
  const t0 = performance.now();
  await mirror.start();
  const buildMs = performance.now() - t0;
  const bad = mirror.health().filter((h) => !h.synced);
  if (bad.length) throw new Error(`mirror not synced: ${JSON.stringify(bad)}`);
  return { config, clients, argocd, mirror, counter, buildMs };
}

export function isMain(metaUrl: string): boolean {
  return !!process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(metaUrl);
}

/** Deletes every key under `prefix` (SCAN, not KEYS: the machine's Redis is shared). Closes nothing it did not open. */
export async function cleanPrefix(redis: RedisClient | string, prefix: string): Promise<void> {
  const client = typeof redis === 'string' ? createRedis(redis) : redis;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await (client as import('ioredis').Redis).scan(
        cursor,
        'MATCH',
        `${prefix}:*`,
        'COUNT',
        5000,
      );
      cursor = next;
      if (keys.length) await client.del(...keys);
    } while (cursor !== '0');
  } finally {
    if (typeof redis === 'string') await closeRedis(client);
  }
}
