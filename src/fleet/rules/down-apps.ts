/**
 * What the rules about down apps (degraded-after-sync, app-degraded) read the same way: which health
 * statuses mean down, what the failing resources say, and the fix the fleet itself points at.
 *
 * Argo CD's app health is the worst health of its resources (controller/health.go setApplicationHealth,
 * gitops-engine health.IsWorse at v3.5.1: Healthy < Suspended < Progressing < Missing < Degraded < Unknown);
 * a pod whose container waits in a reason ending in BackOff or Error (CrashLoopBackOff, ImagePullBackOff,
 * CreateContainerConfigError) is Degraded (gitops-engine health_pod.go), and so is a Deployment past its
 * progress deadline (health_deployment.go). An app is Missing only when none of its resources exists. None of
 * it depends on a sync, and nothing in Argo CD acts on it: auto-sync runs only on OutOfSync
 * (controller/appcontroller.go autoSync), so a Degraded, Synced app stays down until someone acts.
 */
import type { ResourceStatus } from '../../infra/argocd/types.js';
import { byText, code, oneLine, plural, truncate } from '../../core/format.js';
import type { FleetApp, FleetView } from '../model.js';
import { ALERT_QUOTE_MAX, shortRevision } from './facts.js';

/** The health statuses that mean an app is down: a failed resource (Degraded), or none of its resources exists (Missing). */
export type DownHealth = 'Degraded' | 'Missing';

/** Whether a health status means down. Progressing, Suspended and Unknown do not: they settle, wait, or say nothing. */
export function isDown(health: string | null | undefined): health is DownHealth {
  return health === 'Degraded' || health === 'Missing';
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
export function degradedMessages(apps: FleetApp[]): string[] {
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
  return [...counts].sort((a, b) => b[1] - a[1] || byText(a[0], b[0])).map(([k]) => k);
}

/** Where an app runs: its instance, cluster and namespace. */
function placeOf(a: FleetApp): string {
  return `${a.instance}|${a.cluster}|${a.app.spec?.destination?.namespace ?? ''}`;
}

// Per fleet, at its version: the OutOfSync apps with resources only a prune removes, by place. Every group of down
// apps asks for its neighbours; mid-incident at 50,000 apps a pass over the fleet per group took `diagnose` 2 s.
const awaitingPruneIndex = new WeakMap<FleetView, { version: number; byPlace: Map<string, FleetApp[]> }>();

function awaitingPruneByPlace(fleet: FleetView): Map<string, FleetApp[]> {
  const version = fleet.version();
  const kept = awaitingPruneIndex.get(fleet);
  if (kept?.version === version) return kept.byPlace;
  const byPlace = new Map<string, FleetApp[]>();
  for (const a of fleet.apps()) {
    if (a.app.status?.sync?.status !== 'OutOfSync' || !a.app.status.resources?.some((r) => r.requiresPruning)) continue;
    const place = placeOf(a);
    const here = byPlace.get(place);
    if (here) here.push(a);
    else byPlace.set(place, [a]);
  }
  awaitingPruneIndex.set(fleet, { version, byPlace });
  return byPlace;
}

/** Apps beside the down ones (same instance, cluster, namespace) that are OutOfSync with resources only a prune removes. */
function awaitingPrune(fleet: FleetView, down: FleetApp[]): { apps: FleetApp[]; resources: ResourceStatus[] } {
  const byPlace = awaitingPruneByPlace(fleet);
  const names = new Set(down.map((a) => `${a.instance}/${a.app.metadata.name}`));
  const apps: FleetApp[] = [];
  for (const place of new Set(down.map(placeOf)))
    for (const a of byPlace.get(place) ?? []) if (!names.has(`${a.instance}/${a.app.metadata.name}`)) apps.push(a);
  apps.sort((x, y) => byText(x.app.metadata.name, y.app.metadata.name));
  const resources = apps.flatMap((a) => (a.app.status?.resources ?? []).filter((r) => r.requiresPruning));
  return { apps, resources };
}

/** `sync` target for these apps: their common name prefix as a glob when it says more than one name. */
function syncTarget(names: string[]): string {
  if (names.length === 1) return names[0];
  let prefix = names[0];
  for (const n of names) while (!n.startsWith(prefix)) prefix = prefix.slice(0, -1);
  return prefix.length >= 3 ? `${prefix}*` : names.join(' ');
}

/**
 * The fix the fleet shows for down apps, when it shows one: apps in the same cluster and namespace that are
 * OutOfSync with resources requiring pruning (status.resources[].requiresPruning: removed from git, still
 * live). Git has moved on and what it removed is still there for the crashing pods to read; a sync deletes
 * such resources only with prune (Argo CD never prunes unless asked). Undefined when no such apps exist.
 */
export function pruneFix(fleet: FleetView, down: FleetApp[], revision: string | undefined): string | undefined {
  const neighbours = awaitingPrune(fleet, down);
  if (!neighbours.apps.length) return undefined;
  const names = neighbours.apps.map((a) => a.app.metadata.name);
  const kinds = [...new Set(neighbours.resources.map((r) => `${r.kind}/${r.name}`))].sort(byText);
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
