import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { RedisClient } from '../../src/infra/redis.js';
import { AlertManager, type AlertOutput, type IncidentSink } from '../../src/domain/alerts/manager.js';
import type { AlertRecord } from '../../src/domain/alerts/lifecycle.js';
import { evaluateAlertRules } from '../../src/domain/alerts/rules.js';
import { FleetRecords, KEY_BACKUP_RUNBOOK } from '../../src/domain/alerts/records.js';
import { AlertStore } from '../../src/domain/alerts/store.js';
import { RunStore } from '../../src/domain/runbooks/run-store.js';
import { configSchema, type RollcallConfig } from '../../src/infra/config/schema.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { createRedis, closeRedis } from '../../src/infra/redis.js';
import { progressiveInfraFixture, STUCK_APPS } from '../../src/sim/scenarios/progressive-infra.js';
import { seedOutageFixture } from '../../src/sim/scenarios/seed-outage.js';
import { cleanPrefix, testPrefix } from '../runbooks/fake-argo.js';
import { eventually } from '../runbooks/control-sim.js';
import { startTestSim, simClients } from '../support/sim.js';
import { FleetMirror } from '../../src/fleet/mirror.js';
import { summarizeApps } from '../../src/fleet/status.js';
import { alertReply } from '../../src/commands/alerts.js';
import type { SimServer } from '../../src/sim/server.js';

const REDIS_URL = process.env.REDIS_URL!;
const T0 = new Date('2026-12-04T10:00:00Z');
const STUCK = Object.keys(STUCK_APPS).sort();

function configWith(prefix: string, alerts: Record<string, unknown> = {}): RollcallConfig {
  return configSchema.parse({
    instances: [{ name: 'infra', url: 'http://127.0.0.1:1', token: 't' }],
    redis: { url: REDIS_URL, prefix },
    alerts: { channel: 'C_ALERTS', stuckAfter: '1m', holdDown: '60s', resolveAfter: '2m', ...alerts },
  });
}

/** Records what would reach Slack: one post per alert is the contract. */
class RecordingOutput implements AlertOutput {
  posts: { channel: string; threadTs?: string; alert: AlertRecord }[] = [];
  updates: { ts: string; alert: AlertRecord }[] = [];
  followUps: AlertRecord[] = [];
  private seq = 0;
  async post(target: { channel: string; threadTs?: string }, alert: AlertRecord) {
    // A slow Slack widens the window in which a second worker could post too.
    await new Promise((r) => setTimeout(r, 20));
    this.posts.push({ ...target, alert });
    return { channel: target.channel, ts: `1.${++this.seq}` };
  }
  async update(message: { channel: string; ts: string }, alert: AlertRecord) {
    this.updates.push({ ts: message.ts, alert });
  }
  async followUp(_message: { channel: string; ts: string }, alert: AlertRecord) {
    this.followUps.push(alert);
  }
}

/** progressive-infra, with the three failed prod apps' RollingSync entries set to `status`. */
function setEntries(fleet: StaticFleet, apps: string[], status: 'Healthy' | 'Progressing', at: Date) {
  const target = fleet.appSets().find((s) => s.appSet.metadata.name === 'progressive-infra')!;
  const appSet = structuredClone(target.appSet);
  for (const e of appSet.status!.applicationStatus!) {
    if (apps.includes(e.application) && e.status !== status) {
      e.status = status;
      e.lastTransitionTime = at.toISOString();
    }
  }
  fleet.upsertAppSet({ instance: target.instance, appSet });
}

