import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { dispatch } from '../../src/commands/index.js';
import { CheckService } from '../../src/domain/checks/index.js';
import { ChangeLog } from '../../src/domain/incidents/change-log.js';
import { changesOfApps } from '../../src/domain/incidents/timeline.js';
import { RegressionStore } from '../../src/domain/checks/regressions.js';
import { judgedWindow } from '../../src/domain/runbooks/actions/bulk-sync/check-verifier.js';
import { regressionKey } from '../../src/domain/runbooks/actions/bulk-sync/regression.js';
import { isTerminal, RunStore } from '../../src/domain/runbooks/run-store.js';
import { configSchema } from '../../src/infra/config/schema.js';
import { SIM_CHECKS } from '../../src/sim/metrics.js';
import { renderText } from '../../src/views/text.js';
import { simFault } from '../support/sim.js';
import {
  clusterOf,
  drive,
  INSTANCE,
  rollbackPosts,
  runOf,
  settle,
  startSync,
  startWaves,
  syncPosts,
  type WavesEnv,
} from './waves-support.js';

// The watch after the last wave, on the simulator's manual clock: health alone watches here (no Prometheus), so
// every second of the watch is a second the test moves.

let env: WavesEnv | undefined;
const redisClients: Redis[] = [];
afterEach(async () => {
  await env?.close();
  env = undefined;
  for (const r of redisClients.splice(0)) await r.quit().catch(() => {});
});

function redisOf(e: WavesEnv): Redis {
  const redis = new Redis(e.redisUrl);
  redisClients.push(redis);
  return redis;
}

/** The rollout's waves and a regression store on the run's Redis prefix, where the alert rules would read it. */
async function startWatched(): Promise<WavesEnv & { regressions: RegressionStore }> {
  env = await startWaves();
  const regressions = new RegressionStore(redisOf(env), env.prefix);
  env.services.regressions = regressions;
  return Object.assign(env, { regressions });
}

async function watchEntry(e: WavesEnv, runId: string) {
  const store = new RunStore(redisOf(e), e.prefix);
  return store.checkpoint<{ state: string; startedAt: number }>(runId, 'sync', undefined, 'watch').get('watch');
}

const watching = (e: WavesEnv, runId: string) => async () => (await runOf(e, runId)).progress?.watch?.kind === 'watch';
const stopped = (e: WavesEnv, runId: string) => async () => {
  const { status } = await runOf(e, runId);
  return status === 'paused' || isTerminal(status);
};

