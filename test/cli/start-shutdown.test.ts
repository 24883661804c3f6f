import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimProcess } from '../support/sim-process.js';
import { startPrivateRedis, type PrivateRedis } from '../../src/infra/redis-server.js';

const root = path.resolve(import.meta.dirname, '../..');
const bin = path.join(root, 'bin/rollcall.js');
const fixtureFile = path.join(root, 'test/fixtures/sim-multi-instance.json');
const exec = promisify(execFile);

interface Started {
  child: ChildProcess;
  log: () => string;
  exited: Promise<number | null>;
}

/** `rollcall start` as a real process; resolves once it logged "rollcall started". */
async function startRollcall(config: string): Promise<Started> {
  let log = '';
  // The config names the private Redis; REDIS_URL (the tests' shared one) would win over it.
  const { REDIS_URL: _shared, ...env } = process.env;
  const child = spawn(process.execPath, [bin, 'start', '--config', config], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...env, LOG_LEVEL: 'info' },
  });
  child.stderr!.on('data', (chunk) => (log += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 30_000;
  while (!log.includes('rollcall started')) {
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill('SIGKILL');
      throw new Error(`rollcall start did not start: ${log}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, log: () => log, exited };
}

/** Milliseconds from SIGTERM to exit, or undefined if it is still running after `withinMs`. */
async function terminate(s: Started, withinMs: number): Promise<{ ms?: number; code: number | null }> {
  const sent = Date.now();
  s.child.kill('SIGTERM');
  const code = await Promise.race([s.exited, new Promise<'running'>((r) => setTimeout(() => r('running'), withinMs))]);
  if (code === 'running') {
    s.child.kill('SIGKILL');
    return { code: null };
  }
  return { ms: Date.now() - sent, code };
}

describe('rollcall start on SIGTERM (real processes, a private redis-server)', () => {
  let sim: ChildProcess;
  let dir: string;
  let simConfig: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'rollcall-shutdown-'));
    simConfig = path.join(dir, 'sim.yaml');
    sim = (
      await startSimProcess(['--fixture', fixtureFile, '--port', '0', '--write-config', simConfig], (out) =>
        out.includes('argocd staging'),
      )
    ).child;
  }, 40_000);

  afterAll(() => {
    sim?.kill('SIGTERM');
  });

  function configFor(redis: PrivateRedis, graceMs: number): string {
    const file = path.join(dir, `start-${redis.port}.yaml`);
    const base = readFileSync(simConfig, 'utf8').replace(/url: \$\{REDIS_URL:-[^}]*\}/, `url: ${redis.url}`);
    writeFileSync(file, `${base}\nhttp: { port: 0 }\nshutdown: { grace: ${graceMs}ms }\n`);
    expect(readFileSync(file, 'utf8')).toContain(redis.url);
    return file;
  }

  it('exits within its grace period when Redis is gone, saying what it leaves to another worker', async () => {
    const redis = await startPrivateRedis();
    let started: Started | undefined;
    try {
      started = await startRollcall(configFor(redis, 2000));
      // Redis dies under it: the worker, the queue and every checkpoint now wait on a server that is not there.
      redis.process.kill('SIGKILL');
      await new Promise((r) => setTimeout(r, 1500));
      const { ms, code } = await terminate(started, 10_000);
      expect(ms, `still running 10 s after SIGTERM:\n${started.log()}`).toBeDefined();
      expect(ms!, started.log()).toBeGreaterThanOrEqual(1900);
      expect(ms!).toBeLessThan(5000);
      expect(code).toBe(1);
      expect(started.log()).toContain('shutting down: finishing in-flight steps');
      expect(started.log()).toContain('shutdown grace period over');
    } finally {
      started?.child.kill('SIGKILL');
      await redis.stop();
    }
  }, 60_000);

  it('exits at once, cleanly, when Redis and Argo CD answer', async () => {
    const redis = await startPrivateRedis();
    let started: Started | undefined;
    try {
      started = await startRollcall(configFor(redis, 10_000));
      const { ms, code } = await terminate(started, 10_000);
      expect(ms).toBeDefined();
      expect(ms!).toBeLessThan(5000);
      expect(code).toBe(0);
      expect(started.log()).toContain('"msg":"stopped"');
    } finally {
      started?.child.kill('SIGKILL');
      await redis.stop();
    }
  }, 60_000);
});

describe('rollcall start on SIGTERM mid-run (real processes, seed-outage simulator)', () => {
  let sim: ChildProcess;
  let simConfig: string;
  let simUrl: string;

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-shutdown-run-'));
    simConfig = path.join(dir, 'sim.yaml');
    const started = await startSimProcess(
      ['--scenario', 'seed-outage', '--port', '0', '--speed', '5', '--write-config', simConfig],
      (out) => /^argocd prod (\S+)/m.test(out),
    );
    sim = started.child;
    simUrl = new URL(/^argocd prod (\S+)/m.exec(started.output())![1]).origin;
  }, 40_000);

  afterAll(() => {
    sim?.kill('SIGTERM');
  });

  it('leaves the step it was running to the next worker, which finishes the run syncing each app once', async () => {
    const redis = await startPrivateRedis();
    const workers: Started[] = [];
    try {
      const config = path.join(path.dirname(simConfig), 'start.yaml');
      writeFileSync(
        config,
        `${readFileSync(simConfig, 'utf8').replace(/url: \$\{REDIS_URL:-[^}]*\}/, `url: ${redis.url}`)}\nhttp: { port: 0 }\nshutdown: { grace: 8s }\n`,
      );
      workers.push(await startRollcall(config));
      const { REDIS_URL: _shared, ...env } = process.env;
      const ask = async (text: string, ...flags: string[]) => {
        const { stdout } = await exec(process.execPath, [bin, 'ask', text, ...flags, '--json', '--config', config], {
          env: { ...env, ROLLCALL_USER: 'shutdown-tester', LOG_LEVEL: 'error' },
        }).catch((e) => e);
        return JSON.parse(stdout);
      };
      const syncs = async () => {
        const ops = (await (await fetch(`${simUrl}/_sim/operations`)).json()) as {
          method: string;
          path: string;
          app?: string;
        }[];
        return ops.filter((o) => o.method === 'POST' && o.path.endsWith('/sync')).map((o) => o.app!);
      };
      const queued = await ask('sync auth-config-* prune=true concurrency=2 gate=synced', '--yes');
      const runId = queued.data.runId as string;
      expect(queued.ok, JSON.stringify(queued)).toBe(true);
      expect(queued.data.run.status).toBe('running');
      // seed-outage: auth-config on each of its 12 clusters.
      const apps = 12;
      // Stop the worker while the step is half done.
      await expect
        .poll(async () => (await syncs()).length, { timeout: 20_000, interval: 100 })
        .toBeGreaterThanOrEqual(2);
      const { ms, code } = await terminate(workers[0], 15_000);
      expect(ms, workers[0].log()).toBeDefined();
      expect(ms!).toBeLessThan(9000);
      expect([0, 1]).toContain(code);
      const before = await syncs();
      expect(before.length).toBeLessThan(apps);

      workers.push(await startRollcall(config));
      await expect
        .poll(async () => (await ask(`runs show ${runId}`)).data.status, { timeout: 45_000, interval: 500 })
        .toBe('succeeded');
      const after = await syncs();
      expect(after.length).toBe(apps);
      expect(new Set(after).size).toBe(apps);
    } finally {
      for (const w of workers) w.child.kill('SIGKILL');
      await redis.stop();
    }
  }, 120_000);
});
