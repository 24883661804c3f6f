import { afterAll, describe, expect, it } from 'vitest';
import type { RedisClient } from '../../src/infra/redis.js';
import { buildDigest } from '../../src/domain/alerts/digest.js';
import { digestReply } from '../../src/commands/digest.js';
import { renderText } from '../../src/views/text.js';
import { formatDuration } from '../../src/core/format.js';
import { FleetRecords } from '../../src/domain/alerts/records.js';
import type { Services } from '../../src/commands/registry.js';
import type { MessageRef, Notifier } from '../../src/core/notifier.js';
import type { Reply } from '../../src/core/reply.js';
import { ConfigError, parseConfig } from '../../src/infra/config/load.js';
import { configSchema, type RollcallConfig } from '../../src/infra/config/schema.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { startDigestSchedules, type DigestSchedules } from '../../src/surfaces/workers/digests.js';
import { closeRedis, createRedis } from '../../src/infra/redis.js';
import { progressiveInfraFixture, STUCK_APPS } from '../../src/sim/scenarios/progressive-infra.js';
import { seedOutageFixture } from '../../src/sim/scenarios/seed-outage.js';
import { renderBlocks } from '../../src/views/blocks.js';
import '../../src/commands/index.js';
import { dispatch } from '../../src/commands/index.js';
import { cleanPrefix, testPrefix } from '../runbooks/fake-argo.js';
import { okAnswer } from '../support/replies.js';

const REDIS_URL = process.env.REDIS_URL!;

function config(prefix: string, extra: Record<string, unknown> = {}): RollcallConfig {
  return configSchema.parse({
    instances: [{ name: 'prod', url: 'http://127.0.0.1:1', token: 't' }],
    redis: { url: REDIS_URL, prefix },
    ...extra,
  });
}

class RecordingNotifier implements Notifier {
  posts: { channel: string; reply: Reply; at: number }[] = [];
  async post(target: { channel: string }, reply: Reply): Promise<MessageRef> {
    this.posts.push({ channel: target.channel, reply, at: Date.now() });
    return { channel: target.channel, ts: `1.${this.posts.length}` };
  }
  async update(): Promise<void> {}
}

