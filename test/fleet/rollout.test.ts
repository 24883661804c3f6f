import { describe, expect, it } from 'vitest';
import type {
  Application,
  ApplicationSet,
  ApplicationSetApplicationStatus,
  Cluster,
  HealthStatusCode,
  SyncStatusCode,
} from '../../src/infra/argocd/types.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { buildRolloutPlan, buildRolloutReport, maxUpdateMeaning } from '../../src/fleet/rollout.js';
import { ROLLOUT_MESSAGES } from '../../src/fleet/rollingsync.js';

const NOW = new Date('2026-12-02T12:00:00Z');
const OPTS = { stuckAfterMs: 15 * 60_000, now: NOW };

/** Shapes as `GET /api/v1/applicationsets/{name}` and `/applications` return them (v3.5.1). */
function appSet(status?: ApplicationSet['status'], steps = defaultSteps()): ApplicationSet {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'ApplicationSet',
    metadata: {
      name: 'infra',
      namespace: 'argocd',
      uid: 'a1b2',
      resourceVersion: '8812',
      generation: 4,
      creationTimestamp: '2026-11-01T08:00:00Z',
    },
    spec: {
      goTemplate: true,
      goTemplateOptions: ['missingkey=error'],
      generators: [{ clusters: { selector: { matchLabels: { 'rollcall.io/fleet': 'infra' } } } }],
      template: {
        metadata: {
          name: 'infra-{{.name}}',
          labels: { env: '{{index .metadata.labels "env"}}', 'app.kubernetes.io/part-of': 'infra' },
        },
        spec: {
          project: 'platform',
          source: { repoURL: 'https://git.example.com/platform/infra.git', path: 'deploy', targetRevision: 'main' },
          destination: { name: '{{.name}}', namespace: 'infra' },
          syncPolicy: { automated: { prune: true, selfHeal: true }, syncOptions: ['CreateNamespace=true'] },
        },
      },
      strategy: { type: 'RollingSync', rollingSync: { steps } },
    },
    status,
  };
}

function defaultSteps() {
  return [
    { matchExpressions: [{ key: 'env', operator: 'In', values: ['stage'] }], maxUpdate: 1 },
    { matchExpressions: [{ key: 'env', operator: 'In', values: ['canary'] }], maxUpdate: '50%' },
    { matchExpressions: [{ key: 'env', operator: 'In', values: ['prod'] }] },
  ];
}

function app(
  name: string,
  cluster: string,
  env: string,
  sync: SyncStatusCode,
  health: HealthStatusCode,
  extra: Partial<Application['status']> = {},
): Application {
  return {
    metadata: {
      name,
      namespace: 'argocd',
      labels: { env, 'app.kubernetes.io/part-of': 'infra' },
      ownerReferences: [
        { apiVersion: 'argoproj.io/v1alpha1', kind: 'ApplicationSet', name: 'infra', uid: 'a1b2', controller: true },
      ],
    },
    spec: {
      project: 'platform',
      source: { repoURL: 'https://git.example.com/platform/infra.git', path: 'deploy', targetRevision: 'main' },
      destination: { server: `https://${cluster}.k8s.example.com`, namespace: 'infra' },
      syncPolicy: { automated: { prune: true, selfHeal: true, enabled: false }, syncOptions: ['CreateNamespace=true'] },
    },
    status: {
      sync: {
        status: sync,
        revision: '9f1c2e7',
        comparedTo: { destination: { server: `https://${cluster}.k8s.example.com`, namespace: 'infra' } },
      },
      health: { status: health, lastTransitionTime: '2026-12-02T11:00:00Z' },
      reconciledAt: '2026-12-02T11:59:30Z',
      ...extra,
    },
  };
}

const clusters: Cluster[] = ['stage-1', 'canary-1', 'canary-2', 'prod-1', 'prod-2', 'dev-1'].map((name) => ({
  server: `https://${name}.k8s.example.com`,
  name,
  labels: { env: name.split('-')[0], 'rollcall.io/fleet': 'infra' },
  connectionState: { status: 'Successful', attemptedAt: '2026-12-02T11:59:00Z' },
}));

const entry = (
  application: string,
  status: ApplicationSetApplicationStatus['status'],
  step: string,
  message: string,
  lastTransitionTime: string,
): ApplicationSetApplicationStatus => ({
  application,
  status,
  message,
  step,
  targetRevisions: ['9f1c2e7'],
  lastTransitionTime,
});

