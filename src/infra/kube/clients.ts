import type { AppsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import type { KubeClusterConfig, RollcallConfig } from '../config/schema.js';
import { RollcallError } from '../../core/errors.js';

export interface KubeClients {
  cluster: string;
  core: CoreV1Api;
  apps: AppsV1Api;
  custom: CustomObjectsApi;
}

export class KubeError extends RollcallError {
  declare readonly code:
    'unknown_cluster' | 'not_found' | 'conflict' | 'forbidden' | 'unauthenticated' | 'unavailable' | 'invalid';
  constructor(
    code: KubeError['code'],
    message: string,
    readonly status?: number,
  ) {
    super(code, message);
  }
}

/**
 * One KubeConfig per cluster. A shared KubeConfig with switched contexts would send one
 * cluster's credentials to another's server (platform-facts 5: makeApiClient fixes the server,
 * but reads credentials from the current context at request time).
 */
type KubeModule = typeof import('@kubernetes/client-node');

export function kubeConfigFor(k8s: KubeModule, cluster: KubeClusterConfig): KubeConfig {
  const kc = new k8s.KubeConfig();
  if (cluster.inCluster) kc.loadFromCluster();
  else {
    kc.loadFromFile(cluster.kubeconfig!);
    if (cluster.context) {
      if (!kc.getContexts().some((c) => c.name === cluster.context))
        throw new KubeError(
          'unknown_cluster',
          `kube cluster ${cluster.name}: context "${cluster.context}" is not in ${cluster.kubeconfig}`,
        );
      kc.setCurrentContext(cluster.context);
    }
  }
  return kc;
}

/**
 * Loaded on demand: @kubernetes/client-node takes seconds to import, and only the sealed-secrets
 * runbooks need it, so `rollcall ask status` must not pay for it.
 */
export async function createKubeClients(config: RollcallConfig): Promise<Map<string, KubeClients>> {
  const clients = new Map<string, KubeClients>();
  if (!config.kube.clusters.length) return clients;
  const k8s = await import('@kubernetes/client-node');
  for (const cluster of config.kube.clusters) {
    const kc = kubeConfigFor(k8s, cluster);
    clients.set(cluster.name, {
      cluster: cluster.name,
      core: kc.makeApiClient(k8s.CoreV1Api),
      apps: kc.makeApiClient(k8s.AppsV1Api),
      custom: kc.makeApiClient(k8s.CustomObjectsApi),
    });
  }
  return clients;
}

export function kubeFor(clients: ReadonlyMap<string, KubeClients>, cluster: string): KubeClients {
  const found = clients.get(cluster);
  if (!found) {
    const known = [...clients.keys()];
    throw new KubeError(
      'unknown_cluster',
      `no Kubernetes access configured for cluster "${cluster}"` +
        (known.length ? ` (configured: ${known.join(', ')})` : ' (add it under kube.clusters in rollcall.yaml)'),
    );
  }
  return found;
}

/** ApiException carries `.code` and a raw JSON string `.body` (platform-facts 5). */
export function toKubeError(error: unknown, what: string): KubeError {
  const e = error as { code?: number; body?: string; message?: string };
  let message = e.message ?? String(error);
  if (typeof e.body === 'string') {
    try {
      message = JSON.parse(e.body).message ?? message;
    } catch {}
  }
  switch (e.code) {
    case 404:
      return new KubeError('not_found', `${what}: ${message}`, 404);
    case 409:
      return new KubeError('conflict', `${what}: ${message}`, 409);
    case 401:
      return new KubeError('unauthenticated', `${what}: the credentials were rejected (${message})`, 401);
    case 403:
      return new KubeError(
        'forbidden',
        `${what}: forbidden — ${message} (see deploy/rbac/sealed-secrets-keys.yaml)`,
        403,
      );
    case 400:
    case 422:
      return new KubeError('invalid', `${what}: ${message}`, e.code);
    default:
      return new KubeError('unavailable', `${what}: ${message}`, e.code);
  }
}
