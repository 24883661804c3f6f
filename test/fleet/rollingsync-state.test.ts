import { describe, expect, it } from 'vitest';
import type { Application, ApplicationSet, ApplicationSetRolloutStep } from '../../src/infra/argocd/types.js';
import {
  ROLLOUT_MESSAGES,
  advanceRollout,
  appsToSync,
  evaluateApplicationStatus,
  k8sTime,
  rollingSyncOperation,
  rolloutAppState,
  upsertCondition,
  type RolloutAdvance,
  type RolloutAppState,
} from '../../src/fleet/rollingsync.js';

const T0 = new Date('2026-12-02T10:00:00Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

function rollingAppSet(steps: ApplicationSetRolloutStep[]): ApplicationSet {
  return {
    metadata: { name: 'payments', namespace: 'argocd' },
    spec: {
      generators: [],
      template: {
        metadata: { name: '{{name}}', labels: { env: '{{env}}' } },
        spec: { project: 'default', destination: { name: '{{cluster}}' } },
      },
      strategy: { type: 'RollingSync', rollingSync: { steps } },
    },
    status: {
      conditions: [
        {
          type: 'ResourcesUpToDate',
          status: 'True',
          reason: 'ApplicationSetUpToDate',
          message: 'All applications have been generated successfully',
          lastTransitionTime: '2026-12-01T00:00:00Z',
        },
      ],
    },
  };
}

const envStep = (env: string, maxUpdate?: number | string): ApplicationSetRolloutStep => ({
  matchExpressions: [{ key: 'env', operator: 'In', values: [env] }],
  ...(maxUpdate === undefined ? {} : { maxUpdate }),
});

function app(name: string, env: string | undefined, over: Partial<RolloutAppState> = {}): RolloutAppState {
  return {
    name,
    labels: env ? { env } : {},
    sync: 'OutOfSync',
    health: 'Healthy',
    revisions: ['rev1'],
    operationRunning: false,
    errorCondition: false,
    ...over,
  };
}

/** Runs one pass and writes its result back, as the appset controller persists it. */
function pass(set: ApplicationSet, apps: RolloutAppState[], now: Date): RolloutAdvance {
  const result = advanceRollout(set, apps, now);
  set.status = { ...set.status, applicationStatus: result.applicationStatus, conditions: result.conditions };
  return result;
}

const entry = (result: RolloutAdvance, name: string) => {
  const found = result.applicationStatus.find((e) => e.application === name);
  if (!found) throw new Error(`no entry for ${name}`);
  return found;
};
const statuses = (result: RolloutAdvance) =>
  Object.fromEntries(result.applicationStatus.map((e) => [e.application, e.status]));
const progressing = (result: RolloutAdvance) => result.conditions.find((c) => c.type === 'RolloutProgressing');

/** What the app controller does once RollingSync wrote the operation: a sync starts, then finishes. */
function syncStarted(state: RolloutAppState, now: Date): RolloutAppState {
  return {
    ...state,
    operationStartedAt: k8sTime(now),
    operationPhase: 'Running',
    operationRunning: true,
    reconciledAt: k8sTime(now),
  };
}
function syncSucceeded(state: RolloutAppState, now: Date): RolloutAppState {
  return {
    ...state,
    operationPhase: 'Succeeded',
    operationRunning: false,
    sync: 'Synced',
    health: 'Healthy',
    reconciledAt: k8sTime(now),
  };
}

describe('new entries and unmatched apps', () => {
  it("gives a new app a Waiting entry with Argo CD's message, its step, revisions and transition time", () => {
    const set = rollingAppSet([envStep('stage', 0)]);
    const result = pass(set, [app('a-stage', 'stage')], T0);
    expect(entry(result, 'a-stage')).toEqual({
      application: 'a-stage',
      status: 'Waiting',
      message: 'No Application status found, defaulting status to Waiting',
      step: '1',
      targetRevisions: ['rev1'],
      lastTransitionTime: '2026-12-02T10:00:00Z',
    });
  });

  it('leaves an app matched by no step Waiting with step -1', () => {
    const set = rollingAppSet([envStep('stage')]);
    let result = pass(set, [app('a-stage', 'stage'), app('z-dev', 'dev')], T0);
    expect(entry(result, 'z-dev')).toMatchObject({ status: 'Waiting', step: '-1' });
    expect(result.toSync).toEqual(['a-stage']);
    for (let i = 1; i <= 5; i++) {
      result = pass(set, [app('a-stage', 'stage', { sync: 'Synced' }), app('z-dev', 'dev')], at(i * 60));
      expect(result.toSync).not.toContain('z-dev');
      expect(entry(result, 'z-dev').status).toBe('Waiting');
    }
  });

  it('never lets an unmatched app block completion, and marks it Healthy once synced by hand', () => {
    const set = rollingAppSet([envStep('stage')]);
    pass(set, [app('a-stage', 'stage', { sync: 'Synced' }), app('z-dev', 'dev')], T0);
    let result = pass(set, [app('a-stage', 'stage', { sync: 'Synced' }), app('z-dev', 'dev')], at(10));
    expect(progressing(result)).toMatchObject({
      status: 'False',
      reason: 'ApplicationSetRolloutComplete',
      message: 'ApplicationSet Rollout has completed',
    });
    result = pass(set, [app('a-stage', 'stage', { sync: 'Synced' }), app('z-dev', 'dev', { sync: 'Synced' })], at(20));
    expect(entry(result, 'z-dev')).toMatchObject({
      status: 'Healthy',
      step: '-1',
      message: ROLLOUT_MESSAGES.syncedHealthy,
    });
  });

  it('writes entries sorted by application name, one per app, and drops entries of deleted apps', () => {
    const set = rollingAppSet([{}]);
    pass(set, [app('c', 'x'), app('a', 'x'), app('gone', 'x'), app('b', 'x')], T0);
    const result = pass(set, [app('c', 'x'), app('a', 'x'), app('b', 'x')], at(1));
    expect(result.applicationStatus.map((e) => e.application)).toEqual(['a', 'b', 'c']);
  });

  it('writes nothing and syncs nothing when RollingSync is not active', () => {
    const set = rollingAppSet([]);
    const result = advanceRollout(set, [app('a', 'stage')], T0);
    expect(result.applicationStatus).toEqual([]);
    expect(result.toSync).toEqual([]);
    const allAtOnce: ApplicationSet = { ...set, spec: { ...set.spec, strategy: { type: 'AllAtOnce' } } };
    expect(
      advanceRollout(allAtOnce, [app('a', 'stage')], T0).conditions.find((c) => c.type === 'RolloutProgressing'),
    ).toBeUndefined();
  });
});

describe('Waiting', () => {
  it('moves a Waiting app that is already Synced and Healthy straight to Healthy without a sync', () => {
    const set = rollingAppSet([envStep('stage')]);
    const result = pass(set, [app('a', 'stage', { sync: 'Synced', health: 'Healthy' })], T0);
    expect(entry(result, 'a')).toMatchObject({
      status: 'Healthy',
      message: 'Application resource has synced, updating status to Healthy',
    });
    expect(result.toSync).toEqual([]);
  });

  it('moves a Waiting app that is Synced but not Healthy to Progressing without a sync', () => {
    const set = rollingAppSet([envStep('stage')]);
    const result = pass(set, [app('a', 'stage', { sync: 'Synced', health: 'Degraded' })], T0);
    expect(entry(result, 'a')).toMatchObject({
      status: 'Progressing',
      message: 'Application resource has synced, updating status to Progressing',
    });
    expect(result.toSync).toEqual([]);
  });

  it('moves Waiting apps of a released step to Pending and asks for their sync', () => {
    const set = rollingAppSet([envStep('stage')]);
    const result = pass(set, [app('a', 'stage'), app('b', 'stage')], T0);
    expect(statuses(result)).toEqual({ a: 'Pending', b: 'Pending' });
    expect(entry(result, 'a')).toMatchObject({
      message: 'Application moved to Pending status, watching for the Application resource to start Progressing',
      lastTransitionTime: '2026-12-02T10:00:00Z',
    });
    expect(result.toSync).toEqual(['a', 'b']);
    expect(result.pendingSync).toEqual(['a', 'b']);
  });

  it('keeps lastTransitionTime when the status does not change', () => {
    const set = rollingAppSet([envStep('stage'), envStep('prod')]);
    pass(set, [app('a', 'stage'), app('p', 'prod')], T0);
    const result = pass(set, [app('a', 'stage'), app('p', 'prod')], at(300));
    expect(entry(result, 'p')).toMatchObject({ status: 'Waiting', lastTransitionTime: '2026-12-02T10:00:00Z' });
    expect(entry(result, 'a')).toMatchObject({ status: 'Pending', lastTransitionTime: '2026-12-02T10:00:00Z' });
    expect(result.toSync).toEqual([]);
    expect(result.pendingSync).toEqual(['a']);
  });
});

describe('maxUpdate in the state machine', () => {
  it('lets at most maxUpdate apps of a step be Pending or Progressing, in name order', () => {
    const set = rollingAppSet([envStep('stage', 2)]);
    const names = ['e', 'd', 'c', 'b', 'a'];
    let states = names.map((n) => app(n, 'stage'));
    let result = pass(set, states, T0);
    expect(result.toSync).toEqual(['a', 'b']);
    // a starts syncing (Progressing), b is still Pending: no room for c.
    states = states.map((s) => (s.name === 'a' ? syncStarted(s, at(5)) : s));
    result = pass(set, states, at(6));
    expect(statuses(result)).toMatchObject({ a: 'Progressing', b: 'Pending', c: 'Waiting' });
    expect(result.toSync).toEqual([]);
    // a becomes Healthy: one slot frees up for c.
    states = states.map((s) => (s.name === 'a' ? syncSucceeded(s, at(20)) : s));
    pass(set, states, at(21));
    result = pass(set, states, at(22));
    expect(statuses(result)).toMatchObject({ a: 'Healthy', b: 'Pending', c: 'Pending', d: 'Waiting' });
  });

  it('never moves an app of a manual-gate step (maxUpdate 0) to Pending; a manual sync completes it', () => {
    const set = rollingAppSet([envStep('stage'), envStep('prod', 0), envStep('dr')]);
    let states = [app('s', 'stage', { sync: 'Synced' }), app('p', 'prod'), app('d', 'dr')];
    for (let i = 0; i < 5; i++) {
      const result = pass(set, states, at(i * 60));
      expect(entry(result, 'p').status).toBe('Waiting');
      expect(result.toSync).not.toContain('p');
      expect(progressing(result)?.message).toBe('ApplicationSet is performing rollout of step 2');
    }
    states = states.map((s) => (s.name === 'p' ? { ...s, sync: 'Synced' as const } : s));
    const result = pass(set, states, at(600));
    expect(entry(result, 'p').status).toBe('Healthy');
    expect(result.toSync).toEqual(['d']);
  });

  it('treats "0%" as a manual gate too', () => {
    const set = rollingAppSet([envStep('stage', '0%')]);
    expect(pass(set, [app('a', 'stage'), app('b', 'stage')], T0).toSync).toEqual([]);
  });

  it('scales a percent against the step total, counting apps in no step toward step 1', () => {
    // 2 stage apps + 2 unmatched apps: Argo CD computes 50% of 4 = 2, not 50% of 2 = 1.
    const set = rollingAppSet([envStep('stage', '50%')]);
    const result = pass(set, [app('a', 'stage'), app('b', 'stage'), app('x', 'dev'), app('y', 'dev')], T0);
    expect(result.toSync).toEqual(['a', 'b']);
    // Without unmatched apps the same step goes one at a time.
    const alone = rollingAppSet([envStep('stage', '50%')]);
    expect(pass(alone, [app('a', 'stage'), app('b', 'stage')], T0).toSync).toEqual(['a']);
  });

  it("counts an unmatched Progressing app against step 1's maxUpdate", () => {
    const set = rollingAppSet([envStep('stage', 1)]);
    // x is in no step, Synced but Degraded -> Progressing, which fills step 1's only slot.
    const result = pass(set, [app('a', 'stage'), app('x', 'dev', { sync: 'Synced', health: 'Degraded' })], T0);
    expect(entry(result, 'x')).toMatchObject({ status: 'Progressing', step: '-1' });
    expect(entry(result, 'a').status).toBe('Waiting');
    expect(result.toSync).toEqual([]);
  });

  it('raises a small percent to one app at a time, and treats an invalid string as 1', () => {
    const small = rollingAppSet([envStep('stage', '10%')]);
    expect(pass(small, [app('a', 'stage'), app('b', 'stage'), app('c', 'stage')], T0).toSync).toEqual(['a']);
    const invalid = rollingAppSet([envStep('stage', 'abc')]);
    expect(pass(invalid, [app('a', 'stage'), app('b', 'stage')], T0).toSync).toEqual(['a']);
  });

  it("applies the first matching step's maxUpdate to an app selected by two steps", () => {
    const set = rollingAppSet([
      { matchExpressions: [{ key: 'env', operator: 'In', values: ['stage'] }], maxUpdate: 1 },
      { matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['prod'] }] },
    ]);
    const result = pass(set, [app('a', 'stage'), app('b', 'stage')], T0);
    expect(result.stepsByApp).toEqual({ a: [1, 2], b: [1, 2] });
    expect(entry(result, 'a').step).toBe('1');
    expect(result.toSync).toEqual(['a']);
  });
});

