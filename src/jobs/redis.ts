import { Redis, type RedisOptions } from 'ioredis';

/**
 * One ioredis connection. BullMQ Workers and QueueEvents issue blocking commands, so each needs
 * its own connection (platform-facts §4); `maxRetriesPerRequest: null` is required by BullMQ and
 * also makes our own commands wait through a Redis restart instead of failing mid-run.
 * No ioredis `keyPrefix`: BullMQ refuses it, and every key we write carries the prefix itself.
 */
export function createRedis(url: string, opts: Partial<RedisOptions> = {}, onError?: (err: Error) => void): Redis {
  const redis = new Redis(url, {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    // Reconnect quickly after a restart: runs are waiting on it.
    retryStrategy: (times) => Math.min(50 * times, 1000),
    lazyConnect: false,
    ...opts,
  });
  // Without a listener ioredis prints every failed reconnect as an unhandled error; it keeps retrying either way.
  redis.on('error', (err: Error) => onError?.(err));
  return redis;
}

/**
 * One quick PING for a one-shot command (`ask`): the long-lived connections above retry forever,
 * which is right for a worker riding out a restart and wrong for a terminal waiting on nothing.
 * Resolves to the failure's message, or undefined when Redis answered.
 */
export async function probeRedis(url: string, timeoutMs = 3000): Promise<string | undefined> {
  const redis = new Redis(url, { lazyConnect: true, connectTimeout: timeoutMs, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
  // The socket error (ECONNREFUSED ...) says more than connect()'s "Connection is closed".
  let cause: string | undefined;
  redis.on('error', (err: Error) => (cause ??= err.message));
  try {
    await redis.connect();
    await redis.ping();
    return undefined;
  } catch (error) {
    return cause ?? ((error as Error).message || String(error));
  } finally {
    redis.disconnect();
  }
}

/** `rollcall` → `rollcall:`; keys are `${keyBase(prefix)}run:r-7f3k2`. */
export function keyBase(prefix: string): string {
  return prefix.endsWith(':') ? prefix : `${prefix}:`;
}

/** BullMQ joins `prefix` and the queue name with ':' itself. */
export function bullPrefix(prefix: string): string {
  return prefix.replace(/:+$/, '');
}

export async function closeRedis(redis: Redis): Promise<void> {
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}
