import { afterAll, describe, expect, it } from 'vitest';
import { dispatch } from '../../src/commands/index.js';
import type { CommandContext, Services } from '../../src/commands/registry.js';
import { configSchema } from '../../src/infra/config/schema.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { ChangeLog } from '../../src/domain/incidents/change-log.js';
import { ChangeRecorder } from '../../src/domain/incidents/recorder.js';
import { computeMetrics } from '../../src/domain/incidents/metrics.js';
import { buildReport, condenseTimeline } from '../../src/domain/incidents/report.js';
import { IncidentService } from '../../src/domain/incidents/service.js';
import { IncidentStore, type Incident } from '../../src/domain/incidents/store.js';
import { closeRedis, createRedis } from '../../src/infra/redis.js';
import { seedOutageFixture } from '../../src/sim/scenarios/seed-outage.js';
import { progressiveInfraFixture } from '../../src/sim/scenarios/progressive-infra.js';
import { evaluateAlertRules } from '../../src/domain/alerts/rules.js';
import type { AlertRecord } from '../../src/domain/alerts/lifecycle.js';
import { cleanPrefix, testPrefix } from '../runbooks/fake-argo.js';
import { errorData, okAnswer } from '../support/replies.js';

const redis = createRedis(process.env.REDIS_URL!);
const prefix = testPrefix();
afterAll(async () => {
  await cleanPrefix(process.env.REDIS_URL!, prefix);
  await closeRedis(redis);
});

const fleet = StaticFleet.fromFixture(seedOutageFixture(new Date()));
const changes = new ChangeLog(redis, prefix);
const services: Services = {
  config: configSchema.parse({
    instances: [{ name: 'prod', url: 'https://prod.argocd.example', token: 't' }],
    redis: { prefix },
  }),
  fleet,
  argocd: new Map(),
  changes,
  incidents: new IncidentService(new IncidentStore(redis, prefix), changes, fleet),
};
const ctx = (user = 'U_OP'): CommandContext => ({ services, user, surface: 'terminal', channel: 'terminal' });

describe('incident commands', () => {
  it('refuses what it cannot do, saying what to do instead, and changes nothing', async () => {
    expect((await dispatch('incident note something', ctx())).error).toMatchObject({ code: 'incident_none_open' });
    expect((await dispatch('incident start', ctx())).error).toMatchObject({
      code: 'usage',
      message: expect.stringContaining('needs a title'),
    });
    expect((await dispatch('incident start outage sev=5', ctx())).error).toMatchObject({
      code: 'usage',
      message: expect.stringContaining('sev= is 1 (worst) to 4'),
    });
    expect((await dispatch('incident start outage scope=no-such-app', ctx())).error).toMatchObject({
      code: 'unknown_target',
    });
    expect((await dispatch('incident show INC-999', ctx())).error).toMatchObject({ code: 'incident_not_found' });
    expect((await dispatch('changes since=30d', ctx())).error).toMatchObject({
      code: 'usage',
      message: expect.stringContaining('retention'),
    });
    expect((await dispatch('changes kind=alert', ctx())).error).toMatchObject({ code: 'usage' });
    expect(await services.incidents!.open()).toEqual([]);
  });

  it('addresses the only open incident without an ID, and asks which when two are open', async () => {
    // What a worker's recorder backfills from Argo CD: the deploys and auth-service Degraded since.
    const recorder = new ChangeRecorder(fleet, changes);
    await recorder.start();
    await recorder.stop();
    const first = okAnswer(
      await dispatch('declare auth-service crash-looping sev=1 scope=auth-service-*', ctx()),
      'incident start',
    );
    const id = first.data.id;
    expect(first.data.blastRadius).toMatchObject({ clusters: 12, apps: 12, peakUnhealthy: 12 });
    expect((await dispatch('incident note looking at auth-config', ctx())).ok).toBe(true);
    expect(okAnswer(await dispatch('incident sev 2', ctx()), 'incident sev').data.incident).toMatchObject({
      id,
      severity: 2,
    });
    expect(okAnswer(await dispatch('incident lead <@U0LEAD>', ctx()), 'incident lead').data.incident).toMatchObject({
      lead: 'U0LEAD',
    });
    expect((await dispatch('incident status fixed', ctx())).error).toMatchObject({ code: 'usage' });

    const second = okAnswer(await dispatch('incident start payments slow', ctx()), 'incident start');
    const ambiguous = await dispatch('incident note which one?', ctx());
    expect(ambiguous.error).toMatchObject({ code: 'incident_ambiguous', suggestions: [id, second.data.id] });
    expect((errorData(ambiguous).open as { id: string }[]).map((i) => i.id)).toEqual([id, second.data.id]);

    expect((await dispatch(`incident close ${second.data.id}`, ctx())).ok).toBe(true);
    expect((await dispatch(`incident status ${second.data.id} mitigated`, ctx())).error).toMatchObject({
      code: 'incident_closed',
    });
    expect((await dispatch(`incident reopen ${id}`, ctx())).error).toMatchObject({ code: 'incident_not_closed' });
    const listed = okAnswer(await dispatch('incidents', ctx()), 'incidents');
    expect(listed.data.open.map((i) => i.id)).toEqual([id]);

    const timeline = okAnswer(await dispatch('incident timeline kind=note,status', ctx()), 'incident timeline');
    expect((timeline.data.timeline as { kind: string; text: string }[]).map((e) => e.kind)).toEqual([
      'note',
      'status',
      'status',
    ]);
    const show = okAnswer(await dispatch('incident', ctx()), 'incident show');
    expect(show.data.metrics).toMatchObject({
      impactStart: expect.any(String),
      detected: expect.any(String),
      acknowledged: expect.any(String),
    });
    expect(Date.parse((show.data.metrics as { impactStart: string }).impactStart)).toBeLessThan(
      Date.now() - 30 * 60_000,
    );

    // A mistyped id gets the closest incident ids, as every other name does; an alert id too.
    const typo = `${id}9`;
    expect((await dispatch(`incident show ${typo}`, ctx())).error).toMatchObject({
      code: 'incident_not_found',
      message: `No incident ${typo}: \`incidents\` lists the open and recent ones.`,
      suggestions: expect.arrayContaining([id]),
    });
    expect((await dispatch('incident show INC-999999', ctx())).error?.suggestions).toBeUndefined();
  });
});