describe('Pending → Progressing → Healthy', () => {
  const setup = () => {
    const set = rollingAppSet([envStep('stage')]);
    pass(set, [app('a', 'stage')], T0);
    return set;
  };

  it('moves Pending to Progressing once a sync started after the Pending transition', () => {
    const set = setup();
    const result = pass(set, [syncStarted(app('a', 'stage'), at(3))], at(4));
    expect(entry(result, 'a')).toMatchObject({
      status: 'Progressing',
      message: 'Application resource became Progressing, updating status from Pending to Progressing',
      lastTransitionTime: '2026-12-02T10:00:04Z',
    });
  });

  it('stays Pending while the last operation started before the Pending transition', () => {
    const set = setup();
    const old = {
      ...app('a', 'stage'),
      operationStartedAt: '2026-12-02T09:00:00Z',
      operationPhase: 'Succeeded' as const,
    };
    expect(entry(pass(set, [old], at(60)), 'a').status).toBe('Pending');
    // Same second as the transition is not "later" (Kubernetes times have second precision).
    expect(entry(pass(set, [{ ...old, operationStartedAt: '2026-12-02T10:00:00Z' }], at(61)), 'a').status).toBe(
      'Pending',
    );
  });

  it('stays Pending until the app controller reconciled the app after the transition', () => {
    const set = setup();
    const started = { ...syncStarted(app('a', 'stage'), at(3)), reconciledAt: '2026-12-02T09:59:00Z' };
    expect(entry(pass(set, [started], at(4)), 'a').status).toBe('Pending');
    expect(entry(pass(set, [{ ...started, reconciledAt: k8sTime(at(5)) }], at(6)), 'a').status).toBe('Progressing');
  });

  it('says whether the sync succeeded or just completed when moving to Progressing', () => {
    const ok = setup();
    expect(entry(pass(ok, [syncSucceeded(syncStarted(app('a', 'stage'), at(3)), at(4))], at(5)), 'a').message).toBe(
      'Application resource completed a sync successfully, updating status from Pending to Progressing',
    );
    const failed = setup();
    const failedSync = {
      ...syncStarted(app('a', 'stage'), at(3)),
      operationPhase: 'Failed' as const,
      operationRunning: false,
      health: 'Degraded' as const,
    };
    expect(entry(pass(failed, [failedSync], at(5)), 'a')).toMatchObject({
      status: 'Progressing',
      message: 'Application resource completed a sync, updating status from Pending to Progressing',
    });
  });

  it('moves a Pending app with an InvalidSpecError or UnknownError condition to Progressing', () => {
    const set = setup();
    expect(entry(pass(set, [app('a', 'stage', { errorCondition: true })], at(5)), 'a')).toMatchObject({
      status: 'Progressing',
      message: 'Application resource has error and cannot sync, updating status to Progressing',
    });
  });

  it('moves Progressing to Healthy only when the app is Healthy and Synced', () => {
    const set = setup();
    const started = syncStarted(app('a', 'stage'), at(3));
    pass(set, [started], at(4));
    expect(entry(pass(set, [{ ...started, health: 'Healthy', sync: 'OutOfSync' }], at(10)), 'a').status).toBe(
      'Progressing',
    );
    expect(entry(pass(set, [{ ...started, health: 'Progressing', sync: 'Synced' }], at(11)), 'a').status).toBe(
      'Progressing',
    );
    expect(entry(pass(set, [syncSucceeded(started, at(12))], at(13)), 'a')).toMatchObject({
      status: 'Healthy',
      message: 'Application resource became Healthy, updating status from Progressing to Healthy',
      lastTransitionTime: '2026-12-02T10:00:13Z',
    });
  });

  it('does not jump from Pending to Healthy in one pass', () => {
    const set = setup();
    const done = syncSucceeded(syncStarted(app('a', 'stage'), at(3)), at(4));
    expect(entry(pass(set, [done], at(5)), 'a').status).toBe('Progressing');
    expect(entry(pass(set, [done], at(6)), 'a').status).toBe('Healthy');
  });

  it('keeps a Healthy entry Healthy when the app degrades or drifts at the same revision', () => {
    const set = rollingAppSet([envStep('stage')]);
    pass(set, [app('a', 'stage', { sync: 'Synced' })], T0);
    expect(entry(pass(set, [app('a', 'stage', { sync: 'OutOfSync', health: 'Degraded' })], at(60)), 'a')).toMatchObject(
      { status: 'Healthy', lastTransitionTime: '2026-12-02T10:00:00Z' },
    );
  });
});

