/**
 * The bulk-sync action: a pure wave planner (bulk-sync/planner.ts, reading `waves` with bulk-sync/wave-spec.ts),
 * the gates an app and a wave must pass (bulk-sync/gates.ts), the verifiers that watch a wave after its gate and
 * every synced app after the last wave (bulk-sync/verify.ts; metric checks in bulk-sync/check-verifier.ts), and an
 * executor that follows the stored plan (bulk-sync/executor.ts), rolling a failed wave back when asked
 * (bulk-sync/wave-rollback.ts) and acting on a regression the watch finds (bulk-sync/regression.ts).
 */
import type { RunbookAction } from './types.js';
import { executeBulkSync } from './bulk-sync/executor.js';
import { bulkSyncInput } from './bulk-sync/input.js';
import { previewBulkSync } from './bulk-sync/preview.js';

export { bulkSyncInput, type BulkSyncInput } from './bulk-sync/input.js';
export { formatSelectorParam, parseSelectorParam } from './bulk-sync/selector.js';
export { planWaves, waveWarnings, type PlannedApp } from './bulk-sync/planner.js';
export type { BulkSyncPlan } from './bulk-sync/preview.js';
export { postingWindowMs, RUN_INFO_NAME } from './bulk-sync/operations.js';
export {
  combineAppVerdicts,
  watchVerifiersFor,
  waveVerifiersFor,
  type AppVerdict,
  type VerifierVerdict,
  type WavePhase,
  type WaveVerifier,
} from './bulk-sync/verify.js';

export const bulkSyncAction: RunbookAction = {
  name: 'bulk-sync',
  description:
    'Sync many apps, each once, in ordered waves (globs or label selectors, each with its maxUpdate) with a health gate, metric checks and an optional bake, following progress through the fleet watch; a failed wave pauses, stops, or is rolled back; a watch after the last wave acts on a regression',
  destructive: true,
  pausable: true,
  input: bulkSyncInput,
  preview: previewBulkSync,
  execute: executeBulkSync,
};
