/**
 * Facts several rules (and the digest) read off Argo CD objects the same way, and the shape of what a rule
 * reports as an alert condition. Pure: nothing here calls Argo CD.
 */
import type { Application, ApplicationSet } from '../../infra/argocd/types.js';
import type { AlertRuleName, AlertsConfig } from '../../infra/config/schema.js';
import { alertDefaults } from '../../infra/config/rule-catalog.js';
import { byText, oneLine, truncate } from '../../core/format.js';
import type { FleetApp, FleetView } from '../model.js';
import type { Freeze } from '../freeze.js';
import { PAUSED_AT, PAUSED_BY } from '../pause.js';
import { isRollingSync } from '../rollingsync.js';

export type AlertSeverity = 'critical' | 'warning';

/** One problem as the rules see it now: what the alert for its group shows. */
export interface AlertCondition {
  /** Stable group key: rule, instance, appset or app, step, revision. */
  key: string;
  rule: AlertRuleName;
  severity: AlertSeverity;
  instance: string;
  appSet?: string;
  /** The app, for a problem of an app no ApplicationSet generated. */
  app?: string;
  step?: number;
  revision?: string;
  /** Sorted names of the apps the problem covers (empty for instance and key-backup problems). */
  apps: string[];
  /** When the condition began, as far as Argo CD says (else when rollcall first saw it). */
  since: string;
  /** One line: what is wrong. */
  summary: string;
  /** A line per app (or fact), worst first. */
  details: string[];
  /**
   * How long the condition must have been seen before it fires, for rules whose start Argo CD does not
   * record (out-of-sync, instance-unreachable): the lifecycle counts it from the first sighting.
   */
  holdForMs?: number;
  /** Commands a person is likely to want next (rendered as buttons by the alert message). */
  rolloutTarget?: string;
}

/** A stall that is meant to be there, said instead of alerted. */
export interface ExpectedStall {
  reason: 'paused' | 'sync-window' | 'manual-gate';
  instance: string;
  appSet?: string;
  step?: number;
  apps: string[];
  message: string;
}

export interface RuleSettings {
  enabled: boolean;
  channel?: string;
  afterMs: number;
  windowMs: number;
}

/** What the alerting rules judge: the fleet, the time, their settings, and a fact only Redis knows. */
/** A failure a watcher keeps in force, as the alert rules read it. */
export interface CheckRegression {
  /** Who raised it: `guard:<instance>/<appset>` or `watch:<run id>`. */
  key: string;
  instance: string;
  appSet?: string;
  runId?: string;
  checks: string[];
  apps: string[];
  since: string;
  summary: string;
  details: string[];
}

export interface RuleInputs {
  fleet: FleetView;
  now: Date;
  config: AlertsConfig;
  /**
   * Clusters with scheduled key backups and their newest successful backup (undefined: none recorded).
   * Absent when Redis cannot be read: the rule is then skipped rather than guessed.
   */
  keyBackups?: { cluster: string; lastBackupAt?: string }[];
  /** Metric checks failing on watched apps (guards, watches after a sync), read from Redis; absent when unread. */
  regressions?: readonly CheckRegression[];
  /** rollcall's freezes (deny windows it wrote), from Redis; what they hold is expected, not stuck. */
  freezes?: readonly Freeze[];
}

export interface RuleResult {
  conditions: AlertCondition[];
  expected: ExpectedStall[];
}

/** A rule's switch, channel and thresholds, with the registry's defaults filled in. */
export function ruleSettings(config: AlertsConfig, rule: AlertRuleName): RuleSettings {
  const defaults = alertDefaults(rule);
  const own = config.rules[rule] ?? { enabled: defaults.enabled };
  const afterMs = own.after ?? (rule === 'stuck-step' ? config.stuckAfter : defaults.afterMs);
  return {
    enabled: own.enabled !== false,
    channel: own.channel ?? config.channel,
    afterMs,
    windowMs: own.window ?? defaults.windowMs,
  };
}

/** The operation message the application controller writes while a sync window holds an operation (controller/sync.go). */
export const SYNC_WINDOW_BLOCKED_MESSAGE = 'Sync operation blocked by sync window';

/** The operation is Running but held by a sync window: expected, not stuck. */
export function heldBySyncWindow(app: Application): boolean {
  const op = app.status?.operationState;
  return op?.phase === 'Running' && !!op.message?.includes(SYNC_WINDOW_BLOCKED_MESSAGE);
}

/** Paused by rollcall (`pause`): the stall is what someone asked for. */
export function pausedBy(appSet: ApplicationSet): { by: string; at?: string } | undefined {
  const by = appSet.metadata.annotations?.[PAUSED_BY];
  return by ? { by, at: appSet.metadata.annotations?.[PAUSED_AT] } : undefined;
}

/** The revision an app's problem is about: what its last operation synced, else what it compares to. */
export function revisionOf(app: Application): string | undefined {
  const op = app.status?.operationState;
  return op?.syncResult?.revision || op?.operation?.sync?.revision || app.status?.sync?.revision || undefined;
}

