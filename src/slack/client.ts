import { WebClient, WebClientEvent, type WebClientOptions } from '@slack/web-api';
import { slackRateLimitedTotal } from '../metrics.js';
import type { Logger } from 'pino';
import type { SlackConfig } from '../config/schema.js';
import { boltLogger } from './logger.js';

/** WebClient options from config: a fake Web API in tests (`slack.apiUrl`), our logger, no token in logs. */
export function webClientOptions(slack: SlackConfig, logger?: Logger): WebClientOptions {
  const opts: WebClientOptions = {};
  if (slack.apiUrl) opts.slackApiUrl = slack.apiUrl.endsWith('/') ? slack.apiUrl : `${slack.apiUrl}/`;
  if (logger) opts.logger = boltLogger(logger);
  return opts;
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
