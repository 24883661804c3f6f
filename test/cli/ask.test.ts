import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { simInstances, startSimProcess } from '../support/sim-process.js';
import type { Fixture } from '../../src/sim/fixture-types.js';

const root = path.resolve(import.meta.dirname, '../..');
const bin = path.join(root, 'bin/rollcall.js');
const fixtureFile = path.join(root, 'test/fixtures/sim-multi-instance.json');
const run = promisify(execFile);

/** What `status` must report, counted straight from the fixture (independently of the bot's code). */
function expectedStatus(fixture: Fixture) {
  const total = { apps: 0, sync: {} as Record<string, number>, health: {} as Record<string, number> };
  const clusters = new Map<
    string,
    { instance: string; cluster: string; apps: number; sync: Record<string, number>; health: Record<string, number> }
  >();
  const bump = (m: Record<string, number>, k: string) => (m[k] = (m[k] ?? 0) + 1);
  for (const instance of fixture.instances) {
    const byServer = new Map((instance.clusters ?? []).map((c) => [c.server.replace(/\/+$/, ''), c.name]));
    for (const app of instance.applications) {
      const dest = app.spec.destination;
      const cluster = dest.name ?? byServer.get((dest.server ?? '').replace(/\/+$/, '')) ?? dest.server!;
      const sync = app.status?.sync?.status ?? 'Unknown';
      const health = app.status?.health?.status ?? 'Unknown';
      total.apps++;
      bump(total.sync, sync);
      bump(total.health, health);
      const key = `${instance.name}/${cluster}`;
      const row = clusters.get(key) ?? { instance: instance.name, cluster, apps: 0, sync: {}, health: {} };
      row.apps++;
      bump(row.sync, sync);
      bump(row.health, health);
      clusters.set(key, row);
    }
  }
  return { total, clusters: [...clusters.values()] };
}

