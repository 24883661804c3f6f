import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import {
  argoActionFor,
  reached,
  snapshot,
  tookEffect,
} from '../../src/domain/runbooks/actions/rollout-action/verbs.js';
import type { Rollout } from '../../src/infra/argocd/types.js';
import { runActionScript } from '../../src/sim/rollouts/actions.js';

/**
 * How a Rollout action run tells that Argo CD ran the action (a lost answer is never sent again when it did) and
 * when the Rollout got where it leads, on the Rollouts of Argo CD's own action test data
 * (test/fixtures/argocd-lua, one case per upstream `Rollout/actions/testdata` case).
 */

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/argocd-lua');
const ctx = { now: new Date('2024-06-01T12:34:56.789Z'), params: [] };
const ours = ['resume', 'abort', 'retry', 'restart', 'pause', 'promote-full'];

describe('what each verb asks of Argo CD', () => {
  it('promote is resume, promote full=true is promote-full; the others keep their name', () => {
    expect(argoActionFor('promote', false)).toBe('resume');
    expect(argoActionFor('promote', true)).toBe('promote-full');
    for (const v of ['abort', 'retry', 'restart', 'pause', 'resume'] as const) expect(argoActionFor(v, false)).toBe(v);
  });
});

describe("an action's effect, on the Rollouts of Argo CD's action test data", () => {
  const file = YAML.parse(readFileSync(path.join(FIXTURES, 'rollout-actions.yaml'), 'utf8')) as {
    actions: { mirrors: string; why?: string; action: string; rollout: Rollout; error?: string }[];
  };
  const cases = file.actions.filter((c) => ours.includes(c.action) && !c.error);

  it('covers every action a verb sends', () => {
    expect([...new Set(cases.map((c) => c.action))].sort()).toEqual(
      ['abort', 'promote-full', 'restart', 'resume', 'retry'].sort(),
    );
  });

  it.each(cases.map((c) => [`${c.action}: ${c.why ?? c.mirrors}`, c] as const))(
    'is seen after the script ran, not before: %s',
    (_name, c) => {
      const before = structuredClone(c.rollout);
      const input = structuredClone(before) as unknown as Record<string, unknown>;
      const after = runActionScript('argoproj.io', 'Rollout', c.action, input, ctx) as unknown as Rollout;
      const was = snapshot(before);
      expect(tookEffect(c.action, was, snapshot(after), after)).toBe(true);
      expect(tookEffect(c.action, was, was, before)).toBe(false);
    },
  );
});

describe('where an action leads', () => {
  const canary = (status: Record<string, unknown>, spec: Record<string, unknown> = {}): Rollout =>
    ({
      metadata: { name: 'web', generation: 2 },
      spec: {
        strategy: { canary: { steps: [{ setWeight: 20 }, { pause: {} }, { setWeight: 50 }, { pause: {} }] } },
        ...spec,
      },
      status: { observedGeneration: '2', currentPodHash: 'new', stableRS: 'old', ...status },
    }) as unknown as Rollout;

  it('abort: aborted and Degraded, not before the controller says Degraded', () => {
    const before = snapshot(canary({ currentStepIndex: 1, phase: 'Paused', pauseConditions: [{ reason: 'x' }] }));
    expect(reached('abort', before, snapshot(canary({ abort: true, currentStepIndex: 1, phase: 'Paused' })))).toBe(
      false,
    );
    expect(reached('abort', before, snapshot(canary({ abort: true, phase: 'Degraded' })))).toBe(true);
  });

  it('resume of a paused canary: its next step, not the pause cleared alone', () => {
    const before = snapshot(canary({ currentStepIndex: 1, phase: 'Paused', pauseConditions: [{ reason: 'x' }] }));
    expect(
      reached('resume', before, snapshot(canary({ currentStepIndex: 1, phase: 'Paused', controllerPause: true }))),
    ).toBe(false);
    expect(
      reached(
        'resume',
        before,
        snapshot(canary({ currentStepIndex: 3, phase: 'Paused', pauseConditions: [{ reason: 'x' }] })),
      ),
    ).toBe(true);
  });

  it('restart: status.restartedAt catches up with the spec.restartAt the action wrote', () => {
    const before = snapshot(canary({ phase: 'Healthy', stableRS: 'new' }));
    const at = '2024-06-01T12:34:56Z';
    expect(reached('restart', before, snapshot(canary({ phase: 'Healthy', stableRS: 'new' }, { restartAt: at })))).toBe(
      false,
    );
    expect(
      reached(
        'restart',
        before,
        snapshot(canary({ phase: 'Healthy', stableRS: 'new', restartedAt: at }, { restartAt: at })),
      ),
    ).toBe(true);
  });
});
