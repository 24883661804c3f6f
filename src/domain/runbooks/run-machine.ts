/**
 * The run lifecycle as pure transitions: a run and an event in, the next run or a refusal out.
 * The engine is the I/O around it (Redis compare-and-set, the lease, the queue, the live message);
 * every status change it makes goes through `runEvent` or `stepOutcomeTransition`, so the table
 * below is the whole lifecycle.
 */
import type { StepOutcome } from './actions/types.js';
import { isTerminal, type Run, type RunStatus, type StepState } from './run-store.js';

export type RunEvent =
  | { type: 'previewed' }
  | { type: 'confirm'; by: string; at: string; channel?: string; threadTs?: string }
  | { type: 'begin'; at: string }
  | { type: 'pause'; by: string; reason: string }
  | { type: 'resume' }
  | { type: 'expire'; at: string }
  | { type: 'cancel'; by: string; at: string }
  | {
      type: 'end';
      status: 'succeeded' | 'failed' | 'aborted';
      by: string;
      at: string;
      error?: string;
      abortSteps?: boolean;
    };

/** Which events each status accepts. Terminal statuses accept none. */
export const RUN_TRANSITIONS: Record<RunStatus, readonly RunEvent['type'][]> = {
  previewing: ['previewed', 'cancel'],
  'awaiting-confirmation': ['confirm', 'expire', 'cancel'],
  'awaiting-approval': ['begin', 'cancel'],
  running: ['pause', 'end'],
  paused: ['resume', 'end'],
  succeeded: [],
  failed: [],
  aborted: [],
  cancelled: [],
};

export type RunTransition = { ok: true; run: Run } | { ok: false; reason: string };

export function runEvent(r: Run, e: RunEvent): RunTransition {
  // `begin` also follows a confirmation that needs no approval.
  const allowed =
    RUN_TRANSITIONS[r.status].includes(e.type) ||
    (e.type === 'begin' && r.status === 'awaiting-confirmation' && !!r.confirmedBy);
  if (!allowed) return { ok: false, reason: `run ${r.id} is ${r.status}; it cannot ${e.type}` };
  switch (e.type) {
    case 'previewed':
      return { ok: true, run: { ...r, status: 'awaiting-confirmation' } };
    case 'confirm':
      return {
        ok: true,
        run: {
          ...r,
          confirmedBy: e.by,
          confirmedAt: e.at,
          channel: r.channel ?? e.channel,
          threadTs: r.threadTs ?? e.threadTs,
          status: r.approvalsRequired > 0 ? 'awaiting-approval' : r.status,
        },
      };
    case 'begin':
      return { ok: true, run: { ...r, status: 'running', startedAt: e.at, currentStep: r.steps[0].id } };
    case 'pause':
      return { ok: true, run: { ...r, status: 'paused', pausedBy: e.by, pausedReason: e.reason } };
    case 'resume':
      // A new generation: the job of the paused attempt, should it still run, is stale.
      return {
        ok: true,
        run: { ...r, status: 'running', pausedBy: undefined, pausedReason: undefined, generation: r.generation + 1 },
      };
    case 'expire':
      return { ok: true, run: { ...r, status: 'cancelled', error: 'preview expired', endedAt: e.at } };
    case 'cancel':
      return { ok: true, run: { ...r, status: 'cancelled', endedBy: e.by, endedAt: e.at } };
    case 'end': {
      const steps = e.abortSteps
        ? r.steps.map((s): StepState => ({
            ...s,
            status: s.status === 'running' || s.status === 'paused' ? 'aborted' : s.status,
            endedAt: s.endedAt ?? (s.status === 'running' ? e.at : undefined),
          }))
        : r.steps;
      return {
        ok: true,
        run: { ...r, status: e.status, endedBy: e.by, endedAt: e.at, error: e.error ?? r.error, steps },
      };
    }
  }
}

export interface StepOutcomeInput {
  stepId: string;
  /** The step after this one, if any. */
  nextStep?: string;
  outcome: StepOutcome;
  onFailure: 'abort' | 'pause' | 'continue';
  by: string;
  now: string;
}

/**
 * What a finished step attempt does to its run: the step's state, and then advance, pause, or
 * end. `terminal` is the end to record (through runEvent 'end', which also releases locks).
 */
export function stepOutcomeTransition(
  r: Run,
  i: StepOutcomeInput,
): { run: Run; enqueueNext: boolean; terminal?: { status: 'succeeded' | 'failed' | 'aborted'; error?: string } } {
  const { outcome, stepId } = i;
  const stepStatus: StepState['status'] =
    outcome.status === 'succeeded'
      ? 'succeeded'
      : outcome.status === 'failed'
        ? 'failed'
        : outcome.status === 'paused'
          ? 'paused'
          : 'aborted';
  const error = outcome.status === 'failed' ? outcome.error : undefined;
  const steps = r.steps.map((s) =>
    s.id === stepId
      ? {
          ...s,
          status: stepStatus,
          output: outcome.output ?? s.output,
          error,
          endedAt: stepStatus === 'paused' ? undefined : i.now,
        }
      : s,
  );
  const next: Run = { ...r, steps };
  if (isTerminal(r.status)) return { run: next, enqueueNext: false };
  if (outcome.status === 'paused' || (outcome.status === 'failed' && i.onFailure === 'pause')) {
    if (r.status === 'running') {
      next.status = 'paused';
      next.pausedBy = i.by;
      next.pausedReason = outcome.status === 'paused' ? outcome.reason : `step ${stepId} failed: ${error}`;
    }
    // Resuming re-runs this step from its checkpoint.
    if (outcome.status === 'failed')
      next.steps = next.steps.map((s) => (s.id === stepId ? { ...s, status: 'paused' } : s));
    return { run: next, enqueueNext: false };
  }
  if (outcome.status === 'aborted' || outcome.status === 'interrupted')
    return { run: next, enqueueNext: false, terminal: { status: 'aborted' } };
  const advance = outcome.status === 'succeeded' || (outcome.status === 'failed' && i.onFailure === 'continue');
  if (advance && i.nextStep) return { run: { ...next, currentStep: i.nextStep }, enqueueNext: r.status === 'running' };
  if (advance) {
    const failed = steps.filter((s) => s.status === 'failed');
    return failed.length
      ? {
          run: next,
          enqueueNext: false,
          terminal: {
            status: 'failed',
            error: steps
              .filter((s) => s.error)
              .map((s) => `${s.id}: ${s.error}`)
              .join('; '),
          },
        }
      : { run: next, enqueueNext: false, terminal: { status: 'succeeded' } };
  }
  return { run: next, enqueueNext: false, terminal: { status: 'failed', error: `step ${stepId} failed: ${error}` } };
}
