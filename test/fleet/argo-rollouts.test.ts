import { describe, expect, it } from 'vitest';
import {
  canaryWeight,
  currentSetWeight,
  hasRollouts,
  rolloutPhase,
  rolloutStrategy,
} from '../../src/fleet/argo-rollouts.js';
import type { Application, Rollout } from '../../src/infra/argocd/types.js';

// Argo Rollouts' own reading of a Rollout, as argoproj/argo-rollouts utils/rollout/rolloututil_test.go
// (GetRolloutPhase) and utils/replicaset/canary.go (GetCurrentSetWeight) pin it.

const canary = (status: Rollout['status'] = {}, spec: Partial<Rollout['spec']> = {}): Rollout => ({
  metadata: { name: 'can-guestbook', namespace: 'test' },
  spec: {
    replicas: 5,
    strategy: { canary: { steps: [{ setWeight: 10 }, { pause: { duration: 60 } }, { setWeight: 20 }] } },
    ...spec,
  },
  status: { currentStepIndex: 1, replicas: 4, readyReplicas: 1, updatedReplicas: 3, availableReplicas: 2, ...status },
});
const blueGreen = (status: Rollout['status'] = {}): Rollout => ({
  metadata: { name: 'bg-guestbook', namespace: 'test' },
  spec: { replicas: 5, strategy: { blueGreen: {} } },
  status: { replicas: 5, updatedReplicas: 5, availableReplicas: 5, ...status },
});

describe('rolloutPhase (GetRolloutPhase without a controller-written phase: CalculateRolloutPhase)', () => {
  it.each([
    [
      'a progress deadline passed',
      canary({
        conditions: [
          { type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: 'timed out' },
        ],
      }),
      'Degraded',
      'ProgressDeadlineExceeded: timed out',
    ],
    ['spec.paused', canary({}, { paused: true }), 'Paused', 'manually paused'],
    [
      'updated < desired',
      canary({ updatedReplicas: 4, availableReplicas: 4, replicas: 5 }),
      'Progressing',
      'more replicas need to be updated',
    ],
    [
      'updated not all available',
      canary({ updatedReplicas: 5, availableReplicas: 4, replicas: 5 }),
      'Progressing',
      'updated replicas are still becoming available',
    ],
    [
      'old replicas of a basic canary',
      canary({ updatedReplicas: 5, availableReplicas: 5, replicas: 7 }),
      'Progressing',
      'old replicas are pending termination',
    ],
    [
      'blue-green before the cutover',
      blueGreen({ blueGreen: { activeSelector: 'abc1234' }, stableRS: 'abc1234', currentPodHash: 'def5678' }),
      'Progressing',
      'active service cutover pending',
    ],
    [
      'blue-green after the cutover, not yet stable',
      blueGreen({ blueGreen: { activeSelector: 'def5678' }, stableRS: 'abc1234', currentPodHash: 'def5678' }),
      'Progressing',
      'waiting for post-promotion verification to complete',
    ],
    [
      'a spec change not yet observed',
      {
        ...canary({ stableRS: 'abc1234', currentPodHash: 'abc1234', observedGeneration: '1' }),
        metadata: { name: 'x', generation: 2 },
      },
      'Progressing',
      'waiting for rollout spec update to be observed',
    ],
    [
      'a v0.9 all-numeric hash is no generation',
      {
        ...canary({
          stableRS: 'abc1234',
          currentPodHash: 'abc1234',
          observedGeneration: '1366344857',
          replicas: 0,
          updatedReplicas: 0,
        }),
        metadata: { name: 'x', generation: 2 },
      },
      'Progressing',
      'more replicas need to be updated',
    ],
    [
      'pods not yet restarted',
      canary(
        { replicas: 5, updatedReplicas: 5, availableReplicas: 5, stableRS: 'abc1234', currentPodHash: 'abc1234' },
        { restartAt: '2024-01-01T00:00:00Z' },
      ),
      'Progressing',
      'rollout is restarting',
    ],
    [
      'a resume the controller has not seen yet',
      canary({ controllerPause: true, phase: 'Paused', message: 'CanaryPauseStep' }),
      'Progressing',
      'waiting for rollout to unpause',
    ],
    [
      'healthy',
      canary({ replicas: 5, updatedReplicas: 5, availableReplicas: 5, stableRS: 'abc1234', currentPodHash: 'abc1234' }),
      'Healthy',
      '',
    ],
    [
      'the controller’s own phase (v1.0+)',
      canary({
        phase: 'Paused',
        message: 'CanaryPauseStep',
        pauseConditions: [{ reason: 'CanaryPauseStep', startTime: '2024-01-01T00:00:00Z' }],
      }),
      'Paused',
      'CanaryPauseStep',
    ],
  ] as const)('%s', (_name, ro, phase, message) => {
    expect(rolloutPhase(ro as Rollout)).toEqual({ phase, message });
  });
});

describe('weights', () => {
  it('GetCurrentSetWeight: the last setWeight at or before the step; 0 when aborted; 100 past the end', () => {
    expect(currentSetWeight(canary({ currentStepIndex: 0 }))).toBe(10);
    expect(currentSetWeight(canary({ currentStepIndex: 1 }))).toBe(10);
    expect(currentSetWeight(canary({ currentStepIndex: 2 }))).toBe(20);
    expect(currentSetWeight(canary({ currentStepIndex: 3 }))).toBe(100);
    expect(currentSetWeight(canary({ currentStepIndex: 2, abort: true }))).toBe(0);
  });

  it('the canary’s traffic: the weight the traffic router was given, none without available pods', () => {
    const routed = {
      strategy: { canary: { trafficRouting: { nginx: {} }, steps: [{ setWeight: 20 }, { pause: {} }] } },
    };
    const weights = { canary: { weight: 0 }, stable: { weight: 100 } };
    expect(canaryWeight(canary({ currentStepIndex: 1, canary: { weights } }, routed))).toBe(0);
    expect(canaryWeight(canary({ currentStepIndex: 1, availableReplicas: 0 }))).toBe(0);
    expect(canaryWeight(canary({ currentStepIndex: 1 }))).toBe(10);
    expect(canaryWeight(canary({ currentStepIndex: 3 }))).toBe(100);
  });
});

describe('which apps have Rollouts', () => {
  it('reads the mirror’s status.resources: kind Rollout in group argoproj.io only', () => {
    const app = (group: string | undefined, kind: string) =>
      ({
        metadata: { name: 'a' },
        spec: {},
        status: { resources: [{ group, version: 'v1alpha1', kind, name: 'web' }] },
      }) as unknown as Application;
    expect(hasRollouts(app('argoproj.io', 'Rollout'))).toBe(true);
    expect(hasRollouts(app('example.com', 'Rollout'))).toBe(false);
    expect(hasRollouts(app('apps', 'Deployment'))).toBe(false);
    expect(rolloutStrategy(blueGreen())).toBe('blue-green');
  });
});
