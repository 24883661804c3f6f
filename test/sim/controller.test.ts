import { describe, expect, it } from 'vitest';
import type { Application, SyncWindow } from '../../src/infra/argocd/types.js';
import { projectsOf } from '../../src/sim/projects.js';
import { SimController, SimError } from '../../src/sim/controller.js';
import { seedState } from '../../src/sim/fixture.js';
import type { Fixture } from '../../src/sim/fixture-types.js';
import { application, cluster, commit, serviceResources } from '../../src/sim/scenarios/builders.js';
import { SimState, type InstanceStore } from '../../src/sim/store.js';

const NOW = new Date('2026-03-01T10:00:00Z');
const SERVER = 'https://k8s-c1.example.net:6443';
const TARGET = commit('web@v2');

function webApp(name: string, extra: Partial<Parameters<typeof application>[0]> = {}): Application {
  const resources = [
    ...serviceResources({ name: 'web', namespace: 'web', sync: 'OutOfSync' }),
    {
      version: 'v1',
      kind: 'ConfigMap',
      namespace: 'web',
      name: 'web-legacy-flags',
      status: 'OutOfSync' as const,
      requiresPruning: true,
    },
  ];
  return application({
    name,
    now: NOW,
    source: { repoURL: 'https://git.example.com/platform/web.git', path: 'deploy/c1', targetRevision: 'HEAD' },
    destination: { server: SERVER, namespace: 'web' },
    resources,
    sync: 'OutOfSync',
    revision: TARGET,
    health: 'Healthy',
    history: [{ revision: commit('web@v1'), minutesAgo: 600 }],
    ...extra,
  });
}

function setup(opts: { apps?: Application[]; frozen?: boolean } = {}) {
  const fixture: Fixture = {
    instances: [
      {
        name: 'test',
        clusters: [cluster({ name: 'c1', server: SERVER, labels: { env: 'prod' }, now: NOW })],
        applications: opts.apps ?? [webApp('web-c1')],
      },
    ],
  };
  const state = new SimState();
  seedState(state, fixture);
  const controller = new SimController(state, {
    manual: true,
    startAt: NOW,
    syncDurationMs: 5000,
    healthSettleMs: 10_000,
    frozen: opts.frozen,
  });
  const store = state.instance('test')!;
  const app = (name = 'web-c1') => store.apps.get(name)!;
  return { state, controller, store, app };
}

/** Adds a deny window to the project the apps are in (Argo CD's default). */
function denyIn(store: InstanceStore, w: Partial<SyncWindow>) {
  const project = projectsOf(store, NOW.toISOString()).get('default')!;
  const next = structuredClone(project);
  next.spec.syncWindows = [
    ...(next.spec.syncWindows ?? []),
    { kind: 'deny', schedule: '* * * * *', duration: '1h', ...w },
  ];
  store.putProject(next);
}

