import { createHash } from 'node:crypto';
import type { Application, ResourceNode } from '../../infra/argocd/types.js';
import type { SimEvent } from '../events.js';
import { findApp } from './apps.js';
import type { ApiRequest, RouteResult } from './context.js';
import { invalidArgument } from './errors.js';
import { buildTree, liveTreeOf } from './tree.js';

const stamp = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

function eventUid(seed: string): string {
  const h = createHash('sha1').update(seed).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

function apiVersionOf(node: ResourceNode): string {
  return node.group ? `${node.group}/${node.version}` : node.version;
}

/**
 * What the destination cluster's components (kubelet, deployment controller, sealed-secrets
 * controller) would have recorded about one live resource, from the state the simulator holds:
 * a crash-looping Pod's BackOff, a rolling Deployment's scaling, a SealedSecret that cannot be
 * decrypted.
 */
export function resourceEvents(app: Application, node: ResourceNode, now: Date): SimEvent[] {
  const events: SimEvent[] = [];
  const created = node.createdAt ? new Date(node.createdAt) : new Date(now.getTime() - 3_600_000);
  const ns = node.namespace ?? '';
  const push = (
    type: SimEvent['type'],
    reason: string,
    message: string,
    component: string,
    count: number,
    first: Date,
    fieldPath?: string,
  ) => {
    const seed = `${node.uid}/${reason}`;
    events.push({
      metadata: {
        name: `${node.name}.${createHash('sha1').update(seed).digest('hex').slice(0, 16)}`,
        namespace: ns,
        uid: eventUid(seed),
        resourceVersion: node.resourceVersion ?? '1',
        creationTimestamp: stamp(first),
      },
      involvedObject: {
        kind: node.kind,
        ...(ns ? { namespace: ns } : {}),
        name: node.name,
        ...(node.uid ? { uid: node.uid } : {}),
        apiVersion: apiVersionOf(node),
        ...(node.resourceVersion ? { resourceVersion: node.resourceVersion } : {}),
        ...(fieldPath ? { fieldPath } : {}),
      },
      reason,
      message,
      source: { component },
      firstTimestamp: stamp(first),
      lastTimestamp: stamp(count > 1 ? now : first),
      count,
      type,
      eventTime: null,
      reportingComponent: '',
      reportingInstance: '',
    });
  };
  const health = node.health?.status;
  if (node.kind === 'Pod') {
    // The ReplicaSet's name less its pod-template hash (9 or 10 characters, Deployments' and Rollouts' alike).
    const container = node.parentRefs?.[0]?.name.replace(/-[0-9a-f]{9,10}$/, '') ?? node.name;
    const image = node.images?.[0] ?? `${container}:latest`;
    const field = `spec.containers{${container}}`;
    push('Normal', 'Scheduled', `Successfully assigned ${ns}/${node.name} to node-1`, 'default-scheduler', 1, created);
    push(
      'Normal',
      'Pulled',
      `Container image "${image}" already present on machine`,
      'kubelet',
      health === 'Degraded' ? 7 : 1,
      created,
      field,
    );
    if (health === 'Degraded') {
      push(
        'Warning',
        'BackOff',
        `Back-off restarting failed container ${container} in pod ${node.name}_${ns}(${node.uid})`,
        'kubelet',
        31,
        new Date(created.getTime() + 60_000),
        field,
      );
    } else {
      push('Normal', 'Started', `Started container ${container}`, 'kubelet', 1, created, field);
    }
  } else if (node.kind === 'Deployment' && health && health !== 'Healthy') {
    push('Normal', 'ScalingReplicaSet', `Scaled up replica set ${node.name} to 1`, 'deployment-controller', 1, created);
  } else if (node.kind === 'SealedSecret' && health === 'Degraded') {
    push(
      'Warning',
      'ErrUnsealFailed',
      `Failed to unseal: ${node.health?.message ?? 'no key could decrypt secret'}`,
      'sealed-secrets-controller',
      5,
      created,
    );
  }
  return events;
}

/**
 * GET /api/v1/applications/{name}/events (server/application/application.go ListResourceEvents):
 * without resourceName/resourceUID the events of the Application object itself; with them, the
 * events of that live resource, which must be a node of the app's tree with exactly that uid, name
 * and namespace ("… not found as part of application …" otherwise).
 */
export function listEvents(req: ApiRequest): RouteResult {
  const app = findApp(
    req,
    req.params.name,
    req.query.get('project') || undefined,
    req.query.get('appNamespace') || undefined,
  );
  const resourceName = req.query.get('resourceName') ?? '';
  const resourceUID = req.query.get('resourceUID') ?? '';
  let items: SimEvent[];
  if (!resourceName && !resourceUID) {
    items = req.core.events?.appEvents(req.store.name, app) ?? [];
  } else {
    const resourceNamespace = req.query.get('resourceNamespace') ?? '';
    const tree = buildTree(req.store.name, app, liveTreeOf(req));
    const node = [...tree.nodes, ...tree.orphanedNodes].find(
      (n) => n.uid === resourceUID && n.name === resourceName && (n.namespace ?? '') === resourceNamespace,
    );
    if (!node) throw invalidArgument(`${resourceName} not found as part of application ${req.params.name}`);
    items = resourceEvents(app, node, req.core.now());
  }
  return { json: { metadata: { resourceVersion: String(req.store.resourceVersion) }, items } };
}
