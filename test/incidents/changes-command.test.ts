import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { dispatch } from '../../src/commands/index.js';
import type { CommandContext, Services } from '../../src/commands/registry.js';
import { configSchema } from '../../src/infra/config/schema.js';
import { setDisplayTimeZone } from '../../src/core/format.js';
import { PAGE_SIZE } from '../../src/core/reply.js';
import { StaticFleet, type FleetApp } from '../../src/fleet/model.js';
import { ChangeLog } from '../../src/domain/incidents/change-log.js';
import { ChangeRecorder } from '../../src/domain/incidents/recorder.js';
import { changesOf } from '../../src/domain/incidents/changes.js';
import { attributionInfos } from '../../src/infra/argocd/client.js';
import { closeRedis, createRedis } from '../../src/infra/redis.js';
import { seedOutageFixture } from '../../src/sim/scenarios/seed-outage.js';
import { renderText } from '../../src/views/text.js';
import { cleanPrefix, testPrefix } from '../runbooks/fake-argo.js';
import { okAnswer } from '../support/replies.js';
import { FeedFleet } from '../support/feed-fleet.js';

const redis = createRedis(process.env.REDIS_URL!);
const prefix = testPrefix();
afterAll(async () => {
  await cleanPrefix(process.env.REDIS_URL!, prefix);
  await closeRedis(redis);
});
afterEach(() => setDisplayTimeZone('UTC'));

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
};
const ctx: CommandContext = { services, user: 'U_OP', surface: 'terminal', channel: 'terminal' };

