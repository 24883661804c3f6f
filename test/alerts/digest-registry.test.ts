import { afterAll, describe, expect, it } from 'vitest';
import { buildDigest } from '../../src/domain/alerts/digest.js';
import { FleetRecords } from '../../src/domain/alerts/records.js';
import { evaluateAlertRules } from '../../src/domain/alerts/rules.js';
import { dispatch } from '../../src/commands/index.js';
import type { Services } from '../../src/commands/registry.js';
import { configSchema, type RollcallConfig } from '../../src/infra/config/schema.js';
import type { MessageRef, Notifier } from '../../src/core/notifier.js';
import type { Reply } from '../../src/core/reply.js';
import { StaticFleet } from '../../src/fleet/model.js';
import type { Finding } from '../../src/fleet/rules/finding.js';
import { startDigestSchedules, type DigestSchedules } from '../../src/surfaces/workers/digests.js';
import { closeRedis, createRedis, type RedisClient } from '../../src/infra/redis.js';
import { seedOutageFixture } from '../../src/sim/scenarios/seed-outage.js';
import { renderText } from '../../src/views/text.js';
import { cleanPrefix, testPrefix } from '../runbooks/fake-argo.js';
import { okAnswer } from '../support/replies.js';

const REDIS_URL = process.env.REDIS_URL!;
const NOW = new Date('2026-12-02T12:00:00Z');
const minutesAgo = (m: number) => new Date(NOW.getTime() - m * 60_000).toISOString();

function config(prefix: string, extra: Record<string, unknown> = {}): RollcallConfig {
  return configSchema.parse({
    instances: [{ name: 'prod', url: 'http://127.0.0.1:1', token: 't' }],
    redis: { url: REDIS_URL, prefix },
    ...extra,
  });
}

class RecordingNotifier implements Notifier {
  posts: { channel: string; reply: Reply }[] = [];
  async post(target: { channel: string }, reply: Reply): Promise<MessageRef> {
    this.posts.push({ channel: target.channel, reply });
    return { channel: target.channel, ts: `1.${this.posts.length}` };
  }
  async update(): Promise<void> {}
}

describe('one digest for the command and the scheduled job', () => {
  const prefix = testPrefix();
  const redis: RedisClient = createRedis(REDIS_URL);
  let schedules: DigestSchedules | undefined;
  afterAll(async () => {
    await schedules?.stop();
    await cleanPrefix(REDIS_URL, prefix);
    await closeRedis(redis);
  });

  it('the job posts exactly the digest `digest NAME` answers, from the same fleet, records and time', async () => {
    const c = config(prefix, { digests: [{ name: 'morning', channel: 'C_DIGEST', cron: '* * * * * *' }] });
    const records = new FleetRecords(redis, c);
    // A previous digest only Redis knows: both callers read it for the period and the change in totals.
    await records.recordDigest('morning', minutesAgo(12 * 60), { apps: 530, degraded: 2 });
    const services: Services = {
      config: c,
      fleet: StaticFleet.fromFixture(seedOutageFixture(NOW)),
      argocd: new Map(),
      records,
      now: () => NOW,
    };
    const asked = okAnswer(
      await dispatch('digest morning', { services, user: 'U1', surface: 'terminal', channel: 'terminal' }),
      'digest',
    );
    expect(asked.ok, JSON.stringify(asked.error)).toBe(true);

    const notifier = new RecordingNotifier();
    schedules = await startDigestSchedules({
      services,
      notifier: () => notifier,
      redisUrl: REDIS_URL,
      prefix,
      now: () => NOW,
    });
    await expect.poll(() => notifier.posts.length, { timeout: 15_000 }).toBeGreaterThanOrEqual(1);
    await schedules.sync([]);
    const posted = notifier.posts[0].reply;

    expect((asked.data.attention as unknown[]).length).toBeGreaterThan(0);
    expect(asked.data.totals).toMatchObject({ previousAt: minutesAgo(12 * 60), change: { apps: 10, degraded: 10 } });
    expect(posted.data).toEqual(asked.data);
    expect(posted.blocks).toEqual(asked.blocks);
    expect(renderText(posted, { color: false })).toBe(renderText(asked, { color: false }));
    // Only the job delivers and remembers: the next digest of that name starts its period at this one.
    expect(await records.previousDigest('morning')).toMatchObject({ at: NOW.toISOString() });
  }, 30_000);
});

