import { describe, expect, it } from 'vitest';
import { evaluateAlertRules } from '../../src/domain/alerts/rules.js';
import { DEFAULT_STUCK_AFTER_MS, diagnoseFleet } from '../../src/fleet/diagnose.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { diagnoseFleetWide } from '../../src/fleet/rules/index.js';
import { alertsSchema } from '../../src/infra/config/schema.js';
import { SimController } from '../../src/sim/controller.js';
import { seedState } from '../../src/sim/fixture.js';
import { loadScenario } from '../../src/sim/scenarios/index.js';
import { SimState } from '../../src/sim/store.js';

const T0 = new Date('2026-12-05T18:00:00Z');
const MINUTE = 60_000;

/** A scenario on the simulator's controller, time moved by the test; `fleet()` is what the mirror would hold now. */
function simulate(scenario: string) {
  const { fixture, behaviour } = loadScenario(scenario, { now: T0 });
  const state = new SimState();
  seedState(state, fixture);
  const controller = new SimController(state, { manual: true, startAt: T0, behaviour });
  const instance = fixture.instances[0].name;
  const fleet = () => {
    const store = state.instance(instance)!;
    return StaticFleet.fromObjects([
      {
        name: instance,
        applications: [...store.apps.values()],
        applicationSets: [...store.appSets.values()],
        clusters: [...store.clusters.values()],
      },
    ]);
  };
  const conditions = (alerts: Record<string, unknown> = {}) =>
    evaluateAlertRules({ fleet: fleet(), now: controller.clock.now(), config: alertsSchema.parse(alerts) }).conditions;
  const diagnose = (alerts: Record<string, unknown> = {}) => {
    const now = controller.clock.now();
    const f = fleet();
    const appSets = diagnoseFleet(f, { stuckAfterMs: DEFAULT_STUCK_AFTER_MS, now });
    return [...appSets, ...diagnoseFleetWide(f, now, alertsSchema.parse(alerts), appSets)];
  };
  return { controller, instance, fleet, conditions, diagnose };
}