/** Mid-rollout: stage done, canary in flight (one Progressing with a failed sync, one Waiting), prod waiting, dev in no step. */
function midRollout(): StaticFleet {
  const set = appSet({
    conditions: [
      {
        type: 'ErrorOccurred',
        status: 'False',
        reason: 'ApplicationSetUpToDate',
        message: 'Successfully generated parameters for all Applications',
        lastTransitionTime: '2026-12-02T09:00:00Z',
      },
      {
        type: 'ParametersGenerated',
        status: 'True',
        reason: 'ParametersGenerated',
        message: 'Successfully generated parameters for all Applications',
        lastTransitionTime: '2026-12-02T09:00:00Z',
      },
      {
        type: 'ResourcesUpToDate',
        status: 'True',
        reason: 'ApplicationSetUpToDate',
        message: 'ApplicationSet up to date',
        lastTransitionTime: '2026-12-02T09:00:00Z',
      },
      {
        type: 'RolloutProgressing',
        status: 'True',
        reason: 'ApplicationSetModified',
        message: 'ApplicationSet is performing rollout of step 2',
        lastTransitionTime: '2026-12-02T11:10:00Z',
      },
    ],
    applicationStatus: [
      entry('infra-canary-1', 'Progressing', '2', ROLLOUT_MESSAGES.syncCompleted, '2026-12-02T11:20:00Z'),
      entry('infra-canary-2', 'Waiting', '2', ROLLOUT_MESSAGES.revisionChanged, '2026-12-02T11:05:00Z'),
      entry('infra-dev-1', 'Waiting', '-1', ROLLOUT_MESSAGES.revisionChanged, '2026-12-02T11:05:00Z'),
      entry('infra-prod-1', 'Waiting', '3', ROLLOUT_MESSAGES.revisionChanged, '2026-12-02T11:05:00Z'),
      entry('infra-prod-2', 'Waiting', '3', ROLLOUT_MESSAGES.revisionChanged, '2026-12-02T11:05:00Z'),
      entry('infra-stage-1', 'Healthy', '1', ROLLOUT_MESSAGES.becameHealthy, '2026-12-02T11:09:00Z'),
    ],
    resources: [],
  });
  const failedOp = {
    operationState: {
      operation: {
        sync: { prune: true, syncOptions: ['CreateNamespace=true'] },
        initiatedBy: { username: 'applicationset-controller', automated: true },
        retry: { limit: 5 },
      },
      phase: 'Failed' as const,
      message: 'one or more objects failed to apply, reason: Deployment.apps "infra-agent" is invalid',
      startedAt: '2026-12-02T11:19:30Z',
      finishedAt: '2026-12-02T11:19:50Z',
      retryCount: 5,
    },
  };
  return StaticFleet.fromObjects([
    {
      name: 'argocd-main',
      applicationSets: [set],
      clusters,
      applications: [
        app('infra-stage-1', 'stage-1', 'stage', 'Synced', 'Healthy'),
        app('infra-canary-2', 'canary-2', 'canary', 'OutOfSync', 'Healthy'),
        app('infra-canary-1', 'canary-1', 'canary', 'OutOfSync', 'Degraded', failedOp),
        app('infra-prod-1', 'prod-1', 'prod', 'OutOfSync', 'Healthy'),
        app('infra-prod-2', 'prod-2', 'prod', 'OutOfSync', 'Healthy'),
        app('infra-dev-1', 'dev-1', 'dev', 'OutOfSync', 'Healthy'),
      ],
    },
  ]);
}

const target = (fleet: StaticFleet) => fleet.appSetsNamed('infra')[0];

