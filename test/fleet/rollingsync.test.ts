import { describe, expect, it } from 'vitest';
import type { ApplicationSet, ApplicationSetRolloutStep } from '../../src/infra/argocd/types.js';
import {
  currentStepFromStatus,
  expressionMatches,
  generatedLabels,
  ignoredLiveLabels,
  isRollingSync,
  matchingSteps,
  maxConcurrentFor,
  maxUpdateInfo,
  rolloutComplete,
  rolloutSteps,
  stepMatches,
  stepOfLabels,
} from '../../src/fleet/rollingsync.js';

function appSet(overrides: Partial<ApplicationSet['spec']> = {}, status?: ApplicationSet['status']): ApplicationSet {
  return {
    metadata: { name: 'guestbook', namespace: 'argocd' },
    spec: {
      generators: [{ list: { elements: [] } }],
      template: {
        metadata: { name: '{{name}}', labels: { env: '{{env}}', team: 'payments' } },
        spec: { project: 'default', destination: { name: 'in-cluster' } },
      },
      ...overrides,
    },
    status,
  };
}

const rolling = (steps: ApplicationSetRolloutStep[]) =>
  appSet({ strategy: { type: 'RollingSync', rollingSync: { steps } } });

describe('RollingSync activation (A2)', () => {
  it('is active only with type RollingSync, a rollingSync block and at least one step', () => {
    expect(isRollingSync(rolling([{ matchExpressions: [] }]))).toBe(true);
    expect(isRollingSync(rolling([]))).toBe(false);
    expect(isRollingSync(appSet({ strategy: { type: 'RollingSync' } }))).toBe(false);
    expect(isRollingSync(appSet({ strategy: { type: 'AllAtOnce', rollingSync: { steps: [{}] } } }))).toBe(false);
    expect(isRollingSync(appSet())).toBe(false);
  });

  it('returns no steps when the strategy is not active', () => {
    expect(rolloutSteps(appSet({ strategy: { type: 'AllAtOnce', rollingSync: { steps: [{}] } } }))).toEqual([]);
    expect(rolloutSteps(rolling([{}, { maxUpdate: 1 }]))).toHaveLength(2);
  });
});

describe('matchExpressions (A3)', () => {
  const labels = { env: 'prod', region: 'us' };

  it('matches In when the label value is one of the values (values are ORed)', () => {
    expect(expressionMatches(labels, { key: 'env', operator: 'In', values: ['stage', 'prod'] })).toBe(true);
    expect(expressionMatches(labels, { key: 'env', operator: 'In', values: ['stage'] })).toBe(false);
  });

  it('does not match In when the key is missing', () => {
    expect(expressionMatches(labels, { key: 'tier', operator: 'In', values: ['canary'] })).toBe(false);
    expect(expressionMatches(undefined, { key: 'tier', operator: 'In', values: ['canary'] })).toBe(false);
  });

  it('matches NotIn when the value is not listed and when the key is missing', () => {
    expect(expressionMatches(labels, { key: 'env', operator: 'NotIn', values: ['stage'] })).toBe(true);
    expect(expressionMatches(labels, { key: 'env', operator: 'NotIn', values: ['prod'] })).toBe(false);
    expect(expressionMatches(labels, { key: 'tier', operator: 'NotIn', values: ['canary'] })).toBe(true);
    expect(expressionMatches({}, { key: 'tier', operator: 'NotIn', values: ['canary'] })).toBe(true);
  });

  it('never matches an unsupported operator on a present key', () => {
    expect(expressionMatches(labels, { key: 'env', operator: 'Exists' })).toBe(false);
    expect(expressionMatches(labels, { key: 'env', operator: 'in', values: ['prod'] })).toBe(false);
    expect(expressionMatches(labels, { key: 'env', operator: 'DoesNotExist' })).toBe(false);
  });

  it('skips an unsupported operator on a missing key, as Argo CD only rejects a missing key for In', () => {
    expect(expressionMatches(labels, { key: 'tier', operator: 'Exists' })).toBe(true);
    expect(expressionMatches(labels, { key: 'tier', operator: 'DoesNotExist' })).toBe(true);
  });

  it('compares values exactly (case-sensitive, no trimming)', () => {
    expect(expressionMatches(labels, { key: 'env', operator: 'In', values: ['Prod', ' prod'] })).toBe(false);
  });

  it('ANDs the expressions of one step', () => {
    const step = {
      matchExpressions: [
        { key: 'env', operator: 'In', values: ['prod'] },
        { key: 'region', operator: 'In', values: ['eu'] },
      ],
    };
    expect(stepMatches(labels, step)).toBe(false);
    expect(stepMatches({ env: 'prod', region: 'eu' }, step)).toBe(true);
  });

  it('selects every app with a step that has no matchExpressions', () => {
    expect(stepMatches(labels, {})).toBe(true);
    expect(stepMatches(undefined, { matchExpressions: [] })).toBe(true);
  });

  it('does not select the app when one expression of the step has an unsupported operator on a present key', () => {
    const step = {
      matchExpressions: [
        { key: 'env', operator: 'In', values: ['prod'] },
        { key: 'region', operator: 'Exists' },
      ],
    };
    expect(stepMatches(labels, step)).toBe(false);
  });
});

