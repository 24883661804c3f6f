import type { Application, Cluster } from '../infra/argocd/types.js';
import { normalizeServer } from '../infra/argocd/objects.js';

/**
 * Faults the simulator can inject into app behaviour (the HTTP-level ones, latency/5xx/429, live
 * in the REST layer). The controller applies the effects; this module holds what is set and the
 * messages, worded as Argo CD and Kubernetes word them so the bot's parsing meets real text.
 */
export interface SimFaults {
  /** Every sync of the app fails: one resource SyncFailed with `message`, phase Failed. */
  failApp(instance: string, app: string, message?: string): void;
  /** After its next sync the app's workload crash-loops: health Degraded with a back-off message. */
  crashLoop(instance: string, app: string): void;
  /** Whether the app's workload crash-loops once synced (set by crashLoop, until cleared). */
  isCrashLooping(instance: string, app: string): boolean;
  /** Removes both faults; a crash-looping app recovers (Progressing, then Healthy). */
  clear(instance: string, app: string): void;
  /** The cluster (name or server URL) becomes unreachable, or reachable again. */
  clusterDown(instance: string, cluster: string, down: boolean, message?: string): void;
  /** What is set now. */
  list(): FaultEntry[];
}

export type FaultEntry =
  | { kind: 'fail'; instance: string; app: string; message: string }
  | { kind: 'crashloop'; instance: string; app: string }
  | { kind: 'clusterDown'; instance: string; cluster: string; server: string; message: string };

/** What a cluster-down fault replaced on each app, so bringing the cluster back restores it. */
export interface SavedAppStatus {
  sync: NonNullable<Application['status']>['sync'];
  health: NonNullable<Application['status']>['health'];
  conditions: NonNullable<Application['status']>['conditions'];
}

export class FaultBook {
  private readonly failing = new Map<string, string>();
  private readonly crashLooping = new Set<string>();
  /** instance → normalized server → down cluster */
  private readonly down = new Map<
    string,
    Map<string, { cluster: string; message: string; saved: Map<string, SavedAppStatus> }>
  >();

  setFailing(instance: string, app: string, message: string): void {
    this.failing.set(key(instance, app), message);
  }
  failure(instance: string, app: string): string | undefined {
    return this.failing.get(key(instance, app));
  }
  setCrashLoop(instance: string, app: string): void {
    this.crashLooping.add(key(instance, app));
  }
  isCrashLooping(instance: string, app: string): boolean {
    return this.crashLooping.has(key(instance, app));
  }
  clearApp(instance: string, app: string): boolean {
    const a = this.failing.delete(key(instance, app));
    const b = this.crashLooping.delete(key(instance, app));
    return a || b;
  }

  markDown(instance: string, cluster: Cluster, message: string): Map<string, SavedAppStatus> {
    let byServer = this.down.get(instance);
    if (!byServer) this.down.set(instance, (byServer = new Map()));
    const server = normalizeServer(cluster.server);
    const existing = byServer.get(server);
    if (existing) {
      existing.message = message;
      return existing.saved;
    }
    const saved = new Map<string, SavedAppStatus>();
    byServer.set(server, { cluster: cluster.name, message, saved });
    return saved;
  }
  /** Returns what was saved for the cluster's apps, or undefined when it was not down. */
  markUp(instance: string, cluster: Cluster): Map<string, SavedAppStatus> | undefined {
    const byServer = this.down.get(instance);
    const server = normalizeServer(cluster.server);
    const entry = byServer?.get(server);
    byServer?.delete(server);
    return entry?.saved;
  }
  /** The down message for the cluster the app deploys to, when that cluster is down. */
  clusterDownFor(instance: string, server: string | undefined): string | undefined {
    if (!server) return undefined;
    return this.down.get(instance)?.get(normalizeServer(server))?.message;
  }
  hasDownClusters(instance: string): boolean {
    return (this.down.get(instance)?.size ?? 0) > 0;
  }

  list(): FaultEntry[] {
    const out: FaultEntry[] = [];
    for (const [k, message] of this.failing) out.push({ kind: 'fail', ...split(k), message });
    for (const k of this.crashLooping) out.push({ kind: 'crashloop', ...split(k) });
    for (const [instance, byServer] of this.down)
      for (const [server, d] of byServer)
        out.push({ kind: 'clusterDown', instance, cluster: d.cluster, server, message: d.message });
    return out;
  }
}

function key(instance: string, app: string): string {
  return `${instance}\u0000${app}`;
}
function split(k: string): { instance: string; app: string } {
  const i = k.indexOf('\u0000');
  return { instance: k.slice(0, i), app: k.slice(i + 1) };
}

// ---------- Messages (as the real components write them) ----------

/** A kube-apiserver validation error, as gitops-engine reports a failed apply. */
export function defaultSyncFailure(workloadName: string): string {
  return (
    `Deployment.apps "${workloadName}" is invalid: spec.template.spec.containers[0].resources.requests: ` +
    `Invalid value: "2": must be less than or equal to cpu limit of 1`
  );
}

/** gitops-engine's operation message when an apply fails. */
export function applyFailedMessage(reasons: string[]): string {
  return `one or more objects failed to apply, reason: ${reasons.join(',')}`;
}

/** kubelet's CrashLoopBackOff reason as Argo CD's pod health check surfaces it. */
export function crashLoopMessage(container: string, pod: string, namespace: string, podUid: string): string {
  return `back-off 5m0s restarting failed container=${container} pod=${pod}_${namespace}(${podUid})`;
}

function hostOf(server: string): string {
  try {
    return new URL(server).host;
  } catch {
    return server;
  }
}

/** The cluster connection error Argo CD shows for an unreachable API server. */
export function clusterUnreachableMessage(server: string): string {
  const host = hostOf(server);
  const port = host.includes(':') ? '' : ':443';
  return `Unable to connect to cluster: Get "${normalizeServer(server)}/version?timeout=32s": dial tcp ${host}${port}: i/o timeout`;
}

/** The app condition Argo CD sets when it cannot load live state from the cluster. */
export function comparisonErrorMessage(server: string, connectionMessage: string): string {
  const s = normalizeServer(server);
  const cause = connectionMessage.replace(/^Unable to connect to cluster: /, '');
  return (
    `Failed to load live state: failed to get cluster info for "${s}": error synchronizing cache state : ` +
    `failed to sync cluster ${s}: failed to load initial state of resource Deployment.apps: ${cause}`
  );
}