describe('revision and spec changes', () => {
  it('resets a Healthy entry to Waiting when the revisions differ from targetRevisions', () => {
    const set = rollingAppSet([envStep('stage', 0)]);
    pass(set, [app('a', 'stage', { sync: 'Synced' })], T0);
    const result = pass(set, [app('a', 'stage', { revisions: ['rev2'] })], at(60));
    expect(entry(result, 'a')).toMatchObject({
      status: 'Waiting',
      message: 'Application has pending changes, setting status to Waiting',
      targetRevisions: ['rev2'],
      lastTransitionTime: '2026-12-02T10:01:00Z',
    });
  });

  it('restarts the rollout from step 1 after a new revision', () => {
    const set = rollingAppSet([envStep('stage'), envStep('prod')]);
    pass(set, [app('s', 'stage', { sync: 'Synced' }), app('p', 'prod', { sync: 'Synced' })], T0);
    const result = pass(
      set,
      [app('s', 'stage', { revisions: ['rev2'] }), app('p', 'prod', { revisions: ['rev2'] })],
      at(60),
    );
    expect(statuses(result)).toEqual({ s: 'Pending', p: 'Waiting' });
    expect(result.toSync).toEqual(['s']);
    expect(progressing(result)?.message).toBe('ApplicationSet is performing rollout of step 1');
  });

  it('names a spec change, or both, in the Waiting message', () => {
    const set = rollingAppSet([envStep('stage', 0)]);
    pass(set, [app('a', 'stage', { sync: 'Synced' }), app('b', 'stage', { sync: 'Synced' })], T0);
    const result = pass(
      set,
      [app('a', 'stage', { specChanged: true }), app('b', 'stage', { specChanged: true, revisions: ['rev2'] })],
      at(60),
    );
    expect(entry(result, 'a').message).toBe(
      'Application has pending changes (spec differs), setting status to Waiting',
    );
    expect(entry(result, 'b').message).toBe(
      'Application has pending changes (revision and spec differ), setting status to Waiting',
    );
  });

  // applicationset_controller.go setAppSetApplicationStatus writes the list only when an entry's status,
  // step or message changed: Healthy → (revision change) Waiting → Healthy again in one pass, with the same
  // message, changes none of them, so the new targetRevisions (and lastTransitionTime) are not saved.
  it('goes straight back to Healthy when the new revision is already synced and healthy, and does not save the new targetRevisions', () => {
    const set = rollingAppSet([envStep('stage', 0)]);
    const first = pass(set, [app('a', 'stage', { sync: 'Synced' })], T0);
    const result = pass(set, [app('a', 'stage', { sync: 'Synced', revisions: ['rev2'] })], at(60));
    expect(entry(result, 'a')).toMatchObject({
      status: 'Healthy',
      targetRevisions: ['rev1'],
      message: ROLLOUT_MESSAGES.syncedHealthy,
    });
    expect(entry(result, 'a').lastTransitionTime).toBe(entry(first, 'a').lastTransitionTime);
  });

  it('saves the new targetRevisions when the message changes with them (Progressing → Waiting)', () => {
    const set = rollingAppSet([envStep('stage', 0)]);
    pass(set, [app('a', 'stage', { sync: 'Synced', health: 'Progressing' })], T0);
    const result = pass(set, [app('a', 'stage', { sync: 'OutOfSync', revisions: ['rev2'] })], at(60));
    expect(entry(result, 'a')).toMatchObject({
      status: 'Waiting',
      targetRevisions: ['rev2'],
      message: ROLLOUT_MESSAGES.revisionChanged,
    });
  });

  // migrateStatus (applicationset_controller.go) first turns an entry's nil targetRevisions into [] and
  // saves it; UpdateApplicationSetApplicationStatus then compares with reflect.DeepEqual against
  // app.Status.GetRevisions(), which is [] for an app with no revision.
  it('reads an entry without targetRevisions as an empty list (migrated and saved), so only an app with a revision differs', () => {
    const set = rollingAppSet([envStep('stage', 0)]);
    const legacy = {
      application: 'a',
      status: 'Pending',
      message: ROLLOUT_MESSAGES.pending,
      step: '1',
      lastTransitionTime: '2026-12-02T10:00:00Z',
    } as never;
    set.status = { applicationStatus: [legacy] };
    const none = advanceRollout(set, [app('a', 'stage', { revisions: [] })], at(60));
    expect(entry(none, 'a')).toMatchObject({
      status: 'Pending',
      targetRevisions: [],
      message: ROLLOUT_MESSAGES.pending,
    });
    set.status = { applicationStatus: [legacy] };
    const withRevision = advanceRollout(set, [app('a', 'stage', { revisions: ['rev1'] })], at(60));
    expect(entry(withRevision, 'a')).toMatchObject({
      status: 'Waiting',
      targetRevisions: ['rev1'],
      message: ROLLOUT_MESSAGES.revisionChanged,
    });
  });

  // `app.Status.ReconciledAt == nil || (newAppStatus.LastTransitionTime != nil && ReconciledAt.After(...))`
  it('keeps a Pending entry without lastTransitionTime Pending once the app has a reconciledAt, even after a sync started', () => {
    const set = rollingAppSet([envStep('stage')]);
    const pendingEntry = {
      application: 'a',
      status: 'Pending' as const,
      message: ROLLOUT_MESSAGES.pending,
      step: '1',
      targetRevisions: ['rev1'],
    };
    set.status = { applicationStatus: [pendingEntry as never] };
    const reconciled = app('a', 'stage', {
      operationStartedAt: '2026-12-02T10:00:05Z',
      operationPhase: 'Running',
      operationRunning: true,
      reconciledAt: '2026-12-02T10:00:06Z',
    });
    expect(entry(advanceRollout(set, [reconciled], at(60)), 'a').status).toBe('Pending');
    const neverReconciled = { ...reconciled, reconciledAt: undefined };
    expect(entry(advanceRollout(set, [neverReconciled], at(60)), 'a').status).toBe('Progressing');
  });

  it('sends a Pending app back to Waiting on a revision change', () => {
    const set = rollingAppSet([envStep('stage', 1)]);
    pass(set, [app('a', 'stage'), app('b', 'stage')], T0);
    const result = advanceRollout(set, [app('a', 'stage', { revisions: ['rev2'] }), app('b', 'stage')], at(30));
    // a goes back to Waiting and is moved to Pending again in the same pass, freeing nothing for b.
    expect(entry(result, 'a')).toMatchObject({ status: 'Pending', targetRevisions: ['rev2'] });
    expect(entry(result, 'b').status).toBe('Waiting');
  });
});

