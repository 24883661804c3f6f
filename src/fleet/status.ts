import type { Application } from '../infra/argocd/types.js';
import { byText, oneLine, since, truncate } from '../core/format.js';
import type { FleetApp } from './model.js';
import { isDown, syncFailed } from './rules/index.js';

/**
 * The state of the fleet as on-call reads it: counts by sync and health, per cluster, and the apps that
 * need attention with Argo CD's own reason. `status`, `clusters`, `rollout` and the Home tab all count
 * the same way through these.
 */

export interface StatusTotals {
  apps: number;
  sync: Record<string, number>;
  health: Record<string, number>;
}

export interface ClusterStatus extends StatusTotals {
  instance: string;
  cluster: string;
}

export interface StatusProblem {
  app: string;
  instance: string;
  cluster: string;
  sync: string;
  health: string;
  reason: string;
}

/** A problem with what the blocks need besides the JSON contract. */
export interface ProblemDetail extends StatusProblem {
  since?: string;
  /** What `since` is: the health transition of a health problem, the last operation, or only the health transition of an app whose problem is its sync. */
  sinceKind?: 'health' | 'operation' | 'other';
  appSet?: string;
  namespace?: string;
}

export interface FleetSummary {
  total: StatusTotals;
  clusters: ClusterStatus[];
  problems: ProblemDetail[];
  /** instance -> appsets owning the selected apps. */
  appSets: Map<string, Set<string>>;
}

// Argo CD reports an app without status fields while it has not been reconciled yet; the
// foundation contract counts those under "Unknown".
export function syncOf(app: Application): string {
  return app.status?.sync?.status ?? 'Unknown';
}
export function healthOf(app: Application): string {
  return app.status?.health?.status ?? 'Unknown';
}

/**
 * OutOfSync/Unknown sync, down health (Degraded or Missing: app-degraded's judgement, `isDown`) or Unknown
 * health. Progressing and Suspended are not problems.
 */
export function isProblem(sync: string, health: string): boolean {
  return sync === 'OutOfSync' || sync === 'Unknown' || isDown(health) || health === 'Unknown';
}

/** How many of these health counts are down (Degraded or Missing), as app-degraded judges health. */
export function downCount(health: Record<string, number>): number {
  return Object.entries(health).reduce((n, [status, count]) => n + (isDown(status) ? count : 0), 0);
}

const MAX_REASON = 500;

/**
 * Why an app is not fine, from what Argo CD says: the failed operation's message, the resources that
 * failed to sync, unhealthy resources' messages, then conditions.
 */
export function problemReason(app: Application, now: Date = new Date()): string {
  const status = app.status;
  if (!status || (!status.sync && !status.health))
    return 'Argo CD has not reported a status for this app yet (not reconciled).';
  const parts: string[] = [];
  const op = status.operationState;
  if (op?.message && syncFailed(app)) parts.push(oneLine(op.message));
  const failed = op?.syncResult?.resources?.filter((r) => r.status === 'SyncFailed') ?? [];
  for (const r of failed.slice(0, 3))
    parts.push(`${r.kind}/${r.name}${r.message ? `: ${oneLine(r.message)}` : ' failed to sync'}`);
  if (failed.length > 3) parts.push(`${failed.length - 3} more resources failed to sync`);
  let unhealthy = 0;
  for (const r of status.resources ?? []) {
    const h = r.health;
    if (!h?.message || h.status === 'Healthy') continue;
    if (unhealthy++ < 3) parts.push(`${r.kind}/${r.name} ${h.status}: ${oneLine(h.message)}`);
  }
  if (unhealthy > 3) parts.push(`${unhealthy - 3} more unhealthy resources`);
  const conditions = [...(status.conditions ?? [])].sort(
    (a, b) => Number(/Warning$/.test(a.type)) - Number(/Warning$/.test(b.type)),
  );
  for (const c of conditions.slice(0, 3)) parts.push(`${c.type}: ${oneLine(c.message)}`);
  if (!parts.length) {
    const sync = syncOf(app);
    const health = healthOf(app);
    // A sync window holds an operation Running with its own message; say so rather than "running".
    if (op?.phase === 'Running')
      parts.push(
        `sync running${op.startedAt ? ` for ${since(op.startedAt, now)}` : ''}${op.message ? `: ${oneLine(op.message)}` : ''}`,
      );
    else if (sync === 'OutOfSync' && health === 'Healthy')
      parts.push('live state differs from the target revision; not synced yet');
    else if (health === 'Missing') parts.push('its resources do not exist in the cluster (never synced, or deleted)');
    // Argo CD 3.x leaves resource health out of List responses (B6); a Get has it.
    else if (health === 'Degraded')
      parts.push(
        `Degraded with no message in the app list; \`app ${app.metadata.name}\` shows the unhealthy resources`,
      );
    else parts.push(`sync ${sync}, health ${health}`);
  }
  return truncate(parts.join('; '), MAX_REASON);
}

