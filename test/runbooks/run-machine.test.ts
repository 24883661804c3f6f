import { describe, expect, it } from 'vitest';
import type { StepOutcome } from '../../src/domain/runbooks/actions/types.js';
import {
  RUN_TRANSITIONS,
  runEvent,
  stepOutcomeTransition,
  type RunEvent,
} from '../../src/domain/runbooks/run-machine.js';
import type { Run, RunStatus } from '../../src/domain/runbooks/run-store.js';

const AT = '2026-12-04T03:00:00.000Z';
function run(status: RunStatus, extra: Partial<Run> = {}): Run {
  return {
    id: 'r-abcde',
    runbook: 'bulk-sync',
    title: 'Bulk sync',
    params: {},
    requester: 'U_REQ',
    surface: 'slack',
    status,
    createdAt: AT,
    updatedAt: AT,
    approvalsRequired: 0,
    approvals: [],
    generation: 0,
    targets: [],
    version: 1,
    steps: [
      { id: 'sync', action: 'bulk-sync', status: status === 'running' ? 'running' : 'pending', attempts: 1 },
      { id: 'verify', action: 'bulk-sync', status: 'pending', attempts: 0 },
    ],
    ...(status === 'running' || status === 'paused' ? { currentStep: 'sync' } : {}),
    ...extra,
  };
}

const EVENTS: Record<RunEvent['type'], RunEvent> = {
  previewed: { type: 'previewed' },
  confirm: { type: 'confirm', by: 'U_REQ', at: AT },
  begin: { type: 'begin', at: AT },
  pause: { type: 'pause', by: 'U_OP', reason: 'paused by a user' },
  resume: { type: 'resume' },
  expire: { type: 'expire', at: AT },
  cancel: { type: 'cancel', by: 'U_OP', at: AT },
  end: { type: 'end', status: 'aborted', by: 'U_OP', at: AT, abortSteps: true },
};

describe('run lifecycle', () => {
  const table: [RunStatus, RunEvent['type'], RunStatus][] = [
    ['previewing', 'previewed', 'awaiting-confirmation'],
    ['previewing', 'cancel', 'cancelled'],
    ['awaiting-confirmation', 'confirm', 'awaiting-confirmation'],
    ['awaiting-confirmation', 'expire', 'cancelled'],
    ['awaiting-confirmation', 'cancel', 'cancelled'],
    ['awaiting-approval', 'begin', 'running'],
    ['awaiting-approval', 'cancel', 'cancelled'],
    ['running', 'pause', 'paused'],
    ['running', 'end', 'aborted'],
    ['paused', 'resume', 'running'],
    ['paused', 'end', 'aborted'],
  ];
  it.each(table)('%s --%s--> %s', (from, event, to) => {
    const t = runEvent(run(from), EVENTS[event]);
    expect(t.ok && t.run.status).toBe(to);
  });

  it('refuses everything else, and a terminal run accepts nothing', () => {
    const allowed = new Set(table.map(([from, e]) => `${from}/${e}`));
    for (const from of Object.keys(RUN_TRANSITIONS) as RunStatus[])
      for (const e of Object.values(EVENTS))
        expect(runEvent(run(from), e).ok, `${from}/${e.type}`).toBe(allowed.has(`${from}/${e.type}`));
    for (const s of ['succeeded', 'failed', 'aborted', 'cancelled'] as const) expect(RUN_TRANSITIONS[s]).toEqual([]);
  });

  it('a confirmed run needing no approval begins; one needing approvals waits for them', () => {
    const confirmed = runEvent(run('awaiting-confirmation'), EVENTS.confirm);
    expect(confirmed.ok && confirmed.run).toMatchObject({ status: 'awaiting-confirmation', confirmedBy: 'U_REQ' });
    expect(confirmed.ok && runEvent(confirmed.run, EVENTS.begin)).toMatchObject({
      ok: true,
      run: { status: 'running', currentStep: 'sync' },
    });
    expect(runEvent(run('awaiting-confirmation'), EVENTS.begin).ok).toBe(false);
    const needsTwo = runEvent(run('awaiting-confirmation', { approvalsRequired: 2 }), EVENTS.confirm);
    expect(needsTwo.ok && needsTwo.run.status).toBe('awaiting-approval');
  });

  it("resume starts a new generation, so the paused attempt's job is stale", () => {
    const t = runEvent(run('paused', { generation: 3, pausedBy: 'U_OP', pausedReason: 'x' }), EVENTS.resume);
    expect(t.ok && t.run).toMatchObject({ status: 'running', generation: 4, pausedBy: undefined });
  });

  it('an abort marks the running step aborted and keeps finished ones', () => {
    const t = runEvent(run('running'), EVENTS.end);
    expect(t.ok && t.run.steps.map((s) => s.status)).toEqual(['aborted', 'pending']);
  });
});

describe("what a step attempt's outcome does to its run", () => {
  const step = (outcome: StepOutcome, onFailure: 'abort' | 'pause' | 'continue' = 'pause', ...next: [string?]) =>
    stepOutcomeTransition(run('running'), {
      stepId: 'sync',
      nextStep: next.length ? next[0] : 'verify',
      outcome,
      onFailure,
      by: 'rollcall',
      now: AT,
    });

  it.each([
    [
      'succeeded, more steps',
      { status: 'succeeded' } as StepOutcome,
      'pause',
      'verify',
      { status: 'running', currentStep: 'verify', enqueueNext: true, terminal: undefined },
    ],
    [
      'succeeded, last step',
      { status: 'succeeded' } as StepOutcome,
      'pause',
      undefined,
      { status: 'running', enqueueNext: false, terminal: { status: 'succeeded' } },
    ],
    [
      'failed, onFailure=pause',
      { status: 'failed', error: 'x' } as StepOutcome,
      'pause',
      'verify',
      { status: 'paused', enqueueNext: false, terminal: undefined },
    ],
    [
      'failed, onFailure=abort',
      { status: 'failed', error: 'x' } as StepOutcome,
      'abort',
      'verify',
      { status: 'running', enqueueNext: false, terminal: { status: 'failed', error: 'step sync failed: x' } },
    ],
    [
      'failed, onFailure=continue',
      { status: 'failed', error: 'x' } as StepOutcome,
      'continue',
      'verify',
      { status: 'running', currentStep: 'verify', enqueueNext: true, terminal: undefined },
    ],
    [
      'paused',
      { status: 'paused', reason: 'paused by a user' } as StepOutcome,
      'pause',
      'verify',
      { status: 'paused', enqueueNext: false, terminal: undefined },
    ],
    [
      'aborted',
      { status: 'aborted' } as StepOutcome,
      'pause',
      'verify',
      { status: 'running', enqueueNext: false, terminal: { status: 'aborted' } },
    ],
  ] as const)('%s', (_name, outcome, onFailure, nextStep, want) => {
    const t = step(outcome, onFailure, nextStep);
    expect({
      status: t.run.status,
      ...('currentStep' in want ? { currentStep: t.run.currentStep } : {}),
      enqueueNext: t.enqueueNext,
      terminal: t.terminal,
    }).toEqual(want);
  });

  it('a failed step under onFailure=pause is left paused, to re-run from its checkpoint on resume', () => {
    expect(step({ status: 'failed', error: 'x' }).run.steps[0]).toMatchObject({ status: 'paused', error: 'x' });
  });
});