describe('step order', () => {
  it('releases a step only when every app in all earlier steps is Healthy', () => {
    const set = rollingAppSet([envStep('stage'), envStep('prod')]);
    let s1 = app('s1', 'stage');
    const s2 = app('s2', 'stage', { sync: 'Synced' });
    const p = app('p', 'prod');
    let result = pass(set, [s1, s2, p], T0);
    expect(statuses(result)).toEqual({ s1: 'Pending', s2: 'Healthy', p: 'Waiting' });
    s1 = syncStarted(s1, at(2));
    result = pass(set, [s1, s2, p], at(3));
    expect(entry(result, 'p').status).toBe('Waiting');
    s1 = syncSucceeded(s1, at(10));
    result = pass(set, [s1, s2, p], at(11));
    expect(statuses(result)).toEqual({ s1: 'Healthy', s2: 'Healthy', p: 'Pending' });
    expect(result.toSync).toEqual(['p']);
  });

  it('lets a stuck app block every later step forever: there is no step timeout', () => {
    const set = rollingAppSet([envStep('stage'), envStep('prod')]);
    const failed = {
      ...syncStarted(app('s', 'stage'), at(2)),
      operationPhase: 'Failed' as const,
      operationRunning: false,
      health: 'Degraded' as const,
    };
    pass(set, [app('s', 'stage'), app('p', 'prod')], T0);
    for (const hours of [1, 6, 24, 24 * 30]) {
      const result = pass(set, [failed, app('p', 'prod')], at(hours * 3600));
      expect(statuses(result)).toEqual({ s: 'Progressing', p: 'Waiting' });
      expect(result.toSync).toEqual([]);
      expect(progressing(result)?.message).toBe('ApplicationSet is performing rollout of step 1');
    }
  });

  it('treats a step that matches no app as complete', () => {
    const set = rollingAppSet([envStep('canary'), envStep('prod')]);
    const result = pass(set, [app('p', 'prod')], T0);
    expect(result.toSync).toEqual(['p']);
    expect(progressing(result)?.message).toBe('ApplicationSet is performing rollout of step 2');
  });

  it('holds later steps on an overlapping app listed in an earlier step it was not assigned to', () => {
    // o matches steps 1 and 2 (assigned step 1); q is in step 2 only; r in step 3.
    const set = rollingAppSet([
      { matchExpressions: [{ key: 'env', operator: 'In', values: ['stage'] }] },
      { matchExpressions: [{ key: 'env', operator: 'In', values: ['stage', 'prod'] }] },
      { matchExpressions: [{ key: 'env', operator: 'In', values: ['dr'] }] },
    ]);
    const result = pass(set, [app('o', 'stage'), app('q', 'prod', { sync: 'Synced' }), app('r', 'dr')], T0);
    expect(statuses(result)).toEqual({ o: 'Pending', q: 'Healthy', r: 'Waiting' });
    expect(entry(result, 'o').step).toBe('1');
    expect(progressing(result)?.message).toBe('ApplicationSet is performing rollout of step 1');
  });
});

