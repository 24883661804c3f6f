import type { RollcallConfig } from '../../infra/config/schema.js';
import { startHttpServer } from '../http/server.js';
import { metricsRegistry } from '../../infra/metrics.js';
import { RollcallError } from '../../core/errors.js';
import {
  closeRedis,
  configuredRedisUrl,
  createRedis,
  createRedisPinger,
  persistenceProblem,
  probeRedis,
  redisUnreachableMessage,
} from '../../infra/redis.js';
import { createLogger } from '../../infra/log.js';
import { RunStore } from '../../domain/runbooks/run-store.js';
import { startRuntime } from './bootstrap.js';
import { installProcessGuards } from './process-guards.js';
import { keepStatusPrepared, prepareStatus, runStatus } from '../../commands/status.js';
import { parseCommand } from '../../commands/parse.js';
import type { Services } from '../../commands/registry.js';
import { renderBlocks } from '../../views/blocks.js';

/** `rollcall start`: one process with every role, or a bot / worker for scaling out on one Redis. */
export async function start(config: RollcallConfig, role: 'all' | 'bot' | 'worker'): Promise<void> {
  const logger = createLogger();
  installProcessGuards(logger);
  // Recording starts now, so /metrics counts the first lists and Redis errors too.
  metricsRegistry();
  const redisUrl = configuredRedisUrl(config);
  // Once running, rollcall rides out a Redis outage; starting without one would only look healthy.
  const down = await probeRedis(redisUrl);
  if (down) throw new RollcallError('redis_unavailable', redisUnreachableMessage(redisUrl, down));
  const runtime = await startRuntime(config, { logger });
  await runtime.enableRuns({ role, redisUrl });
  const stops: (() => Promise<void>)[] = [];
  void warnIfRedisDoesNotPersist(redisUrl, logger);
  if (role === 'worker' && config.slack) {
    // No Bolt here, but alerts and digests are posted from workers: through the Web API directly.
    const { SlackNotifier } = await import('../slack/notifier.js');
    const { createSlackWebClient } = await import('../slack/client.js');
    const notifier = new SlackNotifier(createSlackWebClient(config.slack, logger, { rejectRateLimitedCalls: true }), {
      logger,
    });
    runtime.outputNotifier = notifier;
    stops.push(() => notifier.flush());
  }

  let slackConnected: (() => boolean) | undefined;
  if (role !== 'worker') {
    if (config.slack) {
      const { startSlack } = await import('../slack/app.js');
      await prepareAnswers(runtime.services, logger);
      const stopPreparing = keepStatusPrepared(runtime.services.fleet, (err) =>
        logger.warn({ err }, 'status could not be prepared ahead; the next answer counts what changed itself'),
      );
      stops.push(async () => stopPreparing());
      const slack = await startSlack(runtime.services, { logger, redisUrl });
      slackConnected = () => slack.connected();
      stops.push(() => slack.stop());
      logger.info({ mode: config.slack.mode, port: slack.port }, 'slack connected');
    } else {
      logger.warn('no slack section in the config: answering only through `rollcall ask`');
    }
  }
  const pinger = createRedisPinger(redisUrl);
  stops.push(() => pinger.close());
  const runStoreRedis = createRedis(redisUrl, { maxRetriesPerRequest: 1, connectionName: 'metrics' });
  stops.push(() => closeRedis(runStoreRedis));
  const runStore = new RunStore(runStoreRedis, config.redis.prefix);
  const http = await startHttpServer({
    port: config.http.port,
    fleet: runtime.services.fleet,
    health: {
      redis: () => pinger.check(),
      runsByState: () => runsByState(runStore),
      ...(slackConnected ? { slack: slackConnected } : {}),
    },
    ...(runtime.recorder ? { recorder: runtime.recorder } : {}),
  });
  stops.push(() => http.close());
  logger.info(
    {
      role,
      http: http.port,
      instances: config.instances.map((i) => i.name),
      changeRecorder: !!runtime.recorder,
      slack: !!config.slack,
    },
    'rollcall started',
  );

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      logger.flush();
      process.exit(1);
    }
    stopping = true;
    const graceMs = config.shutdown.grace;
    logger.info({ signal, graceMs }, 'shutting down: finishing in-flight steps');
    // Stopping waits on Redis (the queue, checkpoints) and on Argo CD (a step's next call): either may not
    // answer. Past the grace period the process goes anyway; BullMQ re-delivers what it held.
    const deadline = setTimeout(() => {
      logger.warn(
        { graceMs },
        'shutdown grace period over: exiting without finishing; steps still held are left to another worker (BullMQ re-delivers them when their lock expires)',
      );
      logger.flush();
      process.exit(1);
    }, graceMs);
    for (const stop of stops.reverse()) await stop().catch((err) => logger.error({ err }, 'stop failed'));
    await runtime.stop().catch((err) => logger.error({ err }, 'stop failed'));
    clearTimeout(deadline);
    logger.info('stopped');
    logger.flush();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

/** How many times the answer path is run before Slack's requests come in. */
const ANSWER_WARM_UPS = 5;

/**
 * Before Slack's requests come in: the first crowd of an incident (everyone's `/argo status` within seconds of a bot
 * starting) then finds the fleet already judged, as every later crowd does, and the path its answers take after the
 * ack (the command over the judged fleet, its Block Kit) run a few times, so V8 compiled it before the crowd came.
 */
async function prepareAnswers(services: Services, logger: ReturnType<typeof createLogger>): Promise<void> {
  const started = performance.now();
  prepareStatus(services.fleet);
  const judgedMs = Math.round(performance.now() - started);
  try {
    for (let i = 0; i < ANSWER_WARM_UPS; i++)
      renderBlocks(await runStatus(parseCommand('status'), { services, user: 'rollcall', surface: 'slack' }));
  } catch (err) {
    logger.warn({ err }, 'status could not be answered before Slack connected; the first answers will say why');
  }
  logger.info(
    {
      apps: services.fleet.apps().length,
      ms: judgedMs,
      answeredMs: Math.round(performance.now() - started) - judgedMs,
    },
    'status prepared',
  );
}

async function warnIfRedisDoesNotPersist(url: string, logger: ReturnType<typeof createLogger>): Promise<void> {
  const redis = createRedis(url, { maxRetriesPerRequest: 1, connectionName: 'startup-check' });
  try {
    const problem = await persistenceProblem(redis);
    if (problem) logger.warn(problem);
  } finally {
    await closeRedis(redis);
  }
}

/** The latest runs by state; a scrape reads at most this many records. */
async function runsByState(store: RunStore, recent = 500): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const run of await store.list(recent)) counts[run.status] = (counts[run.status] ?? 0) + 1;
  return counts;
}
