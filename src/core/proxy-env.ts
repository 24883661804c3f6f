/**
 * The variables that name an outbound proxy, as curl and the Argo CD CLI read them (NO_PROXY exempts hosts).
 * The HTTP clients load their proxy support only when one is set, so a process without a proxy never pays for it.
 */
const PROXY_VARIABLES = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'ALL_PROXY', 'all_proxy'];

export function proxyConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  return PROXY_VARIABLES.some((v) => env[v]);
}