describe('RolloutProgressing condition', () => {
  it('reports the first step whose apps are not all Healthy, then completion', () => {
    const set = rollingAppSet([envStep('stage'), envStep('prod')]);
    let result = pass(set, [app('s', 'stage', { sync: 'Synced' }), app('p', 'prod')], T0);
    expect(progressing(result)).toMatchObject({
      type: 'RolloutProgressing',
      status: 'True',
      reason: 'ApplicationSetModified',
      message: 'ApplicationSet is performing rollout of step 2',
      lastTransitionTime: '2026-12-02T10:00:00Z',
    });
    const p = syncSucceeded(syncStarted(app('p', 'prod'), at(10)), at(20));
    expect(progressing(pass(set, [app('s', 'stage', { sync: 'Synced' }), p], at(21)))?.message).toBe(
      'ApplicationSet is performing rollout of step 2',
    );
    result = pass(set, [app('s', 'stage', { sync: 'Synced' }), p], at(30));
    expect(progressing(result)).toMatchObject({
      status: 'False',
      reason: 'ApplicationSetRolloutComplete',
      message: 'ApplicationSet Rollout has completed',
      lastTransitionTime: '2026-12-02T10:00:30Z',
    });
  });

  it('keeps the other conditions and the transition time of an unchanged condition', () => {
    const set = rollingAppSet([envStep('stage', 0)]);
    pass(set, [app('s', 'stage')], T0);
    const result = pass(set, [app('s', 'stage')], at(120));
    expect(result.conditions.map((c) => c.type)).toEqual(['ResourcesUpToDate', 'RolloutProgressing']);
    expect(result.conditions[0].lastTransitionTime).toBe('2026-12-01T00:00:00Z');
    expect(progressing(result)?.lastTransitionTime).toBe('2026-12-02T10:00:00Z');
  });

  it('upserts a condition in place', () => {
    const conditions = [
      {
        type: 'RolloutProgressing',
        status: 'True' as const,
        reason: 'ApplicationSetModified',
        message: 'ApplicationSet is performing rollout of step 1',
        lastTransitionTime: '2026-12-01T00:00:00Z',
      },
      {
        type: 'ErrorOccurred',
        status: 'False' as const,
        reason: 'ApplicationSetUpToDate',
        message: 'Successfully generated parameters for all Applications',
      },
    ];
    const next = upsertCondition(
      conditions,
      {
        type: 'RolloutProgressing',
        status: 'True',
        reason: 'ApplicationSetModified',
        message: 'ApplicationSet is performing rollout of step 2',
      },
      T0,
    );
    expect(next.map((c) => c.type)).toEqual(['RolloutProgressing', 'ErrorOccurred']);
    expect(next[0]).toMatchObject({
      message: 'ApplicationSet is performing rollout of step 2',
      lastTransitionTime: '2026-12-02T10:00:00Z',
    });
  });
});

