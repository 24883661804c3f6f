/**
 * Alert rules: pure functions from the fleet view (and a few facts only Redis knows) to the problems
 * that exist now, one per group. Grouping is by rule, instance, ApplicationSet (or the app itself when
 * no appset generated it), step and revision, so twelve auth-service apps failing the same revision are
 * one problem listing twelve apps. Whether a problem becomes an alert, and when, is lifecycle.ts's job.
 */
import type { Application, ApplicationSet } from '../argocd/types.js';
import { ALERT_RULES, type AlertRuleName, type AlertsConfig } from '../config/schema.js';
import { formatDuration } from '../core/format.js';
import { SYNC_WINDOW_BLOCKED_MESSAGE } from '../fleet/diagnose.js';
import type { FleetApp, FleetView } from '../fleet/model.js';
import { isRollingSync, maxConcurrentFor, rolloutSteps } from '../fleet/rollingsync.js';
import { PAUSED_AT, PAUSED_BY } from '../runbooks/rollout-pause.js';

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

const DEFAULTS: Record<AlertRuleName, { afterMs: number; windowMs: number }> = {
  'stuck-step': { afterMs: 15 * 60_000, windowMs: 0 },
  'sync-failed': { afterMs: 0, windowMs: 0 },
  'degraded-after-sync': { afterMs: 0, windowMs: 30 * 60_000 },
  'out-of-sync': { afterMs: 3_600_000, windowMs: 0 },
  'instance-unreachable': { afterMs: 2 * 60_000, windowMs: 0 },
  'key-backup-stale': { afterMs: 26 * 3_600_000, windowMs: 0 },
};

/** A rule's switch, channel and thresholds, with the defaults filled in. */
export function ruleSettings(config: AlertsConfig, rule: AlertRuleName): RuleSettings {
  const own = config.rules[rule] ?? { enabled: true };
  const afterMs = own.after ?? (rule === 'stuck-step' ? config.stuckAfter : DEFAULTS[rule].afterMs);
  return { enabled: own.enabled !== false, channel: own.channel ?? config.channel, afterMs, windowMs: own.window ?? DEFAULTS[rule].windowMs };
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
}

export interface RuleResult {
  conditions: AlertCondition[];
  expected: ExpectedStall[];
}

// ---- facts shared with the digest ----

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

