/**
 * degraded-after-sync: apps that turned Degraded right after a successful sync. Argo CD marks the sync
 * Succeeded once the manifests are applied (and hooks ran): a sync of one wave without hooks does not wait for
 * health (gitops-engine/pkg/sync/sync_context.go at v3.5.1 waits only when multi-step or a hook runs). The
 * Deployment's pods crash-looping afterwards shows only in health (status.health, and per resource in status.resources[].health.message, e.g.
 * "back-off 5m0s restarting failed container ... CrashLoopBackOff"). A Degraded turn within the rule's
 * window of the sync's finishedAt is blamed on the revision that sync applied.
 *
 * The diagnosis also names the fix the fleet shows (down-apps.ts pruneFix: neighbours awaiting a prune);
 * without one it is to roll back the revision.
 */
import type { Application } from '../../infra/argocd/types.js';
import { code, formatDuration, oneLine, plural, truncate } from '../../core/format.js';
import type { FleetApp, FleetView } from '../model.js';
import type { Finding } from './finding.js';
import { degradedMessages, pruneFix } from './down-apps.js';
import {
  ALERT_QUOTE_MAX,
  appConditions,
  byName,
  groupBy,
  ownerLabel,
  ownerOf,
  revisionOf,
  shortRevision,
  type AlertCondition,
  type AppHit,
  type RuleInputs,
  type RuleSettings,
} from './facts.js';
import type { RuleViews } from './rule.js';

/** The rule's judgement of one app: Degraded within `windowMs` of its last successful sync, and how long after. */
export function degradedAfterSync(app: Application, now: Date, windowMs: number): number | undefined {
  const health = app.status?.health;
  const op = app.status?.operationState;
  if (health?.status !== 'Degraded' || op?.phase !== 'Succeeded' || !op.finishedAt) return undefined;
  const turned = health.lastTransitionTime ? Date.parse(health.lastTransitionTime) : now.getTime();
  const after = turned - Date.parse(op.finishedAt);
  return after >= -60_000 && after <= windowMs ? Math.max(0, after) : undefined;
}

function hits(fleet: FleetView, now: Date, windowMs: number): AppHit[] {
  const out: AppHit[] = [];
  for (const a of fleet.apps()) {
    const after = degradedAfterSync(a.app, now, windowMs);
    if (after === undefined) continue;
    const message = a.app.status?.health?.message;
    out.push({
      fleetApp: a,
      since: a.app.status?.health?.lastTransitionTime,
      revision: revisionOf(a.app),
      detail: `Degraded ${formatDuration(after)} after its sync${message ? `: ${truncate(oneLine(message), ALERT_QUOTE_MAX)}` : ''}`,
    });
  }
  return out;
}

export function degradedAfterSyncAlerts(inputs: RuleInputs, settings: RuleSettings): AlertCondition[] {
  const { now } = inputs;
  return appConditions(
    'degraded-after-sync',
    hits(inputs.fleet, now, settings.windowMs),
    now,
    // No age in the text: an alert keeps its summary while it lasts, and its message shows since when.
    (owner, n, _since, group) =>
      `${plural(n, 'app')} of ${owner} Degraded after a successful sync of ${shortRevision(group[0].revision) ?? 'their last revision'}.`,
  );
}

function fixFor(fleet: FleetView, group: FleetApp[], revision: string | undefined, owner: string): string {
  return (
    pruneFix(fleet, group, revision) ??
    `Roll back to the revision before ${shortRevision(revision) ?? 'the last sync'} (${code(`rollback <app>`)} per app of ${owner}), or fix forward in git and sync; syncing the same revision again crash-loops again.`
  );
}

/** One finding per owner and revision: apps crash-looping (or otherwise Degraded) after their last sync, and the fix. */
export function diagnoseDegradedAfterSync(fleet: FleetView, now: Date, windowMs: number): Finding[] {
  const out: Finding[] = [];
  const groups = groupBy(
    hits(fleet, now, windowMs),
    (h) => `${h.fleetApp.instance}|${h.fleetApp.appSet ?? `app:${h.fleetApp.app.metadata.name}`}|${h.revision ?? ''}`,
  );
  for (const group of groups.values()) {
    const apps = group.map((h) => h.fleetApp).sort((a, b) => byName(a.app.metadata.name, b.app.metadata.name));
    const first = apps[0];
    const owner = ownerOf(first);
    const revision = group[0].revision;
    const messages = degradedMessages(apps);
    const crashLoop = messages.some((m) => m.includes('CrashLoopBackOff'));
    out.push({
      rule: 'degraded-after-sync',
      severity: 'critical',
      message:
        `${plural(apps.length, 'app')} of ${ownerLabel(owner)} ${crashLoop ? 'are crash-looping' : 'turned Degraded'} after a successful sync of ${shortRevision(revision) ?? 'their last revision'}` +
        `${messages.length ? `: ${messages.slice(0, 2).join('; ')}` : ''}.`,
      details: apps.map(
        (a) =>
          `${a.app.metadata.name} (${a.cluster}): ${a.app.status?.health?.message ? truncate(oneLine(a.app.status.health.message), ALERT_QUOTE_MAX) : 'Degraded'}`,
      ),
      why:
        'Argo CD marks a sync Succeeded once the manifests are applied; pods that then crash show only in health (Degraded, CrashLoopBackOff). ' +
        'A resource removed from git stays live until a sync with prune deletes it, so a revision that depends on its removal breaks where it is still there.',
      fix: fixFor(fleet, apps, revision, ownerLabel(owner)),
      apps: apps.map((a) => a.app.metadata.name),
      ...(owner.appSet ? { appSet: owner.appSet } : {}),
      instance: first.instance,
    });
  }
  return out;
}

export const degradedAfterSyncRule: RuleViews = {
  alert: (inputs, settings) => degradedAfterSyncAlerts(inputs, settings),
  diagnoseFleet: (fleet, now, settings) => diagnoseDegradedAfterSync(fleet, now, settings.windowMs),
};
