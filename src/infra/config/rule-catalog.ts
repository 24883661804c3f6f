/**
 * The rule registry's metadata: every rule id rollcall judges the fleet by, its severity, a line saying
 * what it finds, and for rules that alert their alert defaults. It sits here, below the fleet, so the
 * config schema takes its `alerts.rules` keys from it; `src/fleet/rules/index.ts` binds each id to the
 * pure function that judges it (the compiler checks that every id here has exactly one function there).
 */

export type RuleSeverity = 'critical' | 'warning' | 'info';

/** What a rule's alert does unless `alerts.rules.<id>` says otherwise. */
export interface AlertDefaults {
  /** Whether the rule alerts at all. */
  enabled: boolean;
  /** How long the condition must last before it is a problem (`after`). */
  afterMs: number;
  /** The rule's window (`window`), where it has one; 0 where it has none. */
  windowMs: number;
}

export interface RuleMeta {
  id: string;
  severity: RuleSeverity;
  /** One line: what the rule finds (help, `diagnose` and the docs list it). */
  title: string;
  /** Present on rules that raise alerts: their defaults, and the heading of their alert messages. */
  alert?: AlertDefaults & { heading: string };
}

const MINUTE = 60_000;
const HOUR = 3_600_000;

/** Every rule, in the order findings and alerts of equal severity are shown. */
export const RULE_CATALOG = [
  {
    id: 'progressive-syncs-disabled',
    severity: 'critical',
    title: 'RollingSync is configured but the appset controller runs without progressive syncs',
  },
  {
    id: 'step-held-by-missing-app',
    severity: 'critical',
    title: 'a step waits on an app the appset no longer generates',
  },
  {
    id: 'steps-without-rolling-sync-type',
    severity: 'critical',
    title: 'rollingSync steps under a strategy type other than RollingSync',
  },
  { id: 'rolling-sync-without-steps', severity: 'critical', title: 'strategy RollingSync without steps' },
  {
    id: 'stuck-step',
    severity: 'critical',
    title: 'a RollingSync step whose apps stay Pending/Progressing longer than stuckAfter',
    // The threshold defaults to alerts.stuckAfter (15m) rather than afterMs: see ruleSettings.
    alert: { heading: 'Stuck rollout step', enabled: true, afterMs: 15 * MINUTE, windowMs: 0 },
  },
  { id: 'sync-window-blocking', severity: 'warning', title: 'a sync window holds the rollout' },
  {
    id: 'sync-failed',
    severity: 'critical',
    title: "an app's last sync Failed or Errored",
    alert: { heading: 'Sync failed', enabled: true, afterMs: 0, windowMs: 0 },
  },
  {
    id: 'degraded-after-sync',
    severity: 'critical',
    title: 'apps Degraded (a crash loop) right after a successful sync, with the revision that did it and the fix',
    alert: { heading: 'Degraded after sync', enabled: true, afterMs: 0, windowMs: 30 * MINUTE },
  },
  {
    id: 'app-degraded',
    severity: 'critical',
    title:
      'apps Degraded or Missing for longer than `after` (a crash loop, a failed rollout, deleted resources), whatever synced them',
    // A pod restarting during a rollout is Degraded for moments; a crash loop stays: 5m keeps the blip quiet.
    alert: { heading: 'Degraded or Missing', enabled: true, afterMs: 5 * MINUTE, windowMs: 0 },
  },
  {
    id: 'degraded-after-healthy',
    severity: 'warning',
    title: 'an app of a finished step turned Degraded after being Healthy',
  },
  {
    id: 'step-on-previous-revision',
    severity: 'critical',
    title: 'a step RollingSync counts as complete while its apps still run the previous revision or spec',
  },
  {
    id: 'label-on-cluster-not-app',
    severity: 'critical',
    title: 'a step matches a label the clusters carry but the apps do not',
  },
  { id: 'unsupported-operator', severity: 'critical', title: 'a step uses an operator RollingSync does not support' },
  {
    id: 'label-only-on-live-app',
    severity: 'warning',
    title: 'a label a step needs exists on the live app only, not in the template',
  },
  { id: 'step-matches-nothing', severity: 'warning', title: 'a step selects no app' },
  { id: 'app-in-no-step', severity: 'warning', title: 'an app no step selects' },
  { id: 'overlapping-steps', severity: 'warning', title: 'an app selected by more than one step' },
  { id: 'invalid-max-update', severity: 'warning', title: 'maxUpdate that is neither an integer nor a percent' },
  { id: 'manual-gate', severity: 'info', title: 'a step with maxUpdate 0 (a manual gate or rollcall pause)' },
  { id: 'no-max-update', severity: 'info', title: 'a step without maxUpdate syncs all its apps at once' },
  { id: 'percent-counts-unmatched', severity: 'info', title: "step 1's percent maxUpdate also counts apps in no step" },
  { id: 'autosync-ignored', severity: 'info', title: "the template's automated sync has no effect under RollingSync" },
  {
    id: 'out-of-sync',
    severity: 'warning',
    title: 'an app OutOfSync for longer than its threshold, outside a rollout',
    alert: { heading: 'OutOfSync', enabled: true, afterMs: HOUR, windowMs: 0 },
  },
  {
    id: 'instance-unreachable',
    severity: 'critical',
    title: "an Argo CD instance rollcall's view of is stale",
    alert: { heading: 'Argo CD instance unreachable', enabled: true, afterMs: 2 * MINUTE, windowMs: 0 },
  },
  {
    id: 'key-backup-stale',
    severity: 'warning',
    title: 'a cluster with a key backup schedule whose newest sealed-secrets key backup is too old',
    alert: { heading: 'Sealed-secrets key backup stale', enabled: true, afterMs: 26 * HOUR, windowMs: 0 },
  },
  {
    id: 'check-failed',
    severity: 'critical',
    title: 'a metric check failing on apps a guard or a post-sync watch follows (Argo CD may call them Healthy)',
    alert: { heading: 'Metric check failing', enabled: true, afterMs: 0, windowMs: 0 },
  },
] as const satisfies readonly RuleMeta[];

export type RuleId = (typeof RULE_CATALOG)[number]['id'];
type AlertingEntry = Extract<(typeof RULE_CATALOG)[number], { alert: AlertDefaults }>;
export type AlertRuleName = AlertingEntry['id'];

/** The rules that raise alerts: the keys `alerts.rules` takes, in the order `alerts` lists them. */
export const ALERT_RULES: readonly AlertRuleName[] = RULE_CATALOG.filter((r): r is AlertingEntry => 'alert' in r).map(
  (r) => r.id,
);

export const RULE_IDS: readonly RuleId[] = RULE_CATALOG.map((r) => r.id);

const BY_ID = new Map<string, RuleMeta>(RULE_CATALOG.map((r) => [r.id, r]));

/** A rule's metadata; undefined for an id no rule has. */
export function ruleMeta(id: string): RuleMeta | undefined {
  return BY_ID.get(id);
}

/** A rule's alert defaults. */
export function alertDefaults(id: AlertRuleName): AlertDefaults {
  return BY_ID.get(id)!.alert!;
}

/** The heading of a rule's alert messages ("Stuck rollout step"); the id for a rule that raises none. */
export function alertHeading(id: string): string {
  return BY_ID.get(id)?.alert?.heading ?? id;
}
