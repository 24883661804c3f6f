/**
 * The ApplicationSet conditions and health the simulated controller writes, checked against
 * applicationset/controllers/applicationset_controller.go (Reconcile, setApplicationSetStatusCondition),
 * applicationset/progressivesync/progressive_sync.go (PerformProgressiveSyncs, getAppsToSync) and
 * pkg/apis/application/v1alpha1/applicationset_types.go (SetConditions, CalculateHealth) at v3.5.1.
 */
import { describe, expect, it } from 'vitest';
import type { Application, ApplicationSet, ApplicationSetCondition } from '../../src/infra/argocd/types.js';
import { SIM_ANNOTATIONS, SimController, appSetHealth } from '../../src/sim/controller.js';
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
const REV = commit('infra@a');
const REV2 = commit('infra@b');

function setup(
  apps: [string, string][],
  opts: { strategy?: ApplicationSet['spec']['strategy']; annotations?: Record<string, string> } = {},
) {
  const spec = clusterGeneratorSpec({
    service: 'ingress',
    repoURL: 'https://git.example.com/infra/ingress.git',
    path: 'deploy',
    namespace: 'ingress',
    selector: { team: 'infra' },
    syncPolicy: { automated: { prune: true } },
    strategy: opts.strategy ?? {
      type: 'RollingSync',
      rollingSync: {
        steps: [
          { matchExpressions: [{ key: 'env', operator: 'In', values: ['stage'] }] },
          { matchExpressions: [{ key: 'env', operator: 'In', values: ['prod'] }] },
        ],
      },
    },
  });
  spec.template.metadata.labels = { env: '{{index .metadata.labels "env"}}' };
  const appSet = applicationSet({ name: 'ingress', now: NOW, spec, status: { conditions: upToDateConditions(NOW) } });
  appSet.metadata.annotations = { ...appSet.metadata.annotations, ...opts.annotations };
  const list: Application[] = apps.map(([name, env]) =>
    application({
      name,
      now: NOW,
      source: { repoURL: 'https://git.example.com/infra/ingress.git', path: 'deploy', targetRevision: 'HEAD' },
      destination: { server: `https://k8s-${name}.example.net`, namespace: 'ingress' },
      labels: { env },
      appSet: { name: 'ingress', uid: appSetUid('ingress') },
      syncPolicy: { automated: { prune: true, enabled: false } },
      resources: serviceResources({ name: 'ingress-nginx', namespace: 'ingress' }),
      sync: 'Synced',
      revision: REV,
      health: 'Healthy',
      history: [{ revision: REV, minutesAgo: 300 }],
    }),
  );
  const state = new SimState();
  seedState(state, { instances: [{ name: 'infra', applications: list, applicationSets: [appSet] }] });
  const controller = new SimController(state, {
    manual: true,
    startAt: NOW,
    syncDurationMs: 5000,
    healthSettleMs: 5000,
  });
  const store = state.instance('infra')!;
  const set = () => store.appSets.get('ingress')!;
  const condition = (type: string) => set().status?.conditions?.find((c) => c.type === type);
  const edit = (f: (s: ApplicationSet) => void) => {
    const next = structuredClone(set());
    f(next);
    store.putAppSet(next);
  };
  return { controller, store, set, condition, edit };
}

describe('RolloutProgressing as setApplicationSetStatusCondition writes it', () => {
  it.each([
    ['the strategy is removed', (s: ApplicationSet) => delete s.spec.strategy],
    ['the strategy becomes AllAtOnce', (s: ApplicationSet) => (s.spec.strategy = { type: 'AllAtOnce' })],
  ])('is removed, with the entries, when %s', (_what, change) => {
    const { controller, store, set, condition, edit } = setup([
      ['stage-a', 'stage'],
      ['prod-a', 'prod'],
    ]);
    controller.newCommit('infra', ['stage-a', 'prod-a'], REV2);
    controller.advance(1000);
    expect(condition('RolloutProgressing')).toMatchObject({
      status: 'True',
      message: 'ApplicationSet is performing rollout of step 1',
    });
    edit(change);
    controller.advance(1000);
    expect(condition('RolloutProgressing')).toBeUndefined();
    expect(set().status?.applicationStatus).toBeUndefined();
    expect(set().status?.health).toEqual({
      status: 'Healthy',
      message: 'All applications have been generated successfully',
    });
    void store;
  });

  it('stays as it was when only the progressive-syncs flag is off (not evaluated for a RollingSync appset); the entries go', () => {
    const { controller, set, condition, edit } = setup([
      ['stage-a', 'stage'],
      ['prod-a', 'prod'],
    ]);
    controller.newCommit('infra', ['stage-a', 'prod-a'], REV2);
    controller.advance(1000);
    const before = condition('RolloutProgressing');
    edit(
      (s) => (s.metadata.annotations = { ...s.metadata.annotations, [SIM_ANNOTATIONS.progressiveSyncs]: 'disabled' }),
    );
    controller.advance(1000);
    expect(set().status?.applicationStatus).toBeUndefined();
    expect(condition('RolloutProgressing')).toEqual(before);
  });

  it.each([
    ['empty', { type: 'RollingSync', rollingSync: { steps: [] } }],
    ['missing', { type: 'RollingSync', rollingSync: {} }],
  ] as const)(
    'with an %s steps list: no applicationStatus, False ApplicationSetRolloutComplete "ApplicationSet Rollout has completed"',
    (_what, strategy) => {
      const { controller, set, condition } = setup([['stage-a', 'stage']], {
        strategy: strategy as ApplicationSet['spec']['strategy'],
      });
      controller.newCommit('infra', ['stage-a'], REV2);
      controller.advance(1000);
      expect(set().status?.applicationStatus).toBeUndefined();
      expect(condition('RolloutProgressing')).toMatchObject({
        status: 'False',
        reason: 'ApplicationSetRolloutComplete',
        message: 'ApplicationSet Rollout has completed',
      });
      expect(set().status?.health).toEqual({
        status: 'Healthy',
        message: 'All applications have been generated successfully',
      });
    },
  );

  it('keeps conditions sorted by type, as SetConditions does', () => {
    const { controller, set } = setup([['stage-a', 'stage']]);
    controller.newCommit('infra', ['stage-a'], REV2);
    controller.advance(1000);
    const types = set().status!.conditions!.map((c) => c.type);
    expect(types).toEqual([...types].sort());
  });
});