describe('alert rules group one problem into one alert', () => {
  it('progressive-infra: one stuck-step condition for step 3 listing the three failed prod apps', () => {
    const now = new Date();
    const fleet = StaticFleet.fromFixture(progressiveInfraFixture(now));
    const { conditions } = evaluateAlertRules({ fleet, now, config: configWith('x').alerts });
    const stuck = conditions.filter((c) => c.rule === 'stuck-step');
    expect(stuck).toHaveLength(1);
    expect(stuck[0]).toMatchObject({ instance: 'infra', appSet: 'progressive-infra', step: 3, apps: STUCK });
    // The failed syncs are the stuck step's cause, not a second alert about the same apps.
    expect(conditions.filter((c) => c.rule === 'sync-failed').flatMap((c) => c.apps)).not.toContain(STUCK[0]);
  });

  it('seed-outage: the twelve crash-looping auth-service apps are one degraded-after-sync condition', () => {
    const now = new Date();
    const fleet = StaticFleet.fromFixture(seedOutageFixture(now));
    const { conditions } = evaluateAlertRules({ fleet, now, config: configWith('x').alerts });
    const degraded = conditions.filter((c) => c.rule === 'degraded-after-sync');
    expect(degraded).toHaveLength(1);
    expect(degraded[0].appSet).toBe('auth-service');
    expect(degraded[0].apps).toHaveLength(12);
  });

  it('does not alert on a rollout rollcall paused: says so as an expected stall instead', () => {
    const now = new Date();
    const fixture = progressiveInfraFixture(now);
    const set = fixture.instances[0].applicationSets!.find((s) => s.metadata.name === 'progressive-infra')!;
    set.metadata.annotations = {
      ...set.metadata.annotations,
      'rollcall.io/paused-by': 'U_OP',
      'rollcall.io/paused-at': now.toISOString(),
    };
    const { conditions, expected } = evaluateAlertRules({
      fleet: StaticFleet.fromFixture(fixture),
      now,
      config: configWith('x').alerts,
    });
    expect(conditions.filter((c) => c.rule === 'stuck-step')).toEqual([]);
    expect(expected).toContainEqual(
      expect.objectContaining({ reason: 'paused', appSet: 'progressive-infra', apps: STUCK }),
    );
  });

  it('does not alert on a sync held by a deny window: the app is an expected stall', () => {
    const now = new Date();
    const fixture = progressiveInfraFixture(now);
    const app = fixture.instances[0].applications.find((a) => a.metadata.name === STUCK[0])!;
    app.status!.operationState = {
      ...app.status!.operationState!,
      phase: 'Running',
      message: 'Sync operation blocked by sync window',
      finishedAt: undefined,
    };
    const { conditions, expected } = evaluateAlertRules({
      fleet: StaticFleet.fromFixture(fixture),
      now,
      config: configWith('x').alerts,
    });
    expect(conditions.find((c) => c.rule === 'stuck-step')!.apps).toEqual(STUCK.slice(1));
    expect(expected).toContainEqual(expect.objectContaining({ reason: 'sync-window', apps: [STUCK[0]] }));
  });

  it('leaves a rule switched off silent', () => {
    const now = new Date();
    const fleet = StaticFleet.fromFixture(progressiveInfraFixture(now));
    const { conditions } = evaluateAlertRules({
      fleet,
      now,
      config: configWith('x', { rules: { 'stuck-step': { enabled: false } } }).alerts,
    });
    expect(conditions.filter((c) => c.rule === 'stuck-step')).toEqual([]);
  });
});

