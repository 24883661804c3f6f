import { createHash } from 'node:crypto';
import type { Application, ResourceDiff, ResourceNode, ResourceStatus } from '../../infra/argocd/types.js';
import type { SimLiveObjects } from '../live-objects.js';
import { rolloutTreeNodes } from '../rollouts/tree.js';
import type { InstanceStore } from '../store.js';
import { findApp } from './apps.js';
import type { ApiRequest, RouteResult } from './context.js';

/** The simulated clusters' objects, for apps that deploy to one of them. */
export interface LiveTree {
  store: InstanceStore;
  objects: SimLiveObjects;
}

export const liveTreeOf = (req: ApiRequest): LiveTree | undefined =>
  req.core.live ? { store: req.store, objects: req.core.live } : undefined;

/** Deterministic uid so repeated tree calls agree (the real ones come from the cluster). */
function uid(...parts: string[]): string {
  const h = createHash('sha1').update(parts.join('/')).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

const shortHash = (...parts: string[]) => createHash('sha1').update(parts.join('/')).digest('hex').slice(0, 10);

function imagesFor(app: Application, r: ResourceStatus): string[] {
  if (!['Deployment', 'StatefulSet', 'DaemonSet', 'Pod', 'ReplicaSet', 'Job', 'CronJob'].includes(r.kind)) return [];
  return app.status?.summary?.images ?? [];
}

/**
 * The live tree as the controller's cluster cache would report it: every resource that exists
 * (a Missing one does not), with its health, plus a ReplicaSet and Pod under each Deployment so
 * a crash loop shows where on-call would look for it. A Rollout on a simulated cluster shows its
 * own ReplicaSets and Pods, read from that cluster.
 */
export function buildTree(
  instance: string,
  app: Application,
  live?: LiveTree,
): { nodes: ResourceNode[]; orphanedNodes: ResourceNode[]; hosts: unknown[]; shardsCount: number } {
  const nodes: ResourceNode[] = [];
  const createdAt = app.metadata.creationTimestamp;
  const cluster = live?.objects.clusterOf(live.store, app);
  for (const r of app.status?.resources ?? []) {
    if (r.health?.status === 'Missing' || r.hook) continue;
    const ns = r.namespace ?? '';
    const id = uid(instance, app.metadata.name, r.group ?? '', r.kind, ns, r.name);
    const images = imagesFor(app, r);
    const node: ResourceNode = {
      ...(r.group ? { group: r.group } : {}),
      version: r.version,
      kind: r.kind,
      ...(ns ? { namespace: ns } : {}),
      name: r.name,
      uid: id,
      resourceVersion: app.metadata.resourceVersion,
      ...(images.length ? { images } : {}),
      ...(r.health ? { health: r.health } : {}),
      ...(createdAt ? { createdAt } : {}),
    };
    if (r.kind === 'Deployment') node.info = [{ name: 'Revision', value: 'Rev:1' }];
    const rollout =
      r.kind === 'Rollout' && r.group === 'argoproj.io' && live ? live.objects.get(live.store, app, r) : undefined;
    if (rollout && cluster) {
      delete node.images;
      nodes.push(...rolloutTreeNodes(live!.objects, cluster, rollout, node));
      continue;
    }
    nodes.push(node);
    if (r.kind !== 'Deployment') continue;
    const rsName = `${r.name}-${shortHash(app.metadata.name, r.name).slice(0, 9)}`;
    const rsUid = uid(id, 'rs');
    nodes.push({
      group: 'apps',
      version: 'v1',
      kind: 'ReplicaSet',
      namespace: ns,
      name: rsName,
      uid: rsUid,
      parentRefs: [{ group: 'apps', kind: 'Deployment', namespace: ns, name: r.name, uid: id }],
      info: [{ name: 'Revision', value: 'Rev:1' }],
      resourceVersion: app.metadata.resourceVersion,
      ...(images.length ? { images } : {}),
      health:
        r.health?.status === 'Degraded'
          ? { status: 'Progressing', message: 'Waiting for rollout to finish' }
          : (r.health ?? { status: 'Healthy' }),
      ...(createdAt ? { createdAt } : {}),
    });
    const crashing = r.health?.status === 'Degraded';
    const podName = `${rsName}-${shortHash(rsName, 'pod').slice(0, 5)}`;
    nodes.push({
      version: 'v1',
      kind: 'Pod',
      namespace: ns,
      name: podName,
      uid: uid(rsUid, 'pod'),
      parentRefs: [{ group: 'apps', kind: 'ReplicaSet', namespace: ns, name: rsName, uid: rsUid }],
      info: [
        {
          name: 'Status Reason',
          value: crashing ? 'CrashLoopBackOff' : r.health?.status === 'Progressing' ? 'ContainerCreating' : 'Running',
        },
        { name: 'Containers', value: crashing ? '0/1' : '1/1' },
        ...(crashing ? [{ name: 'Restart Count', value: '7' }] : []),
      ],
      networkingInfo: { labels: { 'app.kubernetes.io/instance': app.metadata.name } },
      resourceVersion: app.metadata.resourceVersion,
      ...(images.length ? { images } : {}),
      health: crashing
        ? {
            status: 'Degraded',
            message: r.health?.message ?? `back-off 5m0s restarting failed container=${r.name} pod=${podName}`,
          }
        : r.health?.status === 'Progressing'
          ? { status: 'Progressing' }
          : { status: 'Healthy' },
      ...(createdAt ? { createdAt } : {}),
    });
  }
  nodes.sort((a, b) => `${a.kind}/${a.name}`.localeCompare(`${b.kind}/${b.name}`));
  return { nodes, orphanedNodes: [], hosts: [], shardsCount: 0 };
}

export function resourceTree(req: ApiRequest): RouteResult {
  const app = findApp(
    req,
    req.params.name,
    req.query.get('project') || undefined,
    req.query.get('appNamespace') || undefined,
  );
  const tree = buildTree(req.store.name, app, liveTreeOf(req));
  const filter = (['namespace', 'name', 'version', 'group', 'kind'] as const).filter((k) => req.query.get(k));
  if (filter.length) tree.nodes = tree.nodes.filter((n) => filter.every((k) => (n[k] ?? '') === req.query.get(k)));
  return { json: tree };
}

/** What Argo CD shows instead of a Secret value (gitops-engine diff.HideSecretData): a longer run of `+` per distinct value. */
export const SECRET_MASK = '++++++++';

export function manifest(app: Application, r: ResourceStatus, live: boolean): Record<string, unknown> {
  const obj: Record<string, unknown> = {
    apiVersion: r.group ? `${r.group}/${r.version}` : r.version,
    kind: r.kind,
    metadata: {
      name: r.name,
      ...(r.namespace ? { namespace: r.namespace } : {}),
      labels: { 'app.kubernetes.io/instance': app.metadata.name },
      ...(live ? { resourceVersion: app.metadata.resourceVersion, uid: uid(app.metadata.name, r.kind, r.name) } : {}),
    },
  };
  // A drifted live object differs from git the way on-call usually finds it: an edited image, a hand-tuned setting.
  const drifted = live && r.status === 'OutOfSync';
  const image = app.status?.summary?.images?.[0];
  if (r.kind === 'Deployment' && image) {
    const liveImage = drifted ? `${image.split(':')[0]}:live` : image;
    obj.spec = { template: { spec: { containers: [{ name: r.name, image: liveImage }] } } };
  }
  // A CronJob as Argo CD's CronJob health.lua reads it: Suspended is `spec.suspend`.
  if (r.kind === 'CronJob')
    obj.spec = {
      schedule: '0 * * * *',
      ...(r.health?.status === 'Suspended' ? { suspend: true } : {}),
      jobTemplate: {
        spec: {
          template: {
            spec: { containers: [{ name: r.name, image: image ?? 'busybox:1.36' }], restartPolicy: 'OnFailure' },
          },
        },
      },
    };
  if (r.kind === 'ConfigMap')
    obj.data = drifted
      ? { LOG_LEVEL: 'debug', LOG_FORMAT: 'json', DEBUG_ENDPOINTS: 'true' }
      : { LOG_LEVEL: 'info', LOG_FORMAT: 'json' };
  // Secret values never leave the API server: a changed value shows only as a longer mask.
  if (r.kind === 'Secret')
    obj.data = { 'tls.key': drifted ? `${SECRET_MASK}++++` : SECRET_MASK, 'tls.crt': SECRET_MASK };
  return obj;
}

/** Diff view per resource: JSON strings; a resource to prune has target "null", a missing one live "null". */
export function managedResources(req: ApiRequest): RouteResult {
  const app = findApp(
    req,
    req.params.name,
    req.query.get('project') || undefined,
    req.query.get('appNamespace') || undefined,
  );
  const cluster = liveTreeOf(req);
  const items: ResourceDiff[] = (app.status?.resources ?? []).map((r) => {
    const onCluster: Record<string, unknown> | undefined = cluster?.objects.get(cluster.store, app, r);
    const targetObj = r.requiresPruning ? undefined : onCluster ? desiredOf(onCluster) : manifest(app, r, false);
    const liveObj: Record<string, unknown> | undefined =
      onCluster ?? (r.health?.status === 'Missing' ? undefined : manifest(app, r, true));
    const target = targetObj ? JSON.stringify(targetObj) : 'null';
    const live = liveObj ? JSON.stringify(liveObj) : 'null';
    // gitops-engine's diff: the live object with git's fields applied (server-set metadata stays), or git's
    // object to create, or "null" for one to prune, which then does not count as modified.
    const predicted =
      targetObj && liveObj
        ? JSON.stringify({
            ...targetObj,
            metadata: {
              ...(targetObj.metadata as object),
              ...pick(liveObj.metadata as Record<string, unknown>, ['resourceVersion', 'uid']),
            },
          })
        : target;
    return {
      ...(r.group ? { group: r.group } : {}),
      kind: r.kind,
      namespace: r.namespace ?? '',
      name: r.name,
      targetState: target,
      liveState: live,
      normalizedLiveState: live,
      predictedLiveState: predicted,
      ...(r.hook ? { hook: true } : {}),
      modified: Boolean(targetObj) && r.status === 'OutOfSync',
      ...(live !== 'null' ? { resourceVersion: app.metadata.resourceVersion } : {}),
    };
  });
  return { json: { items } };
}

/** What git holds of an object the cluster has: no status and none of the fields the API server sets. */
function desiredOf(obj: Record<string, any>): Record<string, unknown> {
  const { status: _status, ...rest } = obj;
  const { uid: _u, resourceVersion: _r, generation: _g, creationTimestamp: _c, ...metadata } = obj.metadata ?? {};
  const annotations = { ...metadata.annotations };
  delete annotations['rollout.argoproj.io/revision'];
  return {
    ...rest,
    metadata: { ...metadata, ...(Object.keys(annotations).length ? { annotations } : { annotations: undefined }) },
  };
}

function pick(o: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]]));
}
