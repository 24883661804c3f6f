import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { dispatch } from '../../src/commands/index.js';
import { renderText } from '../../src/views/text.js';
import { GuardWatcher } from '../../src/domain/guards/index.js';
import { evaluateAlertRules } from '../../src/domain/alerts/rules.js';
import { RegressionStore } from '../../src/domain/checks/regressions.js';
import type { PrivatePrometheus } from '../../src/infra/prometheus-server.js';
import { prometheusAvailable, startTestPrometheus } from '../support/prometheus.js';
import { simOperations } from '../support/sim.js';
import { startControlSim, type ControlSim } from '../runbooks/control-sim.js';

const APPSET = 'progressive-infra';
const INSTANCE = 'infra';
// The simulator's healthy apps serve a steady 5-40 requests a second: a check that wants at least 1000 fails
// on every one of them (`strict`), one that wants 0.1 passes (`loose`).
const requestRate = (failBelow: number) => ({
  query: 'sum(rate(http_requests_total{app="{{app}}",cluster="{{cluster}}"}[{{window}}]))',
  failBelow,
  window: '10s',
});

describe.skipIf(!prometheusAvailable)('guard: a RollingSync rollout watched against a real Prometheus', () => {
  let env: ControlSim;
  let prometheus: PrivatePrometheus | undefined;
  let redis: Redis;

  beforeAll(async () => {
    env = await startControlSim({
      scenario: 'progressive-infra',
      beforeConfig: async (sim) => {
        prometheus = await startTestPrometheus([{ url: sim.url }]);
        return {
          prometheus: { url: prometheus.url, scrapeInterval: 1000 },
          checks: { strict: requestRate(1000), loose: requestRate(0.1) },
        };
      },
    });
    redis = new Redis(process.env.REDIS_URL!);
    // Two scrapes at least, so rate() over the 10 s window has data for every app.
    await new Promise((r) => setTimeout(r, 3000));
  }, 60_000);

  afterAll(async () => {
    await redis?.quit();
    await env?.close();
    await prometheus?.stop();
  });

  const watcher = () =>
    new GuardWatcher({
      redis,
      prefix: env.prefix,
      store: env.services.guards!,
      fleet: env.services.fleet,
      checks: env.services.checks!,
      regressions: new RegressionStore(redis, env.prefix),
      runs: env.runs,
      audit: env.services.audit,
      everyMs: 1000,
    });

  it('refuses a typo in the check or the appset, and stores nothing', async () => {
    const typoCheck = await dispatch(`guard ${APPSET} check=lose`, env.ctx('U_OP'));
    expect(typoCheck.error?.code).toBe('unknown_check');
    expect(typoCheck.error?.suggestions).toContain('loose');
    const typoOption = await dispatch(`guard ${APPSET} check=loose onfail=notify`, env.ctx('U_OP'));
    expect(typoOption.error?.code).toBe('usage');
    expect(typoOption.error?.message).toContain('does not take onfail=');
    const typoSet = await dispatch('guard progresive-infra check=loose', env.ctx('U_OP'));
    expect(typoSet.error?.code).toBe('unknown_target');
    const noCheck = await dispatch(`guard ${APPSET}`, env.ctx('U_OP'));
    expect(noCheck.error?.code).toBe('usage');
    const badOnFail = await dispatch(`guard ${APPSET} check=loose onFail=explode`, env.ctx('U_OP'));
    expect(badOnFail.error?.code).toBe('invalid_params');
    expect(await env.services.guards!.list()).toEqual([]);
  });

  it('a guard whose checks pass leaves the rollout alone', async () => {
    const set = await dispatch(`guard ${APPSET} check=loose`, env.ctx('U_OP'));
    expect(set.ok, JSON.stringify(set.error)).toBe(true);
    // Stage and canary are Healthy and prod is Progressing: 6 apps this rollout has synced, each judged now.
    const verdicts = (set.data as { verdicts: { status: string }[] }).verdicts;
    expect(verdicts.length).toBeGreaterThan(0);
    expect(verdicts.every((v) => v.status === 'pass')).toBe(true);
    const before = (await simOperations(env.sim)).length;
    expect(await watcher().sweep()).toEqual([]);
    expect((await simOperations(env.sim)).length).toBe(before);
    const listed = renderText(await dispatch('guards', env.ctx('U_OP')));
    expect(listed).toContain(APPSET);
    expect(listed).toMatch(/0 failing/);
  });

  it('pauses the rollout once when the updated apps fail a check, and says which apps and values', async () => {
    const set = await dispatch(`guard ${APPSET} check=strict`, env.ctx('U_OP'));
    expect(set.ok, JSON.stringify(set.error)).toBe(true);
    const before = (await simOperations(env.sim)).length;
    const w = watcher();
    const [trip, ...more] = await w.sweep();
    expect(more).toEqual([]);
    expect(trip.action).toBe('pause');
    expect(trip.apps.length).toBeGreaterThan(0);
    for (const a of trip.apps) {
      expect(a.check).toBe('strict');
      expect(a.value).toBeLessThan(1000);
      expect(a.value).toBeGreaterThan(0.1);
      expect(a.link).toContain('/graph?g0.expr=');
    }
    const end = await env.runs.waitForEnd(trip.runId!, 20_000);
    expect(end.status).toBe('succeeded');
    expect(end.requester).toBe('U_OP');
    // The pause held the appset: every step not yet complete now has maxUpdate 0.
    const appSet = env.sim.state.instance(INSTANCE)!.appSets.get(APPSET)!;
    const steps = appSet.spec.strategy!.rollingSync!.steps!;
    expect(steps.some((s) => s.maxUpdate === 0)).toBe(true);
    const ops = (await simOperations(env.sim)).slice(before);
    expect(ops.length).toBeGreaterThan(0);
    // The next sweeps see the same failure and neither pause nor say it again.
    expect(await w.sweep()).toEqual([]);
    expect(await watcher().sweep()).toEqual([]);
    expect((await simOperations(env.sim)).length).toBe(before + ops.length);
    const regressions = await new RegressionStore(redis, env.prefix).list(Date.now());
    expect(regressions.map((r) => r.key)).toEqual([`guard:${INSTANCE}/${APPSET}`]);
    expect(regressions[0].apps.length).toBe(trip.apps.length);
    const audit = await env.services.audit!.latest(50);
    expect(audit.filter((e) => e.kind === 'guard.trip')).toHaveLength(1);
    expect(audit.some((e) => e.kind === 'guard.set' && e.who === 'U_OP')).toBe(true);
  }, 40_000);

  it('the failure is a check-failed alert while it lasts, and clears once the checks pass', async () => {
    const regressions = new RegressionStore(redis, env.prefix);
    const alerts = async () =>
      evaluateAlertRules({
        fleet: env.services.fleet,
        now: new Date(),
        config: env.services.config.alerts,
        regressions: await regressions.list(Date.now()),
      }).conditions.filter((c) => c.rule === 'check-failed');
    const [alert] = await alerts();
    expect(alert.appSet).toBe(APPSET);
    expect(alert.severity).toBe('critical');
    expect(alert.summary).toContain('strict');
    expect(alert.details.join('\n')).toMatch(/strict: .*< 1000/);
    // Set with a check the apps pass, the next sweep clears it: the alert goes with it.
    expect((await dispatch(`guard ${APPSET} check=loose`, env.ctx('U_OP'))).ok).toBe(true);
    await watcher().sweep();
    expect(await alerts()).toEqual([]);
  }, 30_000);

  it('unguard removes it, audited; a second unguard says it is not guarded', async () => {
    const removed = await dispatch(`unguard ${APPSET}`, env.ctx('U_OP'));
    expect(removed.ok, JSON.stringify(removed.error)).toBe(true);
    expect(await env.services.guards!.list()).toEqual([]);
    const again = await dispatch(`unguard ${APPSET}`, env.ctx('U_OP'));
    expect(again.error?.code).toBe('unknown_target');
    const audit = await env.services.audit!.latest(50);
    expect(audit.some((e) => e.kind === 'guard.remove')).toBe(true);
  });
});