describe('ApplicationSet health (CalculateHealth)', () => {
  it("uses Argo CD's own messages", () => {
    expect(appSetHealth({})).toEqual({ status: 'Unknown', message: 'No status conditions found for ApplicationSet' });
    expect(
      appSetHealth({
        conditions: [{ type: 'ParametersGenerated', status: 'True', reason: 'ParametersGenerated', message: 'x' }],
      }),
    ).toEqual({ status: 'Unknown', message: 'Waiting for health status to be determined' });
    expect(
      appSetHealth({
        conditions: [
          {
            type: 'ResourcesUpToDate',
            status: 'True',
            reason: 'ApplicationSetUpToDate',
            message: 'All applications have been generated successfully',
          },
        ],
      }),
    ).toEqual({ status: 'Healthy', message: 'All applications have been generated successfully' });
    expect(
      appSetHealth({
        conditions: [
          { type: 'ResourcesUpToDate', status: 'True', reason: 'ApplicationSetUpToDate', message: 'ok' },
          {
            type: 'RolloutProgressing',
            status: 'True',
            reason: 'ApplicationSetModified',
            message: 'ApplicationSet is performing rollout of step 2',
          },
        ],
      }),
    ).toEqual({ status: 'Progressing', message: 'ApplicationSet is performing rollout of step 2' });
    expect(
      appSetHealth({
        conditions: [{ type: 'ErrorOccurred', status: 'True', reason: 'ApplicationValidationError', message: 'boom' }],
      }),
    ).toEqual({ status: 'Degraded', message: 'boom' });
  });
});

describe('a generated app that failed validation', () => {
  const invalid = JSON.stringify([
    {
      name: 'stage-c',
      labels: { env: 'stage' },
      error:
        'application destination spec is invalid: unable to find destination server: there are no clusters with this name: stage-c',
    },
  ]);

  it('holds the later steps (getAppsToSync) and shows as ErrorOccurred ApplicationValidationError; the rollout moves on once it exists', () => {
    const { controller, store, set, condition, edit } = setup(
      [
        ['stage-a', 'stage'],
        ['prod-a', 'prod'],
      ],
      { annotations: { [SIM_ANNOTATIONS.generatedInvalid]: invalid } },
    );
    controller.newCommit('infra', ['stage-a', 'prod-a'], REV2);
    controller.advance(60_000);
    const entries = () => Object.fromEntries(set().status!.applicationStatus!.map((e) => [e.application, e.status]));
    expect(entries()).toEqual({ 'prod-a': 'Waiting', 'stage-a': 'Healthy' });
    expect(store.apps.get('prod-a')!.operation).toBeUndefined();
    expect(condition('ErrorOccurred')).toMatchObject({
      status: 'True',
      reason: 'ApplicationValidationError',
      message: expect.stringContaining('there are no clusters with this name: stage-c'),
    });
    expect(condition('ResourcesUpToDate')).toMatchObject({ status: 'False', reason: 'ErrorOccurred' });
    // Entries are the existing apps' only, so the condition names step 2 while step 2 cannot start.
    expect(condition('RolloutProgressing')).toMatchObject({
      status: 'True',
      message: 'ApplicationSet is performing rollout of step 2',
    });
    expect(set().status!.health).toMatchObject({ status: 'Degraded' });

    // Fixed: the app is generated valid and created.
    edit((s) => delete s.metadata.annotations![SIM_ANNOTATIONS.generatedInvalid]);
    const created = structuredClone(store.apps.get('stage-a')!);
    created.metadata.name = 'stage-c';
    delete created.metadata.uid;
    store.putApp(created);
    controller.advance(60_000);
    expect(entries()['prod-a']).not.toBe('Waiting');
    expect(condition('ErrorOccurred')).toMatchObject({ status: 'False' });
    expect(condition('ResourcesUpToDate')).toMatchObject({
      status: 'True',
      message: 'All applications have been generated successfully',
    });
  });

  it('says "(and N more)" when several fail, naming the last error by app name', () => {
    const two = JSON.stringify([
      { name: 'b-app', error: 'application references project nope which does not exist' },
      { name: 'a-app', error: 'application destination spec is invalid: x' },
    ]);
    const { controller, condition } = setup([['stage-a', 'stage']], {
      annotations: { [SIM_ANNOTATIONS.generatedInvalid]: two },
    });
    controller.advance(1000);
    expect(condition('ErrorOccurred')!.message).toBe(
      'application references project nope which does not exist (and 1 more)',
    );
  });
});

