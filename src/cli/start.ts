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
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: finishing in-flight steps');
    for (const stop of stops.reverse()) await stop().catch((err) => logger.error({ err }, 'stop failed'));
    await runtime.stop();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}
