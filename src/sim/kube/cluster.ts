import { X509Certificate, createHash, randomBytes } from 'node:crypto';
import { parseSimSelector, simLabelsMatch, SimSelectorError } from '../labels.js';
import { SIM_KEYS } from './keys.js';
import { keyCertificate } from './tls.js';
import { asTable, discovery, wantsTable } from './discovery.js';

/**
 * The Kubernetes API subset the sealed-secrets runbooks and kubectl use, for one simulated cluster; it also holds
 * the Argo Rollouts Rollouts and ReplicaSets that sim/rollouts/controller.ts drives (list, get, merge patch):
 * Secrets (label selectors, create with generateName, get, delete), Namespaces, Pods (list,
 * delete), Deployments (get, patch) and SealedSecrets, plus a sealed-secrets controller that
 * behaves like the real one (argocd-facts C): it reads its keys once at start, generates a key
 * when it has none or the newest is older than the renew period, and sets each SealedSecret's
 * Synced condition by whether one of the keys it loaded can decrypt it.
 */

export const KEY_LABEL = 'sealedsecrets.bitnami.com/sealed-secrets-key';
export const LEGACY_KEY_NAME = 'sealed-secrets-key';
/** Which certificate (sha256 of its DER) a simulated SealedSecret was sealed with. */
export const SEALED_WITH_ANNOTATION = 'sim.rollcall.io/sealing-cert-sha256';

type Obj = Record<string, any>;

// Keys a simulated controller "generates": shared by every simulated cluster so two clusters do
// not end up with the same key until the pool wraps.
const SPARE_KEYS = ['spare1', 'spare2', 'spare3'];
let nextSpare = 0;

export interface KubeResponse {
  status: number;
  body: unknown;
}

export interface ControllerSpec {
  namespace: string;
  name: string;
  podLabels: Record<string, string>;
  /** --key-renew-period; 0 disables renewal. */
  renewPeriodMs: number;
  /** Time from pod creation to Ready. */
  startupMs: number;
}

export interface KubeMutation {
  method: string;
  path: string;
  body: unknown;
}

export function certFingerprint(pem: string): string {
  return createHash('sha256').update(new X509Certificate(pem).raw).digest('hex');
}

function status(code: number, reason: string, message: string, details: Obj = {}): KubeResponse {
  return {
    status: code,
    body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, details, code },
  };
}

function b64(text: string): string {
  return Buffer.from(text).toString('base64');
}

export class SimKubeCluster {
  /** kind -> "namespace/name" -> object */
  private readonly objects = new Map<string, Map<string, Obj>>();
  private rv = 0;
  /** Names of the key Secrets the running controller loaded at its last start. */
  loadedKeys: string[] = [];
  controllerStarts = 0;
  readonly mutations: KubeMutation[] = [];
  private timers = new Set<NodeJS.Timeout>();

  constructor(
    readonly name: string,
    readonly token: string,
    readonly controller: ControllerSpec | undefined,
    objects: Obj[] = [],
    private readonly now: () => Date = () => new Date(),
  ) {
    for (const o of objects) this.put(structuredClone(o));
    if (controller && !this.controllerPods().length) this.createControllerPod(true);
    else if (controller) this.startController();
  }

