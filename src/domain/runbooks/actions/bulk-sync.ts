/**
 * The bulk-sync action: a pure wave planner (bulk-sync/planner.ts), the gates an app and a wave must
 * pass (bulk-sync/gates.ts), and an executor that follows the stored plan (bulk-sync/executor.ts).
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

export const bulkSyncAction: RunbookAction = {
  name: 'bulk-sync',
  description:
    'Sync many apps, each once, in ordered waves with a health gate, following progress through the fleet watch',
  destructive: true,
  pausable: true,
  input: bulkSyncInput,
  preview: previewBulkSync,
  execute: executeBulkSync,
};
