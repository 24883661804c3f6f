import { describe, expect, it } from 'vitest';
import type { Fixture } from '../../src/sim/fixture-types.js';
import { DEFAULT_STUCK_AFTER_MS, diagnoseFleet, type Finding } from '../../src/fleet/diagnose.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { SimController } from '../../src/sim/controller.js';
import { seedState } from '../../src/sim/fixture.js';
import { loadScenario } from '../../src/sim/scenarios/index.js';
import { SimState } from '../../src/sim/store.js';

const T0 = new Date('2026-12-05T18:00:00Z');
const RULE = 'step-on-previous-revision';
const STAGE_AND_CANARY = /^(cert-manager|external-dns|ingress-nginx)-(stage|canary)-1$/;

function findings(fixture: Fixture, now = T0): Finding[] {
  return diagnoseFleet(StaticFleet.fromFixture(fixture), { stuckAfterMs: DEFAULT_STUCK_AFTER_MS, now }).filter(
    (f) => f.rule === RULE,
  );
}

function progressiveInfra() {
  const { fixture } = loadScenario('progressive-infra', { now: T0 });
  const instance = fixture.instances[0];
  const appSet = instance.applicationSets!.find((s) => s.metadata.name === 'progressive-infra')!;
  const app = (name: string) => instance.applications.find((a) => a.metadata.name === name)!;
  return { fixture, instance, appSet, app };
}

/**
 * The template's image pin moves while step 3 is running. The ApplicationSet controller rewrites every
 * generated app and, in the same reconcile, reads the stage and canary apps' Synced/Healthy from before
 * the rewrite: their entries go Waiting -> Healthy without a sync. The application controller then
 * compares them to the new spec: OutOfSync, at the same revision.
 */
function imagePinMoved() {
  const parts = progressiveInfra();
  const pin = { images: ['registry.example.com/infra/kube-webhook-certgen:v1.5.2'] };
  parts.appSet.spec.template.spec.source = { ...parts.appSet.spec.template.spec.source!, kustomize: pin };
  for (const a of parts.instance.applications) {
    if (!STAGE_AND_CANARY.test(a.metadata.name)) continue;
    a.spec.source = { ...a.spec.source!, kustomize: pin };
    a.status!.sync!.status = 'OutOfSync';
  }
  return parts;
}

describe('step-on-previous-revision: a step counted complete while its apps still run what they ran before', () => {
  it('flags the stage and canary apps RollingSync judged Healthy at their previous spec, and the v3.5 controller leaves them so', () => {
    const { fixture } = imagePinMoved();
    const state = new SimState();
    seedState(state, fixture);
    const controller = new SimController(state, { manual: true, startAt: T0 });
    // A minute of the simulated appset controller: revisions unchanged, generated spec equal to the live one,
    // OutOfSync alone moves nothing, so the entries stay Healthy and nothing syncs the apps.
    controller.advance(60_000);
    const store = state.instance('infra')!;
    const entries = store.appSets.get('progressive-infra')!.status!.applicationStatus!;
    expect(entries.filter((e) => STAGE_AND_CANARY.test(e.application)).map((e) => e.status)).toEqual(
      Array(6).fill('Healthy'),
    );
    const found = findings(
      {
        instances: [
          {
            name: 'infra',
            applications: [...store.apps.values()],
            applicationSets: [...store.appSets.values()],
            clusters: [...store.clusters.values()],
          },
        ],
      },
      controller.clock.now(),
    );
    controller.stop();
    expect(found.map((f) => [f.step, f.severity, f.apps])).toEqual([
      [1, 'critical', ['cert-manager-stage-1', 'external-dns-stage-1', 'ingress-nginx-stage-1']],
      [2, 'critical', ['cert-manager-canary-1', 'external-dns-canary-1', 'ingress-nginx-canary-1']],
    ]);
    expect(found[1].message).toBe(
      'Step 2 counts as complete, but 3 apps of it still run the spec they had before the generated spec changed: cert-manager-canary-1, external-dns-canary-1, ingress-nginx-canary-1. RollingSync has released step 3 as if it had rolled out.',
    );
    expect(found[1].details![0]).toMatch(/^cert-manager-canary-1: runs [0-9a-f]{7} with the source it had before/);
    expect(found[1].fix).toContain('`/argo sync cert-manager-canary-1 external-dns-canary-1 ingress-nginx-canary-1`');
  });

  it('names the revision an app runs and the one git is at, once the controller has judged that revision Healthy', () => {
    const { fixture, appSet, app } = progressiveInfra();
    const canary = app('ingress-nginx-canary-1');
    const previous = canary.status!.history!.at(-1)!.revision!;
    const head = 'c0ffee1d00dfeed5ca1ab1e0ddba11deadbeef42';
    canary.status!.sync = { ...canary.status!.sync!, status: 'OutOfSync', revision: head };
    appSet.status!.applicationStatus!.find((e) => e.application === canary.metadata.name)!.targetRevisions = [head];
    const [found] = findings(fixture);
    expect(found).toMatchObject({ step: 2, severity: 'critical', apps: ['ingress-nginx-canary-1'] });
    expect(found.message).toContain(`still runs the previous revision (${previous.slice(0, 7)}, not c0ffee1)`);
    expect(found.details).toEqual([
      expect.stringMatching(
        /^ingress-nginx-canary-1: runs [0-9a-f]{7}, git is at c0ffee1 \(last synced 5 Dec, \d\d:\d\d UTC\)$/,
      ),
    ]);
  });

  it('stays quiet on the scenario as it is, on drift at the same revision, and on an entry the controller has not judged yet', () => {
    expect(findings(progressiveInfra().fixture)).toEqual([]);
    expect(findings(loadScenario('seed-outage', { now: T0 }).fixture)).toEqual([]);

    const drift = progressiveInfra();
    // kubectl edit: OutOfSync, but its last sync applied this revision and this source.
    drift.app('ingress-nginx-canary-1').status!.sync!.status = 'OutOfSync';
    expect(findings(drift.fixture)).toEqual([]);

    const fresh = progressiveInfra();
    // A commit the app controller has seen and the appset controller not yet: its next reconcile sets Waiting.
    const canary = fresh.app('ingress-nginx-canary-1');
    canary.status!.sync = {
      ...canary.status!.sync!,
      status: 'OutOfSync',
      revision: 'c0ffee1d00dfeed5ca1ab1e0ddba11deadbeef42',
    };
    expect(findings(fresh.fixture)).toEqual([]);
  });
});
