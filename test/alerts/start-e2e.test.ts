import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/server.js';
import { STUCK_APPS } from '../../src/sim/scenarios/progressive-infra.js';
import { WARM_UP_REQUESTS } from '../../src/surfaces/slack/warm-up.js';
import { startFakeSlack, type FakeSlack } from '../support/fake-slack.js';
import { startTestSim } from '../support/sim.js';
import { cleanPrefix, testPrefix } from '../runbooks/fake-argo.js';

const root = path.resolve(import.meta.dirname, '../..');
const bin = path.join(root, 'bin/rollcall.js');
const exec = promisify(execFile);
const REDIS_URL = process.env.REDIS_URL!;
const STUCK = Object.keys(STUCK_APPS).sort();

interface Started {
  child: ChildProcess;
  log: () => string;
}

async function startRollcall(config: string): Promise<Started> {
  let log = '';
  const child = spawn(process.execPath, [bin, 'start', '--config', config], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, LOG_LEVEL: 'info' },
  });
  child.stderr!.on('data', (chunk) => (log += chunk));
  const deadline = Date.now() + 40_000;
  while (!log.includes('rollcall started')) {
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill('SIGKILL');
      throw new Error(`rollcall start did not start: ${log}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, log: () => log };
}

async function askJson(config: string, text: string): Promise<{ ok: boolean; data: Record<string, any> }> {
  const { stdout } = await exec(process.execPath, [bin, 'ask', text, '--json', '--config', config], {
    env: { ...process.env, LOG_LEVEL: 'warn' },
  });
  return JSON.parse(stdout);
}

describe('alerts with two `rollcall start` processes on one Redis (progressive-infra, fake Slack)', () => {
  let sim: SimServer;
  let fake: FakeSlack;
  let config: string;
  const prefix = testPrefix();
  const workers: Started[] = [];

  beforeAll(async () => {
    sim = await startTestSim({ scenario: 'progressive-infra' });
    fake = await startFakeSlack();
    const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-alerts-'));
    config = path.join(dir, 'rollcall.yaml');
    writeFileSync(
      config,
      stringify({
        instances: sim.instances.map((i) => ({ name: i.name, url: i.url, token: i.token })),
        redis: { url: REDIS_URL, prefix },
        slack: {
          mode: 'http',
          botToken: 'xoxb-test',
          signingSecret: 'secret-0123456789',
          port: 0,
          apiUrl: fake.apiUrl,
        },
        http: { port: 0 },
        // Short enough for a test; the rules and lifecycle are those of production.
        alerts: { channel: 'C_ALERTS', stuckAfter: '1m', holdDown: '2s', resolveAfter: '3s', sweepEvery: '1s' },
      }),
    );
    workers.push(...(await Promise.all([startRollcall(config), startRollcall(config)])));
  }, 90_000);

  afterAll(async () => {
    for (const w of workers) w.child.kill('SIGTERM');
    await Promise.all(
      workers.map((w) => new Promise((r) => (w.child.exitCode !== null ? r(null) : w.child.once('exit', r)))),
    );
    await sim?.stop();
    await fake?.stop();
    await cleanPrefix(REDIS_URL, prefix);
  });

  const stuckPosts = () =>
    fake
      .callsTo('chat.postMessage')
      .filter((c) => c.args.channel === 'C_ALERTS' && String(c.args.text).includes('Stuck rollout step'));

  it('prepares status over every mirrored app, and warms the request path, before it takes Slack requests', () => {
    const apps = [...sim.state.instances.values()].reduce((n, i) => n + i.apps.size, 0);
    for (const w of workers) {
      const lines = w
        .log()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { msg: string; apps?: number; ms?: number; level: number });
      const prepared = lines.findIndex((l) => l.msg === 'status prepared');
      const warmed = lines.findIndex((l) => l.msg === 'slack intake warmed');
      const connected = lines.findIndex((l) => l.msg === 'slack connected');
      expect(prepared).toBeGreaterThanOrEqual(0);
      expect(lines[prepared]).toMatchObject({ apps, ms: expect.any(Number), answeredMs: expect.any(Number) });
      expect(lines[warmed]).toMatchObject({ requests: WARM_UP_REQUESTS });
      expect(prepared).toBeLessThan(warmed);
      expect(warmed).toBeLessThan(connected);
      // Neither the answers run ahead nor the warm-up's requests found anything to warn about.
      expect(lines.slice(0, connected).filter((l) => l.level >= 40 && /status|slack/.test(l.msg))).toEqual([]);
    }
  });

  it('fires one stuck-step alert listing the three apps, posts it once, and edits the same message to resolved once they are synced by hand', async () => {
    let alerts: any[] = [];
    await expect
      .poll(
        async () => {
          alerts = (await askJson(config, 'alerts')).data.alerts.filter((a: any) => a.rule === 'stuck-step');
          return alerts.map((a) => a.state);
        },
        { timeout: 45_000, interval: 1000 },
      )
      .toEqual(['firing']);
    expect(alerts[0]).toMatchObject({
      rule: 'stuck-step',
      state: 'firing',
      instance: 'infra',
      appSet: 'progressive-infra',
      step: 3,
      apps: STUCK,
    });
    expect(Object.keys(alerts[0]).sort()).toEqual(
      ['apps', 'appSet', 'id', 'instance', 'revision', 'rule', 'since', 'state', 'step', 'updatedAt'].sort(),
    );
    await expect.poll(() => stuckPosts().length, { timeout: 15_000 }).toBe(1);

    // Both workers keep sweeping: still one post.
    await new Promise((r) => setTimeout(r, 3000));
    expect(stuckPosts()).toHaveLength(1);

    // On-call re-syncs the three by hand; the simulator finishes the syncs and RollingSync marks them Healthy.
    for (const name of STUCK) sim.controller.requestSync('infra', name, { name, prune: true }, 'oncall');
    const healthy = sim.controller.advanceUntil(() => {
      const set = sim.state.instance('infra')!.appSets.get('progressive-infra')!;
      return STUCK.every((n) => set.status!.applicationStatus!.find((e) => e.application === n)!.status === 'Healthy');
    }, 30 * 60_000);
    expect(healthy).toBe(true);

    await expect
      .poll(
        async () =>
          (await askJson(config, 'alerts')).data.alerts
            .filter((a: any) => a.rule === 'stuck-step')
            .map((a: any) => `${a.id}:${a.state}`),
        { timeout: 45_000, interval: 1000 },
      )
      .toEqual([`${alerts[0].id}:resolved`]);
    const updates = fake.callsTo('chat.update').filter((c) => c.args.channel === 'C_ALERTS');
    expect(updates.length).toBeGreaterThan(0);
    const last = updates.at(-1)!;
    expect(String(last.args.text)).toContain('Resolved');
    expect(new Set(updates.map((u) => u.args.ts)).size).toBe(1);
    expect(stuckPosts()).toHaveLength(1);
    // Nothing else went to the alert's thread either: the one post is the only chat.postMessage about it.
    expect(fake.callsTo('chat.postMessage').filter((c) => c.args.thread_ts === last.args.ts)).toHaveLength(0);
  }, 150_000);
});