describe('incident metrics', () => {
  const incident: Incident = {
    id: 'INC-1',
    n: 1,
    title: 't',
    severity: 1,
    state: 'closed',
    scopeApps: [],
    declaredBy: 'U',
    declaredAt: '2026-12-04T10:10:00Z',
    lookbackMs: 3_600_000,
    closedAt: '2026-12-04T11:00:00Z',
  };
  const bad = {
    id: 'b',
    at: '2026-12-04T10:00:00Z',
    kind: 'health' as const,
    source: 'argocd' as const,
    text: 'x Degraded',
    change: { id: 'b', at: '2026-12-04T10:00:00Z', kind: 'health' as const, to: 'Degraded', bad: true, text: '' },
  };
  const alert = {
    id: 'a',
    at: '2026-12-04T10:05:00Z',
    kind: 'alert' as const,
    source: 'alert' as const,
    text: 'alert',
  };
  const note = { id: 'n', at: '2026-12-04T10:12:00Z', kind: 'note' as const, source: 'human' as const, text: 'note' };
  const mitigated = {
    id: 'm',
    at: '2026-12-04T10:40:00Z',
    kind: 'status' as const,
    source: 'human' as const,
    state: 'mitigated',
    text: 'mitigated',
  };

  it('measures from the first bad transition, the first alert, the first human action after it, mitigated and close', () => {
    const m = computeMetrics(incident, [
      bad,
      alert,
      { ...note, kind: 'declared', at: incident.declaredAt },
      note,
      mitigated,
    ]);
    expect(m).toMatchObject({
      impactStart: bad.at,
      detected: alert.at,
      acknowledged: incident.declaredAt,
      mitigated: mitigated.at,
      resolved: incident.closedAt,
      ttd: 300,
      tta: 300,
      ttm: 2400,
      ttr: 3600,
      warnings: [],
    });
  });

  it('warns when a human override puts impact after detection', () => {
    const m = computeMetrics({ ...incident, impactOverride: '2026-12-04T10:30:00Z' }, [bad, alert, note, mitigated]);
    expect(m.impactStart).toBe('2026-12-04T10:30:00Z');
    expect(m.ttd).toBe(-1500);
    expect(m.warnings).toEqual([expect.stringContaining('detected (2026-12-04T10:05:00Z) is before impactStart')]);
  });
});

