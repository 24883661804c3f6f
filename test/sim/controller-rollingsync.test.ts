import { describe, expect, it } from 'vitest';
import type { Application, ApplicationSet, ApplicationSetRolloutStep } from '../../src/infra/argocd/types.js';
import { SimController } from '../../src/sim/controller.js';
import { seedState } from '../../src/sim/fixture.js';
import {
  application,
  applicationSet,
  appSetUid,
  clusterGeneratorSpec,
  commit,
  serviceResources,
  upToDateConditions,
} from '../../src/sim/scenarios/builders.js';
import { SimState } from '../../src/sim/store.js';

const NOW = new Date('2026-03-01T10:00:00Z');
const REV_A = commit('infra@a');
const APPS: [string, string][] = [
  ['stage-a', 'stage'],
  ['stage-b', 'stage'],
  ['canary-a', 'canary'],
  ['canary-b', 'canary'],
  ['prod-1', 'prod'],
  ['prod-2', 'prod'],
  ['prod-3', 'prod'],
  ['prod-4', 'prod'],
  ['prod-5', 'prod'],
];

function steps(canaryMax?: number | string, prodMax: number | string = 2): ApplicationSetRolloutStep[] {
  return [
    { matchExpressions: [{ key: 'env', operator: 'In', values: ['stage'] }] },
    {
      matchExpressions: [{ key: 'env', operator: 'In', values: ['canary'] }],
      ...(canaryMax !== undefined ? { maxUpdate: canaryMax } : {}),
    },
    { matchExpressions: [{ key: 'env', operator: 'In', values: ['prod'] }], maxUpdate: prodMax },
  ];
}

function setup(
  opts: {
    steps?: ApplicationSetRolloutStep[];
    appSetExtra?: (s: ApplicationSet) => void;
    progressiveSyncs?: boolean;
  } = {},
) {
  const spec = clusterGeneratorSpec({
    service: 'ingress',
    repoURL: 'https://git.example.com/infra/ingress.git',
    path: 'deploy',
    namespace: 'ingress',
    selector: { team: 'infra' },
    syncPolicy: { automated: { prune: true }, syncOptions: ['CreateNamespace=true'] },
    strategy: { type: 'RollingSync', rollingSync: { steps: opts.steps ?? steps() } },
  });
  spec.template.metadata.name = '{{.name}}';
  const appSet = applicationSet({ name: 'ingress', now: NOW, spec, status: { conditions: upToDateConditions(NOW) } });
  opts.appSetExtra?.(appSet);
  const apps: Application[] = APPS.map(([name, env]) =>
    application({
      name,
      now: NOW,
      source: { repoURL: 'https://git.example.com/infra/ingress.git', path: 'deploy', targetRevision: 'HEAD' },
      destination: { server: `https://k8s-${name}.example.net`, namespace: 'ingress' },
      labels: { app: 'ingress', service: 'ingress', env, cluster: name },
      appSet: { name: 'ingress', uid: appSetUid('ingress') },
      // What the appset controller generated before v3.3 switched to enabled:false; the sim must correct it.
      syncPolicy: { automated: { prune: true }, syncOptions: ['CreateNamespace=true'] },
      resources: serviceResources({ name: 'ingress-nginx', namespace: 'ingress' }),
      sync: 'Synced',
      revision: REV_A,
      health: 'Healthy',
      history: [{ revision: REV_A, minutesAgo: 300 }],
    }),
  );
  const state = new SimState();
  seedState(state, { instances: [{ name: 'infra', applications: apps, applicationSets: [appSet] }] });
  const controller = new SimController(state, {
    manual: true,
    startAt: NOW,
    syncDurationMs: 5000,
    healthSettleMs: 5000,
    progressiveSyncs: opts.progressiveSyncs,
  });
  const store = state.instance('infra')!;
  const set = () => store.appSets.get('ingress')!;
  const entry = (name: string) => set().status!.applicationStatus!.find((e) => e.application === name)!;
  const byStatus = (step: string, status: string) =>
    set()
      .status!.applicationStatus!.filter((e) => e.step === step && e.status === status)
      .map((e) => e.application);
  return { state, controller, store, set, entry, byStatus };
}