describe('buildRolloutReport', () => {
  it('reports each step with its maxUpdate as written, what it means, and its apps from applicationStatus', () => {
    const fleet = midRollout();
    const report = buildRolloutReport(fleet, target(fleet), OPTS);
    expect(report).toMatchObject({
      appSet: 'infra',
      instance: 'argocd-main',
      strategy: 'RollingSync',
      currentStep: 2,
      complete: false,
    });
    expect(report.steps.map((s) => [s.step, s.maxUpdate, s.maxConcurrent, s.meaning])).toEqual([
      [1, 1, 1, '1 at a time'],
      [2, '50%', 1, '50% → 1 at a time'],
      [3, null, null, 'all at once'],
    ]);
    expect(report.steps[1].matchExpressions).toEqual([{ key: 'env', operator: 'In', values: ['canary'] }]);
    expect(report.steps[1].apps).toEqual([
      {
        name: 'infra-canary-1',
        cluster: 'canary-1',
        status: 'Progressing',
        since: '2026-12-02T11:20:00Z',
        sync: 'OutOfSync',
        health: 'Degraded',
        message: ROLLOUT_MESSAGES.syncCompleted,
        instance: 'argocd-main',
      },
      {
        name: 'infra-canary-2',
        cluster: 'canary-2',
        status: 'Waiting',
        since: '2026-12-02T11:05:00Z',
        sync: 'OutOfSync',
        health: 'Healthy',
        message: ROLLOUT_MESSAGES.revisionChanged,
        instance: 'argocd-main',
      },
    ]);
    expect(report.steps[0].apps.map((a) => a.name)).toEqual(['infra-stage-1']);
    expect(report.steps[2].apps.map((a) => a.name)).toEqual(['infra-prod-1', 'infra-prod-2']);
  });

  it('lists apps in no step as unmatched', () => {
    const fleet = midRollout();
    const report = buildRolloutReport(fleet, target(fleet), OPTS);
    expect(report.unmatched).toEqual([
      expect.objectContaining({ name: 'infra-dev-1', cluster: 'dev-1', status: 'Waiting' }),
    ]);
  });

  it("says what the rollout waits on and since when: the current step's apps not yet Healthy, since step 1 finished (not since they went Waiting)", () => {
    const fleet = midRollout();
    // infra-canary-2 went Waiting at 11:05 with the revision change, but step 2 was released only when infra-stage-1 turned Healthy at 11:09.
    expect(buildRolloutReport(fleet, target(fleet), OPTS).waitingOn).toEqual({
      step: 2,
      apps: ['infra-canary-1', 'infra-canary-2'],
      since: '2026-12-02T11:09:00Z',
    });
  });

  it('dates the wait on step 1 from its oldest transition: no earlier step releases it', () => {
    const fleet = midRollout();
    const set = fleet.appSets()[0].appSet;
    set.status!.conditions = set.status!.conditions!.map((c) =>
      c.type === 'RolloutProgressing' ? { ...c, message: 'ApplicationSet is performing rollout of step 1' } : c,
    );
    set.status!.applicationStatus = set.status!.applicationStatus!.map((e) =>
      e.application === 'infra-stage-1' ? { ...e, status: 'Progressing' as const } : e,
    );
    expect(buildRolloutReport(fleet, target(fleet), OPTS).waitingOn).toEqual({
      step: 1,
      apps: ['infra-stage-1'],
      since: '2026-12-02T11:09:00Z',
    });
  });

  it('includes the findings of diagnose, in the JSON contract shape', () => {
    const fleet = midRollout();
    const report = buildRolloutReport(fleet, target(fleet), OPTS);
    const rules = report.findings.map((f) => f.rule);
    expect(rules).toContain('app-in-no-step');
    expect(rules).toContain('stuck-step');
    const inNoStep = report.findings.find((f) => f.rule === 'app-in-no-step');
    expect(inNoStep?.apps).toEqual(['infra-dev-1']);
    for (const f of report.findings) {
      expect(typeof f.message).toBe('string');
      expect(['critical', 'warning', 'info']).toContain(f.severity);
    }
  });

  it('serializes to the JSON contract of `rollout --json`', () => {
    const fleet = midRollout();
    const json = JSON.parse(JSON.stringify(buildRolloutReport(fleet, target(fleet), OPTS)));
    expect(Object.keys(json)).toEqual(
      expect.arrayContaining([
        'appSet',
        'instance',
        'strategy',
        'currentStep',
        'complete',
        'steps',
        'unmatched',
        'findings',
      ]),
    );
    for (const step of json.steps) {
      expect(Object.keys(step)).toEqual(expect.arrayContaining(['step', 'maxUpdate', 'maxConcurrent', 'apps']));
      for (const a of step.apps)
        expect(Object.keys(a)).toEqual(
          expect.arrayContaining(['name', 'cluster', 'status', 'since', 'sync', 'health', 'message']),
        );
    }
  });

  it('reports a completed rollout with no current step and nothing to wait on', () => {
    const set = appSet({
      conditions: [
        {
          type: 'RolloutProgressing',
          status: 'False',
          reason: 'ApplicationSetRolloutComplete',
          message: 'ApplicationSet Rollout has completed',
          lastTransitionTime: '2026-12-02T11:30:00Z',
        },
      ],
      applicationStatus: [
        entry('infra-stage-1', 'Healthy', '1', ROLLOUT_MESSAGES.becameHealthy, '2026-12-02T11:09:00Z'),
        entry('infra-prod-1', 'Healthy', '3', ROLLOUT_MESSAGES.becameHealthy, '2026-12-02T11:29:00Z'),
      ],
    });
    const fleet = StaticFleet.fromObjects([
      {
        name: 'argocd-main',
        applicationSets: [set],
        clusters,
        applications: [
          app('infra-stage-1', 'stage-1', 'stage', 'Synced', 'Healthy'),
          app('infra-prod-1', 'prod-1', 'prod', 'Synced', 'Healthy'),
        ],
      },
    ]);
    const report = buildRolloutReport(fleet, target(fleet), OPTS);
    expect(report).toMatchObject({ currentStep: null, complete: true, waitingOn: null });
    expect(report.steps[1].apps).toEqual([]);
  });

  it('computes steps by matching the generated labels, with no status, when progressive syncs are disabled', () => {
    const set = appSet(undefined);
    const prod2 = app('infra-prod-2', 'prod-2', 'prod', 'OutOfSync', 'Healthy');
    const fleet = StaticFleet.fromObjects([
      {
        name: 'argocd-main',
        applicationSets: [set],
        clusters,
        applications: [
          app('infra-stage-1', 'stage-1', 'stage', 'OutOfSync', 'Healthy'),
          app('infra-canary-1', 'canary-1', 'canary', 'Synced', 'Healthy'),
          prod2,
          app('infra-dev-1', 'dev-1', 'dev', 'Synced', 'Healthy'),
        ],
      },
    ]);
    const report = buildRolloutReport(fleet, target(fleet), OPTS);
    expect(report.steps.map((s) => s.apps.map((a) => [a.name, a.status, a.since, a.message]))).toEqual([
      [['infra-stage-1', null, null, null]],
      [['infra-canary-1', null, null, null]],
      [['infra-prod-2', null, null, null]],
    ]);
    expect(report.unmatched.map((a) => a.name)).toEqual(['infra-dev-1']);
    expect(report).toMatchObject({ currentStep: null, complete: false, waitingOn: null });
    expect(report.findings.map((f) => f.rule)).toContain('progressive-syncs-disabled');
  });

  it('says so when an entry names an Application the fleet does not have', () => {
    const set = appSet({
      conditions: [
        {
          type: 'RolloutProgressing',
          status: 'True',
          reason: 'ApplicationSetModified',
          message: 'ApplicationSet is performing rollout of step 1',
        },
      ],
      applicationStatus: [entry('infra-gone', 'Waiting', '1', ROLLOUT_MESSAGES.newEntry, '2026-12-02T11:00:00Z')],
    });
    const fleet = StaticFleet.fromObjects([
      { name: 'argocd-main', applicationSets: [set], clusters, applications: [] },
    ]);
    const [gone] = buildRolloutReport(fleet, target(fleet), OPTS).steps[0].apps;
    expect(gone).toMatchObject({ name: 'infra-gone', cluster: 'unknown', sync: null, health: null });
    expect(gone.message).toMatch(
      /^no Application infra-gone on argocd-main \(stale entry: deleted, or not created yet\)/,
    );
  });

  it('leaves an entry whose Application is gone out of every count when the appset has live apps', () => {
    const fleet = midRollout();
    const set = fleet.appSets()[0].appSet;
    set.status!.applicationStatus!.push(
      entry('infra-canary-9', 'Waiting', '2', ROLLOUT_MESSAGES.newEntry, '2026-12-02T11:00:00Z'),
    );
    const report = buildRolloutReport(fleet, target(fleet), OPTS);
    expect(report.stale).toEqual([
      { name: 'infra-canary-9', step: '2', status: 'Waiting', since: '2026-12-02T11:00:00Z' },
    ]);
    expect(report.steps[1].apps.map((a) => a.name)).toEqual(['infra-canary-1', 'infra-canary-2']);
    expect(report.waitingOn!.apps).toEqual(['infra-canary-1', 'infra-canary-2']);
  });

  it("takes the step from Argo CD's entry rather than from the live labels", () => {
    // A hand-edited label on the live app does not move it: Argo CD matches the generated app.
    const set = appSet({
      conditions: [
        {
          type: 'RolloutProgressing',
          status: 'True',
          reason: 'ApplicationSetModified',
          message: 'ApplicationSet is performing rollout of step 1',
        },
      ],
      applicationStatus: [entry('infra-x', 'Waiting', '3', ROLLOUT_MESSAGES.newEntry, '2026-12-02T11:00:00Z')],
    });
    const x = app('infra-x', 'prod-1', 'stage', 'OutOfSync', 'Healthy');
    const fleet = StaticFleet.fromObjects([
      { name: 'argocd-main', applicationSets: [set], clusters, applications: [x] },
    ]);
    const report = buildRolloutReport(fleet, target(fleet), OPTS);
    expect(report.steps[2].apps.map((a) => a.name)).toEqual(['infra-x']);
    expect(report.steps[0].apps).toEqual([]);
  });

  it('sizes a percent maxUpdate on step 1 against step 1 apps plus apps in no step, as Argo CD does', () => {
    const steps = [{ matchExpressions: [{ key: 'env', operator: 'In', values: ['stage'] }], maxUpdate: '50%' }];
    const set = appSet(undefined, steps);
    const fleet = StaticFleet.fromObjects([
      {
        name: 'argocd-main',
        applicationSets: [set],
        clusters,
        applications: [
          app('a', 'stage-1', 'stage', 'OutOfSync', 'Healthy'),
          app('b', 'stage-1', 'stage', 'OutOfSync', 'Healthy'),
          app('c', 'dev-1', 'dev', 'OutOfSync', 'Healthy'),
          app('d', 'dev-1', 'dev', 'OutOfSync', 'Healthy'),
        ],
      },
    ]);
    const step = buildRolloutReport(fleet, target(fleet), OPTS).steps[0];
    expect([step.maxConcurrent, step.meaning]).toEqual([2, '50% → 2 at a time']);
  });
});

