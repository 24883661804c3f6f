import { WebClient, type WebClientOptions } from '@slack/web-api';
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
  return new WebClient(slack.botToken, { ...webClientOptions(slack, logger), ...extra });
}
