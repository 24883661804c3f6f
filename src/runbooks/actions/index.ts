import { bulkSyncAction } from './bulk-sync.js';
// control.ts must not import this module back: index.ts registers its actions (no import cycle, no TDZ).
import { controlActions } from './control.js';
import type { RunbookAction } from './types.js';

export type { RunbookAction, ActionContext, ActionPreview, StepOutcome, Checkpoint, RunTarget, PreviewContext } from './types.js';

const registry = new Map<string, RunbookAction>();

export function registerRunbookAction(action: RunbookAction): void {
  registry.set(action.name, action);
}

export function findRunbookAction(name: string): RunbookAction | undefined {
  return registry.get(name);
}

export function runbookActionNames(): string[] {
  return [...registry.keys()].sort();
}

registerRunbookAction(bulkSyncAction);
for (const action of controlActions) registerRunbookAction(action);