describe('the sync RollingSync writes', () => {
  const liveApp = (syncPolicy?: Application['spec']['syncPolicy']): Application => ({
    metadata: { name: 'a', labels: { env: 'stage' } },
    spec: { project: 'default', destination: { name: 'c1' }, syncPolicy },
  });
  const withTemplatePolicy = (syncPolicy?: Application['spec']['syncPolicy']) => {
    const set = rollingAppSet([envStep('stage')]);
    set.spec.template.spec.syncPolicy = syncPolicy;
    return set;
  };

  it('is initiated by the applicationset-controller, automated, with the Reason info', () => {
    const op = rollingSyncOperation(withTemplatePolicy());
    expect(op).toEqual({
      sync: {},
      initiatedBy: { username: 'applicationset-controller', automated: true },
      info: [{ name: 'Reason', value: 'ApplicationSet RollingSync triggered a sync of this Application resource' }],
      retry: { limit: 5 },
    });
  });

  it("prunes only when the template's automated block is enabled and sets prune", () => {
    expect(rollingSyncOperation(withTemplatePolicy({ automated: { prune: true } })).sync?.prune).toBe(true);
    expect(rollingSyncOperation(withTemplatePolicy({ automated: { prune: true, enabled: true } })).sync?.prune).toBe(
      true,
    );
    expect(
      rollingSyncOperation(withTemplatePolicy({ automated: { prune: true, enabled: false } })).sync?.prune,
    ).toBeUndefined();
    expect(rollingSyncOperation(withTemplatePolicy({ automated: { selfHeal: true } })).sync?.prune).toBeUndefined();
    expect(rollingSyncOperation(withTemplatePolicy({})).sync?.prune).toBeUndefined();
  });

  // SyncDesiredApplications calls syncApplication on desiredApplications[i] (progressive_sync.go): the
  // generated app's syncOptions and retry, never the live app's.
  it('takes syncOptions and retry from the generated app (the template), not the live one, defaulting retry to limit 5', () => {
    const retry = { limit: 2, backoff: { duration: '5s', factor: 2, maxDuration: '3m' } };
    const op = rollingSyncOperation(withTemplatePolicy({ syncOptions: ['ServerSideApply=true'], retry }));
    expect(op.sync?.syncOptions).toEqual(['ServerSideApply=true']);
    expect(op.retry).toEqual(retry);
    expect(rollingSyncOperation(withTemplatePolicy({ syncOptions: ['CreateNamespace=true'] })).retry).toEqual({
      limit: 5,
    });
    // A live app edited by hand (kept by ignoreApplicationDifferences) does not change the sync.
    void liveApp({ syncOptions: ['Prune=false'], retry: { limit: 0 } });
    expect(rollingSyncOperation(withTemplatePolicy()).sync?.syncOptions).toBeUndefined();
  });
});

