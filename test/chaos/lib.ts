/**
 * The chaos suite: a bulk sync of the simulator's fleet through real worker processes on a private
 * Redis (append-only file on), with one real fault per case (a signal to a worker, Redis shut down
 * or killed, an Argo CD fault injected through /_sim/faults). Each case is judged by the
 * simulator's operation log alone: accepted `POST …/sync` per app.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startPrivateRedis, type PrivateRedis } from '../../src/infra/redis-server.js';
import { selectApps } from '../../src/fleet/select.js';
import { parseSelectorParam } from '../../src/domain/runbooks/actions/bulk-sync.js';
import { startEngine, type EngineHandle, type RunService } from '../../src/domain/runbooks/engine.js';
import { loadRunbooks, SHIPPED_RUNBOOKS_DIR } from '../../src/domain/runbooks/loader.js';
import type { Run } from '../../src/domain/runbooks/run-store.js';
import type { SimServer } from '../../src/sim/server.js';
import { simFault, simOperations, startTestSim } from '../support/sim.js';
import { chaosServices } from './services.js';

const here = path.dirname(fileURLToPath(import.meta.url));

export interface ChaosOptions {
  scenario: string;
  /** The bulk-sync selector. @defaultValue '*' (540 apps on seed-outage) */
  selector: string;
  concurrency: number;
  /** Simulator clock speed. */
  speed: number;
  /** BullMQ lock duration and stalled-check interval of every process. */
  lockMs: number;
  stalledMs: number;
  /** Argo CD client timeout (the posting window is this + 5 s). */
  argoTimeoutMs: number;
  runTimeoutMs: number;
}

export const CHAOS_DEFAULTS: ChaosOptions = {
  scenario: 'seed-outage',
  selector: '*',
  concurrency: 60,
  // Slow enough that a fault after 150 syncs lands mid-run (the run takes ~20 s on an idle machine).
  speed: 15,
  lockMs: 2000,
  stalledMs: 1000,
  argoTimeoutMs: 3000,
  runTimeoutMs: 240_000,
};

export interface Worker {
  child: ChildProcess;
  pid: number;
  /** Runs (step attempts) this worker started, from its log. */
  attempts: number;
  logs: { level: number; msg: string }[];
}

export interface CaseContext {
  opts: ChaosOptions;
  sim: SimServer;
  redis: PrivateRedis;
  workers: Worker[];
  run: Run;
  spawnWorker(): Promise<Worker>;
  /** The worker that started the latest step attempt. */
  activeWorker(): Worker;
  /** Resolves once at least n syncs were accepted. */
  waitAccepted(n: number): Promise<void>;
  restartRedis(downMs: number, how: 'shutdown' | 'kill'): Promise<void>;
  fault(body: Record<string, unknown>): Promise<void>;
  sleep(ms: number): Promise<void>;
  /** Marks when the fault began (for the longest pause in syncs after it). */
  faultStarted(): void;
}

export interface ChaosCase {
  name: string;
  workers: number;
  act(ctx: CaseContext): Promise<void>;
}

export interface ChaosRow {
  name: string;
  apps: number;
  duplicates: number;
  lost: number;
  /** Longest time without a new accepted sync after the fault began (ms). */
  resumeMs?: number;
  status: string;
  /** The run's own account (synced + failed, final status) matches the operation log. */
  truthful: boolean;
  wallMs: number;
  detail: string;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function acceptedSyncs(ops: Awaited<ReturnType<typeof simOperations>>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const o of ops)
    if (o.method === 'POST' && /\/sync$/.test(o.path) && (!o.status || o.status < 300))
      counts.set(o.app!, (counts.get(o.app!) ?? 0) + 1);
  return counts;
}

