import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { dispatch } from '../../src/commands/index.js';
import { clockTime } from '../../src/core/format.js';
import type { Application } from '../../src/infra/argocd/types.js';
import { ChangeLog } from '../../src/domain/incidents/change-log.js';
import { changesOfApps } from '../../src/domain/incidents/timeline.js';
import { progressReply } from '../../src/domain/runbooks/replies.js';
import { isTerminal, RunStore } from '../../src/domain/runbooks/run-store.js';
import { renderText } from '../../src/views/text.js';
import { simFault } from '../support/sim.js';
import {
  appsOfTier,
  clusterOf,
  drive,
  INSTANCE,
  REV,
  rollbackPosts,
  runOf,
  settle,
  startSync,
  startWaves,
  syncPosts,
  type WavesEnv,
} from './waves-support.js';

const TIERED = 'waves="tier=canary;tier=low-traffic@50%;tier=high-traffic@25%"';

let env: WavesEnv | undefined;
const redisClients: Redis[] = [];
afterEach(async () => {
  await env?.close();
  env = undefined;
  for (const r of redisClients.splice(0)) await r.quit().catch(() => {});
});

/** This run's sync operation is on the app (requested, running or done). */
const ours = (a: Application, runId: string) =>
  [a.operation, a.status?.operationState?.operation].some((op) =>
    op?.info?.some((i) => i.name === 'rollcall-run' && i.value === runId),
  );
/** Its sync succeeded and it is Synced and Healthy: it no longer holds a slot of its wave. */
const settled = (a: Application) =>
  !a.operation &&
  a.status?.operationState?.phase === 'Succeeded' &&
  a.status?.sync?.status === 'Synced' &&
  a.status?.health?.status === 'Healthy';

const ended = (e: WavesEnv, runId: string) => async () => isTerminal((await runOf(e, runId)).status);
/** Paused, or ended (which a test expecting a pause then reports as the wrong status). */
const stopped = (e: WavesEnv, runId: string) => async () => {
  const { status } = await runOf(e, runId);
  return status === 'paused' || isTerminal(status);
};
/** The run's live progress says wave `n` (1-based) is under watch. */
const baking = (e: WavesEnv, runId: string, n: number) => async () =>
  (await runOf(e, runId)).progress?.watch?.wave === n;

async function changeTexts(e: WavesEnv, runId: string): Promise<string[]> {
  const redis = new Redis(e.redisUrl);
  redisClients.push(redis);
  const records = await new ChangeLog(redis, e.prefix).read(0);
  return records.filter((r) => r.runId === runId).map((r) => r.text);
}

/** The step's wave checkpoint, as a retried attempt reads it. */
async function waveEntry(e: WavesEnv, runId: string, wave: number) {
  const redis = new Redis(e.redisUrl);
  redisClients.push(redis);
  const store = new RunStore(redis, e.prefix);
  return (await store
    .checkpoint<{ state: string; verifyStartedAt?: number }>(runId, 'sync', undefined, 'waves')
    .get(`wave:${wave}`))!;
}

async function rollbackEntries(e: WavesEnv, runId: string) {
  const redis = new Redis(e.redisUrl);
  redisClients.push(redis);
  return new RunStore(redis, e.prefix).checkpoint<{ state: string }>(runId, 'sync', undefined, 'rollbacks').all();
}

