import { createRequire } from 'node:module';
import { WebClient, WebClientEvent, type WebClientOptions } from '@slack/web-api';
import { slackRateLimitedTotal } from '../../infra/metrics.js';
import type { Logger } from 'pino';
import type { SlackConfig } from '../../infra/config/schema.js';
import { proxyConfigured } from '../../core/proxy-env.js';
import { boltLogger } from './logger.js';

/** WebClient options from config: a fake Web API in tests (`slack.apiUrl`), our logger, no token in logs. */
export function webClientOptions(slack: SlackConfig, logger?: Logger): WebClientOptions {
  const opts: WebClientOptions = {};
  if (slack.apiUrl) opts.slackApiUrl = slack.apiUrl.endsWith('/') ? slack.apiUrl : `${slack.apiUrl}/`;
  if (logger) opts.logger = boltLogger(logger);
  const fetch = proxiedFetch();
  if (fetch) opts.fetch = fetch;
  return opts;
}

let throughProxy: typeof fetch | undefined;

/**
 * The Web API client calls node's fetch, which does not read HTTPS_PROXY: behind an egress proxy no Slack call
 * would leave the cluster. With a proxy variable set, its calls go through undici's EnvHttpProxyAgent, which
 * reads HTTPS_PROXY / HTTP_PROXY / NO_PROXY as curl does (credentials in the URL). One agent per process.
 */
function proxiedFetch(): typeof fetch | undefined {
  if (!proxyConfigured()) return undefined;
  if (!throughProxy) {
    const { EnvHttpProxyAgent, fetch: undiciFetch } = createRequire(import.meta.url)(
      'undici',
    ) as typeof import('undici');
    const dispatcher = new EnvHttpProxyAgent();
    throughProxy = (async (input: Parameters<typeof fetch>[0], init: Parameters<typeof fetch>[1] = {}) => {
      let { body, headers } = init;
      // A file upload's body is node's own FormData, which this copy of undici does not recognise (it would send
      // "[object FormData]"): node encodes it, with its multipart boundary, and the bytes go instead.
      if (body instanceof FormData) {
        const encoded = new Response(body);
        headers = { ...Object.fromEntries(new Headers(headers)), 'content-type': encoded.headers.get('content-type')! };
        body = Buffer.from(await encoded.arrayBuffer());
      }
      return undiciFetch(
        input as Parameters<typeof undiciFetch>[0],
        { ...(init as Parameters<typeof undiciFetch>[1]), body, headers, dispatcher } as Parameters<
          typeof undiciFetch
        >[1],
      );
    }) as unknown as typeof fetch;
  }
  return throughProxy;
}

/** A WebClient for processes without Bolt (a worker posting run progress). */
export function createSlackWebClient(slack: SlackConfig, logger?: Logger, extra: WebClientOptions = {}): WebClient {
  return countRateLimits(new WebClient(slack.botToken, { ...webClientOptions(slack, logger), ...extra }));
}

/** Counts every 429 the client sees (it emits one whether it then retries or rejects the call), by Web API method. */
export function countRateLimits(client: WebClient): WebClient {
  client.on(WebClientEvent.RATE_LIMITED, (_seconds: number, request?: { url?: string }) => {
    slackRateLimitedTotal.inc({ method: request?.url?.split('/').filter(Boolean).pop() ?? 'unknown' });
  });
  return client;
}
