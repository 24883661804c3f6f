/**
 * The rule registry: every rule id of the catalog (`config/rule-catalog.ts`: id, severity, title, alert
 * defaults) bound to the pure functions that judge it. Alerts evaluate the `alert` views, `diagnose` runs
 * the `diagnose` views (per RollingSync appset in ../diagnose.ts, fleet-wide here), the digest and `status`
 * read problems through them. A new rule: its file in this folder, its line in the catalog and here.
 */
import {
  RULE_CATALOG,
  ruleMeta,
  type AlertRuleName,
  type RuleId,
  type RuleMeta,
} from '../../infra/config/rule-catalog.js';
import type { FleetView } from '../model.js';
import { degradedAfterSyncAlerts, diagnoseDegradedAfterSync } from './degraded-after-sync.js';
import type { AlertsConfig } from '../../infra/config/schema.js';
import { ruleSettings, type AlertCondition, type RuleInputs, type RuleResult, type RuleSettings } from './facts.js';
import type { Finding } from './finding.js';
import { instanceUnreachableAlerts } from './instance-unreachable.js';
import { keyBackupStaleAlerts } from './key-backup-stale.js';
import { outOfSyncAlerts } from './out-of-sync.js';
import { stuckStepAlerts } from './stuck-step.js';
import { syncFailedAlerts } from './sync-failed.js';

/**
 * The rules' judgements of one app, for readers that classify apps rather than raise alerts (the digest's
 * needs attention, `status`'s problem kinds): the same test each rule's alert and diagnosis apply.
 */
export { degradedAfterSync } from './degraded-after-sync.js';
export { outOfSyncOutsideRollout } from './out-of-sync.js';
export { syncFailed } from './sync-failed.js';

/** What rules found before this one ran: apps in a stuck step are left to stuck-step. */
export interface AlertContext {
  stuckApps: ReadonlySet<string>;
}

export interface FleetRule {
  meta: RuleMeta;
  /** The rule as an alert: its conditions now (and stalls that are meant to be there). */
  alert?: (inputs: RuleInputs, settings: RuleSettings, seen: AlertContext) => AlertCondition[] | RuleResult;
  /** The rule as a diagnosis over the whole fleet (problems not tied to one RollingSync appset). */
  diagnoseFleet?: (fleet: FleetView, now: Date, settings: RuleSettings) => Finding[];
  /** Judged per RollingSync ApplicationSet by ../diagnose.ts (it shares one context of steps and apps). */
  appSetCheck?: true;
}

type Views = Omit<FleetRule, 'meta'>;
const APPSET: Views = { appSetCheck: true };

/** One line per rule; the compiler refuses a catalog id missing here and an id here not in the catalog. */
const VIEWS: Record<RuleId, Views> = {
  'progressive-syncs-disabled': APPSET,
  'step-held-by-missing-app': APPSET,
  'steps-without-rolling-sync-type': APPSET,
  'rolling-sync-without-steps': APPSET,
  'stuck-step': { appSetCheck: true, alert: (inputs, settings) => stuckStepAlerts(inputs, settings) },
  'sync-window-blocking': APPSET,
  'sync-failed': { alert: (inputs, _settings, seen) => syncFailedAlerts(inputs, seen.stuckApps) },
  'degraded-after-sync': {
    alert: (inputs, settings) => degradedAfterSyncAlerts(inputs, settings),
    diagnoseFleet: (fleet, now, settings) => diagnoseDegradedAfterSync(fleet, now, settings.windowMs),
  },
  'degraded-after-healthy': APPSET,
  'label-on-cluster-not-app': APPSET,
  'unsupported-operator': APPSET,
  'label-only-on-live-app': APPSET,
  'step-matches-nothing': APPSET,
  'app-in-no-step': APPSET,
  'overlapping-steps': APPSET,
  'invalid-max-update': APPSET,
  'manual-gate': APPSET,
  'no-max-update': APPSET,
  'percent-counts-unmatched': APPSET,
  'autosync-ignored': APPSET,
  'out-of-sync': { alert: (inputs, settings) => outOfSyncAlerts(inputs, settings) },
  'instance-unreachable': { alert: (inputs, settings) => instanceUnreachableAlerts(inputs, settings) },
  'key-backup-stale': {
    alert: (inputs, settings) =>
      inputs.keyBackups ? keyBackupStaleAlerts(inputs.keyBackups, inputs.now, settings) : [],
  },
};

/** Every rule, in catalog order. */
export const FLEET_RULES: readonly (FleetRule & { meta: { id: RuleId } })[] = RULE_CATALOG.map((meta) => ({
  meta: { ...meta, id: meta.id },
  ...VIEWS[meta.id],
}));

/** A rule by id. */
export function fleetRule(id: RuleId): FleetRule {
  return { meta: ruleMeta(id)!, ...VIEWS[id] };
}

/** The rules that alert, in the order `alerts` lists them. */
export function alertingRules(): { id: AlertRuleName; rule: FleetRule }[] {
  return FLEET_RULES.filter((r) => r.alert).map((r) => ({ id: r.meta.id as AlertRuleName, rule: r }));
}

/** Findings of the rules that judge the whole fleet rather than one RollingSync appset, most severe first. */
export function diagnoseFleetWide(fleet: FleetView, now: Date, alerts: AlertsConfig): Finding[] {
  const out: Finding[] = [];
  for (const rule of FLEET_RULES) {
    if (!rule.diagnoseFleet) continue;
    const settings = ruleSettings(alerts, rule.meta.id as AlertRuleName);
    out.push(...rule.diagnoseFleet(fleet, now, settings));
  }
  return out;
}
