import { describe, expect, it } from 'vitest';
import { DEFAULT_STUCK_AFTER_MS, diagnoseAppSet, diagnoseFleet } from '../../src/fleet/diagnose.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { SimController } from '../../src/sim/controller.js';
import { seedState } from '../../src/sim/fixture.js';
import { loadScenario } from '../../src/sim/scenarios/index.js';
import { SimState } from '../../src/sim/store.js';
import { NOW, baseline } from '../fixtures/diagnose/build.js';

const INSTANCE = 'prod-argocd';

/** The simulator's appset controller runs the same v3.5 RollingSync state machine; diagnose reads what it leaves behind. */
function simulate(opts: { progressiveSyncs?: boolean } = {}) {
  const parts = baseline();
  const state = new SimState();
  seedState(state, {
    instances: [
      { name: INSTANCE, applications: parts.apps, applicationSets: [parts.appSet], clusters: parts.clusters },
    ],
  });
  const controller = new SimController(state, {
    manual: true,
    startAt: NOW,
    stepMs: 5000,
    progressiveSyncs: opts.progressiveSyncs,
  });
  const diagnose = () => {
    const store = state.instance(INSTANCE)!;
    const fleet = StaticFleet.fromObjects([
      {
        name: INSTANCE,
        applications: [...store.apps.values()],
        applicationSets: [...store.appSets.values()],
        clusters: [...store.clusters.values()],
      },
    ]);
    return diagnoseAppSet(fleet, fleet.appSets()[0], {
      stuckAfterMs: DEFAULT_STUCK_AFTER_MS,
      now: controller.clock.now(),
    });
  };
  return { controller, diagnose, appNames: parts.apps.map((a) => a.metadata.name) };
}

describe('diagnose on a simulated Argo CD rollout', () => {
  it('reports the prod app whose sync keeps failing as a stuck step 3, with the sync failure', () => {
    const { controller, diagnose, appNames } = simulate();
    controller.faults.failApp(
      INSTANCE,
      'payments-prod-1',
      'Deployment.apps "payments" is invalid: spec.template.spec.containers[0].image: Required value',
    );
    controller.newCommit(INSTANCE, appNames);
    controller.advance(10 * 60_000);
    // Ten minutes in: step 3 is running but nothing has been stuck for 15m yet.
    expect(diagnose().filter((f) => f.rule === 'stuck-step')).toEqual([]);
    controller.advance(30 * 60_000);
    const stuck = diagnose().filter((f) => f.rule === 'stuck-step');
    expect(stuck).toHaveLength(1);
    expect(stuck[0]).toMatchObject({ severity: 'critical', step: 3, apps: ['payments-prod-1'] });
    expect(stuck[0].details!.join('\n')).toContain('containers[0].image: Required value');
    controller.stop();
  });

  it('reports progressive-syncs-disabled when the appset controller runs without the flag', () => {
    const { controller, diagnose } = simulate({ progressiveSyncs: false });
    controller.advance(10_000);
    expect(diagnose().map((f) => f.rule)).toContain('progressive-syncs-disabled');
    controller.stop();
  });
});

describe('diagnose on the progressive-infra scenario', () => {
  it('finds the stuck prod step and the cluster-label mistake, tagged per appset', () => {
    const now = new Date('2026-12-02T03:00:00Z');
    const fleet = StaticFleet.fromFixture(loadScenario('progressive-infra', { now }).fixture);
    const findings = diagnoseFleet(fleet, { stuckAfterMs: DEFAULT_STUCK_AFTER_MS, now });
    const stuck = findings.filter((f) => f.rule === 'stuck-step');
    expect(stuck).toHaveLength(1);
    expect(stuck[0]).toMatchObject({ appSet: 'progressive-infra', step: 3, severity: 'critical' });
    expect(stuck[0].apps).toHaveLength(3);
    expect(stuck[0].details).toHaveLength(3);
    for (const line of stuck[0].details!) expect(line).toContain('operation Failed');
    const label = findings.find((f) => f.rule === 'label-on-cluster-not-app');
    expect(label).toMatchObject({ appSet: 'platform-addons', severity: 'critical' });
    expect(findings.every((f) => f.appSet && f.instance)).toBe(true);
    // Critical first.
    expect(findings.findIndex((f) => f.severity !== 'critical')).toBeGreaterThan(
      findings.findLastIndex((f) => f.severity === 'critical'),
    );
  });
});
