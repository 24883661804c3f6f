import { createHash } from 'node:crypto';
import type { ResourceNode } from '../../infra/argocd/types.js';
import { crashLoopMessage } from '../faults.js';
import type { SimKubeCluster } from '../kube/index.js';
import { REVISION_ANNOTATION, revisionOf, type SimLiveObjects } from '../live-objects.js';
import { SIM_ANNOTATIONS } from '../annotations.js';
import { rolloutHealth } from './health.js';

type Obj = Record<string, any>;

const suffix = (...parts: string[]) => createHash('sha1').update(parts.join('/')).digest('hex').slice(0, 5);

/**
 * A live Rollout's part of an app's resource tree, as Argo CD's cluster cache shows it: the Rollout with its health
 * by health.lua and its revision, each ReplicaSet it owns (kept ones with 0 replicas too) with the ReplicaSet
 * health check's verdict, and a Pod per replica. Only Pods carry images, as in Argo CD.
 */
export function rolloutTreeNodes(
  live: SimLiveObjects,
  cluster: SimKubeCluster,
  ro: Obj,
  base: ResourceNode,
): ResourceNode[] {
  const revision = ro.metadata.annotations?.[REVISION_ANNOTATION];
  const rolloutNode: ResourceNode = {
    ...base,
    uid: ro.metadata.uid,
    resourceVersion: ro.metadata.resourceVersion,
    ...(revision ? { info: [{ name: 'Revision', value: `Rev:${revision}` }] } : {}),
    health: rolloutHealth(ro),
    createdAt: ro.metadata.creationTimestamp,
  };
  const nodes: ResourceNode[] = [rolloutNode];
  const ns = ro.metadata.namespace;
  for (const rs of live.replicaSetsOf(cluster, ro)) {
    const desired = rs.spec?.replicas ?? 0;
    const available = rs.status?.availableReplicas ?? 0;
    nodes.push({
      group: 'apps',
      version: 'v1',
      kind: 'ReplicaSet',
      namespace: ns,
      name: rs.metadata.name,
      uid: rs.metadata.uid,
      parentRefs: [
        { group: 'argoproj.io', kind: 'Rollout', namespace: ns, name: ro.metadata.name, uid: ro.metadata.uid },
      ],
      info: [{ name: 'Revision', value: `Rev:${revisionOf(rs)}` }],
      resourceVersion: rs.metadata.resourceVersion,
      // gitops-engine getReplicaSetHealth.
      health:
        available < desired
          ? {
              status: 'Progressing',
              message: `Waiting for rollout to finish: ${available} out of ${desired} new replicas are available...`,
            }
          : { status: 'Healthy' },
      createdAt: rs.metadata.creationTimestamp,
    });
    nodes.push(...podNodes(rs, ns));
  }
  return nodes;
}

function podNodes(rs: Obj, ns: string): ResourceNode[] {
  const containers: { name: string; image?: string }[] = rs.spec?.template?.spec?.containers ?? [];
  const images = containers.map((c) => c.image).filter((i): i is string => !!i);
  const crashing = rs.metadata.annotations?.[SIM_ANNOTATIONS.crashLoop] === 'true';
  const available = rs.status?.availableReplicas ?? 0;
  const nodes: ResourceNode[] = [];
  for (let i = 0; i < (rs.status?.replicas ?? 0); i++) {
    const name = `${rs.metadata.name}-${suffix(rs.metadata.uid, String(i))}`;
    const uid = `${rs.metadata.uid}-${i}`;
    const ready = i < available;
    const health: ResourceNode['health'] = crashing
      ? { status: 'Degraded', message: crashLoopMessage(containers[0]?.name ?? rs.metadata.name, name, ns, uid) }
      : ready
        ? { status: 'Healthy' }
        : { status: 'Progressing' };
    nodes.push({
      version: 'v1',
      kind: 'Pod',
      namespace: ns,
      name,
      uid,
      parentRefs: [{ group: 'apps', kind: 'ReplicaSet', namespace: ns, name: rs.metadata.name, uid: rs.metadata.uid }],
      info: [
        { name: 'Status Reason', value: crashing ? 'CrashLoopBackOff' : ready ? 'Running' : 'ContainerCreating' },
        { name: 'Containers', value: `${ready ? containers.length : 0}/${containers.length}` },
        ...(crashing ? [{ name: 'Restart Count', value: '7' }] : []),
      ],
      networkingInfo: { labels: { ...rs.spec?.template?.metadata?.labels } },
      resourceVersion: rs.metadata.resourceVersion,
      ...(images.length ? { images } : {}),
      health,
      createdAt: rs.metadata.creationTimestamp,
    });
  }
  return nodes;
}
