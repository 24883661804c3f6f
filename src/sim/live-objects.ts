import type { Application } from '../infra/argocd/types.js';
import { normalizeServer } from '../infra/argocd/objects.js';
import type { SimKube, SimKubeCluster } from './kube/index.js';
import type { InstanceStore } from './store.js';

type Obj = Record<string, any>;

/** An app's resource as Argo CD's resource endpoints name it. */
export interface LiveRef {
  kind: string;
  namespace?: string;
  name: string;
}

/**
 * The live objects behind an app's resources, where the app deploys to a simulated cluster (fixture `kube`):
 * what Argo CD's API server reads with kubectl for GET …/resource and the resource actions, and patches when an
 * action runs. Clusters are matched by Argo CD cluster name (destination.name, or the name of the cluster whose
 * server is destination.server).
 */
export class SimLiveObjects {
  constructor(private readonly kube: SimKube) {}

  /** Whether any simulated cluster holds an object of this kind (the Rollouts controller has work). */
  holds(kind: string): boolean {
    for (const c of this.kube.clusters.values()) if (c.list(kind).length) return true;
    return false;
  }

  clusters(): Iterable<SimKubeCluster> {
    return this.kube.clusters.values();
  }

  clusterOf(store: InstanceStore, app: Application): SimKubeCluster | undefined {
    const dest = app.spec.destination ?? {};
    let name = dest.name;
    if (!name && dest.server) {
      const server = normalizeServer(dest.server);
      name = [...store.clusters.values()].find((c) => normalizeServer(c.server) === server)?.name;
    }
    return name ? this.kube.clusters.get(name) : undefined;
  }

  get(store: InstanceStore, app: Application, ref: LiveRef): Obj | undefined {
    const namespace = ref.namespace || app.spec.destination?.namespace || 'default';
    return this.clusterOf(store, app)?.get(ref.kind, namespace, ref.name);
  }

  /**
   * Argo CD's patchResource: the merge patch's status part through the status subresource, the rest on the object
   * (kinds without a status subresource in the simulation take it whole). False when the object is not there.
   */
  patch(store: InstanceStore, app: Application, ref: LiveRef, patch: Obj): boolean {
    const cluster = this.clusterOf(store, app);
    const namespace = ref.namespace || app.spec.destination?.namespace || 'default';
    if (!cluster?.get(ref.kind, namespace, ref.name)) return false;
    const { status, ...rest } = patch;
    if (status !== undefined) cluster.patch(ref.kind, namespace, ref.name, { status }, 'status');
    if (Object.keys(rest).length) cluster.patch(ref.kind, namespace, ref.name, rest);
    return true;
  }

  /**
   * Argo CD's createResource for an action's new object (CronJob's create-job makes a Job) on the app's cluster:
   * `exists` when an object of that name is there already (the API server's AlreadyExists), `nowhere` when the
   * app deploys to no simulated cluster. `dryRun` checks without creating, as Argo CD first does.
   */
  create(store: InstanceStore, app: Application, obj: Obj, dryRun: boolean): 'created' | 'exists' | 'nowhere' {
    const cluster = this.clusterOf(store, app);
    if (!cluster) return 'nowhere';
    const namespace = obj.metadata?.namespace || app.spec.destination?.namespace || 'default';
    if (cluster.get(obj.kind, namespace, obj.metadata?.name)) return 'exists';
    if (!dryRun) cluster.update(structuredClone({ ...obj, metadata: { ...obj.metadata, namespace } }));
    return 'created';
  }

  /** The ReplicaSets a Rollout owns (ownerReferences), oldest revision first. */
  replicaSetsOf(cluster: SimKubeCluster, rollout: Obj): Obj[] {
    return cluster
      .list('ReplicaSet', rollout.metadata.namespace)
      .filter((rs) =>
        rs.metadata.ownerReferences?.some((o: Obj) => o.kind === 'Rollout' && o.name === rollout.metadata.name),
      )
      .sort((a, b) => revisionOf(a) - revisionOf(b));
  }
}

export const REVISION_ANNOTATION = 'rollout.argoproj.io/revision';
/** The label Argo Rollouts puts on a ReplicaSet and its pods, and selects them by. */
export const POD_HASH_LABEL = 'rollouts-pod-template-hash';

export function revisionOf(obj: Obj): number {
  return Number(obj.metadata?.annotations?.[REVISION_ANNOTATION] ?? 0) || 0;
}
