/**
 * The rollout-action action: one Argo CD resource action (promote, abort, retry, restart, pause, resume) on the
 * Argo Rollouts Rollouts of many apps. The preview reads each Rollout and what Argo CD offers for it now
 * (rollout-action/plan.ts), in waves planned as bulk-sync plans them; the executor sends the action once per
 * Rollout and follows it to the state it leads to (rollout-action/drive.ts, rollout-action/execute.ts).
 */
import type { RunbookAction } from './types.js';
import { executeRolloutAction } from './rollout-action/execute.js';
import { rolloutActionInput } from './rollout-action/plan.js';
import { previewRolloutAction } from './rollout-action/preview.js';

export { ROLLOUT_VERBS, type RolloutVerb } from './rollout-action/verbs.js';
export type { RolloutActionPlan, PlannedRollout, SkippedRollout } from './rollout-action/plan.js';

export const rolloutActionAction: RunbookAction = {
  name: 'rollout-action',
  description:
    "Run one of Argo CD's Rollout actions (resume, promote-full, abort, retry, restart, pause) on the Argo Rollouts of many apps, where Argo CD offers it now: each sent once, in waves, followed until the Rollout gets where the action leads",
  destructive: true,
  pausable: true,
  input: rolloutActionInput,
  defaultTimeoutMs: 60 * 60_000,
  preview: previewRolloutAction,
  execute: executeRolloutAction,
};
