import type { Application, Operation } from '../../../../infra/argocd/types.js';

/** The info entry every sync carries, so an operation is recognisable as this run's (after a crash too). */
export const RUN_INFO_NAME = 'rollcall-run';

/**
 * How long after its `posting` mark a POST of an attempt can still reach Argo CD: the attempt checks
 * a monotonic clock against it right before sending (half the window), and the request itself is
 * bounded by the instance timeout. Only after that may a sync whose answer never came be concluded
 * "not applied" and be sent again.
 */
export function postingWindowMs(instanceTimeoutMs: number): number {
  return instanceTimeoutMs + 5000;
}

function taggedBy(op: Operation | undefined, runId: string): boolean {
  return !!op?.info?.some((i) => i.name === RUN_INFO_NAME && i.value === runId);
}

/** Our operation, as the app shows it: requested (top-level) or picked up (status.operationState). */
export function ourOperation(app: Application, runId: string): 'requested' | 'running' | 'completed' | undefined {
  const state = app.status?.operationState;
  if (state && taggedBy(state.operation, runId))
    return state.phase === 'Running' || state.phase === 'Terminating' ? 'running' : 'completed';
  if (taggedBy(app.operation, runId)) return 'requested';
  return undefined;
}

export function foreignOperationRunning(app: Application, runId: string): string | undefined {
  if (app.operation && !taggedBy(app.operation, runId))
    return `an operation requested by ${app.operation.initiatedBy?.username ?? 'someone else'} is pending`;
  const state = app.status?.operationState;
  if (state && !taggedBy(state.operation, runId) && (state.phase === 'Running' || state.phase === 'Terminating'))
    return `an operation by ${state.operation?.initiatedBy?.username ?? 'someone else'} is ${state.phase.toLowerCase()}`;
  return undefined;
}

export function failureReason(app: Application): string {
  const state = app.status?.operationState;
  const failed = (state?.syncResult?.resources ?? []).filter(
    (r) => r.status === 'SyncFailed' || r.hookPhase === 'Failed' || r.hookPhase === 'Error',
  );
  const resources = failed.slice(0, 5).map((r) => `${r.kind}/${r.name}${r.message ? `: ${r.message}` : ''}`);
  return [`sync ${state?.phase ?? 'failed'}${state?.message ? `: ${state.message}` : ''}`, ...resources].join('; ');
}
