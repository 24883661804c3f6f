/**
 * The rule registry: every rule id of the catalog (`config/rule-catalog.ts`: id, severity, title, alert
 * defaults) bound to the views its file exports (`rule.ts`: alert, appset check, fleet-wide diagnosis).
 * Alerts evaluate the `alert` views, `diagnose` runs the appset checks (../diagnose.ts) and the fleet-wide
 * ones, the digest and `status` classify apps with the rules' per-app judgements exported below.
 *
 * A new rule is its file in this folder, its line in the catalog and its line here. The catalog line cannot
 * be derived from the file: the config schema (rank 1) takes its `alerts.rules` keys and defaults from the
 * catalog, and infra may not import the fleet; the compiler checks that both lists hold the same ids.
 */
import {
  RULE_CATALOG,
  ruleMeta,
  type AlertRuleName,
  type RuleId,
  type RuleMeta,
} from '../../infra/config/rule-catalog.js';
import type { AlertsConfig } from '../../infra/config/schema.js';
import type { FleetView } from '../model.js';
import { appDegradedRule } from './app-degraded.js';
import { checkFailedRule } from './check-failed.js';
import { appInNoStepRule } from './app-in-no-step.js';
import { autosyncIgnoredRule } from './autosync-ignored.js';
import { degradedAfterHealthyRule } from './degraded-after-healthy.js';
import { degradedAfterSyncRule } from './degraded-after-sync.js';
import { ruleSettings } from './facts.js';
import type { Finding } from './finding.js';
import { instanceUnreachableRule } from './instance-unreachable.js';
import { invalidMaxUpdateRule } from './invalid-max-update.js';
import { keyBackupStaleRule } from './key-backup-stale.js';
import { labelOnClusterNotAppRule } from './label-on-cluster-not-app.js';
import { labelOnlyOnLiveAppRule } from './label-only-on-live-app.js';
import { manualGateRule } from './manual-gate.js';
import { noMaxUpdateRule } from './no-max-update.js';
import { outOfSyncRule } from './out-of-sync.js';
import { overlappingStepsRule } from './overlapping-steps.js';
import { percentCountsUnmatchedRule } from './percent-counts-unmatched.js';
import { progressiveSyncsDisabledRule } from './progressive-syncs-disabled.js';
import { rollingSyncWithoutStepsRule } from './rolling-sync-without-steps.js';
import type { RuleViews } from './rule.js';
import { stepHeldByMissingAppRule } from './step-held-by-missing-app.js';
import { stepMatchesNothingRule } from './step-matches-nothing.js';
import { stepOnPreviousRevisionRule } from './step-on-previous-revision.js';
import { stepsWithoutRollingSyncTypeRule } from './steps-without-rolling-sync-type.js';
import { stuckStepRule } from './stuck-step.js';
import { syncFailedRule } from './sync-failed.js';
import { syncWindowBlockingRule } from './sync-window-blocking.js';
import { unsupportedOperatorRule } from './unsupported-operator.js';

export type { AlertContext, AppSetCheck, RuleViews } from './rule.js';

/**
 * The rules' judgements of one app, for readers that classify apps rather than raise alerts (the digest's
 * needs attention, `status`'s problem kinds): the same test each rule's alert and diagnosis apply.
 */
export { appDown, downLongEnough, type DownApp } from './app-degraded.js';
export { degradedAfterSync } from './degraded-after-sync.js';
export { isDown, type DownHealth } from './down-apps.js';
export { stepOnPreviousRevision, type PreviousRevision } from './step-on-previous-revision.js';
export { outOfSyncOutsideRollout, rolloutMembers, waitingForStep } from './out-of-sync.js';
export { syncFailed } from './sync-failed.js';
export type { CheckRegression } from './facts.js';

export interface FleetRule extends RuleViews {
  meta: RuleMeta & { id: RuleId };
}

/** One line per rule; the compiler refuses a catalog id missing here and an id here not in the catalog. */
const VIEWS: Record<RuleId, RuleViews> = {
  'progressive-syncs-disabled': progressiveSyncsDisabledRule,
  'step-held-by-missing-app': stepHeldByMissingAppRule,
  'steps-without-rolling-sync-type': stepsWithoutRollingSyncTypeRule,
  'rolling-sync-without-steps': rollingSyncWithoutStepsRule,
  'stuck-step': stuckStepRule,
  'sync-window-blocking': syncWindowBlockingRule,
  'sync-failed': syncFailedRule,
  'degraded-after-sync': degradedAfterSyncRule,
  'app-degraded': appDegradedRule,
  'degraded-after-healthy': degradedAfterHealthyRule,
  'step-on-previous-revision': stepOnPreviousRevisionRule,
  'label-on-cluster-not-app': labelOnClusterNotAppRule,
  'unsupported-operator': unsupportedOperatorRule,
  'label-only-on-live-app': labelOnlyOnLiveAppRule,
  'step-matches-nothing': stepMatchesNothingRule,
  'app-in-no-step': appInNoStepRule,
  'overlapping-steps': overlappingStepsRule,
  'invalid-max-update': invalidMaxUpdateRule,
  'manual-gate': manualGateRule,
  'no-max-update': noMaxUpdateRule,
  'percent-counts-unmatched': percentCountsUnmatchedRule,
  'autosync-ignored': autosyncIgnoredRule,
  'out-of-sync': outOfSyncRule,
  'instance-unreachable': instanceUnreachableRule,
  'key-backup-stale': keyBackupStaleRule,
  'check-failed': checkFailedRule,
};

/** Every rule, in catalog order. */
export const FLEET_RULES: readonly FleetRule[] = RULE_CATALOG.map((meta) => ({
  meta: { ...meta, id: meta.id },
  ...VIEWS[meta.id],
}));

/** A rule by id. */
export function fleetRule(id: RuleId): FleetRule {
  return { meta: { ...ruleMeta(id)!, id }, ...VIEWS[id] };
}

/** The rules that alert, in the order `alerts` lists them. */
export function alertingRules(): { id: AlertRuleName; rule: FleetRule }[] {
  return FLEET_RULES.filter((r) => r.alert).map((r) => ({ id: r.meta.id as AlertRuleName, rule: r }));
}

/**
 * Findings of the rules that judge the whole fleet rather than one RollingSync appset, in catalog order.
 * `appSetFindings` are what the appset rules found, so a fleet rule leaves an app they explain to them.
 */
export function diagnoseFleetWide(
  fleet: FleetView,
  now: Date,
  alerts: AlertsConfig,
  appSetFindings: readonly Finding[] = [],
): Finding[] {
  const out: Finding[] = [];
  for (const rule of FLEET_RULES) {
    if (!rule.diagnoseFleet) continue;
    const settings = ruleSettings(alerts, rule.meta.id as AlertRuleName);
    out.push(...rule.diagnoseFleet(fleet, now, settings, [...appSetFindings, ...out]));
  }
  return out;
}
