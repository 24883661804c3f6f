import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { App, HTTPReceiver, SocketModeReceiver } from '@slack/bolt';
import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { Services } from '../../commands/registry.js';
import type { RedisClient } from '../../infra/redis.js';
import type { SlackConfig } from '../../infra/config/schema.js';
import { closeRedis, createRedis } from '../../infra/redis.js';
import { createLogger } from '../../infra/log.js';
import { countRateLimits, createSlackWebClient, webClientOptions } from './client.js';
import { registerListeners } from './listeners/index.js';
import { boltLogger } from './logger.js';
import { SlackNotifier } from './notifier.js';
import { guardReceiver } from './request-guard.js';
import { warmIntake, warmUpToken } from './warm-up.js';
import { AckFirst } from './intake.js';
import type { ArrivalProperties, SlackDeps } from './context.js';
import { auditEntryRefusal, refusalOf } from './authorize.js';
import { isSlashCommand } from './entry.js';
import { startIncidentHeaders } from './incident-headers.js';
import { RollcallError } from '../../core/errors.js';

export class SlackStartError extends RollcallError {
  declare readonly code: 'slack_not_configured' | 'slack_auth_failed' | 'slack_listen_failed';
  constructor(code: SlackStartError['code'], message: string) {
    super(code, message);
    this.name = 'SlackStartError';
  }
}

/**
 * How long intake counts as busy after a request arrives, where answers start: a crowd's requests reach the bot in
 * waves some milliseconds apart, and a computation started between two waves would hold the second wave's acks.
 */
const ACK_SETTLE_MS = 15;
/**
 * How long answers wait for intake to settle: a crowd fired at once settles well within it, while people asking one
 * after another, every few milliseconds for a second, would otherwise hold every answer until the last of them asked.
 */
const ACK_SETTLE_FOR_MS = 100;
/**
 * How long one turn of the event loop runs answer steps before it lets I/O in: about what a request's ack costs,
 * so one arriving meanwhile waits a few milliseconds, and a crowd's small steps do not each pay for a turn.
 */
const ANSWER_SLICE_MS = 2;

export interface SlackHandle {
  stop(): Promise<void>;
  /** HTTP mode: the bound port (config `slack.port: 0` picks a free one). */
  port?: number;
  app: App;
  client: WebClient;
  /** The notifier for live messages; also set as services.notifier when none was there. */
  notifier: SlackNotifier;
  /** Whether Slack can reach us now: the HTTP receiver listening, or the Socket Mode link open (readiness). */
  connected(): boolean;
}

/** The replay check's connection: a crowd's SET NX go out in one write (auto-pipelined), each tried once. */
function seenRequestsRedis(url: string): RedisClient {
  return createRedis(url, { maxRetriesPerRequest: 1, enableAutoPipelining: true });
}

/** Starts the receiver; in HTTP mode, the port it listens on, its requests told to `watch` as they arrive. */
async function listen(app: App, slack: SlackConfig, watch: (server: Server) => void): Promise<number | undefined> {
  try {
    const started = (await app.start()) as unknown;
    if (slack.mode !== 'http') return undefined;
    watch(started as Server);
    return ((started as Server).address() as AddressInfo).port;
  } catch (err) {
    throw new SlackStartError(
      'slack_listen_failed',
      `Slack ${slack.mode} receiver failed to start: ${(err as Error).message}${slack.mode === 'http' ? ` (is port ${slack.port} free?)` : ''}`,
    );
  }
}

/**
 * HTTP mode's receiver: Bolt's, behind the request guard (request-guard.ts), with the fleet's version at each
 * request's arrival in Bolt's context. Socket Mode needs none of this: its requests come over a WebSocket opened with
 * the app token.
 */
function guardedReceiver(
  slack: SlackConfig,
  deps: SlackDeps & { ackFirst: AckFirst },
  p: {
    log: ReturnType<typeof boltLogger>;
    redisUrl: string;
    warmUp: string;
    askedAt: WeakMap<IncomingMessage, number>;
  },
): { receiver: HTTPReceiver; seenRequests: RedisClient } {
  const { services, ackFirst } = deps;
  const receiver = new HTTPReceiver({
    signingSecret: slack.signingSecret!,
    port: slack.port,
    endpoints: '/slack/events',
    logger: p.log,
    customPropertiesExtractor: (req): ArrivalProperties => ({ askedAtVersion: p.askedAt.get(req) }),
  });
  const seenRequests = seenRequestsRedis(p.redisUrl);
  guardReceiver(receiver, {
    signingSecret: slack.signingSecret!,
    redis: seenRequests,
    prefix: services.config.redis.prefix,
    logger: deps.logger,
    onNoUser: async (entry) => {
      const refusal = refusalOf(services.config, entry);
      if (refusal) await auditEntryRefusal(deps, entry, refusal);
    },
    // A slash command's ack is always empty (an answer, or a refusal, follows on response_url), so it needs
    // nothing from Bolt's middleware or the listener: it goes out as soon as the request is verified.
    ackAtOnce: (body) => isSlashCommand(body, slack.command),
    handOff: () => ackFirst.quiet(),
    warmUpToken: p.warmUp,
  });
  return { receiver, seenRequests };
}

