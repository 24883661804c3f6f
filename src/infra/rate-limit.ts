import type { RedisClient } from './redis.js';
import { keyBase } from './redis.js';

/**
 * A per-Argo CD instance limiter shared by every worker process: a token bucket kept in one Redis
 * hash and updated by a Lua script, so all processes draw from the same bucket atomically. The
 * script returns 0 when a token was taken, else the milliseconds until one is available. Time is
 * Redis's own (TIME), so worker clocks need not agree.
 */
const TAKE = `
local key = KEYS[1]
local capacity = tonumber(ARGV[1])
local perMs = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local tokens = tonumber(redis.call('HGET', key, 'tokens'))
local at = tonumber(redis.call('HGET', key, 'at'))
if tokens == nil then tokens = capacity; at = now end
local refill = (now - at) * capacity / perMs
tokens = math.min(capacity, tokens + refill)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = math.ceil((1 - tokens) * perMs / capacity) end
redis.call('HSET', key, 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', key, perMs * 2 + 1000)
return wait
`;

export interface RateLimit {
  max: number;
  perMs: number;
}

export class InstanceRateLimiter {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly limits: ReadonlyMap<string, RateLimit>,
  ) {}

  /** Waits until a mutating call to the instance is allowed. Instances without a limit pass at once. */
  async acquire(instance: string, signal?: AbortSignal): Promise<void> {
    const limit = this.limits.get(instance);
    if (!limit) return;
    for (;;) {
      signal?.throwIfAborted();
      const wait = Number(
        await this.redis.eval(TAKE, 1, `${keyBase(this.prefix)}ratelimit:${instance}`, limit.max, limit.perMs),
      );
      if (wait <= 0) return;
      await new Promise<void>((resolve) => {
        const t = setTimeout(done, Math.min(wait, 1000));
        signal?.addEventListener('abort', done, { once: true });
        function done() {
          clearTimeout(t);
          signal?.removeEventListener('abort', done);
          resolve();
        }
      });
    }
  }
}