describe('alert lifecycle on real Redis', () => {
  const connections: RedisClient[] = [];
  const prefixes: string[] = [];
  let clock = T0;

  function setup(alerts: Record<string, unknown> = {}, workers = 1, incidents?: IncidentSink) {
    const prefix = testPrefix();
    prefixes.push(prefix);
    const config = configWith(prefix, {
      rules: { 'sync-failed': { enabled: false }, 'out-of-sync': { enabled: false } },
      ...alerts,
    });
    // Stuck for about two hours at T0, as the scenario says.
    const fleet = StaticFleet.fromFixture(progressiveInfraFixture(T0));
    const output = new RecordingOutput();
    const managers = Array.from({ length: workers }, () => {
      const redis = createRedis(REDIS_URL);
      connections.push(redis);
      return new AlertManager({
        fleet,
        config,
        store: new AlertStore(redis, prefix),
        output,
        incidents,
        now: () => clock,
      });
    });
    const store = new AlertStore(connections[connections.length - 1], prefix);
    const stuckAlert = async () => (await store.all()).find((a) => a.rule === 'stuck-step');
    return { fleet, output, managers, manager: managers[0], store, stuckAlert };
  }

  afterEach(() => {
    clock = T0;
  });
  afterAll(async () => {
    for (const r of connections) await closeRedis(r);
    for (const p of prefixes) await cleanPrefix(REDIS_URL, p);
  });

  it('holds a new problem down before firing, then posts it once', async () => {
    const { manager, output, stuckAlert } = setup();
    await manager.sweep();
    expect((await stuckAlert())!.state).toBe('pending');
    clock = new Date(T0.getTime() + 30_000);
    await manager.sweep();
    expect(output.posts).toHaveLength(0);
    clock = new Date(T0.getTime() + 61_000);
    await manager.sweep();
    await manager.sweep();
    expect(output.posts).toHaveLength(1);
    expect(output.posts[0]).toMatchObject({
      channel: 'C_ALERTS',
      alert: { rule: 'stuck-step', state: 'firing', apps: STUCK },
    });
    expect((await stuckAlert())!.message).toEqual({ channel: 'C_ALERTS', ts: '1.1' });
  });

  it('never posts a problem that clears during its hold-down', async () => {
    const { manager, fleet, output, stuckAlert } = setup();
    await manager.sweep();
    setEntries(fleet, STUCK, 'Healthy', T0);
    clock = new Date(T0.getTime() + 61_000);
    await manager.sweep();
    expect(await stuckAlert()).toBeUndefined();
    expect(output.posts).toHaveLength(0);
  });

  it('edits the one message as apps leave, and to resolved once the condition stays clear', async () => {
    const { manager, fleet, output, stuckAlert } = setup({ holdDown: 0 });
    await manager.sweep();
    expect(output.posts).toHaveLength(1);
    setEntries(fleet, [STUCK[0]], 'Healthy', T0);
    clock = new Date(T0.getTime() + 5000);
    await manager.sweep();
    expect(output.updates.at(-1)!.alert.apps).toEqual(STUCK.slice(1));
    setEntries(fleet, STUCK, 'Healthy', T0);
    clock = new Date(T0.getTime() + 10_000);
    await manager.sweep();
    expect((await stuckAlert())!.state).toBe('firing');
    clock = new Date(T0.getTime() + 10_000 + 121_000);
    await manager.sweep();
    const resolved = (await stuckAlert())!;
    expect(resolved.state).toBe('resolved');
    expect(output.updates.at(-1)).toMatchObject({ ts: '1.1', alert: { state: 'resolved' } });
    expect(output.posts).toHaveLength(1);
    expect(output.followUps).toHaveLength(0);
  });

  it('holds a flapping alert firing: no second post, and resolving waits longer after each flap', async () => {
    const { manager, fleet, output, stuckAlert } = setup({ holdDown: 0 });
    await manager.sweep();
    const t = (s: number) => (clock = new Date(T0.getTime() + s * 1000));
    for (let i = 0; i < 3; i++) {
      setEntries(fleet, STUCK, 'Healthy', T0);
      t(i * 100 + 10);
      await manager.sweep();
      t(i * 100 + 60);
      await manager.sweep();
      // Back before resolveAfter (2m): the same alert, still firing.
      setEntries(fleet, STUCK, 'Progressing', new Date(T0.getTime() - 3_600_000));
      t(i * 100 + 90);
      await manager.sweep();
      expect((await stuckAlert())!.state).toBe('firing');
    }
    const flapped = (await stuckAlert())!;
    expect(flapped.flaps).toBe(3);
    setEntries(fleet, STUCK, 'Healthy', T0);
    t(400);
    await manager.sweep();
    t(400 + 130);
    await manager.sweep();
    expect((await stuckAlert())!.state).toBe('firing');
    t(400 + 8 * 60 + 10);
    await manager.sweep();
    expect((await stuckAlert())!.state).toBe('resolved');
    expect(output.posts).toHaveLength(1);
  });

  it('resolves an alert whose apps all recovered when other apps of its step stall next, and starts a new one', async () => {
    const { manager, fleet, output, store } = setup({ holdDown: '30s' });
    const target = fleet.appSets().find((s) => s.appSet.metadata.name === 'progressive-infra')!;
    const next = target.appSet
      .status!.applicationStatus!.filter((e) => e.step === '3' && e.status === 'Waiting')
      .slice(0, 2)
      .map((e) => e.application)
      .sort();
    await manager.sweep();
    clock = new Date(T0.getTime() + 31_000);
    await manager.sweep();
    expect(output.posts).toHaveLength(1);
    const first = output.posts[0].alert.id;
    // The three recover; RollingSync releases the next two, which stall as well.
    setEntries(fleet, STUCK, 'Healthy', T0);
    setEntries(fleet, next, 'Progressing', new Date(T0.getTime() - 3_600_000));
    clock = new Date(T0.getTime() + 40_000);
    await manager.sweep();
    expect(output.updates.at(-1)!.alert).toMatchObject({ id: first, state: 'resolved', superseded: true });
    for (const s of [45_000, 80_000]) {
      clock = new Date(T0.getTime() + s);
      await manager.sweep();
    }
    expect(output.posts).toHaveLength(2);
    expect(output.posts[1].alert).toMatchObject({ state: 'firing', apps: next });
    const listed = (await store.all())
      .filter((a) => a.rule === 'stuck-step')
      .map((a) => [a.id === first ? 'first' : 'second', a.state]);
    expect(listed.sort()).toEqual([
      ['first', 'resolved'],
      ['second', 'firing'],
    ]);
  });

  it('re-notifies only when it gets worse', async () => {
    const { manager, fleet, output } = setup({ holdDown: 0 });
    setEntries(fleet, [STUCK[0]], 'Healthy', T0);
    await manager.sweep();
    expect(output.posts[0].alert.apps).toHaveLength(2);
    setEntries(fleet, [STUCK[0]], 'Progressing', new Date(T0.getTime() - 3_600_000));
    clock = new Date(T0.getTime() + 5000);
    await manager.sweep();
    expect(output.followUps).toHaveLength(1);
    expect(output.followUps[0].apps).toEqual(STUCK);
    setEntries(fleet, [STUCK[1]], 'Healthy', T0);
    clock = new Date(T0.getTime() + 10_000);
    await manager.sweep();
    await manager.sweep();
    expect(output.followUps).toHaveLength(1);
    expect(output.posts).toHaveLength(1);
  });

  it('snooze keeps it quiet until the snooze ends, then it fires again', async () => {
    const { manager, fleet, output, store, stuckAlert } = setup({ holdDown: 0 });
    setEntries(fleet, [STUCK[0]], 'Healthy', T0);
    await manager.sweep();
    const alert = (await stuckAlert())!;
    const snoozed = await store.change(alert.id, { kind: 'snooze', by: 'U_OP', untilMs: T0.getTime() + 3_600_000 }, T0);
    expect(snoozed).toMatchObject({ state: 'snoozed', snoozedBy: 'U_OP' });
    await manager.sweep();
    expect(output.updates.at(-1)!.alert.state).toBe('snoozed');
    // Worse while snoozed: edited in place, no follow-up.
    setEntries(fleet, [STUCK[0]], 'Progressing', new Date(T0.getTime() - 3_600_000));
    clock = new Date(T0.getTime() + 60_000);
    await manager.sweep();
    expect(output.followUps).toHaveLength(0);
    expect((await stuckAlert())!.state).toBe('snoozed');
    clock = new Date(T0.getTime() + 3_600_000 + 1000);
    await manager.sweep();
    expect((await stuckAlert())!.state).toBe('firing');
    expect(output.updates.at(-1)!.alert.state).toBe('firing');
    expect(output.posts).toHaveLength(1);
  });

  it('posts once across two workers sweeping the same groups at the same time', async () => {
    const { managers, output, fleet, stuckAlert } = setup({ holdDown: 0 }, 2);
    for (let round = 0; round < 5; round++) {
      clock = new Date(T0.getTime() + round * 1000);
      await Promise.all(managers.map((m) => m.sweep()));
    }
    expect(output.posts.filter((p) => p.alert.rule === 'stuck-step')).toHaveLength(1);
    setEntries(fleet, STUCK, 'Healthy', T0);
    for (let round = 0; round < 4; round++) {
      clock = new Date(T0.getTime() + 10_000 + round * 60_000);
      await Promise.all(managers.map((m) => m.sweep()));
    }
    expect((await stuckAlert())!.state).toBe('resolved');
    expect(output.posts.filter((p) => p.alert.rule === 'stuck-step')).toHaveLength(1);
    expect(output.updates.filter((u) => u.alert.state === 'resolved')).toHaveLength(1);
  });

  it('goes into the thread of an open incident that covers it, and onto its timeline', async () => {
    const recorded: { id: string; event: string; alert: string }[] = [];
    const incidents: IncidentSink = {
      async openCovering(alert) {
        return alert.appSet === 'progressive-infra' ? { id: 'inc-1', channel: 'C_INC', threadTs: '9.1' } : null;
      },
      async recordAlert(id, alert, event) {
        recorded.push({ id, event, alert: alert.id });
      },
    };
    const { manager, output, stuckAlert } = setup({ holdDown: 0 }, 1, incidents);
    await manager.sweep();
    expect(output.posts[0]).toMatchObject({ channel: 'C_INC', threadTs: '9.1' });
    expect(recorded).toEqual([{ id: 'inc-1', event: 'fired', alert: (await stuckAlert())!.id }]);
    expect((await stuckAlert())!.incident).toEqual({ id: 'inc-1', channel: 'C_INC', threadTs: '9.1' });
  });
});