/**
 * Wiring only: a Bolt app in HTTP mode (signed requests on POST /slack/events) or Socket Mode, from config,
 * with the listeners of ./listeners. Checks the bot token with auth.test before serving; in HTTP mode, returns once
 * its request path has been warmed (warm-up.ts).
 */
export async function startSlack(
  services: Services,
  opts: {
    logger?: Logger;
    notifierIntervalMs?: number;
    /** Where HTTP mode remembers the requests it has seen (replays). @defaultValue config redis.url */
    redisUrl?: string;
  } = {},
): Promise<SlackHandle> {
  const slack = services.config.slack;
  if (!slack)
    throw new SlackStartError(
      'slack_not_configured',
      'No `slack` section in the config: add mode, botToken and signingSecret (http) or appToken (socket).',
    );
  const logger = opts.logger ?? createLogger();
  const log = boltLogger(logger);
  const clientOptions = webClientOptions(slack, logger);

  const ackFirst = new AckFirst(1000, ACK_SETTLE_MS, ANSWER_SLICE_MS, ACK_SETTLE_FOR_MS);
  const deps = { services, logger: logger.child({ component: 'slack' }), ackFirst };
  // The fleet's version as each request was read: what its asker could have seen (`askedAtVersionOf`).
  const askedAt = new WeakMap<IncomingMessage, number>();
  let seenRequests: RedisClient | undefined;
  let receiver: HTTPReceiver | undefined;
  const warmUp = warmUpToken();
  let socketReceiver: SocketModeReceiver | undefined;
  if (slack.mode === 'http') {
    ({ receiver, seenRequests } = guardedReceiver(slack, deps, {
      log,
      redisUrl: opts.redisUrl ?? services.config.redis.url,
      warmUp,
      askedAt,
    }));
  }

  const app = receiver
    ? new App({
        token: slack.botToken,
        receiver,
        clientOptions,
        logger: log,
        deferInitialization: true,
      })
    : new App({
        token: slack.botToken,
        // Built here rather than by Bolt so its client's connection state can answer readiness.
        receiver: (socketReceiver = new SocketModeReceiver({
          appToken: slack.appToken!,
          // The SocketModeClient's own WebClient (apps.connections.open) ignores clientOptions.
          installerOptions: { clientOptions },
          logger: log,
        })),
        clientOptions,
        logger: log,
        deferInitialization: true,
      });
  let socketConnected = false;
  socketReceiver?.client.on('connected', () => (socketConnected = true));
  socketReceiver?.client.on('disconnected', () => (socketConnected = false));

  try {
    await app.init();
  } catch (err) {
    if (seenRequests) await closeRedis(seenRequests);
    const e = err as { data?: { error?: string }; message?: string };
    throw new SlackStartError(
      'slack_auth_failed',
      `Slack rejected the bot token at auth.test (${e.data?.error ?? e.message}): check slack.botToken (xoxb-...) and that the app is installed in the workspace.`,
    );
  }

  countRateLimits(app.client);
  registerListeners(app, deps);
  app.error(async (err) => {
    logger.error(
      { err: { message: err.message, code: (err as { code?: string }).code } },
      'unhandled error in a Slack listener',
    );
  });

  let port: number | undefined;
  try {
    port = await listen(app, slack, (server) => {
      ackFirst.watch(server);
      server.prependListener('request', (req: IncomingMessage) => askedAt.set(req, services.fleet.version()));
    });
  } catch (err) {
    if (seenRequests) await closeRedis(seenRequests);
    throw err;
  }
  if (port !== undefined)
    await warmIntake({ port, signingSecret: slack.signingSecret!, token: warmUp, logger: deps.logger });

  // Its own client: 429s come back to the notifier (rejectRateLimitedCalls) so it can coalesce while waiting,
  // instead of the shared client queueing every call behind the limit.
  const notifier = new SlackNotifier(createSlackWebClient(slack, logger, { rejectRateLimitedCalls: true }), {
    logger,
    ...(opts.notifierIntervalMs !== undefined ? { minIntervalMs: opts.notifierIntervalMs } : {}),
  });
  if (!services.notifier) services.notifier = notifier;
  const headers = startIncidentHeaders(services, { logger });

  let stopped = false;
  return {
    port,
    app,
    client: app.client,
    notifier,
    connected: () => !stopped && (slack.mode === 'http' || socketConnected),
    async stop() {
      headers.stop();
      stopped = true;
      await notifier.flush().catch(() => {});
      await app.stop();
      if (seenRequests) await closeRedis(seenRequests);
    },
  };
}