async function spawnWorker(
  sim: SimServer,
  redisUrl: string,
  prefix: string,
  opts: ChaosOptions,
  all: Worker[],
): Promise<Worker> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(here, 'worker.ts')], {
    env: {
      ...process.env,
      SIM_INSTANCES: JSON.stringify(sim.instances),
      REDIS_URL: redisUrl,
      PREFIX: prefix,
      LOCK_MS: String(opts.lockMs),
      STALLED_MS: String(opts.stalledMs),
      ARGO_TIMEOUT_MS: String(opts.argoTimeoutMs),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const worker: Worker = { child, pid: child.pid!, attempts: 0, logs: [] };
  let buffered = '';
  child.stderr!.on('data', (d: Buffer) => {
    buffered += d.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop()!;
    for (const line of lines) {
      try {
        const entry = JSON.parse(line) as { level: number; msg: string };
        worker.logs.push({ level: entry.level, msg: entry.msg });
        if (entry.msg === 'step attempt started') {
          worker.attempts++;
          lastActive = worker;
        }
      } catch {
        worker.logs.push({ level: 50, msg: line });
      }
    }
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d) => String(d).includes('ready') && resolve());
    child.once('exit', (code) => reject(new Error(`worker exited early (${code})`)));
  });
  all.push(worker);
  return worker;
}
let lastActive: Worker | undefined;