describe('digest contents', () => {
  it('seed-outage: auth-service Degraded is one item of 12 apps, auth-config OutOfSync one item of 12', () => {
    const now = new Date();
    const d = buildDigest({ fleet: StaticFleet.fromFixture(seedOutageFixture(now)), now, alerts: config('x').alerts });
    const degraded = d.attention.filter((a) => a.kind === 'degraded');
    expect(degraded).toEqual([
      expect.objectContaining({
        kind: 'degraded',
        severity: 'critical',
        instance: 'prod',
        appSet: 'auth-service',
        count: 12,
      }),
    ]);
    expect(degraded[0].apps).toHaveLength(12);
    const authConfig = d.attention.filter((a) => a.kind === 'out-of-sync' && a.appSet === 'auth-config');
    expect(authConfig).toHaveLength(1);
    expect(authConfig[0]).toMatchObject({ count: 12, apps: expect.arrayContaining(['auth-config-prod-eu-west-1']) });
    // Needs attention comes in the order: Degraded first, then OutOfSync.
    expect(d.attention[0].kind).toBe('degraded');
    for (const item of d.attention)
      expect(Object.keys(item).sort()).toEqual(
        expect.arrayContaining(['kind', 'severity', 'title', 'instance', 'apps', 'count', 'since']),
      );
    expect(d.totals).toMatchObject({ apps: 540, degraded: 12, change: null });
  });

  it('shows its times the way every other answer does: age with the absolute time, never raw RFC3339', () => {
    const now = new Date();
    const d = buildDigest({ fleet: StaticFleet.fromFixture(seedOutageFixture(now)), now, alerts: config('x').alerts });
    const text = renderText(digestReply(d, 'digest'), { color: false });
    expect(text).not.toMatch(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/);
    expect(text).toMatch(/degraded · since \d+m ago \(/);
  });

  it('progressive-infra: the stuck rollout with its three apps is one item, and its apps are not listed again', () => {
    const now = new Date();
    const d = buildDigest({
      fleet: StaticFleet.fromFixture(progressiveInfraFixture(now)),
      now,
      alerts: config('x').alerts,
    });
    const stuck = d.attention.filter((a) => a.kind === 'stuck-rollout');
    expect(stuck).toEqual([
      expect.objectContaining({ appSet: 'progressive-infra', count: 3, apps: Object.keys(STUCK_APPS).sort() }),
    ]);
    expect(d.attention.filter((a) => a.kind !== 'stuck-rollout').flatMap((a) => a.apps)).not.toContain(
      Object.keys(STUCK_APPS)[0],
    );
  });

  it('all clear is one line plus totals, with the change since the previous digest', () => {
    const now = new Date();
    const fixture = progressiveInfraFixture(now);
    const healthy = fixture.instances[0].applications.filter(
      (a) =>
        a.status?.sync?.status === 'Synced' &&
        a.status.health?.status === 'Healthy' &&
        !a.status.operationState?.phase?.match(/Failed|Error/),
    );
    const fleet = StaticFleet.fromObjects([
      { name: 'infra', applications: healthy, applicationSets: [], clusters: fixture.instances[0].clusters },
    ]);
    const d = buildDigest({
      fleet,
      now,
      alerts: config('x').alerts,
      previous: { at: '2026-12-01T00:00:00Z', totals: { apps: healthy.length + 2, healthy: healthy.length } },
    });
    expect(d.allClear).toBe(true);
    expect(d.totals.change).toMatchObject({ apps: -2, healthy: 0 });
  });

  it('a long attention list stays within Block Kit limits and pages with a More button', async () => {
    const now = new Date();
    const fixture = seedOutageFixture(now);
    // Every app its own problem: 540 Degraded apps without an appset.
    for (const a of fixture.instances[0].applications) {
      a.metadata.ownerReferences = [];
      a.status!.health = { status: 'Degraded', lastTransitionTime: new Date(now.getTime() - 3_600_000).toISOString() };
    }
    const services = {
      config: config('x'),
      fleet: StaticFleet.fromFixture(fixture),
      argocd: new Map(),
      now: () => now,
    } as Services;
    const reply = okAnswer(await dispatch('digest', { services, user: 'U1', surface: 'slack' }), 'digest');
    expect((reply.data.attention as unknown[]).length).toBeGreaterThan(500);
    const { blocks } = renderBlocks(reply);
    expect(blocks.length).toBeLessThanOrEqual(50);
    const buttons = blocks.flatMap((b: any) => (b.type === 'actions' ? b.elements : []));
    expect(buttons.some((b: any) => /More/.test(b.text.text))).toBe(true);
  });
});

describe('config check for alerts and digests', () => {
  const base = 'instances:\n  - name: prod\n    url: https://cd.example.com\n    token: t\n';
  it('names every problem by path and line: unknown rule, bad duration, bad cron, unknown time zone', () => {
    const text =
      base +
      'alerts:\n  stuckAfter: soon\n  rules:\n    stuck-stepp:\n      enabled: false\n    out-of-sync:\n      after: 1 hour\n' +
      'digests:\n  - name: morning\n    channel: C1\n    cron: "0 25 * * *"\n  - name: evening\n    channel: C1\n    cron: "0 18 * * *"\n    tz: Mars/Olympus\n';
    let error: ConfigError | undefined;
    try {
      parseConfig(text, 'rollcall.yaml', {});
    } catch (e) {
      error = e as ConfigError;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const byPath = Object.fromEntries(error!.problems.map((p) => [p.path, p]));
    expect(byPath['alerts.stuckAfter']).toMatchObject({
      line: 6,
      message: expect.stringContaining('expected a duration'),
    });
    expect(byPath['alerts.rules.stuck-stepp']).toMatchObject({
      line: 9,
      message: expect.stringContaining('unknown alert rule "stuck-stepp"'),
    });
    expect(byPath['alerts.rules.out-of-sync.after']).toMatchObject({
      line: 11,
      message: expect.stringContaining('expected a duration'),
    });
    expect(byPath['digests[0].cron']).toMatchObject({
      line: 15,
      message: expect.stringContaining('expected a cron pattern'),
    });
    expect(byPath['digests[1].tz']).toMatchObject({
      line: 19,
      message: expect.stringContaining('unknown time zone "Mars/Olympus"'),
    });
  });
});

describe('digest schedules on real Redis', () => {
  const connections: RedisClient[] = [];
  const prefixes: string[] = [];
  const started: DigestSchedules[] = [];
  afterAll(async () => {
    for (const s of started) await s.stop();
    for (const r of connections) await closeRedis(r);
    for (const p of prefixes) await cleanPrefix(REDIS_URL, p);
  });

  function services(prefix: string, digests: unknown[]): Services {
    const redis = createRedis(REDIS_URL);
    connections.push(redis);
    const c = config(prefix, { digests });
    return {
      config: c,
      fleet: StaticFleet.fromFixture(seedOutageFixture(new Date())),
      argocd: new Map(),
      records: new FleetRecords(redis, c),
    };
  }

  it('adds, changes and removes job schedulers as the config changes', async () => {
    const prefix = testPrefix();
    prefixes.push(prefix);
    const one = await startDigestSchedules({
      services: services(prefix, [
        { name: 'morning', channel: 'C1', cron: '0 8 * * 1-5', tz: 'Europe/Berlin' },
        { name: 'evening', channel: 'C1', cron: '0 18 * * *' },
      ]),
      notifier: () => undefined,
      redisUrl: REDIS_URL,
      prefix,
    });
    started.push(one);
    expect((await one.list()).map((s) => [s.id, s.pattern, s.tz]).sort()).toEqual([
      ['digest:evening', '0 18 * * *', 'UTC'],
      ['digest:morning', '0 8 * * 1-5', 'Europe/Berlin'],
    ]);
    await one.sync(
      configSchema.parse({
        instances: [{ name: 'p', url: 'http://x', token: 't' }],
        digests: [{ name: 'morning', channel: 'C1', cron: '30 7 * * *', tz: 'UTC' }],
      }).digests,
    );
    expect((await one.list()).map((s) => [s.id, s.pattern, s.tz])).toEqual([['digest:morning', '30 7 * * *', 'UTC']]);
    await one.sync([]);
    expect(await one.list()).toEqual([]);
  });

  it('posts each tick once however many workers run, and the next digest reports the change in totals', async () => {
    const prefix = testPrefix();
    prefixes.push(prefix);
    const notifier = new RecordingNotifier();
    const digests = [{ name: 'every-second', channel: 'C_DIGEST', cron: '* * * * * *' }];
    for (let i = 0; i < 2; i++) {
      started.push(
        await startDigestSchedules({
          services: services(prefix, digests),
          notifier: () => notifier,
          redisUrl: REDIS_URL,
          prefix,
        }),
      );
    }
    await expect.poll(() => notifier.posts.length, { timeout: 15_000 }).toBeGreaterThanOrEqual(3);
    for (const s of started.splice(-2)) await s.sync([]);
    const seconds = notifier.posts.map((p) => (p.reply.data.at as string).slice(0, 19));
    // One post per tick: no second falls twice.
    expect(new Set(seconds).size).toBe(seconds.length);
    expect(notifier.posts.every((p) => p.channel === 'C_DIGEST')).toBe(true);
    const later = notifier.posts.at(-1)!.reply.data.totals as {
      change: Record<string, number> | null;
      previousAt: string | null;
    };
    expect(later.previousAt).not.toBeNull();
    expect(later.change).toMatchObject({ apps: 0, degraded: 0 });
  }, 30_000);
});

describe('incidents in the digest', () => {
  const prefix = testPrefix();
  const redis = createRedis(REDIS_URL);
  afterAll(async () => {
    await cleanPrefix(REDIS_URL, prefix);
    await closeRedis(redis);
  });

  it('lists the open incidents first, then those closed in the period with severity and TTR from the incident metrics', async () => {
    const { ChangeLog } = await import('../../src/domain/incidents/change-log.js');
    const { ChangeRecorder } = await import('../../src/domain/incidents/recorder.js');
    const { IncidentService } = await import('../../src/domain/incidents/service.js');
    const { IncidentStore } = await import('../../src/domain/incidents/store.js');
    // The change log reads by when a record was seen: the incidents happen after the backfill, and the digest later still.
    const start = Date.now();
    const fleet = StaticFleet.fromFixture(seedOutageFixture(new Date(start)));
    const changes = new ChangeLog(redis, prefix);
    const recorder = new ChangeRecorder(fleet, changes);
    await recorder.start();
    await recorder.stop();
    let clock = new Date(start);
    const incidents = new IncidentService(new IncidentStore(redis, prefix), changes, fleet, { now: () => clock });
    const auth = await incidents.declare({
      title: 'auth-service crash loop',
      severity: 2,
      scope: { text: 'auth-service-*', selector: { patterns: ['auth-service-*'] } },
      by: 'U_OP',
    });
    clock = new Date(start + 20 * 60_000);
    await incidents.close(auth, 'U_OP', 'rolled back');
    const closed = await incidents.analyse((await incidents.store.get(auth.id))!);
    expect(closed.metrics.ttr).toBeGreaterThan(20 * 60);
    // Declared three days ago and closed then: not this digest's news.
    clock = new Date(start - 3 * 86_400_000);
    const old = await incidents.declare({ title: 'old one', severity: 3, by: 'U_OP' });
    await incidents.close(old, 'U_OP');
    clock = new Date(start + 25 * 60_000);
    const payments = await incidents.declare({
      title: 'payments errors',
      severity: 1,
      scope: { text: 'payments-*', selector: { patterns: ['payments-*'] } },
      by: 'U_OP',
    });
    const now = new Date(start + 30 * 60_000);

    const services = {
      config: config(prefix),
      fleet,
      argocd: new Map(),
      changes,
      incidents,
      now: () => now,
    } as Services;
    const reply = okAnswer(
      await dispatch('digest', { services, user: 'U1', surface: 'terminal', channel: 'terminal' }),
      'digest',
    );
    const data = reply.data.incidents as {
      open: { id: string }[];
      opened: { id: string }[];
      closed: { id: string; severity: number; ttr: number }[];
    };
    expect(data.open.map((i) => i.id)).toEqual([payments.id]);
    expect(data.opened.map((i) => i.id)).toEqual([auth.id, payments.id]);
    expect(data.closed).toEqual([expect.objectContaining({ id: auth.id, severity: 2, ttr: closed.metrics.ttr })]);
    const text = renderText(reply, { color: false });
    expect(text).toContain('Incidents: 1 open; 2 opened, 1 closed in the period');
    expect(text.indexOf(payments.id)).toBeLessThan(text.indexOf(auth.id));
    expect(text.indexOf(payments.id)).toBeLessThan(text.indexOf('Needs attention'));
    expect(text).toContain(`TTR ${formatDuration(closed.metrics.ttr! * 1000)}`);
    expect(text).not.toContain(old.id);

    // A team digest speaks only of incidents touching its apps (and of those about the whole fleet).
    const declaredAt = now.toISOString();
    const team = buildDigest({
      fleet,
      now,
      alerts: services.config.alerts,
      selector: 'app=payments',
      incidents: [
        {
          id: 'INC-A',
          title: 'auth',
          severity: 1,
          state: 'investigating',
          declaredAt,
          apps: ['prod/auth-service-prod-us-east-1'],
        },
        { id: 'INC-F', title: 'fleet-wide', severity: 1, state: 'investigating', declaredAt, apps: [] },
      ],
    });
    expect(team.totals.apps).toBeGreaterThan(0);
    expect(team.incidents?.open.map((i) => i.id)).toEqual(['INC-F']);
    expect(team.allClear).toBe(false);
  });
});
