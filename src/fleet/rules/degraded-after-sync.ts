/**
 * degraded-after-sync: apps that turned Degraded right after a successful sync. Argo CD marks the sync
 * Succeeded once the manifests are applied (and hooks ran); the Deployment's pods crash-looping afterwards
 * shows only in health (status.health, and per resource in status.resources[].health.message, e.g.
 * "back-off 5m0s restarting failed container ... CrashLoopBackOff"). A Degraded turn within the rule's
 * window of the sync's finishedAt is blamed on the revision that sync applied.
 *
 * The diagnosis also names the fix the fleet shows: when apps in the same cluster and namespace are
 * OutOfSync with resources that require pruning (status.resources[].requiresPruning: removed from git,
 * still live), git has moved on and what it removed is still there for the crashing pods to read. A sync
 * deletes such resources only with prune (Argo CD never prunes unless asked), so the fix is to sync those
 * apps with prune; without such apps it is to roll back the revision.
 */
import type { Application, ResourceStatus } from '../../infra/argocd/types.js';
import { code, formatDuration, oneLine, plural, truncate } from '../../core/format.js';
import type { FleetApp, FleetView } from '../model.js';
import type { Finding } from './finding.js';
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
    (owner, n, since) =>
      `${n} app${n === 1 ? '' : 's'} of ${owner} Degraded after a successful sync (for ${formatDuration(now.getTime() - Date.parse(since))}).`,
  );
}

/**
 * The kubelet's reason behind a pod message, where it has one. A container that keeps exiting waits in
 * CrashLoopBackOff, whose message is "back-off <d> restarting failed container=..." (kubelet).
 */
function waitingReason(message: string): string | undefined {
  if (/back-off \S+ restarting failed container/.test(message))
    return 'CrashLoopBackOff (back-off restarting failed container)';
  return /CrashLoopBackOff|ImagePullBackOff|ErrImagePull|OOMKilled|CreateContainerConfigError/.exec(message)?.[0];
}

/** The Degraded resources' own messages (what the pods say), most common first. */
function degradedMessages(apps: FleetApp[]): string[] {
  const counts = new Map<string, number>();
  for (const a of apps) {
    for (const r of a.app.status?.resources ?? []) {
      if (r.health?.status !== 'Degraded' || !r.health.message) continue;
      // Pod names differ per cluster; the resource and the reason are what repeats.
      const reason = waitingReason(r.health.message);
      const key = `${r.kind}/${r.name}: ${reason ?? truncate(oneLine(r.health.message), ALERT_QUOTE_MAX)}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  }
  return [...counts].sort((a, b) => b[1] - a[1] || byName(a[0], b[0])).map(([k]) => k);
}

/** Apps beside the Degraded ones (same instance, cluster, namespace) that are OutOfSync with resources only a prune removes. */
function awaitingPrune(fleet: FleetView, degraded: FleetApp[]): { apps: FleetApp[]; resources: ResourceStatus[] } {
  const places = new Set(degraded.map((a) => `${a.instance}|${a.cluster}|${a.app.spec?.destination?.namespace ?? ''}`));
  const names = new Set(degraded.map((a) => `${a.instance}/${a.app.metadata.name}`));
  const apps: FleetApp[] = [];
  const resources: ResourceStatus[] = [];
  for (const a of fleet.apps()) {
    if (names.has(`${a.instance}/${a.app.metadata.name}`) || a.app.status?.sync?.status !== 'OutOfSync') continue;
    if (!places.has(`${a.instance}|${a.cluster}|${a.app.spec?.destination?.namespace ?? ''}`)) continue;
    const prune = (a.app.status?.resources ?? []).filter((r) => r.requiresPruning);
    if (!prune.length) continue;
    apps.push(a);
    resources.push(...prune);
  }
  return { apps: apps.sort((x, y) => byName(x.app.metadata.name, y.app.metadata.name)), resources };
}

/** `sync` target for these apps: their common name prefix as a glob when it says more than one name. */
function syncTarget(names: string[]): string {
  if (names.length === 1) return names[0];
  let prefix = names[0];
  for (const n of names) while (!n.startsWith(prefix)) prefix = prefix.slice(0, -1);
  return prefix.length >= 3 ? `${prefix}*` : names.join(' ');
}

function fixFor(fleet: FleetView, group: FleetApp[], revision: string | undefined, owner: string): string {
  const neighbours = awaitingPrune(fleet, group);
  if (neighbours.apps.length) {
    const names = neighbours.apps.map((a) => a.app.metadata.name);
    const kinds = [...new Set(neighbours.resources.map((r) => `${r.kind}/${r.name}`))].sort(byName);
    const newer = [
      ...new Set(
        neighbours.apps
          .map((a) => shortRevision(a.app.status?.sync?.revision))
          .filter((r) => r && r !== shortRevision(revision)),
      ),
    ];
    return (
      `Sync ${plural(names.length, 'app')} in the same namespaces with prune: ${code(`sync ${syncTarget(names)} prune=true`)}. ` +
      `They are OutOfSync${newer.length ? ` at ${newer.join(', ')}` : ''} and still run ${kinds.slice(0, 3).join(', ')}${kinds.length > 3 ? ', ...' : ''}, which git no longer has; ` +
      `a sync without prune leaves ${kinds.length === 1 ? 'it' : 'them'} in place. The Degraded apps recover once ${kinds.length === 1 ? 'it is' : 'they are'} gone.`
    );
  }
  return `Roll back to the revision before ${shortRevision(revision) ?? 'the last sync'} (${code(`rollback <app>`)} per app of ${owner}), or fix forward in git and sync; syncing the same revision again crash-loops again.`;
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