describe('step assignment (A3)', () => {
  const steps: ApplicationSetRolloutStep[] = [
    { matchExpressions: [{ key: 'env', operator: 'In', values: ['stage'] }] },
    { matchExpressions: [{ key: 'env', operator: 'In', values: ['prod'] }] },
    { matchExpressions: [{ key: 'region', operator: 'In', values: ['us'] }] },
  ];

  it('assigns the first matching step, 1-based', () => {
    expect(stepOfLabels({ env: 'stage' }, steps)).toBe(1);
    expect(stepOfLabels({ env: 'prod' }, steps)).toBe(2);
  });

  it('gives -1 to an app matched by no step', () => {
    expect(stepOfLabels({ env: 'dev' }, steps)).toBe(-1);
    expect(stepOfLabels(undefined, steps)).toBe(-1);
    expect(matchingSteps({ env: 'dev' }, steps)).toEqual([]);
  });

  it('reports every step an overlapping app matches while the first one wins', () => {
    expect(matchingSteps({ env: 'prod', region: 'us' }, steps)).toEqual([2, 3]);
    expect(stepOfLabels({ env: 'prod', region: 'us' }, steps)).toBe(2);
  });

  it('lets a catch-all step after specific ones take only what is left', () => {
    const withCatchAll = [...steps, {}];
    expect(stepOfLabels({ env: 'dev' }, withCatchAll)).toBe(4);
    expect(matchingSteps({ env: 'stage' }, withCatchAll)).toEqual([1, 4]);
  });
});

describe('maxUpdate (A4)', () => {
  it('treats an absent maxUpdate as unlimited', () => {
    expect(maxConcurrentFor(undefined, 10)).toBeNull();
    expect(maxUpdateInfo(undefined, 10).kind).toBe('unlimited');
  });

  it('uses an int as the number of apps at a time', () => {
    expect(maxConcurrentFor(2, 10)).toBe(2);
    expect(maxConcurrentFor(20, 3)).toBe(20);
  });

  it('treats 0 and "0%" as a manual gate', () => {
    expect(maxConcurrentFor(0, 10)).toBe(0);
    expect(maxConcurrentFor('0%', 10)).toBe(0);
  });

  it('leaves no room with a negative int', () => {
    expect(maxConcurrentFor(-1, 10)).toBe(0);
  });

  it('scales a percent against the step count and rounds down', () => {
    expect(maxConcurrentFor('50%', 4)).toBe(2);
    expect(maxConcurrentFor('50%', 5)).toBe(2);
    expect(maxConcurrentFor('25%', 7)).toBe(1);
    expect(maxConcurrentFor('100%', 7)).toBe(7);
    expect(maxUpdateInfo('50%', 4)).toEqual({ kind: 'percent', maxConcurrent: 2, percent: 50 });
  });

  it('raises a percent that rounds below 1 to 1, except "0%"', () => {
    expect(maxConcurrentFor('10%', 3)).toBe(1);
    expect(maxConcurrentFor('1%', 0)).toBe(1);
    // Argo CD compares the string to "0%" literally, so "00%" is raised too.
    expect(maxConcurrentFor('00%', 10)).toBe(1);
  });

  it('behaves like 1 for an invalid string', () => {
    expect(maxConcurrentFor('abc', 10)).toBe(1);
    expect(maxConcurrentFor('2', 10)).toBe(1);
    expect(maxConcurrentFor('1.5%', 10)).toBe(1);
    expect(maxUpdateInfo('abc', 10).kind).toBe('invalid');
  });
});