describe('a problem a registry rule judges is the same problem everywhere', () => {
  it('auth-service turned Degraded 2 minutes after its sync: diagnose, alerts, the digest and status all name the same 12 apps', async () => {
    const fixture = seedOutageFixture(NOW);
    const crashing: string[] = [];
    for (const a of fixture.instances[0].applications) {
      if (a.status?.health?.status !== 'Degraded' || !a.metadata.name.startsWith('auth-service-')) continue;
      // A fresh crash loop: younger than the 10 minutes a Degraded app otherwise gets to settle.
      a.status.operationState = { ...a.status.operationState!, phase: 'Succeeded', finishedAt: minutesAgo(4) };
      a.status.health = { ...a.status.health, lastTransitionTime: minutesAgo(2) };
      crashing.push(a.metadata.name);
    }
    crashing.sort();
    expect(crashing).toHaveLength(12);
    const fleet = StaticFleet.fromFixture(fixture);
    const services = { config: config('unused'), fleet, argocd: new Map(), now: () => NOW } as Services;
    const ctx = { services, user: 'U1', surface: 'terminal' as const, channel: 'terminal' };

    const diagnose = await dispatch('diagnose', ctx);
    const findings = (diagnose.data as { findings: Finding[] }).findings.filter(
      (f) => f.rule === 'degraded-after-sync',
    );
    expect(findings.map((f) => [...(f.apps ?? [])].sort())).toEqual([crashing]);

    const alerts = evaluateAlertRules({ fleet, now: NOW, config: services.config.alerts });
    const alerted = alerts.conditions.filter((c) => c.rule === 'degraded-after-sync');
    expect(alerted.map((c) => c.apps)).toEqual([crashing]);

    const digest = buildDigest({ fleet, now: NOW, alerts: services.config.alerts });
    const degraded = digest.attention.filter((a) => a.kind === 'degraded');
    expect(degraded.map((a) => a.apps)).toEqual([crashing]);
    expect(degraded[0]).toMatchObject({ appSet: 'auth-service', severity: 'critical', since: minutesAgo(2) });

    const status = await dispatch('status', ctx);
    const groups = (status.data as { groups: { name: string; kind: string; apps: string[] }[] }).groups;
    const statusDegraded = groups.filter((g) => g.kind === 'degraded' && g.name === 'auth-service');
    expect(statusDegraded.flatMap((g) => g.apps).sort()).toEqual(crashing);
  });

  it('a Degraded app that is not the registry’s degraded-after-sync still waits 10 minutes before the digest names it', () => {
    const fixture = seedOutageFixture(NOW);
    for (const a of fixture.instances[0].applications) {
      if (a.status?.health?.status !== 'Degraded' || !a.metadata.name.startsWith('auth-service-')) continue;
      // The sync that preceded it is a day old: not the rule's window, so not its judgement.
      a.status.operationState = { ...a.status.operationState!, phase: 'Succeeded', finishedAt: minutesAgo(24 * 60) };
      a.status.health = { ...a.status.health, lastTransitionTime: minutesAgo(2) };
    }
    const fleet = StaticFleet.fromFixture(fixture);
    const alertsConfig = config('unused').alerts;
    expect(
      evaluateAlertRules({ fleet, now: NOW, config: alertsConfig }).conditions.filter(
        (c) => c.rule === 'degraded-after-sync',
      ),
    ).toEqual([]);
    const digest = buildDigest({ fleet, now: NOW, alerts: alertsConfig });
    expect(digest.attention.filter((a) => a.kind === 'degraded' && a.appSet === 'auth-service')).toEqual([]);
  });
});