describe('bulk-sync watch= after the last wave, on the simulator', () => {
  it('keeps every synced app under watch for its duration before the run succeeds, and says so live and in the audit', async () => {
    const e = await startWatched();
    const runId = await startSync(e, 'sync shop-* waves="tier=canary" watch=30s');
    await drive(e, watching(e, runId), { what: 'the watch after the rollout started' });
    const started = (await watchEntry(e, runId))!.startedAt;
    const live = (await runOf(e, runId)).progress!;
    expect(live.headline).toMatch(
      /^wave 2\/2 \(\(the rest\)\) · watching 13 synced apps after the rollout: \d+s left · health: pass · 13\/13 synced$/,
    );
    expect(renderText(await dispatch(`runs show ${runId}`, e.ctx()))).toMatch(
      /After the rollout: watching 13 synced apps, ends in \d+s/,
    );
    // Still watching a second before its 30 simulated seconds are up; ended soon after.
    await drive(e, () => e.now() >= started + 29_000, { what: '29 s of the watch' });
    expect((await runOf(e, runId)).status).toBe('running');
    await drive(e, async () => isTerminal((await runOf(e, runId)).status), { what: 'the run ended' });
    expect(e.now() - started).toBeGreaterThanOrEqual(30_000);
    const end = await runOf(e, runId);
    expect(end.status, end.error).toBe('succeeded');
    const records = await e.services.audit!.read({ runId, kinds: ['step.wave'] });
    expect(records.map((r) => r.message)).toEqual(
      expect.arrayContaining([
        `the watch after the rollout started: 13 synced apps for 30s (health)`,
        `the watch after the rollout ended: passed (health: 13 apps: Synced and Healthy)`,
      ]),
    );
    expect(await rollbackPosts(e.sim)).toEqual([]);
  });

  it(
    'a retried attempt continues the watch from its stored start; onRegression=pause pauses once, saying it in the thread; resuming ends the run failed naming it, nothing rolled back',
    { timeout: 90_000 },
    async () => {
      const e = await startWatched();
      const runId = await startSync(e, 'sync shop-* waves="tier=canary" watch=60s onRegression=pause');
      await drive(e, watching(e, runId), { what: 'the watch after the rollout started' });
      const started = (await watchEntry(e, runId))!.startedAt;
      for (let i = 0; i < 20; i++) e.sim.controller.advance(1000);
      await e.engine.crash();
      await e.startAnother();
      await settle(
        async () => (await runOf(e, runId)).steps[0].attempts >= 2,
        'a second attempt took the step',
        20_000,
      );
      await drive(e, watching(e, runId), { what: 'the second attempt is watching' });
      expect((await watchEntry(e, runId))!.startedAt).toBe(started);
      // 40 s of the 60 are left, not 60: the stored start holds.
      const endsAt = Date.parse((await runOf(e, runId)).progress!.watch!.endsAt);
      expect(endsAt).toBe(started + 60_000);

      await simFault(e.sim, { kind: 'clusterDown', instance: INSTANCE, cluster: clusterOf('shop-07') });
      await drive(e, stopped(e, runId), { what: 'the run paused' });
      const paused = await runOf(e, runId);
      expect(paused.status, paused.error).toBe('paused');
      expect(paused.pausedReason).toMatch(
        /^the watch after the rollout found a regression: health: shop-07 \(prod-07\)/,
      );
      const raised = await e.regressions.get(regressionKey(runId));
      expect(raised).toMatchObject({ source: 'watch', runId, checks: ['health'], apps: ['shop-07'] });
      // Raised until the watch would have ended (and a minute more), so a paused run's regression does not linger.
      expect(raised!.expiresAt).toBe(started + 60_000 + 60_000);
      const said = e.notifier.posts.filter((p) => p.reply.title === `Regression after run ${runId}`);
      expect(said).toHaveLength(1);
      expect(renderText(said[0].reply)).toContain('The run is paused (onRegression=pause)');

      await simFault(e.sim, { kind: 'clusterDown', instance: INSTANCE, cluster: clusterOf('shop-07'), down: false });
      expect((await dispatch(`runs resume ${runId}`, e.ctx())).ok).toBe(true);
      await drive(e, async () => isTerminal((await runOf(e, runId)).status), { what: 'the run ended' });
      const end = await runOf(e, runId);
      expect(end.status).toBe('failed');
      expect(end.error).toMatch(
        /the watch after the rollout failed: it found a regression: health: shop-07 \(prod-07\)/,
      );
      expect(await rollbackPosts(e.sim)).toEqual([]);
      expect((await syncPosts(e.sim)).length).toBe(13);
      expect(e.notifier.posts.filter((p) => p.reply.title === `Regression after run ${runId}`)).toHaveLength(1);
      // The regression is in the change log, so on the timeline of an incident covering the app that regressed.
      const timeline = changesOfApps(
        await new ChangeLog(redisOf(e), e.prefix).read(0),
        new Set([`${INSTANCE}/shop-07`]),
      );
      expect(timeline.map((r) => r.text)).toEqual(
        expect.arrayContaining([
          expect.stringMatching(
            new RegExp(
              `^run ${runId} the watch after the rollout found a regression \\d+s in: health: shop-07 .*pausing the run`,
            ),
          ),
        ]),
      );
    },
  );
});