describe('the sync RollingSync writes in the simulator', () => {
  // SyncDesiredApplications → syncApplication(desiredApplications[i]) (progressive_sync.go): the generated
  // app's syncPolicy, not what the live app says.
  it("takes syncOptions and retry from the template, not from the live app's hand-edited policy", () => {
    const { controller, store, edit } = setup([['stage-a', 'stage']]);
    edit(
      (s) =>
        (s.spec.template.spec.syncPolicy = {
          automated: { prune: true },
          syncOptions: ['ServerSideApply=true'],
          retry: { limit: 2 },
        }),
    );
    const live = structuredClone(store.apps.get('stage-a')!);
    live.spec.syncPolicy = { ...live.spec.syncPolicy, syncOptions: ['Prune=false'], retry: { limit: 0 } };
    store.putApp(live);
    controller.newCommit('infra', ['stage-a'], REV2);
    controller.advance(2000);
    const op = store.apps.get('stage-a')!.status?.operationState?.operation ?? store.apps.get('stage-a')!.operation!;
    expect(op.initiatedBy).toEqual({ username: 'applicationset-controller', automated: true });
    expect(op.sync).toEqual({ prune: true, syncOptions: ['ServerSideApply=true'] });
    expect(op.retry).toEqual({ limit: 2 });
  });
});

// Cases of Argo CD v3.5.1's own unit tests, in the simulator's terms: the test name is Argo CD's test and case.
describe('Argo CD v3.5.1 appset condition and health unit cases', () => {
  // applicationset_controller_test.go: an appset with no strategy and a RolloutProgressing condition left
  // over; setApplicationSetStatusCondition evaluates that type for an appset that is not RollingSync and,
  // with no condition of it to set, drops it. The others stay as they were.
  it('TestSetApplicationSetStatusCondition: progressing conditions is removed when AppSet is not configured', () => {
    const { controller, set, edit } = setup([['stage-a', 'stage']]);
    const before = '2026-03-01T09:55:00Z';
    const kept = [
      { type: 'ErrorOccurred', message: 'existing', lastTransitionTime: before },
      {
        type: 'ParametersGenerated',
        status: 'True',
        reason: 'ParametersGenerated',
        message: 'Successfully generated parameters for all Applications',
        lastTransitionTime: before,
      },
      { type: 'ResourcesUpToDate', status: 'False', message: 'existing', lastTransitionTime: before },
    ] as ApplicationSetCondition[];
    edit((s) => {
      delete s.spec.strategy;
      s.status = {
        conditions: [
          ...kept,
          { type: 'RolloutProgressing', message: 'existing', lastTransitionTime: before } as ApplicationSetCondition,
        ],
      };
    });
    controller.advance(1000);
    expect(set().status?.conditions).toEqual(kept);
  });

  // applicationset_types_test.go, CalculateHealth on these conditions alone.
  it('TestApplicationSetCalculateHealth: rollout progressing returns progressing', () => {
    expect(
      appSetHealth({
        conditions: [{ type: 'RolloutProgressing', status: 'True', reason: '', message: 'rolling out 2/5' }],
      }),
    ).toEqual({ status: 'Progressing', message: 'rolling out 2/5' });
  });

  it('TestApplicationSetCalculateHealth: progressing takes priority over resources up to date', () => {
    const conditions: ApplicationSetCondition[] = [
      { type: 'ResourcesUpToDate', status: 'True', reason: '', message: 'synced' },
      { type: 'RolloutProgressing', status: 'True', reason: '', message: 'rolling out' },
    ];
    expect(appSetHealth({ conditions })).toEqual({ status: 'Progressing', message: 'rolling out' });
  });
});
