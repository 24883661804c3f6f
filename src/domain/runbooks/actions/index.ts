import { bulkSyncAction } from './bulk-sync.js';
// The action modules must not import this module back: index.ts registers them (no import cycle, no TDZ).
import { backupSealedSecretsKeysAction } from './backup-sealed-secrets-keys.js';
import { freezeAction } from './freeze.js';
import { pauseRolloutAction } from './pause-rollout.js';
import { restoreSealedSecretsKeysAction } from './restore-sealed-secrets-keys.js';
import { resourceActionAction } from './resource-action.js';
import { resumeRolloutAction } from './resume-rollout.js';
import { rollbackAction } from './rollback.js';
import { rolloutActionAction } from './rollout-action.js';
import { terminateOpAction } from './terminate-op.js';
import { unfreezeAction } from './unfreeze.js';
import type { RunbookAction } from './types.js';

export type {
  RunbookAction,
  ActionContext,
  ActionPreview,
  StepOutcome,
  Checkpoint,
  RunTarget,
  PreviewContext,
} from './types.js';

const registry = new Map<string, RunbookAction>();

export function registerRunbookAction(action: RunbookAction): void {
  registry.set(action.name, action);
}

export function findRunbookAction(name: string): RunbookAction | undefined {
  return registry.get(name);
}

/** Whether Pause means something for a run: it has steps to stop between, or a step that stops between its own calls. */
export function runPausable(run: { steps: { action: string }[] }): boolean {
  return run.steps.length > 1 || run.steps.some((s) => findRunbookAction(s.action)?.pausable === true);
}

export function runbookActionNames(): string[] {
  return [...registry.keys()].sort();
}

registerRunbookAction(bulkSyncAction);
registerRunbookAction(pauseRolloutAction);
registerRunbookAction(resumeRolloutAction);
registerRunbookAction(backupSealedSecretsKeysAction);
registerRunbookAction(restoreSealedSecretsKeysAction);
registerRunbookAction(rollbackAction);
registerRunbookAction(rolloutActionAction);
registerRunbookAction(terminateOpAction);
registerRunbookAction(freezeAction);
registerRunbookAction(unfreezeAction);
registerRunbookAction(resourceActionAction);