describe('bulk-sync check= and watch= in the preview', () => {
  /** Checks configured (the preview queries nothing, so no Prometheus needs to answer). */
  function withChecks(e: WavesEnv) {
    const config = configSchema.parse({
      instances: e.services.config.instances.map(({ name, url, token }) => ({ name, url, token })),
      prometheus: { url: 'http://127.0.0.1:9', scrapeInterval: '15s' },
      checks: { 'error-rate': SIM_CHECKS['error-rate'], 'latency-p99': SIM_CHECKS['latency-p99'] },
    });
    e.services.checks = new CheckService(config);
  }

  it('says which checks verify each wave, the watch after the last, and what a regression does', async () => {
    env = await startWaves();
    const e = env;
    withChecks(e);
    const reply = await dispatch(
      'sync shop-* waves="tier=canary" check=error-rate,latency-p99 bake=1m watch=10m onRegression=rollback',
      e.ctx('U_OP', false),
    );
    expect(reply.ok, JSON.stringify(reply.error)).toBe(true);
    const text = renderText(reply);
    expect(text).toContain(
      'Sync 13 apps on 13 clusters in 2 waves, each wave baked 1m against error-rate, latency-p99 before the next starts, then watched 10m (a regression: rollback).',
    );
    expect(text).toContain(
      'Wave 1/2: tier=canary (label selector) · 1 app · all at a time · then bake 1m (health, check error-rate, check latency-p99)',
    );
    expect(text).toContain(
      'watch every app this run synced for 10m (health, check error-rate, check latency-p99); a regression is said in the thread, raised as a regression alert, then rollcall will roll back every app this run synced',
    );
    expect(text).toMatch(/params: .*check=error-rate,latency-p99 .*watch=10m .*onRegression=rollback/);
    const preview = (reply.data as { preview: { verifiers: string[]; watchVerifiers: string[] } }).preview;
    expect(preview.verifiers).toEqual(['health', 'check error-rate', 'check latency-p99']);
    expect(preview.watchVerifiers).toEqual(['health', 'check error-rate', 'check latency-p99']);

    // Without a bake a check still verifies each wave, once; onRegression without watch= is said to do nothing.
    const once = renderText(
      await dispatch('sync shop-* waves="tier=canary" check=error-rate onRegression=pause', e.ctx('U_OP', false)),
    );
    expect(once).toContain('then verified (check error-rate)');
    expect(once).toContain('onRegression=pause does nothing without watch=');
  });

  it('refuses an unknown check with the closest name, checks without Prometheus, and a malformed list; nothing starts', async () => {
    env = await startWaves();
    const e = env;
    const unconfigured = await dispatch('sync shop-* check=error-rate', e.ctx());
    expect(unconfigured.error).toMatchObject({
      code: 'invalid_params',
      message: expect.stringContaining('configure `prometheus.url` and `checks.error-rate` in rollcall.yaml'),
    });
    withChecks(e);
    const typo = await dispatch('sync shop-* check=error-rate,latncy-p99 bake=30s', e.ctx());
    expect(typo.error).toMatchObject({
      code: 'unknown_check',
      message: 'No check named `latncy-p99`. Configured checks: `error-rate`, `latency-p99`.',
      suggestions: ['check=error-rate,latency-p99'],
    });
    const empty = await dispatch('sync shop-* check=error-rate,,', e.ctx());
    expect(empty.error).toMatchObject({ code: 'invalid_params', message: expect.stringContaining('check is one') });
    const badWatch = await dispatch('sync shop-* watch=10 check=error-rate', e.ctx());
    expect(badWatch.error).toMatchObject({
      code: 'invalid_params',
      message: expect.stringContaining('watch=10 has no unit'),
    });
    const badAction = await dispatch('sync shop-* watch=10m onRegression=rollbak', e.ctx());
    expect(badAction.error).toMatchObject({ code: 'invalid_params', suggestions: ['onRegression=rollback'] });
    expect(await e.runs().list(10)).toEqual([]);
    expect(await syncPosts(e.sim)).toEqual([]);
  });
});

describe('the window a check judges during a watch', () => {
  const s = (n: number) => n * 1000;
  it('covers what followed the wave and one scrape before it: at least two scrapes, at most the check window', () => {
    expect(judgedWindow({ startedAt: 0, now: s(1) }, s(1), s(60))).toBe(s(2));
    expect(judgedWindow({ startedAt: 0, now: s(0.2) }, s(1), s(60))).toBe(s(2));
    // Whole seconds, as a person writes the query: `[11s]`, not `[11s500ms]`.
    expect(judgedWindow({ startedAt: 0, now: s(10.5) }, s(1), s(60))).toBe(s(11));
    expect(judgedWindow({ startedAt: 0, now: s(300) }, s(15), s(60))).toBe(s(60));
    // A Prometheus scraping less often than the check's window looks back: the check's window still bounds it.
    expect(judgedWindow({ startedAt: 0, now: s(60) }, s(60), s(60))).toBe(s(60));
  });
});