describe('SimController sync lifecycle', () => {
  it('clears the last operation state when a new operation is requested, as SetAppOperation does', () => {
    const { controller, app } = setup();
    controller.requestSync('test', 'web-c1', { name: 'web-c1' }, 'alice');
    controller.advance(7000);
    expect(app().status?.operationState?.phase).toBe('Succeeded');
    expect(app().operation).toBeUndefined();

    controller.requestSync('test', 'web-c1', { name: 'web-c1' }, 'bob');
    // Requested, not started: a reader sees the operation and no state (not the previous one's Succeeded).
    expect(app().operation?.initiatedBy).toEqual({ username: 'bob' });
    expect(app().status?.operationState).toBeUndefined();
    controller.advance(1000);
    expect(app().status?.operationState).toMatchObject({
      phase: 'Running',
      operation: { initiatedBy: { username: 'bob' } },
    });
  });

  it('runs a sync operation → Running → Succeeded, appends history, then settles health Progressing → Healthy', () => {
    const { controller, store, app } = setup();
    const events: string[] = [];
    store.events.on('app', (c) =>
      events.push(`${c.object.metadata.name}:${c.object.status?.operationState?.phase ?? '-'}`),
    );

    const returned = controller.requestSync('test', 'web-c1', { name: 'web-c1', prune: true }, 'alice');
    expect(returned.operation).toEqual({
      sync: { revision: TARGET, prune: true },
      initiatedBy: { username: 'alice' },
      retry: {},
    });
    expect(app().status?.operationState).toBeUndefined();

    controller.advance(1000);
    const running = app().status!.operationState!;
    expect(running.phase).toBe('Running');
    expect(running.message).toBe('one or more tasks are running');
    expect(running.startedAt).toBe('2026-03-01T10:00:01Z');
    expect(running.operation.initiatedBy).toEqual({ username: 'alice' });
    // Argo CD keeps the top-level operation until the operation completes.
    expect(app().operation).toBeDefined();

    controller.advance(4000);
    expect(app().status!.operationState!.phase).toBe('Running');
    controller.advance(1000);
    const done = app().status!;
    expect(done.operationState!.phase).toBe('Succeeded');
    expect(done.operationState!.message).toBe('successfully synced (all tasks run)');
    expect(done.operationState!.finishedAt).toBe('2026-03-01T10:00:06Z');
    expect(app().operation).toBeUndefined();
    expect(done.operationState!.syncResult!.revision).toBe(TARGET);
    expect(
      done.operationState!.syncResult!.resources!.map((r) => `${r.kind}/${r.name}:${r.status}:${r.message}`),
    ).toEqual([
      'ConfigMap/web:Synced:configmap/web configured',
      'Service/web:Synced:service/web configured',
      'Deployment/web:Synced:deployment.apps/web configured',
      'ConfigMap/web-legacy-flags:Pruned:pruned',
    ]);
    expect(done.sync).toMatchObject({ status: 'Synced', revision: TARGET });
    expect(done.resources!.map((r) => r.name + ':' + r.status)).toEqual(['web:Synced', 'web:Synced', 'web:Synced']);
    expect(done.history!.map((h) => [h.id, h.revision])).toEqual([
      [0, commit('web@v1')],
      [1, TARGET],
    ]);
    expect(done.history![1]).toMatchObject({
      deployedAt: '2026-03-01T10:00:06Z',
      deployStartedAt: '2026-03-01T10:00:01Z',
      initiatedBy: { username: 'alice' },
    });
    expect(done.health!.status).toBe('Progressing');

    controller.advance(9000);
    expect(app().status!.health!.status).toBe('Progressing');
    controller.advance(1000);
    expect(app().status!.health).toEqual({ status: 'Healthy', lastTransitionTime: '2026-03-01T10:00:16Z' });
    expect(events).toEqual(['web-c1:-', 'web-c1:Running', 'web-c1:Succeeded', 'web-c1:Succeeded']);
  });

  it('skips pruning without prune=true: the resource reports PruneSkipped and the app stays OutOfSync', () => {
    const { controller, app } = setup();
    controller.requestSync('test', 'web-c1', { name: 'web-c1' }, 'alice');
    controller.advance(6000);
    const status = app().status!;
    expect(status.operationState!.phase).toBe('Succeeded');
    expect(status.operationState!.syncResult!.resources!.find((r) => r.name === 'web-legacy-flags')).toMatchObject({
      status: 'PruneSkipped',
      message: 'ignored (requires pruning)',
    });
    expect(status.sync!.status).toBe('OutOfSync');
    expect(status.resources!.some((r) => r.name === 'web-legacy-flags' && r.requiresPruning)).toBe(true);
  });

  it('changes nothing but the operation state on a dry run', () => {
    const { controller, app } = setup();
    const before = structuredClone(app().status!);
    controller.requestSync('test', 'web-c1', { name: 'web-c1', dryRun: true, prune: true }, 'alice');
    controller.advance(30_000);
    const after = app().status!;
    expect(after.operationState!.phase).toBe('Succeeded');
    expect(after.operationState!.syncResult!.resources!.every((r) => r.message!.endsWith('(dry run)'))).toBe(true);
    expect(after.sync).toEqual(before.sync);
    expect(after.history).toEqual(before.history);
    expect(after.resources).toEqual(before.resources);
    expect(after.health).toEqual(before.health);
  });

  it('writes the request body into the operation the way Argo CD does (strategy, resources, syncOptions items, retry, infos)', () => {
    const { controller } = setup();
    const app = controller.requestSync(
      'test',
      'web-c1',
      {
        name: 'web-c1',
        revision: 'release-2',
        strategy: { hook: { force: true } },
        resources: [{ group: 'apps', kind: 'Deployment', name: 'web', namespace: 'web' }],
        syncOptions: { items: ['ServerSideApply=true'] },
        retryStrategy: { limit: 3, backoff: { duration: '10s', factor: 2, maxDuration: '1m' } },
        infos: [{ name: 'ticket', value: 'INC-42' }],
      },
      'bob',
    );
    expect(app.operation!.sync!.revision).toMatch(/^[0-9a-f]{40}$/);
    expect(app.operation!.sync!.revision).not.toBe(TARGET);
    expect(app.operation).toMatchObject({
      sync: {
        syncStrategy: { hook: { force: true } },
        resources: [{ kind: 'Deployment', name: 'web' }],
        syncOptions: ['ServerSideApply=true'],
      },
      initiatedBy: { username: 'bob' },
      info: [{ name: 'ticket', value: 'INC-42' }],
      retry: { limit: 3, backoff: { duration: '10s', factor: 2, maxDuration: '1m' } },
    });
  });

  it('syncs only the requested resources on a partial sync', () => {
    const { controller, app } = setup();
    controller.requestSync(
      'test',
      'web-c1',
      { name: 'web-c1', resources: [{ group: 'apps', kind: 'Deployment', name: 'web', namespace: 'web' }] },
      'alice',
    );
    controller.advance(6000);
    const status = app().status!;
    expect(status.operationState!.syncResult!.resources!.map((r) => r.kind)).toEqual(['Deployment']);
    expect(status.resources!.filter((r) => r.status === 'OutOfSync').map((r) => r.kind)).toEqual([
      'ConfigMap',
      'Service',
      'ConfigMap',
    ]);
    expect(status.sync!.status).toBe('OutOfSync');
    // Argo CD records history only for a full sync.
    expect(status.history!.map((h) => h.revision)).toEqual([commit('web@v1')]);
  });

  it("keeps the sync strategy as Argo CD's JSON decoding does: swagger's syncStrategyApply nesting is dropped", () => {
    const { controller } = setup();
    const app = controller.requestSync(
      'test',
      'web-c1',
      { name: 'web-c1', strategy: { hook: { syncStrategyApply: { force: true } } } as never },
      'bob',
    );
    expect(app.operation!.sync!.syncStrategy).toEqual({ hook: {} });
  });

  it('refuses a second sync while one is in progress, and unknown apps, with typed errors', () => {
    const { controller } = setup();
    controller.requestSync('test', 'web-c1', { name: 'web-c1' }, 'alice');
    expect(() => controller.requestSync('test', 'web-c1', { name: 'web-c1' }, 'bob')).toThrow(
      expect.objectContaining({
        code: 'failed_precondition',
        grpcCode: 9,
        message: 'another operation is already in progress',
      }),
    );
    controller.advance(2000);
    expect(() => controller.requestSync('test', 'web-c1', { name: 'web-c1' }, 'bob')).toThrow(SimError);
    expect(() => controller.requestSync('test', 'nope', { name: 'nope' }, 'bob')).toThrow(
      expect.objectContaining({ code: 'not_found', grpcCode: 5, message: 'applications.argoproj.io "nope" not found' }),
    );
    expect(() => controller.requestSync('other', 'web-c1', { name: 'web-c1' }, 'bob')).toThrow(
      expect.objectContaining({ code: 'not_found' }),
    );
  });

  it('does not move at all when frozen', () => {
    const { controller, app } = setup({ frozen: true });
    controller.requestSync('test', 'web-c1', { name: 'web-c1' }, 'alice');
    controller.advance(60_000);
    expect(app().operation).toBeDefined();
    expect(app().status!.operationState).toBeUndefined();
  });

  it('runs on its own timer at --speed: durations shrink, timestamps stay the time of day', async () => {
    const state = new SimState();
    seedState(state, { instances: [{ name: 'test', applications: [webApp('web-c1')] }] });
    const controller = new SimController(state, { speed: 100, syncDurationMs: 5000, healthSettleMs: 5000 });
    controller.start();
    const requested = Date.now();
    try {
      controller.requestSync('test', 'web-c1', { name: 'web-c1', prune: true }, 'alice');
      const app = () => state.instance('test')!.apps.get('web-c1')!;
      const deadline = Date.now() + 5000;
      while (app().status!.health!.status !== 'Healthy' || app().status!.operationState?.phase !== 'Succeeded') {
        if (Date.now() > deadline)
          throw new Error(`sync did not finish: ${JSON.stringify(app().status!.operationState)}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      const state0 = app().status!.operationState!;
      // 5 simulated seconds of sync took about 50 ms, stamped with the wall clock's time (to the second)
      // that a bot beside the simulator reads: never minutes ahead of it.
      const done = Date.now();
      const stamps = [state0.startedAt, state0.finishedAt!, app().status!.history!.at(-1)!.deployedAt].map(Date.parse);
      for (const t of stamps) {
        expect(t).toBeGreaterThanOrEqual(Math.floor(requested / 1000) * 1000);
        expect(t).toBeLessThanOrEqual(done);
      }
      expect(controller.clock.span(5000)).toBe(50);
    } finally {
      controller.stop();
    }
  });

  it('takes the per-app sync duration from the sim annotation', () => {
    const { controller, app } = setup({
      apps: [webApp('web-c1', { annotations: { 'sim.rollcall.io/sync-duration': '30s' } })],
    });
    controller.requestSync('test', 'web-c1', { name: 'web-c1' }, 'alice');
    controller.advance(30_000);
    expect(app().status!.operationState!.phase).toBe('Running');
    controller.advance(1000);
    expect(app().status!.operationState!.phase).toBe('Succeeded');
  });

  it('caps history at spec.revisionHistoryLimit', () => {
    const base = webApp('web-c1');
    base.spec.revisionHistoryLimit = 2;
    const { controller, app } = setup({ apps: [base] });
    for (let i = 0; i < 3; i++) {
      controller.requestSync('test', 'web-c1', { name: 'web-c1', prune: true }, 'alice');
      controller.advance(20_000);
    }
    expect(app().status!.history!.map((h) => h.id)).toEqual([2, 3]);
  });
});

describe('SimController faults', () => {
  it('fails the sync of a failing app with a SyncFailed resource and phase Failed', () => {
    const { controller, app } = setup();
    controller.faults.failApp(
      'test',
      'web-c1',
      'admission webhook "policy.example.com" denied the request: image not signed',
    );
    controller.requestSync('test', 'web-c1', { name: 'web-c1' }, 'alice');
    controller.advance(6000);
    const state = app().status!.operationState!;
    expect(state.phase).toBe('Failed');
    expect(state.message).toBe(
      'one or more objects failed to apply, reason: admission webhook "policy.example.com" denied the request: image not signed',
    );
    expect(state.syncResult!.resources!.find((r) => r.status === 'SyncFailed')).toMatchObject({
      kind: 'Deployment',
      name: 'web',
      hookPhase: 'Failed',
    });
    expect(app().status!.sync!.status).toBe('OutOfSync');
    expect(app().status!.history).toHaveLength(1);
    expect(app().operation).toBeUndefined();
  });

  it('honours operation.retry.limit with backoff, then fails saying how often it retried', () => {
    const { controller, app } = setup();
    controller.faults.failApp('test', 'web-c1');
    controller.requestSync(
      'test',
      'web-c1',
      { name: 'web-c1', retryStrategy: { limit: 2, backoff: { duration: '5s', factor: 2 } } },
      'alice',
    );
    controller.advance(6000); // start at 1s, first attempt fails at 6s
    let state = app().status!.operationState!;
    expect(state.phase).toBe('Running');
    expect(state.retryCount).toBe(1);
    expect(state.message).toMatch(
      /^Retrying attempt #1 at \d{1,2}:\d\d[AP]M: one or more objects failed to apply, reason: Deployment.apps "web" is invalid/,
    );
    controller.advance(5000 + 5000); // backoff 5s, attempt 5s → second failure at 16s
    state = app().status!.operationState!;
    expect(state.retryCount).toBe(2);
    expect(state.phase).toBe('Running');
    controller.advance(10_000 + 4000); // backoff 10s, attempt: still running at 30s
    expect(app().status!.operationState!.phase).toBe('Running');
    controller.advance(1000);
    state = app().status!.operationState!;
    expect(state.phase).toBe('Failed');
    expect(state.retryCount).toBe(2);
    expect(state.message).toMatch(/ \(retried 2 times\)\.$/);
    expect(state.finishedAt).toBe('2026-03-01T10:00:31Z');
  });

  it('terminates a running operation: Terminating, then Failed "Operation terminated"', () => {
    const { controller, app } = setup();
    expect(() => controller.requestTerminate('test', 'web-c1')).toThrow(
      expect.objectContaining({
        code: 'invalid_argument',
        message: 'Unable to terminate operation. No operation is in progress',
      }),
    );
    controller.requestSync('test', 'web-c1', { name: 'web-c1' }, 'alice');
    controller.advance(2000);
    controller.requestTerminate('test', 'web-c1');
    expect(app().status!.operationState!.phase).toBe('Terminating');
    controller.advance(1000);
    const state = app().status!.operationState!;
    expect(state.phase).toBe('Failed');
    expect(state.message).toBe('Operation terminated');
    expect(app().operation).toBeUndefined();
    controller.advance(20_000);
    expect(app().status!.sync!.status).toBe('OutOfSync');
    expect(app().status!.history).toHaveLength(1);
  });

  it('crash-loops after a sync (Degraded, back-off message) and recovers when cleared', () => {
    const { controller, app } = setup();
    controller.faults.crashLoop('test', 'web-c1');
    controller.requestSync('test', 'web-c1', { name: 'web-c1', prune: true }, 'alice');
    controller.advance(6000);
    expect(app().status!.operationState!.phase).toBe('Succeeded');
    expect(app().status!.health!.status).toBe('Progressing');
    controller.advance(10_000);
    expect(app().status!.health!.status).toBe('Degraded');
    const deployment = app().status!.resources!.find((r) => r.kind === 'Deployment')!;
    expect(deployment.health!.status).toBe('Degraded');
    expect(deployment.health!.message).toMatch(
      /^back-off 5m0s restarting failed container=web pod=web-[0-9a-f]{10}-[0-9a-f]{5}_web\([0-9a-f-]{36}\)$/,
    );
    expect(controller.faults.list()).toEqual([{ kind: 'crashloop', instance: 'test', app: 'web-c1' }]);

    controller.faults.clear('test', 'web-c1');
    expect(app().status!.health!.status).toBe('Progressing');
    controller.advance(10_000);
    expect(app().status!.health!.status).toBe('Healthy');
    expect(app().status!.resources!.find((r) => r.kind === 'Deployment')!.health).toEqual({ status: 'Healthy' });
    expect(controller.faults.list()).toEqual([]);
  });

  it('reads faults a fixture declares in sim annotations', () => {
    const { controller, app } = setup({
      apps: [
        webApp('web-c1', { annotations: { 'sim.rollcall.io/fail-sync': 'quota exceeded' } }),
        webApp('web-c2', { annotations: { 'sim.rollcall.io/crash-loop': 'true' } }),
      ],
    });
    controller.requestSync('test', 'web-c1', { name: 'web-c1' }, 'alice');
    controller.requestSync('test', 'web-c2', { name: 'web-c2', prune: true }, 'alice');
    controller.advance(20_000);
    expect(app('web-c1').status!.operationState).toMatchObject({
      phase: 'Failed',
      message: 'one or more objects failed to apply, reason: quota exceeded',
    });
    expect(app('web-c2').status!.health!.status).toBe('Degraded');
  });

  it('takes a cluster down: connection Failed, its apps Unknown with a ComparisonError, syncs Error; and brings it back', () => {
    const other = webApp('web-c2');
    other.spec.destination = { server: 'https://k8s-c2.example.net:6443', namespace: 'web' };
    const { controller, store, app } = setup({ apps: [webApp('web-c1'), other] });
    controller.faults.clusterDown('test', 'c1', true);
    const c = store.clusters.get(SERVER)!;
    expect(c.connectionState!.status).toBe('Failed');
    expect(c.connectionState!.message).toBe(
      'Unable to connect to cluster: Get "https://k8s-c1.example.net:6443/version?timeout=32s": dial tcp k8s-c1.example.net:6443: i/o timeout',
    );
    expect(c.info!.connectionState!.status).toBe('Failed');
    expect(app().status!.sync!.status).toBe('Unknown');
    expect(app().status!.health!.status).toBe('Unknown');
    expect(app().status!.conditions![0]).toMatchObject({ type: 'ComparisonError' });
    expect(app().status!.conditions![0].message).toContain(
      'failed to get cluster info for "https://k8s-c1.example.net:6443"',
    );
    expect(app('web-c2').status!.sync!.status).toBe('OutOfSync');

    controller.requestSync('test', 'web-c1', { name: 'web-c1' }, 'alice');
    controller.advance(6000);
    expect(app().status!.operationState!.phase).toBe('Error');
    expect(app().status!.operationState!.message).toMatch(/^ComparisonError: Failed to load live state/);

    controller.faults.clusterDown('test', SERVER, false);
    expect(store.clusters.get(SERVER)!.connectionState!.status).toBe('Successful');
    expect(app().status!.sync!.status).toBe('OutOfSync');
    expect(app().status!.health!.status).toBe('Healthy');
    expect(app().status!.conditions).toBeUndefined();
    expect(() => controller.faults.clusterDown('test', 'nope', true)).toThrow(
      expect.objectContaining({ code: 'not_found' }),
    );
  });
});

describe('SimController autosync', () => {
  it('auto-syncs an automated app when a new commit makes it OutOfSync, once per revision', () => {
    const synced = webApp('web-c1', { sync: 'Synced', syncPolicy: { automated: { prune: true, selfHeal: true } } });
    for (const r of synced.status!.resources!) r.status = 'Synced';
    synced.status!.resources = synced.status!.resources!.filter((r) => !r.requiresPruning);
    const { controller, app } = setup({ apps: [synced] });
    controller.advance(5000);
    expect(app().operation).toBeUndefined();

    const rev = controller.newCommit('test', ['web-c1']);
    controller.advance(1000);
    expect(app().operation).toEqual({
      sync: { revision: rev, prune: true },
      initiatedBy: { automated: true },
      retry: {},
    });
    controller.advance(7000);
    expect(app().status!.operationState).toMatchObject({
      phase: 'Succeeded',
      operation: { initiatedBy: { automated: true } },
    });
    expect(app().status!.sync).toMatchObject({ status: 'Synced', revision: rev });
  });

  it('does not auto-sync a revision whose automated sync already failed', () => {
    const synced = webApp('web-c1', { sync: 'Synced', syncPolicy: { automated: {} } });
    const { controller, app } = setup({ apps: [synced] });
    controller.faults.failApp('test', 'web-c1');
    controller.newCommit('test', ['web-c1']);
    controller.advance(10_000);
    expect(app().status!.operationState!.phase).toBe('Failed');
    const attempts = app().status!.operationState!.startedAt;
    controller.advance(60_000);
    expect(app().status!.operationState!.startedAt).toBe(attempts);
    expect(app().operation).toBeUndefined();
  });

  it('writes no auto-sync under a deny window (the app stays OutOfSync) and auto-syncs on the first refresh after it', () => {
    const synced = webApp('web-c1', { sync: 'Synced', syncPolicy: { automated: { prune: true } } });
    const { controller, store, app } = setup({ apps: [synced] });
    // 10:00 for 30m: active from just after 10:00:00 (NOW) to just before 10:30:00.
    denyIn(store, { schedule: '0 10 * * *', duration: '30m', applications: ['web-*'] });
    controller.advance(1000);
    controller.newCommit('test', ['web-c1']);
    controller.advance(29 * 60_000);
    expect(app().operation).toBeUndefined();
    expect(app().status!.operationState).toBeUndefined();
    expect(app().status!.sync!.status).toBe('OutOfSync');
    controller.advance(60_000 + 7000);
    expect(app().status!.operationState).toMatchObject({
      phase: 'Succeeded',
      operation: { initiatedBy: { automated: true } },
    });
    expect(Date.parse(app().status!.operationState!.startedAt!)).toBeGreaterThanOrEqual(
      Date.parse('2026-03-01T10:30:00Z'),
    );
    expect(app().status!.sync!.status).toBe('Synced');
  });

  it('holds a manual operation Running under a deny window without manualSync, and runs it when the window closes', () => {
    const { controller, store, app } = setup();
    denyIn(store, { schedule: '0 10 * * *', duration: '10m', applications: ['*'] });
    controller.advance(1000);
    // Written past the API server (as a rollback's operation is): the application controller still asks the windows.
    controller.requestSync('test', 'web-c1', { name: 'web-c1' }, 'alice');
    controller.advance(5 * 60_000);
    expect(app().status!.operationState).toMatchObject({
      phase: 'Running',
      message: 'Sync operation blocked by sync window',
    });
    controller.advance(6 * 60_000);
    expect(app().status!.operationState!.phase).toBe('Succeeded');
  });

  it('lets a manual operation run under a deny window with manualSync, and holds a running sync a window opens on', () => {
    const { controller, store, app } = setup({ apps: [webApp('web-c1'), webApp('web-c2')] });
    denyIn(store, { schedule: '0 10 * * *', duration: '10m', applications: ['web-c1'], manualSync: true });
    controller.advance(1000);
    controller.requestSync('test', 'web-c1', { name: 'web-c1' }, 'alice');
    controller.advance(7000);
    expect(app().status!.operationState!.phase).toBe('Succeeded');

    // web-c2's sync (5 s) starts at 10:00:09; a window from 10:00:12 catches it before it ends.
    controller.requestSync('test', 'web-c2', { name: 'web-c2' }, 'alice');
    controller.advance(1000);
    denyIn(store, { schedule: '* * * * *', duration: '1h', applications: ['web-c2'] });
    controller.advance(10_000);
    expect(app('web-c2').status!.operationState).toMatchObject({
      phase: 'Running',
      message: 'Sync operation blocked by sync window',
    });
  });

  it('leaves apps with automated.enabled=false alone', () => {
    const synced = webApp('web-c1', { sync: 'Synced', syncPolicy: { automated: { enabled: false, prune: true } } });
    const { controller, app } = setup({ apps: [synced] });
    controller.newCommit('test', ['web-c1']);
    controller.advance(10_000);
    expect(app().operation).toBeUndefined();
    expect(app().status!.operationState).toBeUndefined();
  });
});