/** Runs one case and judges it by the operation log. */
export async function runCase(c: ChaosCase, opts: ChaosOptions = CHAOS_DEFAULTS): Promise<ChaosRow> {
  const cleanup: (() => Promise<unknown>)[] = [];
  const workers: Worker[] = [];
  lastActive = undefined;
  try {
    const sim = await startTestSim({ scenario: opts.scenario, manual: false, speed: opts.speed });
    cleanup.push(() => sim.stop());
    const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-chaos-redis-'));
    cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
    // Production's setting: fsync once a second, so a crash may lose the last second of writes.
    let redis = await startPrivateRedis({ persistent: true, dir, appendfsync: 'everysec' });
    cleanup.push(() => redis.stop());
    const prefix = 'chaos';
    const { services, fleet } = await chaosServices(sim.instances);
    cleanup.push(() => fleet.stop());
    const bot: EngineHandle = await startEngine(services, {
      role: 'bot',
      redisUrl: redis.url,
      prefix,
      runbooks: loadRunbooks(SHIPPED_RUNBOOKS_DIR),
      timing: { lockDurationMs: opts.lockMs, stalledIntervalMs: opts.stalledMs, maxStalledCount: 1000 },
    });
    cleanup.push(() => bot.stop());
    const runs = bot.runs as RunService;
    await Promise.all(Array.from({ length: c.workers }, () => spawnWorker(sim, redis.url, prefix, opts, workers)));
    cleanup.push(async () => {
      for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
    });

    const started = await runs.start({
      runbook: 'bulk-sync',
      // One wave over the whole selection on purpose (the faults must land mid-wave): the count is typed back as on-call would.
      params: {
        selector: opts.selector,
        prune: 'true',
        includeSynced: 'true',
        concurrency: String(opts.concurrency),
        gate: 'synced',
        onFailure: 'continue',
        confirm: String(selectApps(fleet, parseSelectorParam(opts.selector)).length),
      },
      user: 'U_OP',
      surface: 'terminal',
    });
    const planned = (started.preview!.data as { waves: { apps: { app: string }[] }[] }).waves.flatMap((w) =>
      w.apps.map((a) => a.app),
    );
    const t0 = Date.now();
    await runs.confirm(started.id, 'U_OP');

    // Sample the accepted count to find the longest pause in syncs after the fault began.
    let faultAt: number | undefined;
    let lastGrowth = 0;
    let longestPause = 0;
    let lastCount = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        try {
          const n = [...acceptedSyncs(await simOperations(sim)).values()].reduce((a, b) => a + b, 0);
          const now = Date.now();
          if (n > lastCount) {
            if (faultAt !== undefined) longestPause = Math.max(longestPause, now - Math.max(lastGrowth, faultAt));
            lastGrowth = now;
            lastCount = n;
          }
        } catch {
          // the simulator is busy; next sample
        }
        await sleep(100);
      }
    })();

    const ctx: CaseContext = {
      opts,
      sim,
      get redis() {
        return redis;
      },
      workers,
      run: started,
      spawnWorker: () => spawnWorker(sim, redis.url, prefix, opts, workers),
      activeWorker: () => lastActive ?? workers[0],
      waitAccepted: async (n) => {
        for (;;) {
          if (lastCount >= n) return;
          await sleep(50);
        }
      },
      restartRedis: async (downMs, how) => {
        const port = redis.port;
        if (how === 'kill') {
          const exited = new Promise((r) => redis.process.once('exit', r));
          redis.process.kill('SIGKILL');
          await exited;
        } else await redis.stop();
        await sleep(downMs);
        redis = await startPrivateRedis({ persistent: true, dir, port, appendfsync: 'everysec' });
      },
      fault: async (body) => {
        const res = await simFault(sim, body);
        if (res.status !== 200) throw new Error(`fault ${JSON.stringify(body)}: ${await res.text()}`);
      },
      sleep,
      faultStarted: () => {
        faultAt = Date.now();
        lastGrowth = faultAt;
      },
    };
    await c.act(ctx);
    let end: Run;
    try {
      end = await runs.waitForEnd(started.id, opts.runTimeoutMs);
    } catch {
      end = (await runs.get(started.id))!;
    }
    const wallMs = Date.now() - t0;
    sampling = false;
    await sampler;
    if (faultAt !== undefined && lastGrowth > 0) longestPause = Math.max(longestPause, 0);

    const counts = acceptedSyncs(await simOperations(sim));
    const duplicates = [...counts.values()].filter((n) => n > 1).length;
    const lost = planned.filter((a) => !counts.has(a)).length;
    const output = (end.steps[0]?.output ?? {}) as { synced?: number; failed?: unknown[] };
    const runSynced = output.synced ?? 0;
    const runFailed = output.failed?.length ?? 0;
    const logSynced = planned.filter((a) => counts.has(a)).length;
    const truthful =
      runSynced + runFailed === logSynced &&
      (end.status === 'succeeded') === (lost === 0 && duplicates === 0 && runFailed === 0);
    const redisLogs = workers.flatMap((w) => w.logs.filter((l) => /^Redis (unreachable|reachable again)/.test(l.msg)));
    const lockLogs = workers.flatMap((w) => w.logs.filter((l) => /lost the lock|lost its lease/.test(l.msg)));
    const detail = [
      `run ${runSynced} synced, ${runFailed} failed`,
      `${workers.reduce((n, w) => n + w.attempts, 0)} step attempts`,
      ...(lockLogs.length ? [`${lockLogs.length} lock/lease-loss log lines`] : []),
      ...(redisLogs.length ? [`Redis loss/recovery logged ${redisLogs.length}× over ${workers.length} workers`] : []),
    ].join('; ');
    return {
      name: c.name,
      apps: planned.length,
      duplicates,
      lost,
      resumeMs: faultAt !== undefined ? longestPause : undefined,
      status: `${end.status}${end.status === 'succeeded' ? '' : ` (${end.error ?? end.pausedReason ?? ''})`.slice(0, 80)}`,
      truthful,
      wallMs,
      detail,
    };
  } finally {
    for (const f of cleanup.reverse()) await f().catch(() => {});
  }
}

/** SIGSTOP the worker running the step for longer than its lock (so another takes the job over), then SIGCONT it. */
async function stall(ctx: CaseContext, w: Worker) {
  w.child.kill('SIGSTOP');
  await ctx.sleep(ctx.opts.lockMs * 2 + ctx.opts.stalledMs * 2 + 2000);
  w.child.kill('SIGCONT');
}

