/**
 * What commands see of the runbooks layer: the run service and its runs, the selector parameter's
 * text form, parameters and their references, run replies, and the marks a pause leaves on an
 * ApplicationSet. Commands import this module only; the engine and actions behind it are free to move.
 */
export type { RunService } from './engine.js';
export type { RunbookServices } from './services.js';
export type { Run, RunStatus } from './run-store.js';
export { RunNotFoundError } from './run-store.js';
export type { PauseRecord } from './rollout-pause.js';
export { PAUSED_AT, PAUSED_BY, PAUSE_RUN } from './rollout-pause.js';
export { formatSelectorParam } from './actions/bulk-sync.js';
export { selectorText, freezesByRun, type Freeze } from './freeze.js';
export { findRunbookAction, runPausable } from './actions/index.js';
export { resolveResource } from './actions/resource-action.js';
export type { RolloutActionPlan, PlannedRollout, SkippedRollout } from './actions/rollout-action.js';
export { paramReference, substitute } from './loader.js';
export { assertMayRun } from './permissions.js';
export { ParamError, describeParams, parseParams, type ParamValue } from './params.js';
export {
  STATUS_TONE,
  auditReply,
  NothingToDo,
  nothingToDoReply,
  previewReply,
  progressReply,
  runListReply,
  runData,
  type AuditData,
  type NoopRunData,
  type RunData,
  type RunListData,
} from './replies.js';