describe('rollcall sim + rollcall ask (processes, as a user runs them)', () => {
  let sim: ChildProcess;
  let config: string;
  let simOut = '';

  beforeAll(async () => {
    config = path.join(mkdtempSync(path.join(tmpdir(), 'rollcall-ask-')), 'rollcall.yaml');
    const started = await startSimProcess(
      ['--fixture', fixtureFile, '--port', '0', '--frozen', '--write-config', config],
      2,
    );
    sim = started.child;
    simOut = started.output();
  }, 40_000);

  afterAll(() => {
    sim?.kill('SIGTERM');
  });

  it('prints one line per served instance with its url and token', () => {
    const lines = simInstances(simOut);
    expect(lines[0]).toMatch(/^argocd prod http:\/\/127\.0\.0\.1:\d+\/i\/prod token=\S+$/);
    expect(lines[1]).toMatch(/^argocd staging http:\/\/127\.0\.0\.1:\d+\/i\/staging token=\S+$/);
  });

  it('reports status totals and per-cluster counts exactly as the fixture has them, across instances', async () => {
    const { stdout } = await run(process.execPath, [bin, 'ask', 'status', '--config', config, '--json'], {
      env: { ...process.env, LOG_LEVEL: 'error' },
    });
    const reply = JSON.parse(stdout);
    const expected = expectedStatus(JSON.parse(readFileSync(fixtureFile, 'utf8')));
    expect(reply).toMatchObject({ ok: true, command: 'status' });
    expect(reply.data.total).toEqual(expected.total);
    const byKey = (rows: { instance: string; cluster: string }[]) =>
      [...rows].sort((a, b) => `${a.instance}/${a.cluster}`.localeCompare(`${b.instance}/${b.cluster}`));
    expect(byKey(reply.data.clusters)).toEqual(byKey(expected.clusters));
    for (const p of reply.data.problems)
      expect(Object.keys(p).sort()).toEqual(['app', 'cluster', 'health', 'instance', 'reason', 'sync']);
  }, 60_000);

  it('exits 1 with a suggestion for a typo, and 2 for an unknown command', async () => {
    const typo = await run(process.execPath, [bin, 'ask', 'app payments-prod-eu', '--config', config, '--json']).catch(
      (e) => e,
    );
    expect(typo.code).toBe(1);
    const reply = JSON.parse(typo.stdout);
    expect(reply.ok).toBe(false);
    expect(reply.error.code).toBe('unknown_target');
    expect(reply.error.message + JSON.stringify(reply.error.suggestions ?? [])).toContain('payments-prod-eu1');

    const unknown = await run(process.execPath, [bin, 'ask', 'stauts', '--config', config, '--json']).catch((e) => e);
    expect(unknown.code).toBe(2);
    expect(JSON.parse(unknown.stdout).error).toMatchObject({ code: 'unknown_command' });
  }, 60_000);

  it('stops with exit 2 and the path of the problem for an invalid config', async () => {
    const bad = path.join(path.dirname(config), 'bad.yaml');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(bad, 'instances:\n  - name: prod\n    url: not-a-url\n    token: t\n');
    const result = await run(process.execPath, [bin, 'config', 'check', '--config', bad]).catch((e) => e);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('instances[0].url: expected a URL (line 3)');
  }, 30_000);

  it('queues a confirmed run and returns at once without --wait, saying no worker is connected and exiting 1; --as a stranger is refused', async () => {
    const { writeFileSync } = await import('node:fs');
    const own = path.join(path.dirname(config), 'own-prefix.yaml');
    const prefix = `rollcall-ask-${process.pid}-${Date.now()}`;
    writeFileSync(own, readFileSync(config, 'utf8').replace('prefix: rollcall', `prefix: ${prefix}`));
    const env = { ...process.env, ROLLCALL_USER: 'ask-tester' };
    try {
      const refused = await run(
        process.execPath,
        [bin, 'ask', 'sync ingress-prod-us1', '--yes', '--json', '--as', 'mallory', '--config', own],
        { env },
      ).catch((e) => e);
      expect(refused.code).toBe(1);
      expect(JSON.parse(refused.stdout).error).toMatchObject({
        code: 'forbidden',
        message: expect.stringContaining('mallory'),
      });
      const started = Date.now();
      const queued = await run(
        process.execPath,
        [bin, 'ask', 'sync ingress-prod-us1', '--yes', '--json', '--config', own],
        { env },
      ).catch((e) => e);
      expect(JSON.parse(queued.stdout).data.run).toMatchObject({ status: 'running', requester: 'ask-tester' });
      expect(queued.stderr).toMatch(/is queued, no worker: no rollcall worker is connected to this Redis/);
      // Nothing will run it: not a success.
      expect(queued.code).toBe(1);
      expect(Date.now() - started).toBeLessThan(20_000);
      // pause reaches the runbook engine from the terminal (its preview answers, not "no engine here").
      const pause = await run(process.execPath, [bin, 'ask', 'pause payments-prod-eu1', '--json', '--config', own], {
        env,
      }).catch((e) => e);
      expect(JSON.parse(pause.stdout).error).toMatchObject({
        code: 'nothing_to_pause',
        message: 'auto-sync is already off on payments-prod-eu1: nothing to pause',
      });
    } finally {
      const { cleanPrefix } = await import('../runbooks/fake-argo.js');
      await cleanPrefix(process.env.REDIS_URL!, prefix);
    }
  }, 60_000);

  it('says at once that Redis is unreachable for a command that needs it, instead of waiting forever', async () => {
    const { freePort } = await import('../../src/infra/redis-server.js');
    const port = await freePort();
    const started = Date.now();
    const result = await run(process.execPath, [bin, 'ask', 'runs', '--json', '--config', config], {
      env: { ...process.env, REDIS_URL: `redis://127.0.0.1:${port}` },
    }).catch((e) => e);
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stdout).error).toMatchObject({
      code: 'redis_unavailable',
      message: expect.stringContaining(`Cannot reach Redis at redis://127.0.0.1:${port} (connect ECONNREFUSED`),
    });
    // It says what still answers, and that does.
    expect(JSON.parse(result.stdout).error.message).toContain('Read-only fleet questions (status, app, clusters');
    expect(Date.now() - started).toBeLessThan(20_000);
    const status = await run(process.execPath, [bin, 'ask', 'status', '--json', '--config', config], {
      env: { ...process.env, REDIS_URL: `redis://127.0.0.1:${port}` },
    });
    expect(JSON.parse(status.stdout)).toMatchObject({ ok: true, command: 'status' });
  }, 30_000);
});