export const CASES: ChaosCase[] = [
  { name: 'no fault (reference)', workers: 1, act: async () => {} },
  {
    name: 'worker SIGKILL, a new worker starts',
    workers: 1,
    act: async (ctx) => {
      await ctx.waitAccepted(150);
      ctx.faultStarted();
      const w = ctx.activeWorker();
      w.child.kill('SIGKILL');
      await ctx.spawnWorker();
    },
  },
  {
    name: 'SIGSTOP beyond the lock, then SIGCONT',
    workers: 2,
    act: async (ctx) => {
      await ctx.waitAccepted(150);
      ctx.faultStarted();
      await stall(ctx, ctx.activeWorker());
    },
  },
  {
    name: 'Redis shut down 8 s and restarted (AOF)',
    workers: 2,
    act: async (ctx) => {
      await ctx.waitAccepted(150);
      ctx.faultStarted();
      await ctx.restartRedis(8000, 'shutdown');
    },
  },
  {
    name: 'Redis SIGKILL (AOF everysec) and restarted',
    workers: 2,
    act: async (ctx) => {
      await ctx.waitAccepted(150);
      ctx.faultStarted();
      await ctx.restartRedis(3000, 'kill');
    },
  },
  {
    name: 'two workers racing (each stalled in turn)',
    workers: 2,
    act: async (ctx) => {
      await ctx.waitAccepted(100);
      ctx.faultStarted();
      await stall(ctx, ctx.activeWorker());
      await ctx.sleep(1500);
      await stall(ctx, ctx.activeWorker());
    },
  },
  {
    name: 'three workers racing (each stalled in turn)',
    workers: 3,
    act: async (ctx) => {
      await ctx.waitAccepted(100);
      ctx.faultStarted();
      for (let i = 0; i < 3; i++) {
        await stall(ctx, ctx.activeWorker());
        await ctx.sleep(1000);
      }
    },
  },
  {
    name: 'Argo CD 503 then 502 on sync (7 s)',
    workers: 1,
    act: async (ctx) => {
      await ctx.waitAccepted(100);
      ctx.faultStarted();
      await ctx.fault({ kind: 'http5xx', status: 503, method: 'POST', match: '/sync', forMs: 4000 });
      await ctx.sleep(4000);
      await ctx.fault({ kind: 'http5xx', status: 502, method: 'POST', match: '/sync', forMs: 3000 });
    },
  },
  {
    name: 'Argo CD 429 (Retry-After 1) for 5 s',
    workers: 1,
    act: async (ctx) => {
      await ctx.waitAccepted(100);
      ctx.faultStarted();
      await ctx.fault({ kind: 'http429', retryAfterSeconds: 1, forMs: 5000 });
    },
  },
  {
    name: 'Argo CD latency 1.5 s on every call for 8 s',
    workers: 1,
    act: async (ctx) => {
      await ctx.waitAccepted(100);
      ctx.faultStarted();
      await ctx.fault({ kind: 'latency', ms: 1500, forMs: 8000 });
    },
  },
  {
    name: 'a cluster down for 8 s',
    workers: 1,
    act: async (ctx) => {
      await ctx.waitAccepted(100);
      ctx.faultStarted();
      const cluster = 'prod-eu-north-1';
      await ctx.fault({ kind: 'clusterDown', cluster, down: true });
      await ctx.sleep(8000);
      await ctx.fault({ kind: 'clusterDown', cluster, down: false });
    },
  },
  {
    name: 'sync applied, answer lost (40 syncs)',
    workers: 1,
    act: async (ctx) => {
      await ctx.waitAccepted(100);
      ctx.faultStarted();
      await ctx.fault({ kind: 'answerLost', method: 'POST', match: '/sync', count: 40 });
    },
  },
];

export function formatTable(rows: ChaosRow[]): string {
  const head = ['case', 'apps', 'dup', 'lost', 'longest pause s', 'final state', 'true to log', 'wall s', 'detail'];
  const body = rows.map((r) => [
    r.name,
    String(r.apps),
    String(r.duplicates),
    String(r.lost),
    r.resumeMs === undefined ? '-' : (r.resumeMs / 1000).toFixed(1),
    r.status,
    r.truthful ? 'yes' : 'NO',
    (r.wallMs / 1000).toFixed(1),
    r.detail,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n');
}