describe('rolloutAppState', () => {
  it('reads the state machine input from a live Application', () => {
    const set = rollingAppSet([envStep('stage')]);
    const live: Application = {
      metadata: { name: 'a', labels: { env: 'stage', handmade: 'yes' } },
      spec: { project: 'default', destination: { name: 'c1' } },
      status: {
        sync: { status: 'OutOfSync', revision: 'abc', revisions: ['abc', 'def'] },
        health: { status: 'Progressing' },
        operationState: { operation: {}, phase: 'Running', startedAt: '2026-12-02T10:00:05Z' },
        conditions: [{ type: 'UnknownError', message: 'boom' }],
        reconciledAt: '2026-12-02T10:00:06Z',
      },
    };
    expect(rolloutAppState(set, live)).toEqual({
      name: 'a',
      labels: { env: 'stage' },
      sync: 'OutOfSync',
      health: 'Progressing',
      revisions: ['abc', 'def'],
      operationStartedAt: '2026-12-02T10:00:05Z',
      operationPhase: 'Running',
      operationRunning: true,
      errorCondition: true,
      specChanged: undefined,
      reconciledAt: '2026-12-02T10:00:06Z',
    });
    const single = rolloutAppState(set, { ...live, status: { sync: { status: 'Synced', revision: 'abc' } } });
    expect(single).toMatchObject({
      revisions: ['abc'],
      operationRunning: false,
      errorCondition: false,
      health: 'Unknown',
    });
  });
});

describe('a whole rollout', () => {
  it('runs three steps in order with maxUpdate 1, "50%" and unlimited, then reports completion', () => {
    const set = rollingAppSet([envStep('stage', 1), envStep('canary', '50%'), envStep('prod')]);
    const names = ['stage-a', 'stage-b', 'canary-a', 'canary-b', 'canary-c', 'canary-d', 'prod-a', 'prod-b', 'prod-c'];
    const states = new Map(names.map((n) => [n, app(n, n.split('-')[0], { revisions: ['rev2'] })]));
    // The entries of a finished rollout of rev1, so rev2 is a new rollout.
    set.status!.applicationStatus = names.map((n) => ({
      application: n,
      status: 'Healthy',
      message: ROLLOUT_MESSAGES.becameHealthy,
      step: '',
      targetRevisions: ['rev1'],
      lastTransitionTime: '2026-12-01T00:00:00Z',
    }));
    const syncOrder: string[][] = [];
    const maxInFlight: Record<string, number> = {};
    let second = 0;
    let result: RolloutAdvance | undefined;
    const started = new Map<string, number>();
    while (second < 600) {
      second += 1;
      // A fake app controller: a requested sync starts a second later and succeeds two seconds after that.
      for (const [name, startedAt] of started) {
        const state = states.get(name)!;
        if (second === startedAt + 1) states.set(name, syncStarted(state, at(startedAt + 1)));
        if (second === startedAt + 3) states.set(name, syncSucceeded(states.get(name)!, at(second)));
      }
      result = pass(set, [...states.values()], at(second));
      if (result.toSync.length) syncOrder.push(result.toSync);
      for (const name of result.toSync) started.set(name, second);
      const flight: Record<string, number> = {};
      for (const e of result.applicationStatus)
        if (e.status === 'Pending' || e.status === 'Progressing') flight[e.step] = (flight[e.step] ?? 0) + 1;
      for (const [step, n] of Object.entries(flight)) maxInFlight[step] = Math.max(maxInFlight[step] ?? 0, n);
      if (progressing(result)?.status === 'False') break;
    }
    expect(syncOrder).toEqual([
      ['stage-a'],
      ['stage-b'],
      ['canary-a', 'canary-b'],
      ['canary-c', 'canary-d'],
      ['prod-a', 'prod-b', 'prod-c'],
    ]);
    expect(maxInFlight).toEqual({ '1': 1, '2': 2, '3': 3 });
    expect(progressing(result!)).toMatchObject({ status: 'False', reason: 'ApplicationSetRolloutComplete' });
    expect(result!.applicationStatus.every((e) => e.status === 'Healthy' && e.targetRevisions?.[0] === 'rev2')).toBe(
      true,
    );
  });
});