describe('bulk-sync label waves on the simulator', () => {
  it('syncs tier waves in order, each with at most its maxUpdate syncing at once (@50% of 4 is 2, @25% of 8 is 2)', async () => {
    env = await startWaves();
    const e = env;
    const runId = await startSync(e, `sync shop-* ${TIERED}`);
    const preview = (await runOf(e, runId)).preview!.data as {
      waves: { name: string; apps: unknown[]; maxUpdate: number }[];
    };
    expect(preview.waves.map((w) => [w.name, w.apps.length, w.maxUpdate])).toEqual([
      ['tier=canary', 1, 10],
      ['tier=low-traffic', 4, 2],
      ['tier=high-traffic', 8, 2],
    ]);

    // Sampled from the simulator between every simulated second: apps of each tier syncing or not yet healthy.
    const most: Record<string, number> = { canary: 0, 'low-traffic': 0, 'high-traffic': 0 };
    const early: string[] = [];
    const inFlight = (tier: string) =>
      appsOfTier(tier).filter((a) => ours(e.simApp(a), runId) && !settled(e.simApp(a)));
    const sample = () => {
      for (const tier of Object.keys(most)) most[tier] = Math.max(most[tier], inFlight(tier).length);
      // A wave starts only once every app of the one before is Synced and Healthy.
      if (inFlight('low-traffic').length && !settled(e.simApp('shop-01'))) early.push('low-traffic');
      if (inFlight('high-traffic').length && !appsOfTier('low-traffic').every((a) => settled(e.simApp(a))))
        early.push('high-traffic');
    };
    await drive(e, ended(e, runId), { what: 'the run ended', each: sample });
    const end = await runOf(e, runId);
    expect(end.status, end.error).toBe('succeeded');
    expect(most).toEqual({ canary: 1, 'low-traffic': 2, 'high-traffic': 2 });
    expect(early).toEqual([]);

    // The simulator's operation log: each app synced once, tier by tier, by name within a tier.
    const posts = await syncPosts(e.sim);
    expect(posts.map((p) => p.app)).toEqual(['shop-01', ...appsOfTier('low-traffic'), ...appsOfTier('high-traffic')]);
    // The low-traffic wave went two at a time: its second pair was sent once the first was Synced and Healthy
    // (the simulator takes 5 s to sync and 5 s more to report Healthy). The simulated clock moves a second per step
    // while rollcall runs in real time, so a pair sent together can be stamped a step or two apart on a busy machine;
    // sent one after the other, they would be 10 s apart.
    const at = (app: string) => Date.parse(posts.find((p) => p.app === app)!.at);
    expect(at('shop-03') - at('shop-02')).toBeLessThan(5_000);
    expect(at('shop-04') - at('shop-02')).toBeGreaterThanOrEqual(10_000);
  });

  it('a bake catches an app the simulator degrades: the wave fails naming the app, its health and since when; the next wave never syncs', async () => {
    env = await startWaves();
    const e = env;
    const runId = await startSync(e, `sync shop-* ${TIERED} bake=30s`);
    await drive(e, baking(e, runId, 2), { what: 'the low-traffic wave is baking' });
    const bakeStart = (await waveEntry(e, runId, 1)).verifyStartedAt!;
    // The canary baked its 30 s before the low-traffic wave started.
    const canaryBake = (await waveEntry(e, runId, 0)).verifyStartedAt!;
    const firstLow = Date.parse((await syncPosts(e.sim)).find((p) => p.app === 'shop-02')!.at);
    expect(firstLow - canaryBake).toBeGreaterThanOrEqual(30_000);
    const live = await runOf(e, runId);
    expect(live.progress!.headline).toMatch(
      /^wave 2\/3 \(tier=low-traffic\) · baking: \d+s left · health: pass · 5\/13 synced$/,
    );
    const message = renderText(progressReply(live));
    expect(message).toMatch(/Wave 2: baking, ends in \d+s/);
    expect(message).toContain('health: pass');
    expect(message).toContain('4 apps: Synced and Healthy');

    for (let i = 0; i < 10; i++) e.sim.controller.advance(1000);
    const degradedAt = e.now();
    expect(
      (await simFault(e.sim, { kind: 'clusterDown', instance: INSTANCE, cluster: clusterOf('shop-03') })).status,
    ).toBe(200);
    await drive(e, stopped(e, runId), { what: 'the run paused' });
    const run = await runOf(e, runId);
    expect(run.status, run.error).toBe('paused');
    const since = clockTime(new Date(Math.floor(degradedAt / 1000) * 1000));
    expect(run.pausedReason).toContain(
      `wave 2/3 (tier=low-traffic) failed: bake 30s failed: health: shop-03 (prod-03): health Unknown since ${since}`,
    );
    expect(e.now() - bakeStart).toBeLessThan(30_000);
    const synced = (await syncPosts(e.sim)).map((p) => p.app);
    expect(synced).toEqual(['shop-01', ...appsOfTier('low-traffic')]);
    // Paused, time goes on: still nothing of the next wave.
    for (let i = 0; i < 60; i++) e.sim.controller.advance(1000);
    await new Promise((r) => setTimeout(r, 600));
    expect((await syncPosts(e.sim)).map((p) => p.app)).toEqual(synced);

    // The change log, and so the incident timeline of shop-03, carries the bakes.
    const texts = await changeTexts(e, runId);
    expect(texts).toEqual(
      expect.arrayContaining([
        `run ${runId} wave 1/3 (tier=canary): bake 30s started (health)`,
        expect.stringMatching(
          new RegExp(
            `^run ${runId} wave 1/3 \\(tier=canary\\): bake 30s passed \\(health: 1 app: Synced and Healthy\\)$`,
          ),
        ),
        `run ${runId} wave 2/3 (tier=low-traffic): bake 30s started (health)`,
        expect.stringContaining(
          `run ${runId} wave 2/3 (tier=low-traffic) bake 30s failed: health: shop-03 (prod-03): health Unknown`,
        ),
      ]),
    );
    const redis = new Redis(e.redisUrl);
    redisClients.push(redis);
    const timeline = changesOfApps(await new ChangeLog(redis, e.prefix).read(0), new Set([`${INSTANCE}/shop-03`]));
    expect(timeline.map((r) => r.text)).toEqual(expect.arrayContaining([expect.stringContaining('bake 30s failed')]));
  });

  it("onFailure=rollback rolls back exactly the failed wave's synced apps, once each, to their previous deployment, and syncs nothing after", async () => {
    env = await startWaves();
    const e = env;
    const runId = await startSync(e, `sync shop-* ${TIERED} bake=30s onFailure=rollback`);
    await drive(e, baking(e, runId, 2), { what: 'the low-traffic wave is baking' });
    for (let i = 0; i < 5; i++) e.sim.controller.advance(1000);
    await simFault(e.sim, { kind: 'clusterDown', instance: INSTANCE, cluster: clusterOf('shop-04') });
    // Argo CD accepts the rollbacks while the cluster is away; it is back before they run.
    await settle(async () => (await rollbackPosts(e.sim)).length === 4, 'the rollbacks were sent');
    await simFault(e.sim, { kind: 'clusterDown', instance: INSTANCE, cluster: clusterOf('shop-04'), down: false });
    await drive(e, ended(e, runId), { what: 'the run ended' });

    const end = await runOf(e, runId);
    expect(end.status).toBe('failed');
    const low = appsOfTier('low-traffic');
    expect(end.error).toMatch(
      /^step sync failed: wave 2\/3 \(tier=low-traffic\) failed: bake 30s failed: health: shop-04 \(prod-04\): health Unknown since .*\. Rolled back 4 apps: shop-02 \(prod-02\) to #1 \(revision [0-9a-f]{7}\), shop-03 .*, shop-05 \(prod-05\) to #1 .*\. The 1 later wave was not synced\.$/,
    );
    const rollbacks = await rollbackPosts(e.sim);
    expect(rollbacks.map((p) => p.app).sort()).toEqual(low);
    // #1 is what each ran before this run's sync (#2); the canary, baked and passed, stays.
    for (const p of rollbacks) expect(p.body).toMatchObject({ id: 1, prune: false, dryRun: false });
    expect((await syncPosts(e.sim)).map((p) => p.app)).toEqual(['shop-01', ...low]);
    for (const app of low) {
      const history = e.simApp(app).status!.history!;
      expect(history.map((h) => h.revision)).toEqual([REV.old, REV.current, REV.next, REV.current]);
    }
    expect(e.simApp('shop-01').status!.history!.at(-1)!.revision).toBe(REV.next);

    const output = end.steps[0].output as { rolledBack: { app: string; to: string }[]; summary: string[] };
    expect(output.rolledBack.map((r) => r.app).sort()).toEqual(low);
    expect(output.summary).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^wave 2\/3 \(tier=low-traffic\) failed: bake 30s failed/),
        expect.stringMatching(/^rolled back 4 apps: shop-02 \(prod-02\) to #1/),
      ]),
    );
    const summaryText = renderText(await dispatch(`runs show ${runId}`, e.ctx()));
    expect(summaryText).toContain('rolled back 4 apps: shop-02 (prod-02) to #1');
    const texts = await changeTexts(e, runId);
    expect(texts).toEqual(
      expect.arrayContaining([
        expect.stringMatching(new RegExp(`^run ${runId} wave 2/3 \\(tier=low-traffic\\): rolled back 4 apps: shop-02`)),
        expect.stringContaining(
          `rollcall changed shop-03: rollback shop-03 to #1 (revision ${REV.current.slice(0, 7)})`,
        ),
      ]),
    );
  });

  it(
    'a retried attempt keeps the bake where it was, and a rollback in flight when the worker dies is not sent again',
    { timeout: 120_000 },
    async () => {
      env = await startWaves();
      const e = env;
      const runId = await startSync(e, `sync shop-* ${TIERED} bake=60s onFailure=rollback`);
      await drive(e, baking(e, runId, 1), { what: 'the canary is baking' });
      const bakeStart = (await waveEntry(e, runId, 0)).verifyStartedAt!;
      for (let i = 0; i < 40; i++) e.sim.controller.advance(1000);
      const crashedAt = e.now();
      await e.engine.crash();
      const second = await e.startAnother();
      await settle(
        async () => (await runOf(e, runId)).steps[0].attempts >= 2,
        'a second attempt took the step',
        20_000,
      );
      // The new attempt reads the bake's start from the wave checkpoint: 20 simulated seconds are left, not 60.
      await drive(e, async () => (await syncPosts(e.sim)).some((p) => p.app === 'shop-02'), {
        what: 'the low-traffic wave started',
      });
      expect((await waveEntry(e, runId, 0)).verifyStartedAt).toBe(bakeStart);
      const lowStarted = Date.parse((await syncPosts(e.sim)).find((p) => p.app === 'shop-02')!.at);
      expect(lowStarted - bakeStart).toBeGreaterThanOrEqual(60_000);
      // A bake begun again by the new attempt could not have ended before a minute after the crash.
      expect(lowStarted).toBeLessThan(crashedAt + 60_000);

      // Wave 2 fails its bake; its rollback POSTs reach Argo CD 3 s after they leave, and the worker dies before.
      await drive(e, baking(e, runId, 2), { what: 'the low-traffic wave is baking' });
      await simFault(e.sim, {
        kind: 'latency',
        instance: INSTANCE,
        ms: 3000,
        method: 'POST',
        match: '/rollback',
        count: 4,
      });
      await simFault(e.sim, { kind: 'clusterDown', instance: INSTANCE, cluster: clusterOf('shop-02') });
      await settle(
        async () => [...(await rollbackEntries(e, runId)).values()].filter((r) => r.state === 'posting').length === 4,
        'the rollbacks are being sent',
      );
      const attempts = (await runOf(e, runId)).steps[0].attempts;
      await second.crash();
      await e.startAnother();
      await simFault(e.sim, { kind: 'clusterDown', instance: INSTANCE, cluster: clusterOf('shop-02'), down: false });
      await drive(e, ended(e, runId), { what: 'the run ended' });
      const end = await runOf(e, runId);
      expect(end.status).toBe('failed');
      expect(end.error).toContain('Rolled back 4 apps');
      expect(end.steps[0].attempts).toBeGreaterThan(attempts);
      const rollbacks = await rollbackPosts(e.sim);
      expect(rollbacks.map((p) => p.app).sort()).toEqual(appsOfTier('low-traffic'));
      expect((await syncPosts(e.sim)).filter((p) => appsOfTier('high-traffic').includes(p.app!))).toEqual([]);
    },
  );

  it('onFailure=pause pauses when the last open app of a wave fails, before the next wave', async () => {
    env = await startWaves();
    const e = env;
    await simFault(e.sim, { kind: 'fail', instance: INSTANCE, app: 'shop-05' });
    // One at a time: shop-05, the last app of the low-traffic wave, is its last open app when it fails.
    const runId = await startSync(e, 'sync shop-* waves="tier=canary;tier=low-traffic@1;tier=high-traffic"');
    await drive(e, stopped(e, runId), { what: 'the run paused' });
    const run = await runOf(e, runId);
    expect(run.status, run.error).toBe('paused');
    expect(run.pausedReason).toMatch(/^1 app failed in wave 2\/3 \(tier=low-traffic\): shop-05 \(sync Failed: /);
    expect((await syncPosts(e.sim)).map((p) => p.app)).toEqual(['shop-01', ...appsOfTier('low-traffic')]);
  });
});

