import { afterAll, describe, expect, it } from 'vitest';
import { StaticFleet, type FleetApp } from '../../src/fleet/model.js';
import { ChangeLog } from '../../src/domain/incidents/change-log.js';
import { backfillChanges, changesOf, revisionLabel } from '../../src/domain/incidents/changes.js';
import { ChangeRecorder } from '../../src/domain/incidents/recorder.js';
import { closeRedis, createRedis } from '../../src/infra/redis.js';
import { AuditLog } from '../../src/domain/audit/audit-log.js';
import { seedOutageFixture } from '../../src/sim/scenarios/seed-outage.js';
import { cleanPrefix, testPrefix } from '../runbooks/fake-argo.js';
import { FeedFleet } from '../support/feed-fleet.js';

const prefix = testPrefix();
const a = createRedis(process.env.REDIS_URL!);
const b = createRedis(process.env.REDIS_URL!);
afterAll(async () => {
  await cleanPrefix(process.env.REDIS_URL!, prefix);
  await closeRedis(a);
  await closeRedis(b);
});

const now = new Date();
const fleet = StaticFleet.fromFixture(seedOutageFixture(now));
const authService = (cluster = 'prod-us-east-1') => fleet.findApp('prod', `auth-service-${cluster}`, 'argocd')!;

describe('change records', () => {
  it('names a deploy by the image tag its source pins, else by the commit', () => {
    expect(
      revisionLabel(
        {
          repoURL: 'r',
          targetRevision: 'HEAD',
          kustomize: { images: ['registry.example.com/identity/auth-service:v2.15.0'] },
        },
        'a'.repeat(40),
      ),
    ).toBe('v2.15.0');
    expect(
      revisionLabel({ repoURL: 'r', helm: { parameters: [{ name: 'image.tag', value: '1.2.3' }] } }, 'b'.repeat(40)),
    ).toBe('1.2.3');
    expect(revisionLabel({ repoURL: 'r', targetRevision: 'release-7' }, 'c'.repeat(40))).toBe('release-7');
    expect(revisionLabel({ repoURL: 'r', targetRevision: 'HEAD' }, 'd'.repeat(40))).toBe('ddddddd');
  });

  it('backfills what Argo CD still knows: the deploys in history, the last operation, an unhealthy app since when', () => {
    const records = backfillChanges(authService(), now.getTime() - 3_600_000);
    expect(records.map((r) => `${r.kind}:${r.to ?? ''}`)).toEqual([
      'deploy:',
      'operation:Running',
      'operation:Succeeded',
      'health:Degraded',
    ]);
    expect(records[0]).toMatchObject({
      revision: 'v2.15.0',
      previousRevision: 'v2.14.3',
      by: 'applicationset-controller',
      appSet: 'auth-service',
      cluster: 'prod-us-east-1',
    });
    expect(records[3]).toMatchObject({ bad: true, text: expect.stringContaining('back-off') });
    // The v2.14.3 deploy three days ago is beyond the hour asked for.
    expect(backfillChanges(authService(), 0).filter((r) => r.kind === 'deploy')).toHaveLength(2);
  });

  it('derives the same id live as in a backfill, so a late process does not record a change twice', () => {
    const degraded = authService();
    const healthy = structuredClone(degraded) as FleetApp;
    healthy.app.status!.health = { status: 'Healthy', lastTransitionTime: '2026-01-01T00:00:00Z' };
    healthy.app.status!.history = healthy.app.status!.history!.slice(0, 1);
    const live = changesOf({
      kind: 'app-changed',
      instance: 'prod',
      at: now.toISOString(),
      app: degraded,
      previous: healthy,
    });
    const backfilled = backfillChanges(degraded, 0);
    const liveHealth = live.find((r) => r.kind === 'health')!;
    expect(liveHealth).toMatchObject({ from: 'Healthy', to: 'Degraded' });
    expect(backfilled.map((r) => r.id)).toContain(liveHealth.id);
    expect(backfilled.map((r) => r.id)).toContain(live.find((r) => r.kind === 'deploy')!.id);
  });
});

