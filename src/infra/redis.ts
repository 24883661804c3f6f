import { typedDuration } from '../core/format.js';
import { AsyncLocalStorage } from 'node:async_hooks';
import { createRequire } from 'node:module';
import type { Cluster, Command, Redis, RedisOptions } from 'ioredis';
import { redactUrlPassword } from './config/load.js';
import { clusterPrefixProblem } from './config/schema.js';
import { RollcallError } from '../core/errors.js';
import { redisErrorsTotal } from './metrics.js';

/**
 * ioredis, loaded on first use: many modules need this file's key helpers, and a one-shot `ask status`
 * that never talks to Redis should not pay for loading the client. The same module instance BullMQ loads.
 */
function ioredis(): typeof import('ioredis') {
  return createRequire(import.meta.url)('ioredis') as typeof import('ioredis');
}

/** A connection to one Redis (direct or through Sentinel) or to a Redis Cluster: every store takes either. */
export type RedisClient = Redis | Cluster;

/** Where to connect: ioredis options, plus the seed nodes when the URL names a Redis Cluster. */
export type RedisTarget = RedisOptions & { clusterNodes?: { host: string; port: number }[] };

/**
 * Where to connect, from `redis.url`: `redis://` or `rediss://` (one server);
 * `redis+sentinel://[user:password@]host:26379,host2:26379/<master name>[/<db>]`, which asks the Sentinels for
 * the current master and follows a failover; or `redis+cluster://[user:password@]host1:6379,host2:6379`
 * (`rediss+cluster://` for TLS), a Redis Cluster found from any of the nodes named. A Cluster has no databases,
 * so its URL has no path; its keys must share one hash slot (see clusterPrefixProblem).
 */
export function redisTarget(url: string): RedisTarget {
  const parsed = /^([a-z+]+):\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?#]+)(?:\/([^?#]*))?$/i.exec(url);
  if (!parsed)
    throw new RollcallError(
      'config_invalid',
      `redis.url "${redactUrlPassword(url)}" is not a Redis URL (redis://host:6379, rediss://..., redis+sentinel://host:26379/mymaster, redis+cluster://host1:6379,host2:6379)`,
    );
  const [, scheme, user, password, hosts, path = ''] = parsed;
  const auth = {
    ...(user ? { username: decodeURIComponent(user) } : {}),
    ...(password ? { password: decodeURIComponent(password) } : {}),
  };
  const nodes = hosts.split(',').map((h) => {
    const [host, port] = h.split(':');
    return { host, port: Number(port || (scheme === 'redis+sentinel' ? 26379 : 6379)) };
  });
  if (scheme === 'redis' || scheme === 'rediss') {
    if (nodes.length > 1)
      throw new RollcallError(
        'config_invalid',
        `redis.url names ${nodes.length} servers: use redis+sentinel://... for Sentinel, redis+cluster://... for Redis Cluster`,
      );
    const db = path ? Number(path) : 0;
    return { ...nodes[0], ...auth, db, ...(scheme === 'rediss' ? { tls: {} } : {}) };
  }
  if (scheme === 'redis+sentinel') {
    const [name, db] = path.split('/');
    if (!name)
      throw new RollcallError(
        'config_invalid',
        'redis+sentinel:// needs the master name as its path: redis+sentinel://host:26379/mymaster',
      );
    return { sentinels: nodes, name, ...auth, db: db ? Number(db) : 0 };
  }
  if (scheme === 'redis+cluster' || scheme === 'rediss+cluster') {
    if (path)
      throw new RollcallError(
        'config_invalid',
        `redis.url "${redactUrlPassword(url)}" has a path, and Redis Cluster has no databases to pick: drop "/${path}"`,
      );
    return { clusterNodes: nodes, ...auth, ...(scheme === 'rediss+cluster' ? { tls: {} } : {}) };
  }
  throw new RollcallError(
    'config_invalid',
    `redis.url scheme "${scheme}:" is not one of redis:, rediss:, redis+sentinel:, redis+cluster:, rediss+cluster:`,
  );
}

/** Refuses a key prefix the Redis at `url` cannot hold (an untagged prefix on a Cluster), with why and the fix. */
export function assertPrefixFits(url: string, prefix: string): void {
  const problem = clusterPrefixProblem(url, prefix);
  if (problem) throw new RollcallError('config_invalid', problem);
}

/**
 * The Redis rollcall uses: REDIS_URL, else `redis.url`. REDIS_URL is read after the config file was checked, so
 * the prefix is checked against it here.
 */