describe('open incident headers', () => {
  it('are refreshed in place, and suggest mitigated once when every scoped app is Synced and Healthy for 5 minutes', async () => {
    const posted: { channel: string; threadTs?: string; text: string }[] = [];
    const updated: string[] = [];
    const p = `${prefix}-headers`;
    const log = new ChangeLog(redis, p);
    const local: Services = {
      ...services,
      changes: log,
      incidents: new IncidentService(new IncidentStore(redis, p), log, fleet),
    };
    local.notifier = {
      post: async (target, reply) => {
        posted.push({ ...target, text: JSON.stringify(reply.blocks) });
        return { channel: target.channel, ts: '1.2' };
      },
      update: async (ref) => {
        updated.push(ref.ts);
      },
    };
    // user-profile has been Synced and Healthy for 43 minutes on every cluster.
    const incident = await local.incidents!.declare({
      title: 'user-profile errors',
      severity: 3,
      scope: { text: 'user-profile-*', selector: { patterns: ['user-profile-*'] } },
      by: 'U_OP',
    });
    await local.incidents!.store.update(incident.id, { header: { channel: 'C0INC', ts: '1.1' } });
    const { startIncidentHeaders } = await import('../../src/surfaces/slack/incident-headers.js');
    const ticker = startIncidentHeaders(local, { intervalMs: 1100 });
    try {
      await expect.poll(() => updated.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    } finally {
      ticker.stop();
    }
    expect(new Set(updated)).toEqual(new Set(['1.1']));
    expect(posted).toHaveLength(1);
    expect(posted[0]).toMatchObject({
      channel: 'C0INC',
      threadTs: '1.1',
      text: expect.stringContaining(`incident status ${incident.id} mitigated`),
    });
    const entries = await local.incidents!.timeline((await local.incidents!.store.get(incident.id))!);
    expect(entries.filter((e) => e.source === 'rollcall' && e.kind === 'status')).toHaveLength(1);
  });
});

describe('alerts on incidents', () => {
  it('finds the open incident covering an alert, puts its events on the timeline once, and an earlier alert marks detected', async () => {
    const { incidentSink } = await import('../../src/surfaces/cli/incident-sink.js');
    const p = `${prefix}-alerts`;
    const log = new ChangeLog(redis, p);
    const incidents = new IncidentService(new IncidentStore(redis, p), log, fleet);
    const sink = incidentSink(incidents)!;
    const incident = await incidents.declare({
      title: 'auth down',
      severity: 1,
      scope: { text: 'auth-service-*', selector: { patterns: ['auth-service-*'] } },
      by: 'U_OP',
    });
    const firedAt = new Date(Date.parse(incident.declaredAt) - 120_000).toISOString();
    const alert = {
      id: 'al-1',
      key: 'k',
      rule: 'degraded',
      severity: 'critical',
      instance: 'prod',
      appSet: 'auth-service',
      apps: ['auth-service-prod-us-east-1'],
      summary: 'auth-service Degraded on 12 clusters',
      details: [],
      state: 'firing',
      since: firedAt,
      firstSeenAt: firedAt,
      firedAt,
      updatedAt: firedAt,
      flaps: 0,
    } as unknown as Parameters<typeof sink.recordAlert>[1];
    // Declared from the terminal: no thread to post in, but the alert is on the timeline.
    expect(await sink.openCovering(alert)).toBeNull();
    expect(await sink.openCovering({ ...alert, apps: ['payments-prod-us-east-1'] })).toBeNull();
    await incidents.store.update(incident.id, { header: { channel: 'C0INC', ts: '1.1' } });
    expect(await sink.openCovering(alert)).toEqual({ id: incident.id, channel: 'C0INC', threadTs: '1.1' });
    await sink.recordAlert(incident.id, alert, 'fired');
    await sink.recordAlert(incident.id, { ...alert, resolvedAt: new Date().toISOString() }, 'resolved');
    const analysis = await incidents.analyse((await incidents.store.get(incident.id))!);
    expect(analysis.timeline.filter((e) => e.kind === 'alert').map((e) => e.text)).toEqual([
      expect.stringContaining('alert fired (critical)'),
      expect.stringContaining('alert resolved'),
    ]);
    expect(analysis.metrics.detected).toBe(firedAt);
  });

  it('counts a stuck RollingSync step as impact from when its apps stopped progressing, as the stuck-step rule dates it', async () => {
    const { incidentSink } = await import('../../src/surfaces/cli/incident-sink.js');
    const p = `${prefix}-stuck`;
    const now = new Date();
    const infra = StaticFleet.fromFixture(progressiveInfraFixture(now));
    const config = configSchema.parse({
      instances: [{ name: 'infra', url: 'http://127.0.0.1:1', token: 't' }],
      redis: { prefix: p },
      alerts: { channel: 'C', stuckAfter: '1m' },
    });
    const stuck = evaluateAlertRules({ fleet: infra, now, config: config.alerts }).conditions.find(
      (c) => c.rule === 'stuck-step',
    )!;
    const log = new ChangeLog(redis, p);
    const recorder = new ChangeRecorder(infra, log);
    await recorder.start();
    await recorder.stop();
    const incidents = new IncidentService(new IncidentStore(redis, p), log, infra, { lookbackMs: 6 * 3_600_000 });
    const incident = await incidents.declare({
      title: 'infra rollout stuck',
      severity: 2,
      scope: { text: 'appset=progressive-infra', selector: { appSet: 'progressive-infra' } },
      by: 'U_OP',
    });
    const before = await incidents.analyse(incident);
    const firedAt = now.toISOString();
    const alert = {
      ...stuck,
      id: 'al-stuck',
      state: 'firing',
      firstSeenAt: firedAt,
      firedAt,
      updatedAt: firedAt,
      flaps: 0,
    } as unknown as AlertRecord;
    await incidentSink(incidents)!.recordAlert(incident.id, alert, 'fired');
    const after = await incidents.analyse((await incidents.store.get(incident.id))!);
    expect(Date.parse(stuck.since)).toBeLessThan(
      before.metrics.impactStart ? Date.parse(before.metrics.impactStart) : Infinity,
    );
    expect(after.metrics.impactStart).toBe(stuck.since);
    expect(after.metrics.ttr).toBeNull();
  });
});

describe('the report of an incident without a scope', () => {
  it('groups the whole fleet in its appendix, every entry counted once, while a scoped incident keeps every row', async () => {
    const p = `${prefix}-report`;
    const log = new ChangeLog(redis, p);
    const recorder = new ChangeRecorder(fleet, log);
    await recorder.start();
    await recorder.stop();
    const incidents = new IncidentService(new IncidentStore(redis, p), log, fleet);
    const wide = await incidents.analyse(
      await incidents.declare({ title: 'everything is slow', severity: 2, by: 'U_OP' }),
    );
    const rows = condenseTimeline(wide.timeline);
    expect(rows.reduce((n, r) => n + r.count, 0)).toBe(wide.timeline.length);
    expect(wide.timeline.length).toBeGreaterThan(100);
    expect(rows.length).toBeLessThan(wide.timeline.length / 4);
    const report = buildReport(wide, fleet);
    const markdown = report.markdown;
    // The same ranking as `changes`: of 45 ApplicationSets deployed in the same minute, the one whose apps
    // went Degraded after it comes first.
    const beforeImpact = markdown
      .split('## Changes before impact')[1]
      .split('\n## ')[0]
      .split('\n')
      .filter((l) => l.startsWith('- '));
    expect(beforeImpact.length).toBeGreaterThan(20);
    expect(beforeImpact[0]).toMatch(
      /^- auth-service: v2\.14\.3 → v2\.15\.0 on 12 clusters, \d\d:\d\d, by applicationset-controller — then 12 apps went unhealthy$/,
    );
    expect(beforeImpact.slice(1).join('\n')).not.toMatch(/went unhealthy|Degraded/);
    expect(report.data.changesBeforeImpact).toEqual(
      expect.arrayContaining([expect.objectContaining({ subject: 'auth-service', troubleAfter: 12 })]),
    );
    const appendix = markdown.slice(markdown.indexOf('## Appendix'));
    expect(appendix).toContain(`${wide.timeline.length} entries in ${rows.length} rows`);
    expect(appendix).toContain('auth-service: is Degraded ×12 on 12 clusters (first: back-off');
    expect(appendix.split('\n').filter((l) => l.startsWith('| 20'))).toHaveLength(rows.length);
    // The declaration is still its own row.
    expect(appendix).toContain('| declared | human |');

    const scoped = await incidents.analyse(
      await incidents.declare({
        title: 'auth down',
        severity: 1,
        scope: { text: 'auth-service-*', selector: { patterns: ['auth-service-*'] } },
        by: 'U_OP',
      }),
    );
    const scopedAppendix = buildReport(scoped, fleet).markdown.split('## Appendix')[1];
    expect(scopedAppendix.split('\n').filter((l) => l.startsWith('| 20'))).toHaveLength(scoped.timeline.length);
  });
});
