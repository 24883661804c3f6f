import { createHash } from 'node:crypto';
import type {
  Application,
  Cluster,
  HealthStatusCode,
  ResourceResult,
  ResourceStatus,
  SyncOperation,
} from '../infra/argocd/types.js';
import { normalizeServer } from '../infra/argocd/objects.js';
import { automatedEnabled } from '../fleet/rollingsync.js';
import { rfc3339 } from './clock.js';
import { crashLoopMessage } from './faults.js';
import type { InstanceStore } from './store.js';

// What the simulated controller knows about one Application: the revisions its target resolves to,
// where it runs, its workload's health and what a sync of it reports per resource.

export const WORKLOAD_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'Rollout']);

/** Top-level operation present, or the last one still Running/Terminating. */
export function operationInProgress(app: Application): boolean {
  const phase = app.status?.operationState?.phase;
  return !!app.operation || phase === 'Running' || phase === 'Terminating';
}

export function autoSyncEnabled(app: Application): boolean {
  return automatedEnabled(app.spec.syncPolicy?.automated);
}

export function sha1(text: string): string {
  return createHash('sha1').update(text).digest('hex');
}

export function uuidFrom(hex: string): string {
  const h = (hex + sha1(hex)).slice(0, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** The commit the app's target resolves to now (status.sync.revision), else a stable fake commit. */
export function targetRevision(app: Application): string {
  return (
    app.status?.sync?.revision ??
    resolveRevision(app.spec.source?.repoURL ?? '', app.spec.source?.targetRevision ?? 'HEAD')
  );
}

export function targetRevisions(app: Application): string[] {
  const sources = app.spec.sources ?? [];
  return app.status?.sync?.revisions?.length
    ? [...app.status.sync.revisions]
    : sources.map((s) => resolveRevision(s.repoURL, s.targetRevision ?? 'HEAD'));
}

export function isSameRef(app: Application, revision: string): boolean {
  return revision === (app.spec.source?.targetRevision ?? 'HEAD') || revision === app.status?.sync?.revision;
}

/** What the repo server would resolve a branch/tag to: a commit SHA (kept if already one). */
export function resolveRevision(repoURL: string, revision: string): string {
  return /^[0-9a-f]{40}$/.test(revision) ? revision : sha1(`${repoURL}@${revision}`);
}

export function sourceFields(app: Application): {
  source?: Application['spec']['source'];
  sources?: Application['spec']['sources'];
} {
  if (app.spec.sources?.length) return { sources: structuredClone(app.spec.sources) };
  return app.spec.source ? { source: structuredClone(app.spec.source) } : {};
}

export function serverOf(store: InstanceStore, app: Application): string | undefined {
  const dest = app.spec.destination;
  if (dest.server) return dest.server;
  if (dest.name) for (const c of store.clusters.values()) if (c.name === dest.name) return c.server;
  return undefined;
}

export function findCluster(store: InstanceStore, ref: string): Cluster | undefined {
  const normalized = normalizeServer(ref);
  for (const c of store.clusters.values()) if (c.name === ref || normalizeServer(c.server) === normalized) return c;
  return undefined;
}

export function appOnCluster(app: Application, cluster: Cluster): boolean {
  const dest = app.spec.destination;
  if (dest.name) return dest.name === cluster.name;
  return !!dest.server && normalizeServer(dest.server) === normalizeServer(cluster.server);
}

export function workloadOf(app: Application): ResourceStatus | undefined {
  return app.status?.resources?.find((r) => WORKLOAD_KINDS.has(r.kind));
}

export function resourceId(r: { group?: string; kind: string; namespace?: string; name: string }): string {
  return `${r.group ?? ''}/${r.kind}/${r.namespace ?? ''}/${r.name}`;
}

function inScope(r: ResourceStatus, sync: SyncOperation): boolean {
  if (!sync.resources?.length) return true;
  return sync.resources.some(
    (s) =>
      (s.group ?? '') === (r.group ?? '') &&
      s.kind === r.kind &&
      s.name === r.name &&
      (!s.namespace || s.namespace === (r.namespace ?? '')),
  );
}

/** gitops-engine's per-resource results, e.g. "deployment.apps/auth-service configured". */
export function syncResults(app: Application, sync: SyncOperation, opts: { failing?: string }): ResourceResult[] {
  const resources = (app.status?.resources ?? []).filter((r) => inScope(r, sync));
  const dry = sync.dryRun ? ' (dry run)' : '';
  const pruneAllowed = (sync.prune ?? false) && !sync.syncOptions?.includes('Prune=false');
  const failingId = opts.failing
    ? resourceId(
        resources.find((r) => WORKLOAD_KINDS.has(r.kind) && !r.requiresPruning) ??
          resources.find((r) => !r.requiresPruning) ??
          resources[0] ?? { kind: '', name: '' },
      )
    : undefined;
  const out: ResourceResult[] = [];
  for (const r of resources) {
    const base = { group: r.group ?? '', version: r.version, kind: r.kind, namespace: r.namespace ?? '', name: r.name };
    const ref = `${r.kind.toLowerCase()}${r.group ? `.${r.group}` : ''}/${r.name}`;
    if (r.requiresPruning) {
      if (pruneAllowed)
        out.push({ ...base, status: 'Pruned', message: `pruned${dry}`, hookPhase: 'Running', syncPhase: 'Sync' });
      else
        out.push({
          ...base,
          status: 'PruneSkipped',
          message: 'ignored (requires pruning)',
          hookPhase: 'Running',
          syncPhase: 'Sync',
        });
    } else if (failingId && resourceId(r) === failingId) {
      out.push({ ...base, status: 'SyncFailed', message: opts.failing, hookPhase: 'Failed', syncPhase: 'Sync' });
    } else {
      out.push({
        ...base,
        status: 'Synced',
        message: `${ref} ${r.status === 'Synced' ? 'unchanged' : 'configured'}${dry}`,
        hookPhase: 'Running',
        syncPhase: 'Sync',
      });
    }
  }
  return out;
}

export function setHealth(app: Application, health: HealthStatusCode, now: Date, workloadMessage?: string): void {
  const status = (app.status ??= {});
  if (status.health?.status !== health) status.health = { status: health, lastTransitionTime: rfc3339(now) };
  for (const r of status.resources ?? []) {
    if (!WORKLOAD_KINDS.has(r.kind)) continue;
    r.health =
      workloadMessage && health !== 'Healthy' ? { status: health, message: workloadMessage } : { status: health };
  }
}

export function workloadProgressingMessage(app: Application): string | undefined {
  const w = workloadOf(app);
  return w ? `Waiting for rollout to finish: 0 of 1 updated replicas are available...` : undefined;
}

/** Argo CD's Application.QualifiedName: the bare name in the control-plane namespace, `ns/name` elsewhere. */
export function qualifiedName(app: Application): string {
  const ns = app.metadata.namespace;
  return !ns || ns === 'argocd' ? app.metadata.name : `${ns}/${app.metadata.name}`;
}

/** The crash-loop message of the app's workload, with a pod name stable per app and deployment. */
export function crashMessage(store: InstanceStore, app: Application): string {
  const workload = workloadOf(app);
  const container = workload?.name ?? app.metadata.name;
  const ns = workload?.namespace ?? app.spec.destination.namespace ?? 'default';
  const h = sha1(`${store.name}/${app.metadata.name}/${app.status?.history?.length ?? 0}`);
  return crashLoopMessage(container, `${container}-${h.slice(0, 10)}-${h.slice(10, 15)}`, ns, uuidFrom(h));
}