describe('maxUpdateMeaning', () => {
  it('says "N at a time", "all at once" or "manual gate", with the percent shown', () => {
    expect(maxUpdateMeaning(2, 10)).toBe('2 at a time');
    expect(maxUpdateMeaning(null, 10)).toBe('all at once');
    expect(maxUpdateMeaning(0, 10)).toBe('manual gate');
    expect(maxUpdateMeaning('0%', 10)).toBe('0% → manual gate');
    expect(maxUpdateMeaning('50%', 4)).toBe('50% → 2 at a time');
    expect(maxUpdateMeaning('10%', 4)).toBe('10% → 1 at a time');
    expect(maxUpdateMeaning('abc', 4)).toBe('invalid maxUpdate "abc" → 1 at a time');
  });
});

describe('buildRolloutPlan', () => {
  it('lists the steps in order with their apps, what remains, how many at a time, and apps never synced', () => {
    const fleet = midRollout();
    const plan = buildRolloutPlan(fleet, target(fleet), OPTS);
    expect(plan.appSet).toBe('infra');
    expect(
      plan.steps.map((s) => ({ step: s.step, maxConcurrent: s.maxConcurrent, apps: s.apps, remaining: s.remaining })),
    ).toEqual([
      { step: 1, maxConcurrent: 1, apps: ['infra-stage-1'], remaining: [] },
      {
        step: 2,
        maxConcurrent: 1,
        apps: ['infra-canary-1', 'infra-canary-2'],
        remaining: ['infra-canary-1', 'infra-canary-2'],
      },
      {
        step: 3,
        maxConcurrent: null,
        apps: ['infra-prod-1', 'infra-prod-2'],
        remaining: ['infra-prod-1', 'infra-prod-2'],
      },
    ]);
    expect(plan.unmatched).toEqual(['infra-dev-1']);
    expect(plan.findings.map((f) => f.rule)).toContain('app-in-no-step');
  });

  it('counts an app without an entry that is already Synced and Healthy as done', () => {
    const fleet = StaticFleet.fromObjects([
      {
        name: 'argocd-main',
        applicationSets: [appSet(undefined)],
        clusters,
        applications: [
          app('infra-stage-1', 'stage-1', 'stage', 'Synced', 'Healthy'),
          app('infra-prod-1', 'prod-1', 'prod', 'Synced', 'Degraded'),
        ],
      },
    ]);
    const plan = buildRolloutPlan(fleet, target(fleet), OPTS);
    expect(plan.steps[0].remaining).toEqual([]);
    expect(plan.steps[2].remaining).toEqual(['infra-prod-1']);
  });
});