export function groupKey(parts: { rule: string; instance: string; appSet?: string; app?: string; step?: number; revision?: string; extra?: string }): string {
  return [parts.rule, parts.instance, parts.appSet ? `appset:${parts.appSet}` : `app:${parts.app ?? ''}`, parts.step ?? '', parts.revision ?? '', parts.extra ?? ''].join('|');
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

export const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

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

function ownerLabel(c: { appSet?: string; app?: string }): string {
  return c.appSet ? `appset ${c.appSet}` : `app ${c.app}`;
}

// ---- the rules ----

interface StuckEntry {
  name: string;
  status: string;
  since: string;
  revision?: string;
  problem: string;
}

/** A RollingSync step whose apps sit Pending/Progressing longer than stuckAfter: Argo CD has no step timeout. */
function stuckSteps(fleet: FleetView, now: Date, settings: RuleSettings, out: RuleResult): Set<string> {
  const stuckApps = new Set<string>();
  for (const target of fleet.appSets()) {
    const appSet = target.appSet;
    if (!isRollingSync(appSet)) continue;
    const entries = appSet.status?.applicationStatus ?? [];
    if (!entries.length) continue;
    const name = appSet.metadata.name;
    const live = new Map(fleet.appsOf(target.instance, name).map((a) => [a.app.metadata.name, a]));
    const paused = pausedBy(appSet);
    const steps = rolloutSteps(appSet);
    const byStep = new Map<number, StuckEntry[]>();
    const windowHeld = new Map<number, string[]>();
    for (const e of entries) {
      if (e.status !== 'Pending' && e.status !== 'Progressing') continue;
      const app = live.get(e.application);
      // A stale entry (no such Application) is the missing-app hold diagnose reports, not a stuck sync.
      if (!app) continue;
      const step = Number(e.step);
      if (heldBySyncWindow(app.app)) {
        windowHeld.set(step, [...(windowHeld.get(step) ?? []), e.application]);
        continue;
      }
      const since = e.lastTransitionTime ?? app.app.status?.operationState?.startedAt;
      if (!since || now.getTime() - Date.parse(since) <= settings.afterMs) continue;
      const list = byStep.get(step) ?? [];
      list.push({ name: e.application, status: e.status, since, revision: e.targetRevisions?.[0] ?? revisionOf(app.app), problem: appProblem(app.app) });
      byStep.set(step, list);
    }
    for (const [step, apps] of windowHeld) {
      out.expected.push({
        reason: 'sync-window',
        instance: target.instance,
        appSet: name,
        step,
        apps: apps.sort(byName),
        message: `Step ${step} of ${name}: ${apps.length} app(s) held by a sync window ("${SYNC_WINDOW_BLOCKED_MESSAGE}"); the rollout continues when the window opens.`,
      });
    }
    if (paused) {
      const apps = [...byStep.values()].flat().map((s) => s.name);
      out.expected.push({
        reason: 'paused',
        instance: target.instance,
        appSet: name,
        apps: apps.sort(byName),
        message: `${name} is paused by ${paused.by}${paused.at ? ` since ${paused.at}` : ''}: its steps wait on purpose (\`resume ${name}\`).`,
      });
      continue;
    }
    // A manual gate (maxUpdate 0) holds its apps Waiting on purpose: they never reach Pending, so only say so.
    for (let i = 0; i < steps.length; i++) {
      const inStep = entries.filter((e) => e.step === String(i + 1));
      if (maxConcurrentFor(steps[i].maxUpdate, inStep.length) === 0 && inStep.some((e) => e.status === 'Waiting')) {
        out.expected.push({
          reason: 'manual-gate',
          instance: target.instance,
          appSet: name,
          step: i + 1,
          apps: inStep.filter((e) => e.status === 'Waiting').map((e) => e.application).sort(byName),
          message: `Step ${i + 1} of ${name} is a manual gate (maxUpdate 0): its apps wait until someone raises maxUpdate.`,
        });
      }
    }
    for (const [step, stuck] of byStep) {
      for (const [revision, group] of groupBy(stuck, (s) => s.revision ?? '')) {
        group.sort((a, b) => Date.parse(a.since) - Date.parse(b.since) || byName(a.name, b.name));
        for (const s of group) stuckApps.add(`${target.instance}/${s.name}`);
        const since = group[0].since;
        const later = steps.length - step;
        out.conditions.push({
          key: groupKey({ rule: 'stuck-step', instance: target.instance, appSet: name, step, revision }),
          rule: 'stuck-step',
          severity: 'critical',
          instance: target.instance,
          appSet: name,
          step,
          revision: revision || undefined,
          apps: group.map((s) => s.name).sort(byName),
          since,
          summary: `Step ${step} of ${name} is stuck: ${group.length} app${group.length === 1 ? '' : 's'} Pending/Progressing for ${formatDuration(now.getTime() - Date.parse(since))}${later > 0 ? `; ${later} later step${later === 1 ? '' : 's'} wait behind it` : ''}.`,
          details: group.map((s) => `${s.name}: ${s.status} for ${formatDuration(now.getTime() - Date.parse(s.since))} (${s.problem})`),
          rolloutTarget: name,
        });
      }
    }
  }
  return stuckApps;
}

/**
 * When the problem an alert reports began to hurt, where that is not when the rule noticed it: a
 * stuck step from the moment its apps stopped progressing (the rollout transition to Pending or
 * Progressing that never advanced), not stuckAfter later. Other rules report the bad transition
 * itself, which the change log already marks.
 */
export function alertImpactSince(alert: Pick<AlertCondition, 'rule' | 'since'>): string | undefined {
  return alert.rule === 'stuck-step' ? alert.since : undefined;
}

function appProblem(app: Application): string {
  const op = app.status?.operationState;
  if (op && (op.phase === 'Failed' || op.phase === 'Error')) return `sync ${op.phase}: ${oneLine(op.message ?? '')}`;
  if (op?.phase === 'Running') return `sync Running${op.message ? `: ${oneLine(op.message)}` : ''}`;
  const health = app.status?.health;
  return `${app.status?.sync?.status ?? 'Unknown'}/${health?.status ?? 'Unknown'}${health?.message ? `: ${oneLine(health.message)}` : ''}`;
}

function oneLine(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** Apps grouped by owner and revision, as conditions of one rule. */
function appConditions(
  rule: AlertRuleName,
  apps: { fleetApp: FleetApp; since: string | undefined; detail: string; revision?: string }[],
  now: Date,
  describe: (owner: string, count: number, since: string) => string,
  extra: Partial<AlertCondition> = {},
): AlertCondition[] {
  const out: AlertCondition[] = [];
  const groups = groupBy(apps, (a) => groupKey({ rule, instance: a.fleetApp.instance, ...ownerOf(a.fleetApp), revision: a.revision }));
  for (const [key, group] of groups) {
    const first = group[0].fleetApp;
    const since = oldest(group.map((g) => g.since), now.toISOString());
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
      summary: describe(ownerLabel(owner), group.length, since),
      details: group.map((g) => `${g.fleetApp.app.metadata.name}: ${g.detail}`),
      ...extra,
    });
  }
  return out;
}

/**
 * Every rule that is switched on, over the whole fleet. Apps already in a stuck-step problem are left
 * out of sync-failed: the stuck step is the problem on-call acts on, and its message names the failure.
 */
