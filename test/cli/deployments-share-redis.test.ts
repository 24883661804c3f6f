import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { simConfigYaml } from '../../src/sim/cli.js';
import type { SimServer } from '../../src/sim/server.js';
import { cleanPrefix, testPrefix } from '../runbooks/fake-argo.js';
import { simOperations, startTestSim } from '../support/sim.js';

const root = path.resolve(import.meta.dirname, '../..');
const bin = path.join(root, 'bin/rollcall.js');
const exec = promisify(execFile);

interface Proc {
  child: ChildProcess;
  out: () => string;
}

function launch(args: string[], env: NodeJS.ProcessEnv): Proc {
  let out = '';
  const child = spawn(process.execPath, [bin, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  return { child, out: () => out };
}

async function waitFor(p: Proc, pattern: RegExp, timeoutMs = 60_000): Promise<RegExpMatchArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const m = pattern.exec(p.out());
    if (m) return m;
    if (Date.now() > deadline || p.child.exitCode !== null) throw new Error(`no ${pattern} in:\n${p.out()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const syncPosts = async (simUrl: string) => {
  const res = await fetch(`${simUrl}/_sim/operations`);
  const ops = (await res.json()) as {
    method: string;
    path: string;
    app?: string;
    body: { infos?: { name: string; value: string }[] };
  }[];
  return ops.filter((o) => o.method === 'POST' && /\/sync$/.test(o.path));
};
const runIdsOf = (posts: Awaited<ReturnType<typeof syncPosts>>) => [
  ...new Set(posts.map((p) => p.body.infos?.find((i) => i.name === 'rollcall-run')?.value)),
];

describe('two demos and one rollcall start on one Redis (real processes)', () => {
  const procs: Proc[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    for (const c of cleanups.reverse()) await c().catch(() => {});
  });

  it("runs each deployment's bulk sync with that deployment's worker only", async () => {
    const redisUrl = process.env.REDIS_URL!;
    // The Redis on 127.0.0.1:6379 when one runs (else the tests' private one): every process below shares it.
    const env = { REDIS_URL: redisUrl, LOG_LEVEL: 'warn' };

    // A real deployment: `rollcall start` (every role) against its own simulated Argo CD.
    const sim: SimServer = await startTestSim({ scenario: 'seed-outage', manual: false, speed: 50 });
    cleanups.push(() => sim.stop());
    const prefix = testPrefix();
    cleanups.push(() => cleanPrefix(redisUrl, prefix));
    const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-share-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const config = path.join(dir, 'rollcall.yaml');
    writeFileSync(
      config,
      `${simConfigYaml(sim, { redisUrl, redisPrefix: prefix, operator: 'terminal' })}http:\n  port: 0\n`,
    );
    const start = launch(['start', '--config', config], { ...env, LOG_LEVEL: 'info' });
    procs.push(start);
    await waitFor(start, /rollcall started/);

    // Two demos, each with its own simulator, on the same Redis.
    const demos = [launch(['demo', '--speed', '50'], env), launch(['demo', '--speed', '50'], env)];
    procs.push(...demos);
    const demoSims: string[] = [];
    for (const d of demos) {
      expect((await waitFor(d, /Redis: .*own key prefix "(rollcall-demo-[^"]+)"/))[1]).toBeTruthy();
      demoSims.push((await waitFor(d, /simulator scenario "seed-outage" at (http:\/\/127\.0\.0\.1:\d+)/))[1]);
      await waitFor(d, /argo> /);
    }
    const prefixes = demos.map((d) => /own key prefix "([^"]+)"/.exec(d.out())![1]);
    expect(new Set(prefixes).size).toBe(2);

    // Every deployment requests the same bulk sync at about the same time.
    const demoRuns: string[] = [];
    for (const d of demos) {
      d.child.stdin!.write('sync auth-config-* prune=true\n');
      demoRuns.push((await waitFor(d, /preview \((r-[a-z0-9]+)\)/))[1]);
      d.child.stdin!.write('1\n');
    }
    const asked = await exec(
      process.execPath,
      [bin, 'ask', 'sync auth-config-* prune=true', '--yes', '--json', '--config', config],
      {
        env: { ...process.env, ...env, ROLLCALL_USER: 'terminal' },
      },
    );
    const startRun = String((JSON.parse(asked.stdout) as { data: { runId: string } }).data.runId);

    // Each simulator saw its 12 auth-config apps synced once, by its own deployment's run and nobody else's.
    const expectations: [string, string][] = [
      [demoSims[0], demoRuns[0]],
      [demoSims[1], demoRuns[1]],
      [sim.url, startRun],
    ];
    for (const [simUrl, runId] of expectations) {
      await expect.poll(async () => (await syncPosts(simUrl)).length, { timeout: 60_000, interval: 250 }).toBe(12);
      const posts = await syncPosts(simUrl);
      expect(new Set(posts.map((p) => p.app)).size).toBe(12);
      expect(runIdsOf(posts)).toEqual([runId]);
    }
    for (const d of demos) await waitFor(d, /: succeeded/);
    // Nothing else was synced after the fact: no worker took another deployment's steps.
    await new Promise((r) => setTimeout(r, 1000));
    for (const [simUrl, runId] of expectations) expect(runIdsOf(await syncPosts(simUrl))).toEqual([runId]);
    expect((await simOperations(sim)).filter((o) => o.method === 'POST').length).toBe(12);

    for (const d of demos) d.child.stdin!.end('exit\n');
    for (const d of demos) await waitFor(d, /bye/);
  }, 180_000);
});