export function configuredRedisUrl(
  config: { redis: { url: string; prefix: string } },
  env: NodeJS.ProcessEnv = process.env,
): string {
  const url = env.REDIS_URL ?? config.redis.url;
  assertPrefixFits(url, config.redis.prefix);
  return url;
}

/** Connects to what `url` names: a Cluster client for a Cluster URL, else a Redis client. */
function connect(url: string, opts: Partial<RedisOptions>): RedisClient {
  const { clusterNodes, ...target } = redisTarget(url);
  if (!clusterNodes) return new (ioredis().Redis)({ ...target, ...opts });
  // The Cluster client takes offline queueing, lazy connecting and its retry pacing itself; the rest
  // (auth, TLS, maxRetriesPerRequest, which BullMQ reads from here) applies to each node's connection.
  const { enableOfflineQueue, lazyConnect, enableReadyCheck, retryStrategy, ...perNode } = { ...target, ...opts };
  return new (ioredis().Cluster)(clusterNodes, {
    redisOptions: perNode,
    // A master that dies is replaced by its replica after cluster-node-timeout (15 s by default) and an
    // election. ioredis retries a command through that only maxRedirections times, retryDelay* apart
    // (1.6 s by default), then fails it; as with a restarting Redis, commands wait it out instead (about a minute).
    maxRedirections: 200,
    retryDelayOnFailover: 300,
    retryDelayOnClusterDown: 300,
    retryDelayOnTryAgain: 300,
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    ...(lazyConnect === undefined ? {} : { lazyConnect }),
    ...(enableReadyCheck === undefined ? {} : { enableReadyCheck }),
    ...(retryStrategy ? { clusterRetryStrategy: (times: number) => retryStrategy(times) } : {}),
  });
}

/**
 * One ioredis connection. BullMQ Workers and QueueEvents issue blocking commands, so each needs
 * its own connection (a blocking command holds it until it answers); `maxRetriesPerRequest: null` is required by BullMQ and
 * also makes our own commands wait through a Redis restart instead of failing mid-run.
 * No ioredis `keyPrefix`: BullMQ refuses it, and every key we write carries the prefix itself.
 */
export function createRedis(
  url: string,
  opts: Partial<RedisOptions> = {},
  onError?: (err: Error) => void,
): RedisClient {
  // Made outside any answer (see answerWithoutWaitingForRedis): ioredis' own reconnects and handshakes run in
  // the context the connection was made in, and must never be failed fast.
  const redis = answering.exit(() =>
    connect(url, {
      maxRetriesPerRequest: null,
      enableReadyCheck: true,
      // Reconnect quickly after a restart: runs are waiting on it.
      retryStrategy: (times) => Math.min(50 * times, 1000),
      lazyConnect: false,
      ...opts,
    }),
  );
  let lastError: string | undefined;
  // Without a listener ioredis prints every failed reconnect as an unhandled error; it keeps retrying either way.
  redis.on('error', (err: Error) => {
    lastError = err.message;
    redisErrorsTotal.inc({ connection: opts.connectionName ?? 'rollcall' });
    onError?.(err);
  });
  failFastWhileAnswering(redis, redisAddress(url), () => lastError);
  return redis;
}

/** Where `url` points, as host:port (the Sentinels, or a Cluster's seed nodes): no scheme, user or password. */
export function redisAddress(url: string): string {
  const target = redisTarget(url);
  const hosts = (nodes: { host?: string; port?: number }[]) => nodes.map((n) => `${n.host}:${n.port}`).join(',');
  if (target.clusterNodes) return hosts(target.clusterNodes);
  if (target.sentinels) return `${target.name} (through Sentinel ${hosts(target.sentinels)})`;
  return `${target.host}:${target.port}`;
}

/** What still answers while Redis is away: a command refused for want of Redis says so. */
export const READ_ONLY_WITHOUT_REDIS =
  'Read-only fleet questions (status, app, clusters, diagnose, rollout ...) still answer without it, from the mirror of Argo CD.';

/**
 * How long an answer waits on one Redis command: for a connection still making its first connection to be
 * ready, or for a sent command's reply. A connection that was up and dropped does not wait at all: a Redis
 * restart takes longer than anyone should look at a silent chat, and Slack's answer must come in seconds.
 */
export const ANSWER_REDIS_TIMEOUT_MS = 1500;

/** Open while a command is being answered; closed when the answer is given (work it left running waits as usual). */
const answering = new AsyncLocalStorage<{ open: boolean }>();