describe('RolloutProgressing condition (A7)', () => {
  const withCondition = (status: 'True' | 'False', reason: string, message: string) =>
    appSet(
      {},
      {
        conditions: [
          {
            type: 'ResourcesUpToDate',
            status: 'True',
            reason: 'ApplicationSetUpToDate',
            message: 'All applications have been generated successfully',
          },
          { type: 'RolloutProgressing', status, reason, message },
        ],
      },
    );

  it('reads the current step from "ApplicationSet is performing rollout of step N"', () => {
    const set = withCondition('True', 'ApplicationSetModified', 'ApplicationSet is performing rollout of step 3');
    expect(currentStepFromStatus(set)).toBe(3);
    expect(rolloutComplete(set)).toBe(false);
  });

  it('has no current step once the rollout has completed', () => {
    const set = withCondition('False', 'ApplicationSetRolloutComplete', 'ApplicationSet Rollout has completed');
    expect(currentStepFromStatus(set)).toBeNull();
    expect(rolloutComplete(set)).toBe(true);
  });

  it('has no current step and is not complete without the condition', () => {
    expect(currentStepFromStatus(appSet())).toBeNull();
    expect(rolloutComplete(appSet())).toBe(false);
    expect(rolloutComplete(appSet({}, { conditions: [] }))).toBe(false);
  });
});

describe('generated labels (A3: matching is on the generated app)', () => {
  it('takes static template labels from the template and templated ones from the live app', () => {
    const set = appSet();
    expect(generatedLabels(set, { metadata: { labels: { env: 'prod', team: 'payments' } } })).toEqual({
      env: 'prod',
      team: 'payments',
    });
    // A hand edit of a static label is reverted by the appset controller and ignored by RollingSync.
    expect(generatedLabels(set, { metadata: { labels: { env: 'prod', team: 'search' } } })).toEqual({
      env: 'prod',
      team: 'payments',
    });
  });

  it('ignores labels added to the live app by hand', () => {
    const app = { metadata: { labels: { env: 'prod', team: 'payments', wave: 'canary' } } };
    expect(generatedLabels(appSet(), app)).toEqual({ env: 'prod', team: 'payments' });
    expect(ignoredLiveLabels(appSet(), app)).toEqual({ wave: 'canary' });
  });

  it('leaves out a templated label the live app does not carry', () => {
    expect(generatedLabels(appSet(), { metadata: {} })).toEqual({ team: 'payments' });
  });

  it('keeps unknown live labels when a templatePatch may have produced them, but not preserved ones', () => {
    const set = appSet({
      templatePatch: 'metadata:\n  labels:\n    wave: {{wave}}\n',
      preservedFields: { labels: ['owner'] },
    });
    expect(generatedLabels(set, { metadata: { labels: { env: 'prod', wave: 'canary', owner: 'me' } } })).toEqual({
      env: 'prod',
      team: 'payments',
      wave: 'canary',
    });
  });
});