  stop(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  // ---------- storage ----------

  private bucket(kind: string): Map<string, Obj> {
    let b = this.objects.get(kind);
    if (!b) this.objects.set(kind, (b = new Map()));
    return b;
  }

  private put(obj: Obj): Obj {
    obj.metadata ??= {};
    obj.metadata.namespace ??= obj.kind === 'Namespace' ? undefined : 'default';
    obj.metadata.uid ??= randomBytes(8).toString('hex');
    // metav1.Time serializes at second precision.
    obj.metadata.creationTimestamp ??= this.now()
      .toISOString()
      .replace(/\.\d{3}Z$/, 'Z');
    obj.metadata.resourceVersion = String(++this.rv);
    if (obj.kind === 'Rollout' || obj.kind === 'ReplicaSet') obj.metadata.generation ??= 1;
    if (obj.kind === 'Namespace') {
      // The API server labels every namespace with its own name (NamespaceDefaultLabelName, 1.21+).
      obj.metadata.labels = { ...obj.metadata.labels, 'kubernetes.io/metadata.name': obj.metadata.name };
      obj.spec ??= { finalizers: ['kubernetes'] };
      obj.status ??= { phase: 'Active' };
    }
    this.bucket(obj.kind).set(`${obj.metadata.namespace ?? ''}/${obj.metadata.name}`, obj);
    if (obj.kind === 'Secret' || obj.kind === 'SealedSecret') {
      const ns = obj.metadata.namespace;
      if (ns && !this.get('Namespace', '', ns))
        this.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    }
    return obj;
  }

  /**
   * Writes an object the simulated controllers changed (a Rollout's status, a ReplicaSet's replicas), as a
   * controller's update does: a new resourceVersion, identity and creation time kept.
   */
  update(obj: Obj): Obj {
    const before = this.get(obj.kind, obj.metadata?.namespace ?? 'default', obj.metadata?.name);
    if (before) {
      obj.metadata.uid = before.metadata.uid;
      obj.metadata.creationTimestamp = before.metadata.creationTimestamp;
    }
    return this.put(obj);
  }

  /**
   * A JSON merge patch of one object, as the API server applies it to a kind with a status subresource
   * (Rollout, Deployment): on the object, status is left alone and a changed spec bumps metadata.generation; on
   * `/status`, only status changes. Undefined when there is no such object.
   */
  patch(kind: string, namespace: string, name: string, patch: Obj, subresource?: 'status'): Obj | undefined {
    const obj = this.get(kind, namespace, name);
    if (!obj) return undefined;
    if (subresource === 'status') {
      if (patch?.status !== undefined) mergePatch(obj, { status: patch.status });
    } else {
      const { status: _ignored, ...rest } = patch ?? {};
      const spec = JSON.stringify(obj.spec);
      mergePatch(obj, rest);
      if (JSON.stringify(obj.spec) !== spec) obj.metadata.generation = (obj.metadata.generation ?? 1) + 1;
    }
    obj.metadata.resourceVersion = String(++this.rv);
    return obj;
  }

  get(kind: string, namespace: string, name: string): Obj | undefined {
    return this.bucket(kind).get(`${namespace}/${name}`);
  }

  list(kind: string, namespace?: string, labelSelector?: string): Obj[] {
    const reqs = labelSelector ? parseSimSelector(labelSelector) : [];
    return [...this.bucket(kind).values()]
      .filter((o) => namespace === undefined || o.metadata.namespace === namespace)
      .filter((o) => simLabelsMatch(o.metadata.labels, reqs))
      .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  }

  private remove(kind: string, namespace: string, name: string): Obj | undefined {
    const key = `${namespace}/${name}`;
    const obj = this.bucket(kind).get(key);
    this.bucket(kind).delete(key);
    return obj;
  }

  // ---------- sealed-secrets controller ----------

  controllerPods(): Obj[] {
    if (!this.controller) return [];
    const selector = Object.entries(this.controller.podLabels)
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    return this.list('Pod', this.controller.namespace, selector);
  }

  private createControllerPod(initial: boolean): void {
    const c = this.controller!;
    const pod = this.put({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: `${c.name}-7d9f8c6b5-${randomBytes(3).toString('hex').slice(0, 5)}`,
        namespace: c.namespace,
        labels: { ...c.podLabels },
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${c.name}-7d9f8c6b5`, controller: true }],
      },
      spec: { containers: [{ name: 'controller', image: 'docker.io/bitnami/sealed-secrets-controller:0.38.4' }] },
      status: { phase: 'Pending', conditions: [{ type: 'Ready', status: 'False' }] },
    });
    this.setDeploymentReady(false);
    const ready = () => {
      this.startController();
      pod.status = {
        phase: 'Running',
        conditions: [{ type: 'Ready', status: 'True' }],
        startTime: this.now().toISOString(),
      };
      pod.metadata.resourceVersion = String(++this.rv);
      this.setDeploymentReady(true);
    };
    if (initial || c.startupMs <= 0) ready();
    else {
      const t = setTimeout(() => {
        this.timers.delete(t);
        if (this.get('Pod', c.namespace, pod.metadata.name)) ready();
      }, c.startupMs);
      this.timers.add(t);
    }
  }

  private setDeploymentReady(ready: boolean): void {
    const c = this.controller!;
    const deployment = this.get('Deployment', c.namespace, c.name);
    if (!deployment) return;
    deployment.status = {
      replicas: 1,
      readyReplicas: ready ? 1 : 0,
      availableReplicas: ready ? 1 : 0,
      updatedReplicas: 1,
      observedGeneration: deployment.metadata.generation ?? 1,
    };
    deployment.metadata.resourceVersion = String(++this.rv);
  }

  /** What the real controller does in initKeyRegistry, then re-queuing every SealedSecret. */
  private startController(): void {
    const c = this.controller!;
    this.controllerStarts++;
    const keys = this.activeKeySecrets();
    const newest = keys
      .map((k) => new X509Certificate(Buffer.from(k.data['tls.crt'], 'base64').toString()).validFrom)
      .map((d) => Date.parse(d));
    const newestAt = newest.length ? Math.max(...newest) : undefined;
    const stale = c.renewPeriodMs > 0 && newestAt !== undefined && this.now().getTime() - newestAt > c.renewPeriodMs;
    if (newestAt === undefined || stale) this.generateKey();
    this.loadedKeys = this.activeKeySecrets().map((k) => k.metadata.name);
    this.reconcileSealedSecrets();
  }

  private activeKeySecrets(): Obj[] {
    const ns = this.controller!.namespace;
    const active = this.list('Secret', ns, `${KEY_LABEL}=active`);
    const legacy = this.get('Secret', ns, LEGACY_KEY_NAME);
    return legacy && !active.includes(legacy) ? [...active, legacy] : active;
  }

  private generateKey(): void {
    const pair = SIM_KEYS[SPARE_KEYS[nextSpare++ % SPARE_KEYS.length]];
    this.put({
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/tls',
      metadata: {
        name: `sealed-secrets-key${randomBytes(4).toString('hex').slice(0, 5)}`,
        namespace: this.controller!.namespace,
        labels: { [KEY_LABEL]: 'active' },
      },
      // The real controller dates its new certificate now; renewal is judged by that date.
      data: { 'tls.crt': b64(keyCertificate(pair.key, this.now())), 'tls.key': b64(pair.key) },
    });
  }

  reconcileSealedSecrets(): void {
    const loaded = new Set(
      this.loadedKeys
        .map((name) => this.get('Secret', this.controller!.namespace, name))
        .filter((s): s is Obj => !!s)
        .map((s) => certFingerprint(Buffer.from(s.data['tls.crt'], 'base64').toString())),
    );
    const at = this.now().toISOString();
    for (const ss of this.list('SealedSecret')) {
      const sealedWith = ss.metadata.annotations?.[SEALED_WITH_ANNOTATION];
      const ok = !!sealedWith && loaded.has(sealedWith);
      const previous = ss.status?.conditions?.[0];
      const message = ok ? '' : `no key could decrypt secret (${Object.keys(ss.spec?.encryptedData ?? {}).join(', ')})`;
      const changed = previous?.status !== (ok ? 'True' : 'False');
      ss.status = {
        observedGeneration: ss.metadata.generation ?? 1,
        conditions: [
          {
            type: 'Synced',
            status: ok ? 'True' : 'False',
            ...(message ? { message } : {}),
            lastUpdateTime: at,
            lastTransitionTime: changed ? at : (previous?.lastTransitionTime ?? at),
          },
        ],
      };
      ss.metadata.resourceVersion = String(++this.rv);
    }
  }

  // ---------- HTTP ----------

  /** One API request; `accept` is the Accept header (kubectl get asks for a Table). */
  handle(method: string, path: string, query: URLSearchParams, body: any, accept?: string): KubeResponse {
    try {
      const found = method === 'GET' ? discovery(path) : undefined;
      if (found) return { status: 200, body: found };
      const result = this.route(method, path, query, body);
      if (method === 'GET' && result.status === 200 && wantsTable(accept))
        return { status: 200, body: this.table(result.body as Obj, query) };
      return result;
    } catch (error) {
      if (error instanceof SimSelectorError)
        return status(400, 'BadRequest', `unable to parse requirement: ${error.message}`);
      throw error;
    }
  }

  private table(body: Obj, query: URLSearchParams): Obj {
    const list = Array.isArray(body.items);
    const kind = list ? String(body.kind).replace(/List$/, '') : String(body.kind);
    return asTable(
      kind,
      list ? body.items : [body],
      String(body.metadata?.resourceVersion ?? this.rv),
      this.now(),
      query.get('includeObject'),
    );
  }

  private route(method: string, path: string, query: URLSearchParams, body: any): KubeResponse {
    const labelSelector = query.get('labelSelector') ?? undefined;
    let m: RegExpMatchArray | null;
    const mutating = method !== 'GET';
    if (mutating) this.mutations.push({ method, path, body: redactSecretBody(body) });

    // Lists across namespaces, and the objects kubectl get/describe read besides the runbooks' own.
    if (method === 'GET') {
      if (path === '/api/v1/secrets')
        return this.listResponse('SecretList', this.list('Secret', undefined, labelSelector));
      if (path === '/api/v1/pods') return this.listResponse('PodList', this.list('Pod', undefined, labelSelector));
      if (path === '/api/v1/namespaces')
        return this.listResponse('NamespaceList', this.list('Namespace', undefined, labelSelector));
      if (path === '/apis/apps/v1/deployments')
        return this.listResponse('DeploymentList', this.list('Deployment', undefined, labelSelector), 'apps/v1');
      if ((m = path.match(/^\/apis\/apps\/v1\/namespaces\/([^/]+)\/deployments$/)))
        return this.listResponse('DeploymentList', this.list('Deployment', m[1], labelSelector), 'apps/v1');
      if ((m = path.match(/^\/apis\/bitnami\.com\/v1alpha1\/namespaces\/([^/]+)\/sealedsecrets\/([^/]+)$/)))
        return this.getResponse('SealedSecret', m[1], m[2], 'sealedsecrets.bitnami.com');
      // Events: kubectl describe asks for the object's with a field selector; nothing here records any.
      if ((m = path.match(/^\/api\/v1\/(?:namespaces\/([^/]+)\/)?events$/))) return this.listResponse('EventList', []);
    }

    if ((m = path.match(/^\/api\/v1\/namespaces\/([^/]+)\/secrets$/))) {
      if (method === 'GET') return this.listResponse('SecretList', this.list('Secret', m[1], labelSelector));
      if (method === 'POST') return this.create('Secret', m[1], body);
    }
    if ((m = path.match(/^\/api\/v1\/namespaces\/([^/]+)\/secrets\/([^/]+)$/))) {
      if (method === 'GET') return this.getResponse('Secret', m[1], m[2], 'secrets');
      if (method === 'DELETE') return this.deleteResponse('Secret', m[1], m[2], 'secrets');
    }
    if (path === '/api/v1/namespaces' && method === 'POST') return this.create('Namespace', '', body);
    if ((m = path.match(/^\/api\/v1\/namespaces\/([^/]+)$/)) && method === 'GET')
      return this.getResponse('Namespace', '', m[1], 'namespaces');
    if ((m = path.match(/^\/api\/v1\/namespaces\/([^/]+)\/pods$/)) && method === 'GET')
      return this.listResponse('PodList', this.list('Pod', m[1], labelSelector));
    if ((m = path.match(/^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)$/))) {
      if (method === 'GET') return this.getResponse('Pod', m[1], m[2], 'pods');
      if (method === 'DELETE') {
        const res = this.deleteResponse('Pod', m[1], m[2], 'pods');
        const owned = res.status === 200 && this.controller && m[1] === this.controller.namespace;
        if (owned && !this.controllerPods().length) this.createControllerPod(false);
        return res;
      }
    }
    if ((m = path.match(/^\/apis\/apps\/v1\/namespaces\/([^/]+)\/deployments\/([^/]+)$/))) {
      if (method === 'GET') return this.getResponse('Deployment', m[1], m[2], 'deployments.apps');
      if (method === 'PATCH') {
        const deployment = this.get('Deployment', m[1], m[2]);
        if (!deployment)
          return status(404, 'NotFound', `deployments.apps "${m[2]}" not found`, { name: m[2], kind: 'deployments' });
        mergePatch(deployment, body);
        deployment.metadata.generation = (deployment.metadata.generation ?? 1) + 1;
        deployment.metadata.resourceVersion = String(++this.rv);
        // A changed pod template rolls the controller, like `kubectl rollout restart`.
        if (body?.spec?.template && this.controller && m[2] === this.controller.name) {
          for (const pod of this.controllerPods()) this.remove('Pod', pod.metadata.namespace, pod.metadata.name);
          this.createControllerPod(false);
        }
        return { status: 200, body: deployment };
      }
    }
    if (path === '/apis/bitnami.com/v1alpha1/sealedsecrets' && method === 'GET')
      return this.listResponse(
        'SealedSecretList',
        this.list('SealedSecret', undefined, labelSelector),
        'bitnami.com/v1alpha1',
      );
    if ((m = path.match(/^\/apis\/bitnami\.com\/v1alpha1\/namespaces\/([^/]+)\/sealedsecrets$/)) && method === 'GET')
      return this.listResponse(
        'SealedSecretList',
        this.list('SealedSecret', m[1], labelSelector),
        'bitnami.com/v1alpha1',
      );
    const workload = this.workloadRoute(method, path, labelSelector, body);
    if (workload) return workload;
    return status(404, 'NotFound', `the server could not find the requested resource (${method} ${path})`);
  }

  /**
   * Argo Rollouts' Rollouts (list, get, merge patch of the object or its status, as `kubectl patch` and
   * `kubectl argo rollouts` send) and the ReplicaSets they own (list, get).
   */
  private workloadRoute(
    method: string,
    path: string,
    labelSelector: string | undefined,
    body: any,
  ): KubeResponse | undefined {
    let m: RegExpMatchArray | null;
    const rollouts = 'argoproj.io/v1alpha1';
    if ((m = path.match(/^\/apis\/argoproj\.io\/v1alpha1\/(?:namespaces\/([^/]+)\/)?rollouts$/)) && method === 'GET')
      return this.listResponse('RolloutList', this.list('Rollout', m[1], labelSelector), rollouts);
    if ((m = path.match(/^\/apis\/argoproj\.io\/v1alpha1\/namespaces\/([^/]+)\/rollouts\/([^/]+)(\/status)?$/))) {
      if (method === 'GET') return this.getResponse('Rollout', m[1], m[2], 'rollouts.argoproj.io');
      if (method === 'PATCH') {
        if (!body || typeof body !== 'object' || Array.isArray(body))
          return status(400, 'BadRequest', 'the body of a merge patch must be a JSON object');
        const patched = this.patch('Rollout', m[1], m[2], body, m[3] ? 'status' : undefined);
        return patched
          ? { status: 200, body: patched }
          : status(404, 'NotFound', `rollouts.argoproj.io "${m[2]}" not found`, {
              name: m[2],
              group: 'argoproj.io',
              kind: 'rollouts',
            });
      }
    }
    if ((m = path.match(/^\/apis\/apps\/v1\/(?:namespaces\/([^/]+)\/)?replicasets$/)) && method === 'GET')
      return this.listResponse('ReplicaSetList', this.list('ReplicaSet', m[1], labelSelector), 'apps/v1');
    if ((m = path.match(/^\/apis\/apps\/v1\/namespaces\/([^/]+)\/replicasets\/([^/]+)$/)) && method === 'GET')
      return this.getResponse('ReplicaSet', m[1], m[2], 'replicasets.apps');
    return undefined;
  }

  private listResponse(kind: string, items: Obj[], apiVersion = 'v1'): KubeResponse {
    return { status: 200, body: { kind, apiVersion, metadata: { resourceVersion: String(this.rv) }, items } };
  }

  private getResponse(kind: string, ns: string, name: string, resource: string): KubeResponse {
    const obj = this.get(kind, ns, name);
    return obj
      ? { status: 200, body: obj }
      : status(404, 'NotFound', `${resource} "${name}" not found`, { name, kind: resource });
  }

  private deleteResponse(kind: string, ns: string, name: string, resource: string): KubeResponse {
    const obj = this.remove(kind, ns, name);
    if (!obj) return status(404, 'NotFound', `${resource} "${name}" not found`, { name, kind: resource });
    return {
      status: 200,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Success',
        details: { name, kind: resource, uid: obj.metadata.uid },
      },
    };
  }

  private create(kind: string, ns: string, body: any): KubeResponse {
    if (!body?.metadata?.name && !body?.metadata?.generateName)
      return status(422, 'Invalid', `${kind} "" is invalid: metadata.name: Required value`);
    const obj = structuredClone(body);
    obj.kind = kind;
    obj.apiVersion ??= 'v1';
    if (!obj.metadata.name)
      obj.metadata.name = `${obj.metadata.generateName}${randomBytes(4).toString('hex').slice(0, 5)}`;
    if (kind !== 'Namespace') obj.metadata.namespace = ns;
    if (this.get(kind, kind === 'Namespace' ? '' : ns, obj.metadata.name)) {
      const resource = kind === 'Namespace' ? 'namespaces' : 'secrets';
      return status(409, 'AlreadyExists', `${resource} "${obj.metadata.name}" already exists`, {
        name: obj.metadata.name,
        kind: resource,
      });
    }
    if (kind === 'Secret' && obj.stringData) {
      obj.data = {
        ...obj.data,
        ...Object.fromEntries(Object.entries(obj.stringData).map(([k, v]) => [k, b64(String(v))])),
      };
      delete obj.stringData;
    }
    if (kind === 'Namespace') obj.metadata.namespace = undefined;
    return { status: 201, body: this.put(obj) };
  }
}

function mergePatch(target: Obj, patch: Obj): void {
  for (const [k, v] of Object.entries(patch ?? {})) {
    if (v === null) delete target[k];
    else if (v && typeof v === 'object' && !Array.isArray(v) && target[k] && typeof target[k] === 'object')
      mergePatch(target[k], v);
    else target[k] = structuredClone(v);
  }
}

/** The operation log must not carry key material either: Secret data is replaced by its key names. */
function redactSecretBody(body: any): unknown {
  if (!body || typeof body !== 'object') return body;
  if (body.data || body.stringData) {
    const { data, stringData, ...rest } = body;
    return { ...rest, dataKeys: Object.keys({ ...data, ...stringData }) };
  }
  return body;
}