/**
 * Runs `fn`, the answer to someone's command, so that Redis cannot hold it. The long-lived connections wait
 * through a Redis outage (maxRetriesPerRequest: null, the offline queue): right for a worker's step, which
 * continues when Redis is back, and wrong for a person waiting on an answer. Within `fn`, a command on a
 * connection that is not up fails at once with `redis_unavailable`, without ever being sent (nothing it would
 * have written lands later), and one that gets no reply within ANSWER_REDIS_TIMEOUT_MS fails the same way.
 */
export async function answerWithoutWaitingForRedis<T>(fn: () => Promise<T>): Promise<T> {
  const answer = { open: true };
  try {
    return await answering.run(answer, fn);
  } finally {
    answer.open = false;
  }
}

/** Runs `fn` as work that waits through a Redis outage, even inside an answer (a wait for a run's end). */
export function rideOutRedis<T>(fn: () => Promise<T>): Promise<T> {
  return answering.run({ open: false }, fn);
}

/** Gives `redis` the answer-path behaviour of answerWithoutWaitingForRedis; other callers see it unchanged. */
function failFastWhileAnswering(redis: RedisClient, address: string, lastError: () => string | undefined): void {
  let everReady = redis.status === 'ready';
  const waiting = new Set<() => void>();
  redis.on('ready', () => {
    everReady = true;
    for (const go of [...waiting]) go();
  });
  const send = redis.sendCommand.bind(redis) as (command: Command, ...rest: unknown[]) => unknown;
  const unavailable = (why: string) =>
    new RollcallError(
      'redis_unavailable',
      `Cannot reach Redis at ${address} (${why}). Runs, runbooks, the audit log, incidents, alerts and the change log live there; rollcall reconnects by itself once it is back. ${READ_ONLY_WITHOUT_REDIS}`,
    );
  (redis as { sendCommand: (command: Command, ...rest: unknown[]) => unknown }).sendCommand = (command, ...rest) => {
    if (!answering.getStore()?.open || redis.status === 'end') return send(command, ...rest);
    const sendTimed = () => {
      const timer = setTimeout(
        () =>
          command.reject(
            unavailable(
              `no reply within ${ANSWER_REDIS_TIMEOUT_MS / 1000}s; a command already sent may still be applied`,
            ),
          ),
        ANSWER_REDIS_TIMEOUT_MS,
      );
      const stop = () => clearTimeout(timer);
      command.promise.then(stop, stop);
      return send(command, ...rest);
    };
    if (redis.status === 'ready') return sendTimed();
    const down = `${redis.status}${lastError() ? `: ${lastError()}` : ''}`;
    if (everReady) {
      command.reject(unavailable(down));
      return command.promise;
    }
    // Still making its first connection (a process that just started): that may take a moment.
    if (redis.status === 'wait') redis.connect().catch(() => undefined);
    const go = () => {
      clearTimeout(timer);
      waiting.delete(go);
      sendTimed();
    };
    const timer = setTimeout(() => {
      waiting.delete(go);
      command.reject(
        unavailable(
          `not connected within ${ANSWER_REDIS_TIMEOUT_MS / 1000}s: ${redis.status}${lastError() ? `: ${lastError()}` : ''}`,
        ),
      );
    }, ANSWER_REDIS_TIMEOUT_MS);
    waiting.add(go);
    return command.promise;
  };
}

/**
 * Every key matching `match`, in batches: on a Cluster each master holds only its own slots, so every
 * master is scanned.
 */
export async function* scanKeys(redis: RedisClient, match: string): AsyncGenerator<string[]> {
  const nodes = 'nodes' in redis ? redis.nodes('master') : [redis];
  for (const node of nodes) {
    for await (const keys of node.scanStream({ match, count: 500 }) as AsyncIterable<string[]>)
      if (keys.length) yield keys;
  }
}

/**
 * Readiness: a connection that fails fast instead of queueing, so a PING says within a second whether Redis
 * answers now. Resolves to why not, or undefined.
 */
export function createRedisPinger(
  url: string,
  timeoutMs = 1000,
): { check(): Promise<string | undefined>; close(): Promise<void> } {
  let lastError: string | undefined;
  const redis = createRedis(
    url,
    { enableOfflineQueue: false, maxRetriesPerRequest: 0, connectionName: 'readiness' },
    (err) => (lastError = err.message),
  );
  return {
    async check() {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          redis.ping(),
          new Promise(
            (_, reject) =>
              (timer = setTimeout(() => reject(new Error(`no answer within ${typedDuration(timeoutMs)}`)), timeoutMs)),
          ),
        ]);
        return undefined;
      } catch (error) {
        if (redis.status !== 'ready') return `not connected (${redis.status}${lastError ? `: ${lastError}` : ''})`;
        return (error as Error).message;
      } finally {
        clearTimeout(timer);
      }
    },
    close: () => closeRedis(redis),
  };
}