const names = (env: string) => APPS.filter(([, e]) => e === env).map(([n]) => n);

describe('SimController RollingSync', () => {
  it('marks synced, healthy apps Healthy on the first pass and disables autosync on the generated apps (v3.3+)', () => {
    const { controller, store, set } = setup();
    controller.advance(1000);
    expect(set().status!.applicationStatus!.map((e) => [e.application, e.status, e.step])).toEqual(
      [...APPS]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([n, env]) => [n, 'Healthy', env === 'stage' ? '1' : env === 'canary' ? '2' : '3']),
    );
    expect(set().status!.conditions!.find((c) => c.type === 'RolloutProgressing')).toMatchObject({
      status: 'False',
      reason: 'ApplicationSetRolloutComplete',
    });
    expect(set().status!.resources).toHaveLength(9);
    // CalculateHealth (applicationset_types.go): Healthy carries the ResourcesUpToDate message.
    expect(set().status!.health).toEqual({
      status: 'Healthy',
      message: 'All applications have been generated successfully',
    });
    for (const app of store.apps.values())
      expect(app.spec.syncPolicy!.automated).toEqual({ prune: true, enabled: false });
    controller.advance(10_000);
    for (const app of store.apps.values()) expect(app.operation).toBeUndefined();
  });

  it('never auto-syncs a RollingSync app, even before its autosync was switched off', () => {
    const { controller, store, byStatus } = setup();
    controller.newCommit('infra', ['prod-1']);
    controller.advance(1000);
    // The only sync is the one RollingSync starts once the earlier steps are Healthy.
    expect(store.apps.get('prod-1')!.operation!.initiatedBy).toEqual({
      username: 'applicationset-controller',
      automated: true,
    });
    expect(byStatus('3', 'Pending')).toEqual(['prod-1']);
  });

  it('rolls a new commit out step by step, never more than maxUpdate in flight, each step waiting for the previous one', () => {
    const { controller, store, set, byStatus } = setup();
    controller.advance(1000);
    const revB = controller.newCommit(
      'infra',
      APPS.map(([n]) => n),
    );
    const violations: string[] = [];
    const stepHealthy = (step: string) =>
      set()
        .status!.applicationStatus!.filter((e) => e.step === step)
        .every((e) => e.status === 'Healthy');
    let maxProdInFlight = 0;
    const seenCurrentSteps: string[] = [];
    const done = controller.advanceUntil(() => {
      const entries = set().status!.applicationStatus!;
      const inFlight = (step: string) =>
        entries.filter((e) => e.step === step && (e.status === 'Pending' || e.status === 'Progressing')).length;
      maxProdInFlight = Math.max(maxProdInFlight, inFlight('3'));
      if (inFlight('3') > 2)
        violations.push(`prod in flight ${inFlight('3')} at ${controller.clock.now().toISOString()}`);
      const active = (step: string) =>
        entries.some((e) => e.step === step && (e.status === 'Pending' || e.status === 'Progressing'));
      if (active('2') && !stepHealthy('1')) violations.push('canary started before stage was Healthy');
      if (active('3') && (!stepHealthy('1') || !stepHealthy('2')))
        violations.push('prod started before canary was Healthy');
      for (const c of set().status!.conditions!)
        if (c.type === 'RolloutProgressing' && seenCurrentSteps.at(-1) !== c.message) seenCurrentSteps.push(c.message);
      return (
        [...store.apps.values()].every(
          (a) =>
            a.status!.sync!.revision === revB &&
            a.status!.sync!.status === 'Synced' &&
            a.status!.health!.status === 'Healthy',
        ) && stepHealthy('3')
      );
    }, 600_000);
    expect(violations).toEqual([]);
    expect(done).toBe(true);
    expect(maxProdInFlight).toBe(2);
    expect(seenCurrentSteps).toEqual([
      'ApplicationSet Rollout has completed',
      'ApplicationSet is performing rollout of step 1',
      'ApplicationSet is performing rollout of step 2',
      'ApplicationSet is performing rollout of step 3',
      'ApplicationSet Rollout has completed',
    ]);
    expect(byStatus('3', 'Healthy')).toHaveLength(5);
    for (const app of store.apps.values()) {
      const last = app.status!.history!.at(-1)!;
      expect(last.revision).toBe(revB);
      expect(last.initiatedBy).toEqual({ username: 'applicationset-controller', automated: true });
      expect(app.status!.history).toHaveLength(2);
      expect(app.status!.operationState!.operation).toEqual({
        sync: { prune: true, syncOptions: ['CreateNamespace=true'] },
        initiatedBy: { username: 'applicationset-controller', automated: true },
        info: [{ name: 'Reason', value: 'ApplicationSet RollingSync triggered a sync of this Application resource' }],
        retry: { limit: 5 },
      });
    }
    // Stage finished before canary started syncing, canary before prod.
    const startedAt = (n: string) => Date.parse(store.apps.get(n)!.status!.operationState!.startedAt);
    const healthyAt = (n: string) => Date.parse(store.apps.get(n)!.status!.health!.lastTransitionTime!);
    expect(Math.min(...names('canary').map(startedAt))).toBeGreaterThan(Math.max(...names('stage').map(healthyAt)));
    expect(Math.min(...names('prod').map(startedAt))).toBeGreaterThan(Math.max(...names('canary').map(healthyAt)));
  });

  it('keeps a failed app Progressing forever and blocks every later step (no step timeout)', () => {
    const { controller, store, entry, byStatus, set } = setup();
    controller.advance(1000);
    controller.faults.failApp(
      'infra',
      'canary-b',
      'admission webhook "validate.nginx.ingress.kubernetes.io" denied the request: ingress contains invalid paths',
    );
    controller.newCommit(
      'infra',
      APPS.map(([n]) => n),
    );
    controller.advance(60 * 60_000);
    expect(store.apps.get('canary-b')!.status!.operationState).toMatchObject({ phase: 'Failed', retryCount: 5 });
    expect(store.apps.get('canary-b')!.status!.operationState!.message).toMatch(/\(retried 5 times\)\.$/);
    expect(entry('canary-b').status).toBe('Progressing');
    expect(entry('canary-a').status).toBe('Healthy');
    expect(byStatus('3', 'Waiting')).toHaveLength(5);
    for (const n of names('prod')) expect(store.apps.get(n)!.status!.operationState).toBeUndefined();
    expect(set().status!.conditions!.find((c) => c.type === 'RolloutProgressing')!.message).toBe(
      'ApplicationSet is performing rollout of step 2',
    );
    expect(set().status!.health).toEqual({
      status: 'Progressing',
      message: 'ApplicationSet is performing rollout of step 2',
    });

    // A human fixes and re-syncs it: the rollout moves on.
    controller.faults.clear('infra', 'canary-b');
    controller.requestSync('infra', 'canary-b', { name: 'canary-b' }, 'oncall');
    const done = controller.advanceUntil(() => byStatus('3', 'Healthy').length === 5, 600_000);
    expect(done).toBe(true);
  });

  it('holds a maxUpdate 0 step (manual gate) until its apps are synced by hand', () => {
    const { controller, store, byStatus } = setup({ steps: steps(0) });
    controller.advance(1000);
    controller.newCommit(
      'infra',
      APPS.map(([n]) => n),
    );
    controller.advance(10 * 60_000);
    expect(byStatus('1', 'Healthy')).toEqual(['stage-a', 'stage-b']);
    expect(byStatus('2', 'Waiting')).toEqual(['canary-a', 'canary-b']);
    expect(byStatus('3', 'Waiting')).toHaveLength(5);
    for (const n of [...names('canary'), ...names('prod')]) expect(store.apps.get(n)!.operation).toBeUndefined();

    for (const n of names('canary')) controller.requestSync('infra', n, { name: n }, 'oncall');
    const done = controller.advanceUntil(() => byStatus('3', 'Healthy').length === 5, 600_000);
    expect(done).toBe(true);
    expect(store.apps.get('canary-a')!.status!.operationState!.operation.initiatedBy).toEqual({ username: 'oncall' });
  });

  it('starts no new syncs under applicationsSync create-only (the pause workaround)', () => {
    const { controller, store, byStatus } = setup({
      appSetExtra: (s) => (s.spec.syncPolicy = { applicationsSync: 'create-only' }),
    });
    controller.advance(1000);
    controller.newCommit(
      'infra',
      APPS.map(([n]) => n),
    );
    controller.advance(10 * 60_000);
    // Argo CD still moves the entries to Pending, but the operation is written through the update path it skips.
    expect(byStatus('1', 'Pending')).toEqual(['stage-a', 'stage-b']);
    for (const app of store.apps.values()) {
      expect(app.operation).toBeUndefined();
      expect(app.status!.sync!.status).toBe('OutOfSync');
    }
  });

  it('writes no applicationStatus when progressive syncs are disabled (annotation or controller option); autosync takes over, so it is no pause', () => {
    const withAnnotation = setup({
      appSetExtra: (s) => {
        s.metadata.annotations = { 'sim.rollcall.io/progressive-syncs': 'disabled' };
        s.status!.applicationStatus = [
          { application: 'stage-a', status: 'Healthy', message: 'old', step: '1', targetRevisions: [REV_A] },
        ];
      },
    });
    withAnnotation.controller.advance(1000);
    withAnnotation.controller.newCommit('infra', ['stage-a']);
    withAnnotation.controller.advance(60_000);
    expect(withAnnotation.set().status!.applicationStatus).toBeUndefined();
    // The template's automated policy stays in force: the app auto-syncs at once, not through RollingSync.
    expect(withAnnotation.store.apps.get('stage-a')!.spec.syncPolicy!.automated).toEqual({ prune: true });
    expect(withAnnotation.store.apps.get('stage-a')!.status!.operationState).toMatchObject({
      phase: 'Succeeded',
      operation: { initiatedBy: { automated: true } },
    });

    const withOption = setup({ progressiveSyncs: false });
    withOption.controller.advance(60_000);
    expect(withOption.set().status!.applicationStatus).toBeUndefined();
  });

  it('releases everything at once when the strategy is switched to AllAtOnce mid-rollout (autosync comes back: no pause)', () => {
    const { controller, store, set, byStatus } = setup({ steps: steps(0) });
    controller.advance(1000);
    const rev = controller.newCommit(
      'infra',
      APPS.map(([n]) => n),
    );
    controller.advance(5 * 60_000);
    expect(byStatus('3', 'Waiting')).toHaveLength(5);

    const next = structuredClone(set());
    next.spec.strategy = { type: 'AllAtOnce' };
    store.putAppSet(next);
    controller.advance(2000);
    expect(set().status!.applicationStatus).toBeUndefined();
    for (const app of store.apps.values()) expect(app.spec.syncPolicy!.automated).toEqual({ prune: true });
    const inFlight = [...store.apps.values()].filter((a) => a.operation).map((a) => a.metadata.name);
    expect(inFlight.sort()).toEqual([...names('canary'), ...names('prod')].sort());
    controller.advance(60_000);
    for (const app of store.apps.values()) expect(app.status!.sync).toMatchObject({ status: 'Synced', revision: rev });
  });
});
