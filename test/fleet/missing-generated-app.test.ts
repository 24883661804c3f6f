/**
 * A step held by an Application the ApplicationSet generates but that does not exist, end to end: the
 * simulator's appset controller holds the later steps as Argo CD v3.5.1 does (progressive_sync.go
 * PerformProgressiveSyncs builds its step lists from desiredApplications; getAppsToSync stops at a step
 * with an app missing from currentApplications) and writes ErrorOccurred ApplicationValidationError
 * (applicationset_controller.go Reconcile); diagnose, rollout and plan name the app and Argo CD's reason.
 */
import { describe, expect, it } from 'vitest';
import { runDiagnose } from '../../src/commands/diagnose.js';
import { parseCommand } from '../../src/commands/parse.js';
import { runPlan } from '../../src/commands/plan.js';
import { runRollout } from '../../src/commands/rollout.js';
import { DEFAULT_STUCK_AFTER_MS, diagnoseAppSet, diagnoseFleet } from '../../src/fleet/diagnose.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { SIM_ANNOTATIONS, SimController } from '../../src/sim/controller.js';
import { seedState } from '../../src/sim/fixture.js';
import { SimState } from '../../src/sim/store.js';
import { renderText } from '../../src/views/text.js';
import { ctx, services } from '../commands/fixtures.js';
import { NOW, baseline, entry, fleetOf, rolloutCondition } from '../fixtures/diagnose/build.js';

const INSTANCE = 'prod-argocd';
const ERROR =
  'application destination spec is invalid: unable to find destination server: there are no clusters with this name: canary-1';

function simulate() {
  const parts = baseline();
  const apps = parts.apps.filter((a) => a.metadata.name !== 'payments-canary-1');
  parts.appSet.metadata.annotations = {
    [SIM_ANNOTATIONS.generatedInvalid]: JSON.stringify([
      { name: 'payments-canary-1', labels: { team: 'payments', env: 'canary' }, error: ERROR },
    ]),
  };
  parts.appSet.status!.applicationStatus = parts.appSet.status!.applicationStatus!.filter(
    (e) => e.application !== 'payments-canary-1',
  );
  const state = new SimState();
  seedState(state, {
    instances: [{ name: INSTANCE, applications: apps, applicationSets: [parts.appSet], clusters: parts.clusters }],
  });
  const controller = new SimController(state, { manual: true, startAt: NOW, stepMs: 5000 });
  controller.newCommit(
    INSTANCE,
    apps.map((a) => a.metadata.name),
  );
  controller.advance(10 * 60_000);
  const store = state.instance(INSTANCE)!;
  const fleet = StaticFleet.fromObjects([
    {
      name: INSTANCE,
      applications: [...store.apps.values()],
      applicationSets: [...store.appSets.values()],
      clusters: [...store.clusters.values()],
    },
  ]);
  return { controller, store, fleet };
}

