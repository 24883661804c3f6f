/**
 * sync-failed: an app whose last operation ended Failed or Error. Argo CD keeps the operation's phase and
 * message in status.operationState until the next operation (Failed and Error are completed phases,
 * gitops-engine/pkg/sync/common/types.go OperationPhase.Completed at v3.5.1); an automated sync retries only
 * with a retry policy, so a failed sync otherwise stays failed. Apps in a stuck step are left to stuck-step: that is
 * the problem on-call acts on, and its message names the failure.
 */
import type { Application } from '../../infra/argocd/types.js';
import { oneLine, truncate } from '../../core/format.js';
import {
  ALERT_QUOTE_MAX,
  appConditions,
  revisionOf,
  type AlertCondition,
  type AppHit,
  type RuleInputs,
} from './facts.js';
import type { RuleViews } from './rule.js';

/** The rule's judgement of one app: its last operation ended Failed or Error. */
export function syncFailed(app: Application): boolean {
  const phase = app.status?.operationState?.phase;
  return phase === 'Failed' || phase === 'Error';
}

export function syncFailedAlerts(inputs: RuleInputs, stuckApps: ReadonlySet<string>): AlertCondition[] {
  const failed: AppHit[] = [];
  for (const a of inputs.fleet.apps()) {
    const op = a.app.status?.operationState;
    if (!op || !syncFailed(a.app) || stuckApps.has(`${a.instance}/${a.app.metadata.name}`)) continue;
    failed.push({
      fleetApp: a,
      since: op.finishedAt ?? op.startedAt,
      revision: revisionOf(a.app),
      detail: `sync ${op.phase}: ${truncate(oneLine(op.message ?? 'no message'), ALERT_QUOTE_MAX)}`,
    });
  }
  return appConditions(
    'sync-failed',
    failed,
    inputs.now,
    (owner, n) => `Sync failed for ${n} app${n === 1 ? '' : 's'} of ${owner}.`,
  );
}

export const syncFailedRule: RuleViews = {
  alert: (inputs, _settings, seen) => syncFailedAlerts(inputs, seen.appsOf('stuck-step')),
};