describe('the bulk-sync preview of verified waves', () => {
  it('lists each wave with its selector, app count, maxUpdate, bake and what a failure does; a dry run says would', async () => {
    env = await startWaves();
    const e = env;
    const reply = await dispatch(`sync shop-* ${TIERED} bake=30s onFailure=rollback`, e.ctx('U_OP', false));
    expect(reply.ok, JSON.stringify(reply.error)).toBe(true);
    const text = renderText(reply);
    expect(text).toContain(
      'Sync 13 apps on 13 clusters in 3 waves, each wave baked 30s before the next starts, a failed wave rolled back.',
    );
    expect(text).toContain('Wave 1/3: tier=canary (label selector) · 1 app · all at a time · then bake 30s (health)');
    expect(text).toContain(
      'Wave 2/3: tier=low-traffic (label selector) · 4 apps · 2 at a time (@50%) · then bake 30s (health)',
    );
    expect(text).toContain(
      'Wave 3/3: tier=high-traffic (label selector) · 8 apps · 2 at a time (@25%) · then bake 30s (health)',
    );
    expect(text).toContain(
      'roll back the apps the wave synced, each to its previous deployment, and stop: later waves are not synced (onFailure=rollback)',
    );
    expect((reply.data as { preview: { verifiers: string[] } }).preview.verifiers).toEqual(['health']);

    const dry = renderText(
      await dispatch(`sync shop-* ${TIERED} bake=30s onFailure=rollback dryRun=true`, e.ctx('U_OP', false)),
    );
    expect(dry).toContain('Dry run: would sync 13 apps on 13 clusters in 3 waves; nothing is applied.');
    expect(dry).toContain('a real run would bake 30s (health)');
    expect(dry).toContain('a real run would roll back the apps the wave synced');
    expect(await syncPosts(e.sim)).toEqual([]);
  });

  it('refuses a malformed @ or selector before the preview, and starts nothing', async () => {
    env = await startWaves();
    const e = env;
    const zero = await dispatch('sync shop-* waves="tier=canary@0;tier=low-traffic"', e.ctx());
    expect(zero.error).toMatchObject({
      code: 'invalid_params',
      message: expect.stringContaining('@0 would never sync'),
    });
    const bad = await dispatch('sync shop-* waves=tier in (canary', e.ctx());
    expect(bad.error).toMatchObject({
      code: 'invalid_selector',
      message: expect.stringContaining('is not a valid label selector'),
    });
    const none = await dispatch('sync shop-* waves=tier=canry', e.ctx());
    expect(none.error).toMatchObject({ code: 'invalid_params', suggestions: ['tier=canary'] });
    expect(await e.runs().list(10)).toEqual([]);
    expect(await syncPosts(e.sim)).toEqual([]);
  });
});
