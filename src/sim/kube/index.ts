import type http from 'node:http';
import type { FixtureKube } from '../fixture-types.js';
import { SimKubeCluster } from './cluster.js';

export { SimKubeCluster } from './cluster.js';

/** Simulated Kubernetes API servers, one per fixture cluster, served under /k/<cluster>. */
export class SimKube {
  readonly clusters = new Map<string, SimKubeCluster>();

  constructor(fixtures: FixtureKube[] = [], now?: () => Date) {
    for (const f of fixtures) {
      const c = f.sealedSecretsController;
      this.clusters.set(
        f.cluster,
        new SimKubeCluster(
          f.cluster,
          f.token ?? `sim-kube-${f.cluster}-token`,
          c
            ? {
                namespace: c.namespace ?? 'kube-system',
                name: c.name ?? 'sealed-secrets-controller',
                podLabels: c.podLabels ?? { name: c.name ?? 'sealed-secrets-controller' },
                renewPeriodMs: c.renewPeriodMs ?? 30 * 86_400_000,
                startupMs: c.startupMs ?? 1500,
              }
            : undefined,
          f.objects,
          now,
        ),
      );
    }
  }

  stop(): void {
    for (const c of this.clusters.values()) c.stop();
  }

  /**
   * Handles `/k/<cluster>/...`; returns false when the path is not ours. `record` receives each
   * mutating call (Secret data already reduced to its key names) for GET /_sim/operations.
   */
  async handle(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    url: URL,
    record: (op: { cluster: string; method: string; path: string; body: unknown }) => void,
  ): Promise<boolean> {
    const m = url.pathname.match(/^\/k\/([^/]+)(\/.*)$/);
    if (!m) return false;
    const cluster = this.clusters.get(decodeURIComponent(m[1]));
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (!cluster) {
      send(404, {
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        reason: 'NotFound',
        code: 404,
        message: `no simulated cluster "${m[1]}"`,
      });
      return true;
    }
    if (req.headers.authorization !== `Bearer ${cluster.token}`) {
      send(401, {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'Unauthorized',
        reason: 'Unauthorized',
        code: 401,
      });
      return true;
    }
    let raw = '';
    for await (const chunk of req) raw += chunk;
    let body: unknown;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      send(400, {
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        reason: 'BadRequest',
        code: 400,
        message: 'invalid JSON body',
      });
      return true;
    }
    const method = req.method ?? 'GET';
    const before = cluster.mutations.length;
    const result = cluster.handle(method, m[2], url.searchParams, body, req.headers.accept);
    if (cluster.mutations.length > before) {
      const last = cluster.mutations[cluster.mutations.length - 1];
      record({ cluster: cluster.name, method, path: url.pathname, body: last.body });
    }
    send(result.status, result.body);
    return true;
  }
}