describe('changes', () => {
  it('lists every group it counts, reachable page by page, with times of day in the display time zone', async () => {
    const recorder = new ChangeRecorder(fleet, changes);
    await recorder.start();
    await recorder.stop();
    setDisplayTimeZone('Asia/Kolkata');

    const reply = okAnswer(await dispatch('changes since=2h', ctx), 'changes');
    expect(reply.ok, JSON.stringify(reply.error)).toBe(true);
    const groups = reply.data.groups as { to: string; text: string }[];
    // The fixture's history has more groups than one page holds: the header's count and the pager must agree.
    expect(groups.length).toBeGreaterThan(PAGE_SIZE.terminal * 2);
    const list = reply.blocks.find((b) => b.kind === 'list');
    expect(list?.kind === 'list' && list.items.length).toBe(groups.length);

    const pages = Math.ceil(groups.length / PAGE_SIZE.terminal);
    const last = renderText(reply, { page: pages });
    expect(last).toContain(`of ${groups.length}`);
    expect(last).toContain(groups[groups.length - 1].text.replace(/`/g, '').slice(0, 30));

    const first = renderText(reply);
    expect(first).toContain('Times Asia/Kolkata');
    const newest = new Date(groups[0].to);
    const kolkata = new Intl.DateTimeFormat('en-GB', {
      timeZone: 'Asia/Kolkata',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    }).format(newest);
    expect(kolkata).not.toBe(groups[0].to.slice(11, 16)); // UTC+5:30 never shows the UTC minute
    expect(first).toContain(kolkata);
  });
});

describe('deleted apps', () => {
  it('are recorded with where they ran and what they had deployed, and a recreated app reads as deleted then created', async () => {
    const live = FeedFleet.of(StaticFleet.fromFixture(seedOutageFixture(new Date())));
    const log = new ChangeLog(redis, `${prefix}-deleted`);
    const recorder = new ChangeRecorder(live, log, { flushMs: 5 });
    await recorder.start();
    await recorder.backfilled;
    const name = 'auth-service-prod-eu-west-1';
    const gone = live.removeApp('prod', name, 'argocd')!;
    gone.app.metadata.uid = 'uid-old';
    const deletedAt = new Date(Date.now() - 120_000).toISOString();
    live.publish({ kind: 'app-removed', instance: 'prod', at: deletedAt, app: gone });
    // A second watcher (another worker) sees the same DELETED event: still one record.
    live.publish({ kind: 'app-removed', instance: 'prod', at: new Date().toISOString(), app: gone });
    const again = structuredClone(gone) as FleetApp;
    again.app.metadata.uid = 'uid-new';
    again.app.metadata.creationTimestamp = new Date(Date.now() - 60_000).toISOString().replace(/\.\d+Z$/, 'Z');
    again.app.status!.history = [];
    live.upsertApp(again);
    live.publish({ kind: 'app-added', instance: 'prod', at: new Date().toISOString(), app: again });
    await recorder.stop();

    const read = (await log.read(Date.now() - 600_000)).filter(
      (r) => r.app === name && (r.kind === 'deleted' || r.kind === 'created'),
    );
    expect(read.map((r) => r.kind)).toEqual(['deleted', 'created']);
    expect(read[0]).toMatchObject({
      at: deletedAt,
      cluster: 'prod-eu-west-1',
      appSet: 'auth-service',
      revision: 'v2.15.0',
      text: `${name} deleted at v2.15.0 (ApplicationSet auth-service)`,
    });
    expect(read[1]).toMatchObject({
      by: 'ApplicationSet auth-service',
      text: `${name} created by ApplicationSet auth-service`,
    });

    // The same app deleted again later is a second deletion, not the first one claimed twice.
    const log2 = new ChangeRecorder(live, log, { flushMs: 5 });
    await log2.start();
    live.removeApp('prod', name, 'argocd');
    live.publish({ kind: 'app-removed', instance: 'prod', at: new Date().toISOString(), app: again });
    await log2.stop();
    expect((await log.read(Date.now() - 600_000)).filter((r) => r.app === name && r.kind === 'deleted')).toHaveLength(
      2,
    );

    const reply = okAnswer(
      await dispatch('changes since=1h kind=deleted,created', {
        ...ctx,
        services: { ...services, fleet: live, changes: log },
      }),
      'changes',
    );
    const groups = reply.data.groups as { kind: string; text: string }[];
    // Both deletions of the same app at the same revision within minutes are one line.
    expect(groups.map((g) => g.kind)).toEqual(['deleted', 'created']);
    expect(groups[0].text).toContain(
      'auth-service: deleted at v2.15.0 (ApplicationSet auth-service) ×2 on prod-eu-west-1',
    );
    expect(groups[1].text).toContain('auth-service: created by ApplicationSet auth-service on prod-eu-west-1');

    // The app is gone now; asked about by name, its changes are still there, and a typo is still a typo.
    const deletedCtx = { ...ctx, services: { ...services, fleet: live, changes: log } };
    expect(live.appsNamed(name)).toEqual([]);
    const byName = okAnswer(await dispatch(`changes since=1h kind=deleted,created ${name}`, deletedCtx), 'changes');
    expect(byName.ok, JSON.stringify(byName.error)).toBe(true);
    // Newest first: deleted again, recreated, first deleted.
    expect((byName.data.changes as { app: string; kind: string }[]).map((c) => [c.app, c.kind])).toEqual([
      [name, 'deleted'],
      [name, 'created'],
      [name, 'deleted'],
    ]);
    const byGlob = okAnswer(
      await dispatch('changes since=1h kind=deleted auth-service-prod-eu-*', deletedCtx),
      'changes',
    );
    expect((byGlob.data.changes as { app: string }[]).map((c) => c.app)).toEqual([name, name]);
    // Scoped to a cluster it never ran on, the name matches nothing there, live or gone.
    const elsewhere = await dispatch(`changes since=1h kind=deleted ${name} cluster=prod-us-east-1`, deletedCtx);
    expect(elsewhere.ok).toBe(false);
    const typo = await dispatch('changes since=1h auth-servise-prod-eu-west-1', deletedCtx);
    expect(typo.ok).toBe(false);
    expect(typo.error?.message).toMatch(/auth-servise-prod-eu-west-1/);
  });
});

describe('the likely cause first', () => {
  it('puts the auth-service deploy first on seed-outage, then its apps going Degraded, then the rest newest first', async () => {
    const at = new Date();
    const seeded = StaticFleet.fromFixture(seedOutageFixture(at));
    const log = new ChangeLog(redis, `${prefix}-cause`);
    const recorder = new ChangeRecorder(seeded, log);
    await recorder.start();
    await recorder.stop();
    // A later deploy elsewhere: newest first alone would put it above the cause.
    await log.record([
      {
        id: 'prod/argocd/checkout-prod-us-east-1/deploy/9/later',
        at: new Date(at.getTime() - 5 * 60_000).toISOString(),
        kind: 'deploy',
        instance: 'prod',
        app: 'checkout-prod-us-east-1',
        appSet: 'checkout',
        cluster: 'prod-us-east-1',
        revision: 'v9',
        previousRevision: 'v8',
        by: 'ci-deployer',
        text: 'checkout-prod-us-east-1 deployed v8 → v9 by ci-deployer',
      },
    ]);
    const reply = okAnswer(
      await dispatch('changes since=1h', {
        ...ctx,
        services: { ...services, fleet: seeded, changes: log },
      }),
      'changes',
    );
    const groups = reply.data.groups;
    expect(groups[0]).toMatchObject({ kind: 'deploy', subject: 'auth-service', troubleAfter: 12 });
    expect(groups[0].text).toMatch(
      /^auth-service: v2\.14\.3 → v2\.15\.0 on 12 clusters, \d\d:\d\d, by applicationset-controller — then 12 apps went unhealthy$/,
    );
    expect(groups[1]).toMatchObject({ kind: 'health', subject: 'auth-service', bad: true, count: 12 });
    expect(groups[1].text).toMatch(/^auth-service: 12 apps went Degraded on 12 clusters, \d\d:\d\d$/);
    expect(groups[2]).toMatchObject({ kind: 'deploy', subject: 'checkout', revision: 'v9' });
    const rest = groups.slice(2).map((g) => Date.parse(g.to));
    expect(rest).toEqual([...rest].sort((a, b) => b - a));
    // Only auth-service's apps went unhealthy: no other deploy of the same minute is a suspect.
    expect(groups.filter((g) => g.troubleAfter)).toHaveLength(1);

    const list = reply.blocks.find((b) => b.kind === 'list');
    expect(list?.kind === 'list' && list.items.slice(0, 3).map((i) => i.tone)).toEqual(['info', 'error', 'info']);
    expect(renderText(reply)).toContain('first the change after which apps went unhealthy, then that trouble');

    // Asked for deploys only, the health changes it does not list still rank them.
    const deployReply = okAnswer(
      await dispatch('changes since=1h kind=deploy', {
        ...ctx,
        services: { ...services, fleet: seeded, changes: log },
      }),
      'changes',
    );
    const deploys = deployReply.data.groups;
    expect(renderText(deployReply)).toContain(
      'first the change after which apps went unhealthy, then the rest newest first',
    );
    expect(deploys.map((g) => g.kind)).not.toContain('health');
    expect(deploys[0]).toMatchObject({ subject: 'auth-service', troubleAfter: 12 });
    expect(deploys[1]).toMatchObject({ subject: 'checkout', revision: 'v9' });
  });

  it("credits rollcall's syncs to the person who asked, and gives a failed sync the bad icon", async () => {
    const at = new Date();
    const seeded = StaticFleet.fromFixture(seedOutageFixture(at));
    const base = seeded.appsNamed('auth-config-prod-us-east-1')[0];
    const iso = (minutesAgo: number) =>
      new Date(at.getTime() - minutesAgo * 60_000).toISOString().replace(/\.\d+Z$/, 'Z');
    const operation = {
      sync: { revision: 'f'.repeat(40), prune: true },
      // Argo CD names the token's account; the info is where rollcall wrote who asked.
      initiatedBy: { username: 'admin' },
      info: attributionInfos({ runInfoName: 'rollcall-run', runId: 'r-7', user: 'alice', surface: 'slack' }),
    };
    const failed = structuredClone(base) as FleetApp;
    failed.app.status!.operationState = {
      operation,
      phase: 'Failed',
      message: 'one or more objects failed to apply',
      startedAt: iso(10),
      finishedAt: iso(9),
    };
    const succeeded = structuredClone(base) as FleetApp;
    succeeded.app.status!.operationState = {
      operation,
      phase: 'Succeeded',
      startedAt: iso(5),
      finishedAt: iso(4),
      syncResult: { revision: 'f'.repeat(40) },
    };
    succeeded.app.status!.history = [
      ...(base.app.status!.history ?? []),
      {
        id: 99,
        revision: 'f'.repeat(40),
        deployStartedAt: iso(5),
        deployedAt: iso(4),
        initiatedBy: { username: 'admin' },
      },
    ];
    const records = [
      ...changesOf({ kind: 'app-changed', instance: 'prod', at: iso(9), app: failed, previous: base }),
      ...changesOf({ kind: 'app-changed', instance: 'prod', at: iso(4), app: succeeded, previous: failed }),
    ];
    expect(records.filter((r) => r.kind !== 'sync').map((r) => [r.kind, r.to ?? '', r.by, r.runId])).toEqual([
      ['operation', 'Running', 'alice', 'r-7'],
      ['operation', 'Failed', 'alice', 'r-7'],
      ['deploy', '', 'alice', 'r-7'],
      ['operation', 'Running', 'alice', 'r-7'],
      ['operation', 'Succeeded', 'alice', 'r-7'],
    ]);
    const log = new ChangeLog(redis, `${prefix}-credit`);
    await log.record(records);
    const reply = okAnswer(
      await dispatch('changes since=1h auth-config-prod-us-east-1', {
        ...ctx,
        services: { ...services, fleet: seeded, changes: log },
      }),
      'changes',
    );
    const lines = reply.data.groups.map((g) => g.text);
    expect(lines).toEqual([
      expect.stringMatching(
        /^auth-config: sync Failed: one or more objects failed to apply on prod-us-east-1, \d\d:\d\d, by alice$/,
      ),
      expect.stringMatching(/^auth-config: 7da8a4c → fffffff on prod-us-east-1, \d\d:\d\d, by alice$/),
    ]);
    expect(lines.join('\n')).not.toContain('admin');
    const list = reply.blocks.find((b) => b.kind === 'list');
    const tones = new Map(
      reply.data.groups.map((g, i) => [g.outcome ?? g.kind, list?.kind === 'list' ? list.items[i].tone : undefined]),
    );
    expect(tones.get('Failed')).toBe('error');
    expect(tones.get('deploy')).toBe('info');
  });
});