describe('rules whose start Argo CD does not record, and facts from Redis', () => {
  const prefixes: string[] = [];
  const connections: RedisClient[] = [];
  afterAll(async () => {
    for (const r of connections) await closeRedis(r);
    for (const p of prefixes) await cleanPrefix(REDIS_URL, p);
  });

  it('out-of-sync fires only once the apps have been seen OutOfSync for `after`, as one alert per appset', async () => {
    const prefix = testPrefix();
    prefixes.push(prefix);
    const redis = createRedis(REDIS_URL);
    connections.push(redis);
    const config = configWith(prefix, { holdDown: 0, rules: { 'out-of-sync': { after: '10m' } } });
    let now = T0;
    const output = new RecordingOutput();
    const manager = new AlertManager({
      fleet: StaticFleet.fromFixture(seedOutageFixture(T0)),
      config,
      store: new AlertStore(redis, prefix),
      output,
      now: () => now,
    });
    await manager.sweep();
    expect(output.posts.filter((p) => p.alert.rule === 'out-of-sync')).toHaveLength(0);
    now = new Date(T0.getTime() + 11 * 60_000);
    await manager.sweep();
    const posted = output.posts.filter((p) => p.alert.rule === 'out-of-sync');
    const authConfig = posted.filter((p) => p.alert.appSet === 'auth-config');
    expect(authConfig).toHaveLength(1);
    expect(authConfig[0].alert.apps).toHaveLength(12);
  });

  it('instance-unreachable: one alert for an instance the mirror lost', () => {
    class LostFleet extends StaticFleet {
      override health() {
        return [{ instance: 'infra', synced: false, error: 'connect ECONNREFUSED 10.0.0.1:443' }];
      }
    }
    const fleet = new LostFleet(['infra']);
    fleet.load([], [], []);
    const { conditions } = evaluateAlertRules({ fleet, now: T0, config: configWith('x').alerts });
    expect(conditions).toEqual([
      expect.objectContaining({ rule: 'instance-unreachable', instance: 'infra', holdForMs: 120_000, apps: [] }),
    ]);
  });

  /** Redis run records of a config with three clusters on a backup schedule; `backup` stores one backup run. */
  function keyBackupRecords() {
    const prefix = testPrefix();
    prefixes.push(prefix);
    const redis = createRedis(REDIS_URL);
    connections.push(redis);
    const config = configSchema.parse({
      instances: [{ name: 'infra', url: 'http://127.0.0.1:1', token: 't' }],
      redis: { url: REDIS_URL, prefix },
      sealedSecrets: {
        schedules: [
          { cluster: 'prod-1', cron: '0 3 * * *' },
          { cluster: 'prod-2', cron: '0 3 * * *' },
          { cluster: 'prod-3', cron: '0 3 * * *' },
        ],
      },
      alerts: { rules: { 'key-backup-stale': { after: '26h' } } },
    });
    const runs = new RunStore(redis, prefix);
    const run = (runbook: string, params: Record<string, string>, status: 'succeeded' | 'failed', endedAt: Date) =>
      runs.create({
        runbook,
        title: runbook,
        params,
        requester: 'rollcall-scheduler',
        surface: 'terminal',
        status,
        endedAt: endedAt.toISOString(),
        approvalsRequired: 0,
        approvals: [],
        steps: [],
        generation: 0,
        targets: [],
      });
    const backup = (cluster: string, status: 'succeeded' | 'failed', hoursAgo: number) =>
      run(KEY_BACKUP_RUNBOOK, { cluster }, status, new Date(T0.getTime() - hoursAgo * 3_600_000));
    return { redis, config, runs, run, backup };
  }

  /** The clusters key-backup-stale alerts on, at T0. */
  function staleClusters(config: RollcallConfig, keyBackups: Awaited<ReturnType<FleetRecords['keyBackups']>>) {
    const { conditions } = evaluateAlertRules({
      fleet: StaticFleet.fromObjects([{ name: 'infra', applications: [] }]),
      now: T0,
      config: config.alerts,
      keyBackups,
    });
    return conditions.filter((c) => c.rule === 'key-backup-stale').map((c) => c.instance);
  }

  it('key-backup-stale: a cluster with a backup schedule and no backup newer than `after`, read from the run records', async () => {
    const { redis, config, backup } = keyBackupRecords();
    await backup('prod-1', 'succeeded', 2);
    await backup('prod-2', 'succeeded', 30);
    await backup('prod-2', 'failed', 1);
    const keyBackups = await new FleetRecords(redis, config).keyBackups();
    expect(keyBackups).toEqual([
      { cluster: 'prod-1', lastBackupAt: expect.any(String) },
      { cluster: 'prod-2', lastBackupAt: expect.any(String) },
      { cluster: 'prod-3', lastBackupAt: undefined },
    ]);
    expect(staleClusters(config, keyBackups)).toEqual(['prod-2', 'prod-3']);
  });

  it('key-backup-stale: finds the newest backup behind hundreds of newer runs of other runbooks', async () => {
    const { redis, config, run, backup } = keyBackupRecords();
    await backup('prod-1', 'succeeded', 20);
    // A busy day: 600 syncs since the night's backup, more than the run records read for the newest backups.
    for (let i = 0; i < 600; i += 50)
      await Promise.all(
        Array.from({ length: 50 }, (_, k) => run('bulk-sync', { selector: `app-${i + k}` }, 'succeeded', T0)),
      );
    const keyBackups = await new FleetRecords(redis, config).keyBackups();
    expect(keyBackups[0]).toEqual({
      cluster: 'prod-1',
      lastBackupAt: new Date(T0.getTime() - 20 * 3_600_000).toISOString(),
    });
    expect(staleClusters(config, keyBackups)).toEqual(['prod-2', 'prod-3']);
  });
});

