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