/**
 * Runs survive a Redis restart only if Redis persists them. Says why not, or undefined when AOF is on (or when
 * CONFIG is disabled, as managed Redis services do: then nobody can tell from here, and saying so is the answer).
 * On a Cluster every master is asked: the one holding rollcall's slot is whichever it is today.
 */
export async function persistenceProblem(redis: RedisClient): Promise<string | undefined> {
  // A Cluster client knows its masters once it has read the slot map: the first command waits for that.
  if ('nodes' in redis) await redis.ping().catch(() => {});
  const nodes = 'nodes' in redis ? redis.nodes('master') : [redis];
  const off: string[] = [];
  for (const node of nodes) {
    let reply: unknown;
    try {
      reply = await node.call('CONFIG', 'GET', 'appendonly');
    } catch (error) {
      return `could not read Redis persistence settings (CONFIG GET appendonly: ${(error as Error).message}); make sure appendonly is on, or runs in flight are lost when Redis restarts`;
    }
    const value = Array.isArray(reply) ? String(reply[1] ?? '') : '';
    if (value !== 'yes') off.push(`${node.options.host}:${node.options.port}`);
  }
  if (!off.length) return undefined;
  const where = 'nodes' in redis ? ` on ${off.join(', ')}` : '';
  return `Redis does not persist (appendonly is off${where}): runs in flight are lost if Redis restarts. Set \`appendonly yes\` (docker-compose.yml and the chart do)`;
}

/**
 * One quick PING for a one-shot command (`ask`): the long-lived connections above retry forever,
 * which is right for a worker riding out a restart and wrong for a terminal waiting on nothing.
 * Resolves to the failure's message, or undefined when Redis answered.
 */
export async function probeRedis(url: string, timeoutMs = 3000): Promise<string | undefined> {
  const redis = connect(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  // The socket error (ECONNREFUSED ...) says more than connect()'s "Connection is closed". A Cluster client
  // hides its nodes' socket errors, and its own connect() failure ("None of startup nodes is available") says most.
  let cause: string | undefined;
  if (!('nodes' in redis)) redis.on('error', (err: Error) => (cause ??= err.message));
  else redis.on('error', () => {});
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

/** What the terminal (`ask`, `demo`) says when Redis does not answer a PING. */
export function redisUnreachableMessage(url: string, cause: string): string {
  return `Cannot reach Redis at ${redactUrlPassword(url)} (${cause}). Runbooks, runs and the audit log live in Redis: start redis-server, or point redis.url / REDIS_URL at yours.`;
}

/** `rollcall` → `rollcall:`; keys are `${keyBase(prefix)}run:r-7f3k2`. */
export function keyBase(prefix: string): string {
  return prefix.endsWith(':') ? prefix : `${prefix}:`;
}

/** BullMQ joins `prefix` and the queue name with ':' itself. */
export function bullPrefix(prefix: string): string {
  return prefix.replace(/:+$/, '');
}

export async function closeRedis(redis: RedisClient): Promise<void> {
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}

const CLOCK_REREAD_MS = 60_000;
const CLOCK_NOISE_MS = 1000;
const clockOffsets = new WeakMap<RedisClient, { offsetMs: number; readAt: number }>();

/**
 * How far Redis' clock is ahead of this process' (ms, negative when behind). Stream ids written with `*` carry
 * Redis' time, while the times rollcall asks about (since an hour ago, older than the retention) are this process'
 * own: a range over a stream translates them by this offset, so hosts whose clocks disagree still read the same
 * window. Read with TIME, halfway through its round trip, at most once a minute per client.
 */
export async function redisClockOffset(redis: RedisClient, now: () => number = Date.now): Promise<number> {
  const known = clockOffsets.get(redis);
  if (known && Math.abs(now() - known.readAt) < CLOCK_REREAD_MS) return known.offsetMs;
  const sent = now();
  const [seconds, micros] = await redis.time();
  const received = now();
  const redisMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  const measured = redisMs - Math.round((sent + received) / 2);
  // Under a second is the round trip's noise, and well inside the ranges' own margins: reading it as no offset keeps
  // every range of one process (and of its neighbours) on the same boundaries from one minute to the next.
  const offsetMs = Math.abs(measured) < CLOCK_NOISE_MS ? 0 : measured;
  clockOffsets.set(redis, { offsetMs, readAt: received });
  return offsetMs;
}