describe('the change log in Redis', () => {
  it('keeps a change offered by two processes at the same moment once', async () => {
    const p = `${prefix}-race`;
    const logA = new ChangeLog(a, p);
    const logB = new ChangeLog(b, p);
    const records = fleet.apps().flatMap((app) => backfillChanges(app, now.getTime() - 3_600_000));
    expect(records.length).toBeGreaterThan(1000);
    const [addedA, addedB] = await Promise.all([logA.record(records), logB.record([...records].reverse())]);
    expect(addedA + addedB).toBe(new Set(records.map((r) => r.id)).size);
    expect(await a.xlen(logA.key)).toBe(addedA + addedB);
    // Offered again (a restart's backfill): nothing new.
    expect(await logB.record(records)).toBe(0);
    const read = await logA.read(now.getTime() - 3_600_000);
    expect(new Set(read.map((r) => r.id)).size).toBe(read.length);
    expect(read.filter((r) => r.kind === 'deploy' && r.appSet === 'auth-service')).toHaveLength(12);
  });

  it('forgets what is older than its retention', async () => {
    const log = new ChangeLog(a, `${prefix}-retention`, 60_000);
    const t0 = Date.now();
    const old = Array.from({ length: 400 }, (_, i) => ({
      id: `old-${i}`,
      at: new Date(t0).toISOString(),
      kind: 'sync' as const,
      text: `old ${i}`,
    }));
    await log.record(old, t0);
    expect(await a.xlen(log.key)).toBe(400);
    // Ten minutes later by the recorder's clock: the stream entries, appended now, are older than 1 minute then.
    await log.trim(t0 + 600_000 + 60_000 + (Date.now() - t0));
    // Trimming is approximate (whole stream nodes); most of it is gone.
    expect(await a.xlen(log.key)).toBeLessThan(150);
  });

  it("merges the audit stream in as rollcall's own changes, without copying it", async () => {
    const p = `${prefix}-audit`;
    const audit = new AuditLog(a, p);
    await audit.record({ kind: 'run.start', who: 'U_OP', runId: 'r-1', target: 'bulk-sync', surface: 'slack' });
    await audit.record({
      kind: 'argocd.sync',
      who: 'U_OP',
      runId: 'r-1',
      target: 'prod/auth-config-prod-us-east-1',
      params: { prune: true },
      result: 'accepted',
    });
    await audit.record({ kind: 'step.end', who: 'rollcall', runId: 'r-1', target: 'sync', result: 'succeeded' });
    const read = await new ChangeLog(a, p).read(Date.now() - 60_000);
    expect(read.map((r) => r.kind)).toEqual(['run', 'run', 'step']);
    expect(read[1]).toMatchObject({
      instance: 'prod',
      app: 'auth-config-prod-us-east-1',
      runId: 'r-1',
      by: 'U_OP',
      text: expect.stringContaining('synced auth-config-prod-us-east-1 (prune)'),
    });
    expect(read[0]).toMatchObject({ surface: 'slack', by: 'U_OP' });
  });

  it('backfills every app even while apps are removed during the backfill', async () => {
    const p = `${prefix}-recorder-removals`;
    const log = new ChangeLog(a, p);
    const source = StaticFleet.fromFixture(seedOutageFixture(now));
    const since = now.getTime() - log.retentionMs;
    // The last app has changes to backfill: a removal moves it into the removed app's place.
    const withChanges = source.apps().filter((x) => backfillChanges(x, since).length > 0);
    const last = withChanges[withChanges.length - 1];
    const live = new FeedFleet(source.instances());
    live.load([...source.apps().filter((x) => x !== last), last], [...source.appSets()], [...source.clusters()]);
    const first = live.apps()[0];
    const recorder = new ChangeRecorder(live, log, { flushMs: 5, batchSize: 1 });
    await recorder.start();
    // The backfill is writing its first batch: the first app is behind it, the last app moves into its place.
    live.removeApp(first.instance, first.app.metadata.name, first.app.metadata.namespace);
    await recorder.backfilled;
    await recorder.stop();
    const read = await log.read(since);
    expect(read.some((r) => r.app === last.app.metadata.name)).toBe(true);
  });

  it('records live changes from the fleet feed and backfills at start', async () => {
    const p = `${prefix}-recorder`;
    const log = new ChangeLog(a, p);
    const live = FeedFleet.of(StaticFleet.fromFixture(seedOutageFixture(now)));
    const recorder = new ChangeRecorder(live, log, { flushMs: 5 });
    await recorder.start();
    await recorder.backfilled;
    const atStart = recorder.stats().recorded;
    expect(atStart).toBeGreaterThan(12);
    const app = live.findApp('prod', 'auth-service-prod-eu-west-1', 'argocd')!;
    const healed = structuredClone(app);
    healed.app.status!.health = {
      status: 'Healthy',
      lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    };
    healed.app.metadata.resourceVersion = '999';
    live.upsertApp(healed);
    live.publish({ kind: 'app-changed', instance: 'prod', at: new Date().toISOString(), app: healed, previous: app });
    await recorder.stop();
    expect(recorder.stats().recorded).toBe(atStart + 1);
    const read = await log.read(Date.now() - 60_000);
    expect(read.filter((r) => r.kind === 'health' && r.to === 'Healthy').map((r) => r.app)).toEqual([
      'auth-service-prod-eu-west-1',
    ]);
  });
});