export function evaluateAlertRules(inputs: RuleInputs): RuleResult {
  const { fleet, now, config } = inputs;
  const out: RuleResult = { conditions: [], expected: [] };
  const on = (rule: AlertRuleName) => ruleSettings(config, rule).enabled;
  const stuck = stuckSteps(fleet, now, ruleSettings(config, 'stuck-step'), { conditions: on('stuck-step') ? out.conditions : [], expected: out.expected });

  const failed: Parameters<typeof appConditions>[1] = [];
  const degraded: Parameters<typeof appConditions>[1] = [];
  const outOfSync: Parameters<typeof appConditions>[1] = [];
  const degradedWindow = ruleSettings(config, 'degraded-after-sync').windowMs;
  const inRollout = rolloutMembers(fleet);
  for (const a of fleet.apps()) {
    const app = a.app;
    const op = app.status?.operationState;
    const key = `${a.instance}/${app.metadata.name}`;
    if (op && (op.phase === 'Failed' || op.phase === 'Error') && !stuck.has(key)) {
      failed.push({ fleetApp: a, since: op.finishedAt ?? op.startedAt, revision: revisionOf(app), detail: `sync ${op.phase}: ${oneLine(op.message ?? 'no message')}` });
    }
    const health = app.status?.health;
    if (health?.status === 'Degraded' && op?.phase === 'Succeeded' && op.finishedAt) {
      const turned = health.lastTransitionTime ? Date.parse(health.lastTransitionTime) : now.getTime();
      const after = turned - Date.parse(op.finishedAt);
      if (after >= -60_000 && after <= degradedWindow) {
        degraded.push({ fleetApp: a, since: health.lastTransitionTime, revision: revisionOf(app), detail: `Degraded ${formatDuration(Math.max(0, after))} after its sync${health.message ? `: ${oneLine(health.message)}` : ''}` });
      }
    }
    // An app waiting its turn in a RollingSync rollout is OutOfSync by design; the rollout's own rule covers it.
    if (app.status?.sync?.status === 'OutOfSync' && !inRollout.has(key) && !heldBySyncWindow(app)) {
      outOfSync.push({ fleetApp: a, since: undefined, revision: app.status.sync.revision, detail: `OutOfSync${op?.finishedAt ? `; last sync ${op.phase} at ${op.finishedAt}` : ''}` });
    }
  }
  if (on('sync-failed')) {
    out.conditions.push(...appConditions('sync-failed', failed, now, (owner, n) => `Sync failed for ${n} app${n === 1 ? '' : 's'} of ${owner}.`));
  }
  if (on('degraded-after-sync')) {
    out.conditions.push(
      ...appConditions('degraded-after-sync', degraded, now, (owner, n, since) => `${n} app${n === 1 ? '' : 's'} of ${owner} Degraded after a successful sync (for ${formatDuration(now.getTime() - Date.parse(since))}).`),
    );
  }
  if (on('out-of-sync')) {
    const holdForMs = ruleSettings(config, 'out-of-sync').afterMs;
    out.conditions.push(
      ...appConditions('out-of-sync', outOfSync, now, (owner, n) => `${n} app${n === 1 ? '' : 's'} of ${owner} OutOfSync for longer than ${formatDuration(holdForMs)}.`, { severity: 'warning', holdForMs }),
    );
  }
  if (on('instance-unreachable')) {
    const holdForMs = ruleSettings(config, 'instance-unreachable').afterMs;
    for (const h of fleet.health()) {
      if (h.synced) continue;
      out.conditions.push({
        key: groupKey({ rule: 'instance-unreachable', instance: h.instance }),
        rule: 'instance-unreachable',
        severity: 'critical',
        instance: h.instance,
        apps: [],
        since: h.lastEventAt ?? now.toISOString(),
        summary: `Argo CD instance ${h.instance} is unreachable: rollcall's view of it is stale${h.error ? ` (${oneLine(h.error)})` : ''}.`,
        details: h.error ? [oneLine(h.error, 400)] : [],
        holdForMs,
      });
    }
  }
  if (on('key-backup-stale') && inputs.keyBackups) {
    const afterMs = ruleSettings(config, 'key-backup-stale').afterMs;
    for (const b of inputs.keyBackups) {
      const age = b.lastBackupAt ? now.getTime() - Date.parse(b.lastBackupAt) : Infinity;
      if (age <= afterMs) continue;
      out.conditions.push({
        key: groupKey({ rule: 'key-backup-stale', instance: b.cluster }),
        rule: 'key-backup-stale',
        severity: 'warning',
        instance: b.cluster,
        apps: [],
        since: b.lastBackupAt ?? now.toISOString(),
        summary: b.lastBackupAt
          ? `No sealed-secrets key backup of cluster ${b.cluster} for ${formatDuration(age)} (expected within ${formatDuration(afterMs)}).`
          : `No successful sealed-secrets key backup of cluster ${b.cluster} is recorded, though it has a backup schedule.`,
        details: [`Back it up now: \`run backup-sealed-secrets-keys cluster=${b.cluster}\``],
      });
    }
  }
  out.conditions.sort((a, b) => ALERT_RULES.indexOf(a.rule) - ALERT_RULES.indexOf(b.rule) || byName(a.key, b.key));
  return out;
}

/** `instance/app` of every app whose RollingSync entry is not Healthy: the rollout is still getting to it. */
export function rolloutMembers(fleet: FleetView): Set<string> {
  const out = new Set<string>();
  for (const s of fleet.appSets()) {
    if (!isRollingSync(s.appSet)) continue;
    for (const e of s.appSet.status?.applicationStatus ?? []) if (e.status !== 'Healthy') out.add(`${s.instance}/${e.application}`);
  }
  return out;
}