/** `instance/appset`, or `instance/app` for an app no ApplicationSet generated: the unit problems are grouped by. */
export function ownerOf(a: FleetApp): { appSet?: string; app?: string } {
  return a.appSet ? { appSet: a.appSet } : { app: a.app.metadata.name };
}

export function ownerLabel(c: { appSet?: string; app?: string }): string {
  return c.appSet ? `appset ${c.appSet}` : `app ${c.app}`;
}

export function groupKey(parts: {
  rule: string;
  instance: string;
  appSet?: string;
  app?: string;
  step?: number;
  revision?: string;
  extra?: string;
}): string {
  return [
    parts.rule,
    parts.instance,
    parts.appSet ? `appset:${parts.appSet}` : `app:${parts.app ?? ''}`,
    parts.step ?? '',
    parts.revision ?? '',
    parts.extra ?? '',
  ].join('|');
}

export function shortRevision(revision: string | undefined): string | undefined {
  return revision && /^[0-9a-f]{40}$/.test(revision) ? revision.slice(0, 7) : revision;
}

/** The earliest parseable time of `times`, else `fallback`. */
export function oldest(times: (string | undefined)[], fallback: string): string {
  let best: number | undefined;
  for (const t of times) {
    const ms = t ? Date.parse(t) : NaN;
    if (Number.isFinite(ms) && (best === undefined || ms < best)) best = ms;
  }
  return best === undefined ? fallback : new Date(best).toISOString();
}

export const byName = byText;

/** Groups items under a key, keeping first-seen order of keys. */
export function groupBy<T>(items: Iterable<T>, key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(item);
    else out.set(k, [item]);
  }
  return out;
}

/** How much of an Argo CD message an alert line quotes: a chat message stays readable. */
export const ALERT_QUOTE_MAX = 160;

/** An app's problem in one line: its operation, else its sync and health. */
export function appProblem(app: Application): string {
  const op = app.status?.operationState;
  if (op && (op.phase === 'Failed' || op.phase === 'Error'))
    return `sync ${op.phase}: ${truncate(oneLine(op.message ?? ''), ALERT_QUOTE_MAX)}`;
  if (op?.phase === 'Running')
    return `sync Running${op.message ? `: ${truncate(oneLine(op.message), ALERT_QUOTE_MAX)}` : ''}`;
  const health = app.status?.health;
  return `${app.status?.sync?.status ?? 'Unknown'}/${health?.status ?? 'Unknown'}${health?.message ? `: ${truncate(oneLine(health.message), ALERT_QUOTE_MAX)}` : ''}`;
}

/** One app an app rule found, with when its problem began and the line the alert shows for it. */
export interface AppHit {
  fleetApp: FleetApp;
  since: string | undefined;
  detail: string;
  revision?: string;
}

/** Apps grouped by owner and revision, as conditions of one rule. */
export function appConditions<Hit extends AppHit>(
  rule: AlertRuleName,
  apps: Hit[],
  now: Date,
  describe: (owner: string, count: number, since: string, group: Hit[]) => string,
  extra: Partial<AlertCondition> | ((group: Hit[]) => Partial<AlertCondition>) = {},
): AlertCondition[] {
  const out: AlertCondition[] = [];
  const groups = groupBy(apps, (a) =>
    groupKey({ rule, instance: a.fleetApp.instance, ...ownerOf(a.fleetApp), revision: a.revision }),
  );
  for (const [key, group] of groups) {
    const first = group[0].fleetApp;
    const since = oldest(
      group.map((g) => g.since),
      now.toISOString(),
    );
    const owner = ownerOf(first);
    group.sort((a, b) => byName(a.fleetApp.app.metadata.name, b.fleetApp.app.metadata.name));
    out.push({
      key,
      rule,
      severity: 'critical',
      instance: first.instance,
      ...owner,
      revision: group[0].revision,
      apps: group.map((g) => g.fleetApp.app.metadata.name),
      since,
      summary: describe(ownerLabel(owner), group.length, since, group),
      details: group.map((g) => `${g.fleetApp.app.metadata.name}: ${g.detail}`),
      ...(typeof extra === 'function' ? extra(group) : extra),
    });
  }
  return out;
}

/**
 * `instance/app` of every app whose RollingSync entry is Pending or Progressing: the rollout has started its
 * sync and waits for it to end Healthy and Synced, so stuck-step is the rule that judges it.
 */
export function inFlightInRollout(fleet: FleetView): Set<string> {
  const out = new Set<string>();
  for (const s of fleet.appSets()) {
    if (!isRollingSync(s.appSet)) continue;
    for (const e of s.appSet.status?.applicationStatus ?? [])
      if (e.status === 'Pending' || e.status === 'Progressing') out.add(`${s.instance}/${e.application}`);
  }
  return out;
}
