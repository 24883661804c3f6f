import { stringify } from 'yaml';

/**
 * A kubeconfig for simulated clusters. Over https it carries the simulator's CA
 * (certificate-authority-data), so kubectl and @kubernetes/client-node verify the server and send
 * the token; a plain-http server is accepted by @kubernetes/client-node only with
 * insecure-skip-tls-verify (platform-facts 5), and kubectl sends no token to it at all.
 */
export function kubeconfigYaml(clusters: { name: string; server: string; token: string }[], caPem?: string): string {
  const tlsOf = (server: string) =>
    server.startsWith('https://') && caPem
      ? { 'certificate-authority-data': Buffer.from(caPem).toString('base64') }
      : { 'insecure-skip-tls-verify': true };
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: clusters.map((c) => ({ name: c.name, cluster: { server: c.server, ...tlsOf(c.server) } })),
    users: clusters.map((c) => ({ name: `${c.name}-user`, user: { token: c.token } })),
    contexts: clusters.map((c) => ({ name: c.name, context: { cluster: c.name, user: `${c.name}-user` } })),
    'current-context': clusters[0]?.name ?? '',
  });
}