describe('a step held by a generated app that does not exist', () => {
  it('is held in the simulator: stage rolls out, prod stays Waiting, Argo CD reports step 3 and the validation error', () => {
    const { store, controller } = simulate();
    const set = store.appSets.get('payments')!;
    expect(Object.fromEntries(set.status!.applicationStatus!.map((e) => [e.application, e.status]))).toEqual({
      'payments-prod-1': 'Waiting',
      'payments-prod-2': 'Waiting',
      'payments-stage-1': 'Healthy',
    });
    expect(set.status!.conditions!.find((c) => c.type === 'RolloutProgressing')!.message).toBe(
      'ApplicationSet is performing rollout of step 3',
    );
    expect(set.status!.conditions!.find((c) => c.type === 'ErrorOccurred')).toMatchObject({
      status: 'True',
      reason: 'ApplicationValidationError',
      message: ERROR,
    });
    controller.stop();
  });

  it("diagnose names the missing app, its step and Argo CD's reason", () => {
    const { fleet, controller } = simulate();
    const findings = diagnoseAppSet(fleet, fleet.appSets()[0], {
      stuckAfterMs: DEFAULT_STUCK_AFTER_MS,
      now: controller.clock.now(),
    });
    const held = findings.find((f) => f.rule === 'step-held-by-missing-app')!;
    expect(held).toMatchObject({ severity: 'critical', step: 3, apps: ['payments-canary-1'] });
    expect(held.message).toContain('payments-canary-1');
    expect(held.message).toContain('step 2');
    expect(held.message).toContain('there are no clusters with this name: canary-1');
    controller.stop();
  });

  it('rollout and plan say which missing app the step waits on, and why', async () => {
    const { fleet, controller } = simulate();
    const c = ctx({ ...services(fleet), now: () => controller.clock.now() });
    const rollout = await runRollout(parseCommand('rollout payments'), c);
    expect((rollout.data as { heldBy: unknown }).heldBy).toEqual({
      step: 3,
      missing: ['payments-canary-1'],
      reason: ERROR,
    });
    const text = renderText(rollout);
    expect(text).toContain(
      'Held: step 3 waits on a missing app: the Application payments-canary-1, generated for an earlier step, does not exist — Argo CD: ' +
        ERROR,
    );
    const plan = await runPlan(parseCommand('plan payments'), c);
    expect((plan.data as { heldBy: unknown }).heldBy).toEqual({
      step: 3,
      missing: ['payments-canary-1'],
      reason: ERROR,
    });
    expect(renderText(plan)).toContain('payments-canary-1');
    const diagnose = await runDiagnose(parseCommand('diagnose payments'), c);
    expect(renderText(diagnose)).toContain('step-held-by-missing-app');
    controller.stop();
  });

  it('names the missing app of a list generator too, from the element the template renders', () => {
    const parts = baseline();
    parts.appSet.spec.generators = [
      {
        list: {
          elements: [
            { cluster: 'stage-1', env: 'stage' },
            { cluster: 'canary-9', env: 'canary' },
            { cluster: 'prod-1', env: 'prod' },
            { cluster: 'prod-2', env: 'prod' },
          ],
        },
      },
    ];
    parts.appSet.spec.template.metadata.name = 'payments-{{cluster}}';
    parts.appSet.spec.template.metadata.labels = { team: 'payments', env: '{{env}}' };
    parts.apps = parts.apps.filter((a) => a.metadata.name !== 'payments-canary-1');
    parts.appSet.status = {
      conditions: [
        {
          type: 'ErrorOccurred',
          status: 'True',
          reason: 'ApplicationValidationError',
          message:
            'application destination spec is invalid: unable to find destination server: there are no clusters with this name: canary-9',
        },
        rolloutCondition(3),
      ],
      applicationStatus: [
        entry('payments-prod-1', 3, 'Waiting'),
        entry('payments-prod-2', 3, 'Waiting'),
        entry('payments-stage-1', 1, 'Healthy'),
      ],
    };
    const { fleet, target } = fleetOf(parts);
    const held = diagnoseAppSet(fleet, target, { stuckAfterMs: DEFAULT_STUCK_AFTER_MS, now: NOW }).find(
      (f) => f.rule === 'step-held-by-missing-app',
    )!;
    expect(held).toMatchObject({ step: 3, apps: ['payments-canary-9'] });
    expect(held.message).toContain('no clusters with this name: canary-9');
  });

  it('is not reported once every generated app exists', () => {
    const { fleet } = fleetOf(baseline());
    expect(diagnoseFleet(fleet, { stuckAfterMs: DEFAULT_STUCK_AFTER_MS, now: NOW }).map((f) => f.rule)).not.toContain(
      'step-held-by-missing-app',
    );
  });
});

describe('rollingSync.steps without type: RollingSync', () => {
  // IsRollingSyncStrategy / RollingSyncStrategyEnabled (progressive_sync.go): only type == "RollingSync" runs the steps.
  it.each([
    ['no type', undefined],
    ['AllAtOnce', 'AllAtOnce'],
    ['a lower-case rollingsync', 'rollingsync'],
  ])('is a critical finding with %s', (_what, type) => {
    const parts = baseline();
    parts.appSet.spec.strategy!.type = type as never;
    if (type === undefined) delete parts.appSet.spec.strategy!.type;
    const { fleet, target } = fleetOf(parts);
    const findings = diagnoseAppSet(fleet, target, { stuckAfterMs: DEFAULT_STUCK_AFTER_MS, now: NOW });
    expect(findings.map((f) => f.rule)).toEqual(['steps-without-rolling-sync-type']);
    expect(findings[0]).toMatchObject({ severity: 'critical', appSet: 'payments', instance: 'prod-argocd' });
    expect(findings[0].message).toContain('Argo CD ignores the steps');
    if (type === 'rollingsync') expect(findings[0].why).toContain('case-sensitive');
    expect(diagnoseFleet(fleet, { stuckAfterMs: DEFAULT_STUCK_AFTER_MS, now: NOW }).map((f) => f.rule)).toEqual([
      'steps-without-rolling-sync-type',
    ]);
  });
});
