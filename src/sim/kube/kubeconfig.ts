import { stringify } from 'yaml';

/**
 * A kubeconfig for simulated clusters. The server is plain http, which @kubernetes/client-node
 * accepts only with insecure-skip-tls-verify (platform-facts 5).
 */
export function kubeconfigYaml(clusters: { name: string; server: string; token: string }[]): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: clusters.map((c) => ({ name: c.name, cluster: { server: c.server, 'insecure-skip-tls-verify': true } })),
    users: clusters.map((c) => ({ name: `${c.name}-user`, user: { token: c.token } })),
    contexts: clusters.map((c) => ({ name: c.name, context: { cluster: c.name, user: `${c.name}-user` } })),
    'current-context': clusters[0]?.name ?? '',
  });
}