describe('alerts follow the fleet: simulator, mirror and Redis', () => {
  let sim: SimServer | undefined;
  let mirror: FleetMirror | undefined;
  let redis: RedisClient | undefined;
  const prefix = testPrefix();
  afterAll(async () => {
    await mirror?.stop();
    await sim?.stop();
    if (redis) await closeRedis(redis);
    await cleanPrefix(REDIS_URL, prefix);
  });

  it('a fixed crash loop: the alert says clearing as soon as the apps are Healthy, as status does, then resolves; its text carries no frozen age', async () => {
    sim = await startTestSim({ scenario: 'seed-outage' });
    const clients = simClients(sim);
    mirror = new FleetMirror(
      clients,
      sim.instances.map((i) => ({ name: i.name, uiUrl: i.url })),
    );
    await mirror.start();
    redis = createRedis(REDIS_URL);
    const config = configSchema.parse({
      instances: sim.instances.map((i) => ({ name: i.name, url: i.url, token: i.token })),
      redis: { url: REDIS_URL, prefix },
      alerts: { channel: 'C_ALERTS', holdDown: 0, resolveAfter: '2m' },
    });
    const controller = sim.controller;
    const store = new AlertStore(redis, prefix);
    const output = new RecordingOutput();
    const manager = new AlertManager({ fleet: mirror, config, store, output, now: () => controller.clock.now() });
    const crashAlert = async () => (await store.all()).find((a) => a.rule === 'degraded-after-sync')!;
    const degradedNow = () => summarizeApps(mirror!.apps()).total.health.Degraded ?? 0;

    await manager.sweep();
    expect((await crashAlert()).state).toBe('firing');
    expect((await crashAlert()).apps).toHaveLength(12);
    // Written once and kept while the alert lasts: no "for 41m" that is still there an hour later.
    expect((await crashAlert()).summary).toBe(
      '12 apps of appset auth-service Degraded after a successful sync of 7da8a4c.',
    );

    // The scenario's fix: sync auth-config with prune; auth-service recovers cluster by cluster.
    for (const a of mirror.apps().filter((x) => x.app.metadata.name.startsWith('auth-config-')))
      controller.requestSync(a.instance, a.app.metadata.name, { name: a.app.metadata.name, prune: true }, 'U_OP');
    controller.advance(30_000);
    await eventually(() => degradedNow() === 0, 5000, 'the mirror to see auth-service Healthy');
    await manager.sweep();
    controller.advance(15_000);
    await manager.sweep();
    const clearing = await crashAlert();
    expect(clearing).toMatchObject({ state: 'firing', clearedAt: expect.any(String), resolvesAt: expect.any(String) });
    const edited = output.updates.at(-1)!;
    expect(edited.alert.id).toBe(clearing.id);
    const shown = JSON.stringify(alertReply(edited.alert, controller.clock.now()).blocks);
    expect(shown).toContain('*Clearing*: not seen since');
    expect(shown).not.toContain('*Firing*');

    controller.advance(2 * 60_000);
    await manager.sweep();
    expect(await crashAlert()).toMatchObject({ state: 'resolved' });
    expect(output.updates.at(-1)!.alert.state).toBe('resolved');
    expect(output.posts.filter((p) => p.alert.rule === 'degraded-after-sync')).toHaveLength(1);
  }, 60_000);
});