describe('app-degraded: an app Degraded or Missing for longer than `after`, whatever synced it', () => {
  it('leaves the seed-outage crash loop to degraded-after-sync, which names the revision: one alert, not two', () => {
    const { conditions, controller } = simulate('seed-outage');
    const found = conditions();
    expect(found.filter((c) => c.rule === 'degraded-after-sync').map((c) => c.apps.length)).toEqual([12]);
    expect(found.filter((c) => c.rule === 'app-degraded')).toEqual([]);
    controller.stop();
  });

  it('raises the twelve crash-looping auth-service apps as one alert when they are not Degraded right after their sync', () => {
    const { conditions, diagnose, controller } = simulate('seed-outage');
    // auth-service crashed 3 minutes after the appset controller synced v2.15.0: with a 2m window that is
    // not "right after the sync", and the crash loop must still page.
    const alerts = { rules: { 'degraded-after-sync': { window: '2m' } } };
    const down = conditions(alerts).filter((c) => c.rule === 'app-degraded');
    expect(down).toHaveLength(1);
    expect(down[0]).toMatchObject({ instance: 'prod', appSet: 'auth-service', severity: 'critical' });
    expect(down[0].apps).toHaveLength(12);
    expect(down[0].summary).toBe('12 apps of appset auth-service Degraded for longer than 5m.');
    expect(down[0].details[0]).toMatch(
      /^auth-service-prod-ap-northeast-1: Degraded: Deployment\/auth-service: .*back-off/,
    );

    const findings = diagnose(alerts);
    expect(findings.filter((f) => f.rule === 'degraded-after-sync')).toEqual([]);
    const crash = findings.filter((f) => f.rule === 'app-degraded');
    expect(crash).toHaveLength(1);
    expect(crash[0].apps).toHaveLength(12);
    expect(crash[0].message).toContain('are crash-looping (down for 41m)');
    expect(crash[0].message).toContain('CrashLoopBackOff');
    // The scenario's fix: auth-config still runs the ConfigMap git removed; only a sync with prune deletes it.
    expect(crash[0].fix).toContain('`sync auth-config-prod-* prune=true`');
    expect(crash[0].fix).toContain('ConfigMap/auth-config-v2-session-flags');
    controller.stop();
  });

  it('names the prune fix from the fleet as it is at each diagnosis: once the neighbours are pruned it is gone', () => {
    const { controller, fleet } = simulate('seed-outage');
    // One fleet object throughout, changed in place as the mirror changes it: nothing read of an earlier version.
    const f = fleet();
    const alerts = alertsSchema.parse({ rules: { 'degraded-after-sync': { window: '2m' } } });
    const fix = () => {
      const now = controller.clock.now();
      const appSets = diagnoseFleet(f, { stuckAfterMs: DEFAULT_STUCK_AFTER_MS, now });
      return diagnoseFleetWide(f, now, alerts, appSets).find((x) => x.rule === 'app-degraded')!.fix;
    };
    expect(fix()).toContain('`sync auth-config-prod-* prune=true`');
    const neighbours = f.apps().filter((a) => a.app.metadata.name.startsWith('auth-config-'));
    expect(neighbours.length).toBeGreaterThan(1);
    for (const a of neighbours) {
      const status = a.app.status!;
      const pruned = {
        ...status,
        sync: { ...status.sync!, status: 'Synced' as const },
        resources: status.resources!.filter((r) => !r.requiresPruning),
      };
      f.upsertApp({ ...a, app: { ...a.app, status: pruned } });
    }
    expect(fix()).not.toContain('prune=true');
    expect(fix()).toContain('`rollback auth-service-');
    controller.stop();
  });

  it('keeps a blip quiet: an app Degraded for less than `after` raises nothing; past it one alert; Healthy again, none', () => {
    const { controller, conditions, instance } = simulate('seed-outage');
    // Only app-degraded judges here (degraded-after-sync would claim an app that crashes right after its sync).
    const alerts = { rules: { 'degraded-after-sync': { enabled: false } } };
    const app = 'payments-prod-us-east-1';
    const appDown = () => conditions(alerts).filter((c) => c.rule === 'app-degraded' && c.apps.includes(app));
    controller.faults.crashLoop(instance, app);
    controller.requestSync(instance, app, { name: app }, 'U1');
    controller.advance(20_000);
    expect(appDown()).toEqual([]);
    controller.advance(3 * MINUTE);
    expect(appDown()).toEqual([]);
    controller.advance(2 * MINUTE);
    expect(appDown()).toEqual([expect.objectContaining({ appSet: 'payments', apps: [app] })]);
    controller.faults.clear(instance, app);
    controller.advance(20_000);
    expect(appDown()).toEqual([]);
    controller.stop();
  });

  it('stays quiet on a fleet with no app down (progressive-infra), and says Missing for an app whose resources are gone', () => {
    const quiet = simulate('progressive-infra');
    expect(quiet.conditions().filter((c) => c.rule === 'app-degraded')).toEqual([]);
    expect(quiet.diagnose().filter((f) => f.rule === 'app-degraded')).toEqual([]);
    quiet.controller.stop();

    const { fixture } = loadScenario('seed-outage', { now: T0 });
    const search = fixture.instances[0].applications.find((a) => a.metadata.name === 'search-prod-eu-west-1')!;
    search.status!.health = {
      status: 'Missing',
      lastTransitionTime: new Date(T0.getTime() - 20 * MINUTE).toISOString(),
    };
    const fleet = StaticFleet.fromFixture(fixture);
    const missing = evaluateAlertRules({ fleet, now: T0, config: alertsSchema.parse({}) }).conditions.filter(
      (c) => c.rule === 'app-degraded',
    );
    expect(missing).toEqual([
      expect.objectContaining({
        appSet: 'search',
        apps: ['search-prod-eu-west-1'],
        summary: expect.stringContaining('Missing'),
      }),
    ]);
    const finding = diagnoseFleetWide(fleet, T0, alertsSchema.parse({})).find((f) => f.rule === 'app-degraded')!;
    expect(finding.message).toBe('1 app of appset search is Missing (down for 20m).');
    expect(finding.fix).toContain('sync to create them (`sync search-prod-eu-west-1`)');
  });
});
