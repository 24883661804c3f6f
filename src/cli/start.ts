import type { RollcallConfig } from '../config/schema.js';
import { startHttpServer } from '../http/server.js';
import { createLogger } from '../log.js';
import { startRuntime } from './bootstrap.js';

/** `rollcall start`: one process with every role, or a bot / worker for scaling out on one Redis. */
export async function start(config: RollcallConfig, role: 'all' | 'bot' | 'worker'): Promise<void> {
  const logger = createLogger();
  const runtime = await startRuntime(config, { logger });
  await runtime.enableRuns({ role, redisUrl: process.env.REDIS_URL ?? config.redis.url });
  const stops: (() => Promise<void>)[] = [];
  if (role === 'worker' && config.slack) {
    // No Bolt here, but alerts and digests are posted from workers: through the Web API directly.
    const { SlackNotifier } = await import('../slack/notifier.js');
    const { createSlackWebClient } = await import('../slack/client.js');
    const notifier = new SlackNotifier(createSlackWebClient(config.slack, logger, { rejectRateLimitedCalls: true }), { logger });
    runtime.outputNotifier = notifier;
    stops.push(() => notifier.flush());
  }

  if (role !== 'worker') {
    if (config.slack) {
      const { startSlack } = await import('../slack/app.js');
      const slack = await startSlack(runtime.services, { logger, redisUrl: process.env.REDIS_URL ?? config.redis.url });
      stops.push(() => slack.stop());
      logger.info({ mode: config.slack.mode, port: slack.port }, 'slack connected');
    } else {
      logger.warn('no slack section in the config: answering only through `rollcall ask`');
    }
  }
  const http = await startHttpServer({
    port: config.http.port,
    fleet: runtime.services.fleet,
    health: { mirrorHealth: () => runtime.mirror.health() },
  });
  stops.push(() => http.close());
  logger.info({ role, http: http.port, instances: config.instances.map((i) => i.name) }, 'rollcall started');

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