describe('generated apps that do not exist', () => {
  // PerformProgressiveSyncs builds the step lists from desiredApplications (buildAppDependencyList) and
  // getAppsToSync stops at the first step with an app that is not in currentApplications.
  it('holds every later step while an app generated for an earlier step does not exist, and keeps no entry for it', () => {
    const set = rollingAppSet([envStep('stage'), envStep('prod')]);
    const existing = [app('s1', 'stage', { sync: 'Synced' }), app('p1', 'prod')];
    const generated = [
      { name: 'p1', labels: { env: 'prod' } },
      { name: 's1', labels: { env: 'stage' } },
      { name: 's2-invalid', labels: { env: 'stage' } },
    ];
    set.status = { ...set.status, applicationStatus: advanceRollout(set, existing, T0, generated).applicationStatus };
    const result = advanceRollout(set, existing, at(60), generated);
    expect(result.applicationStatus.map((e) => [e.application, e.status, e.step])).toEqual([
      ['p1', 'Waiting', '2'],
      ['s1', 'Healthy', '1'],
    ]);
    expect(result.toSync).toEqual([]);
    // The condition is worked out from the entries only: step 1's are all Healthy, so Argo CD names step 2.
    expect(result.conditions.find((c) => c.type === 'RolloutProgressing')?.message).toBe(
      'ApplicationSet is performing rollout of step 2',
    );
    // Once the app exists, step 2 is released.
    const fixed = advanceRollout(
      set,
      [...existing, app('s2-invalid', 'stage', { sync: 'Synced' })],
      at(120),
      generated,
    );
    expect(fixed.toSync).toEqual(['p1']);
  });
});

// Cases of Argo CD v3.5.1's own unit tests, in rollcall's terms: the test name is Argo CD's test and case.
describe('Argo CD v3.5.1 progressive-sync unit cases', () => {
  // progressive_sync_dependencies_test.go checks what UpdateApplicationSetApplicationStatus returns.
  // PerformProgressiveSyncs discards that and goes on with what setAppSetApplicationStatus saved, which
  // here is nothing: status, step and message are what they were.
  it('TestUpdateApplicationSetApplicationStatus: moves an application with new revision to Healthy when it is not OutOfSync', () => {
    const prior = [
      {
        application: 'app1',
        message: ROLLOUT_MESSAGES.syncedHealthy,
        status: 'Healthy' as const,
        step: '1',
        targetRevisions: ['previous'],
        lastTransitionTime: k8sTime(at(-300)),
      },
    ];
    const app1 = app('app1', undefined, {
      sync: 'Synced',
      health: 'Healthy',
      revisions: ['next'],
      operationPhase: 'Succeeded',
      operationStartedAt: k8sTime(at(-60)),
      reconciledAt: k8sTime(T0),
    });
    expect(evaluateApplicationStatus(prior, [app1], new Map([['app1', 0]]), T0)).toEqual([
      {
        application: 'app1',
        message: ROLLOUT_MESSAGES.syncedHealthy,
        status: 'Healthy',
        step: '1',
        targetRevisions: ['next'],
        lastTransitionTime: k8sTime(T0),
      },
    ]);
    const set = rollingAppSet([{ matchExpressions: [] }, { matchExpressions: [] }]);
    set.status = { ...set.status, applicationStatus: prior };
    expect(advanceRollout(set, [app1], T0).applicationStatus).toEqual(prior);
  });

  // progressive_sync_test.go calls syncApplication(app, prune=true) on an app whose syncPolicy has retry
  // and syncOptions; here that app is the one the template generates, and prune is its automated.prune.
  it('TestSyncApplication: Retry and SyncOptions from SyncPolicy are applied', () => {
    const set = rollingAppSet([envStep('stage')]);
    set.spec.template.spec.syncPolicy = {
      automated: { prune: true },
      retry: { limit: 10 },
      syncOptions: ['CreateNamespace=true'],
    };
    expect(rollingSyncOperation(set)).toEqual({
      initiatedBy: { username: 'applicationset-controller', automated: true },
      info: [{ name: 'Reason', value: 'ApplicationSet RollingSync triggered a sync of this Application resource' }],
      sync: { syncOptions: ['CreateNamespace=true'], prune: true },
      retry: { limit: 10 },
    });
  });

  it('TestGetAppsToSync: handles missing applications with statuses', () => {
    const entries = [
      { application: 'app1', status: 'Healthy' as const, message: '', step: '1' },
      { application: 'app2', status: 'Healthy' as const, message: '', step: '2' },
    ];
    expect(appsToSync(entries, [['app1'], ['app2']], new Set(['app2']))).toEqual(new Set(['app1']));
  });
});