// When the problem began: for a health problem the health transition; otherwise when the last
// operation finished (Argo CD records no "went OutOfSync" time, so that is the nearest thing).
function problemSince(app: Application, health: string): { since?: string; sinceKind?: ProblemDetail['sinceKind'] } {
  const h = app.status?.health?.lastTransitionTime;
  const op = app.status?.operationState;
  const opTime = op?.finishedAt ?? op?.startedAt;
  if (isDown(health) && h) return { since: h, sinceKind: 'health' };
  if (opTime) return { since: opTime, sinceKind: 'operation' };
  return h ? { since: h, sinceKind: 'other' } : {};
}

/** One pass over the apps: totals, per-(instance, cluster) counts, problems oldest first. */
export function summarizeApps(apps: Iterable<FleetApp>): FleetSummary {
  const total: StatusTotals = { apps: 0, sync: {}, health: {} };
  const byCluster = new Map<string, Map<string, ClusterStatus>>();
  const problems: ProblemDetail[] = [];
  const appSets = new Map<string, Set<string>>();
  for (const fa of apps) {
    const app = fa.app;
    const sync = syncOf(app);
    const health = healthOf(app);
    total.apps++;
    total.sync[sync] = (total.sync[sync] ?? 0) + 1;
    total.health[health] = (total.health[health] ?? 0) + 1;
    let clusters = byCluster.get(fa.instance);
    if (!clusters) byCluster.set(fa.instance, (clusters = new Map()));
    let c = clusters.get(fa.cluster);
    if (!c)
      clusters.set(fa.cluster, (c = { instance: fa.instance, cluster: fa.cluster, apps: 0, sync: {}, health: {} }));
    c.apps++;
    c.sync[sync] = (c.sync[sync] ?? 0) + 1;
    c.health[health] = (c.health[health] ?? 0) + 1;
    if (fa.appSet) {
      let sets = appSets.get(fa.instance);
      if (!sets) appSets.set(fa.instance, (sets = new Set()));
      sets.add(fa.appSet);
    }
    if (isProblem(sync, health)) {
      problems.push({
        app: app.metadata.name,
        instance: fa.instance,
        cluster: fa.cluster,
        sync,
        health,
        reason: problemReason(app),
        ...problemSince(app, health),
        appSet: fa.appSet,
        namespace: app.metadata.namespace,
      });
    }
  }
  const clusters: ClusterStatus[] = [];
  for (const instance of [...byCluster.keys()].sort(byText)) {
    const map = byCluster.get(instance)!;
    for (const name of [...map.keys()].sort(byText)) clusters.push(map.get(name)!);
  }
  // Oldest first; problems without a time (never reconciled) last, then by instance and name.
  problems.sort((a, b) => {
    if (a.since !== b.since) {
      if (!a.since) return 1;
      if (!b.since) return -1;
      const d = Date.parse(a.since) - Date.parse(b.since);
      if (d) return d;
    }
    return byText(a.instance, b.instance) || byText(a.app, b.app);
  });
  return { total, clusters, problems, appSets };
}
