import { afterEach, describe, expect, it } from 'vitest';
import { startPrivateRedis, type PrivateRedis } from '../../src/infra/redis-server.js';
import {
  answerWithoutWaitingForRedis,
  closeRedis,
  createRedis,
  rideOutRedis,
  type RedisClient,
} from '../../src/infra/redis.js';
import { isRollcallError } from '../../src/core/errors.js';
import { testPrefix } from '../runbooks/fake-argo.js';

let cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
  cleanup = [];
});

/** A private redis-server (it is stopped for real) and a long-lived connection to it, as the stores use. */
async function privateRedis(): Promise<{ server: () => PrivateRedis; restart(): Promise<void>; redis: RedisClient }> {
  let server = await startPrivateRedis();
  cleanup.push(() => server.stop());
  const redis = createRedis(server.url);
  cleanup.push(() => closeRedis(redis));
  await redis.ping();
  return {
    server: () => server,
    redis,
    async restart() {
      server = await startPrivateRedis({ port: server.port });
    },
  };
}

async function timed<T>(p: Promise<T>): Promise<{ ms: number; error?: unknown; value?: T }> {
  const started = performance.now();
  try {
    const value = await p;
    return { ms: performance.now() - started, value };
  } catch (error) {
    return { ms: performance.now() - started, error };
  }
}

describe('a command answered while Redis is down', () => {
  it(
    'fails at once with redis_unavailable naming host:port, and what it would have written never lands once Redis is back',
    { timeout: 30_000 },
    async () => {
      const { server, restart, redis } = await privateRedis();
      const key = `${testPrefix()}:approved`;
      const port = server().port;
      await server().stop();
      await expect.poll(() => redis.status, { timeout: 5000 }).not.toBe('ready');

      const write = await timed(answerWithoutWaitingForRedis(() => redis.set(key, 'yes')));
      expect(write.ms).toBeLessThan(500);
      expect(isRollcallError(write.error, 'redis_unavailable')).toBe(true);
      expect((write.error as Error).message).toMatch(new RegExp(`^Cannot reach Redis at 127\\.0\\.0\\.1:${port} \\(`));
      expect((write.error as Error).message).toContain('Read-only fleet questions (status, app, clusters');

      await restart();
      await expect.poll(() => redis.status, { timeout: 5000 }).toBe('ready');
      // The refused SET was never queued: it does not run on reconnect.
      expect(await redis.get(key)).toBeNull();
      // And the same connection answers again.
      expect(await answerWithoutWaitingForRedis(() => redis.ping())).toBe('PONG');
    },
  );

  it(
    'leaves work outside an answer (a worker writing its checkpoint) waiting until Redis is back, and then it lands',
    { timeout: 30_000 },
    async () => {
      const { server, restart, redis } = await privateRedis();
      const key = `${testPrefix()}:checkpoint`;
      await server().stop();
      await expect.poll(() => redis.status, { timeout: 5000 }).not.toBe('ready');

      let settled = false;
      const checkpoint = redis.set(key, 'step-2').finally(() => (settled = true));
      // Waited out inside an answer too, when the answer asked for a wait.
      const waited = answerWithoutWaitingForRedis(() => rideOutRedis(() => redis.get(key)));
      await new Promise((r) => setTimeout(r, 2000));
      expect(settled).toBe(false);

      await restart();
      expect(await checkpoint).toBe('OK');
      expect(await waited).toBe('step-2');
    },
  );

  it(
    'fails a command that Redis does not answer (the process stopped) within the answer timeout',
    { timeout: 30_000 },
    async () => {
      const { server, redis } = await privateRedis();
      const pid = server().process.pid!;
      process.kill(pid, 'SIGSTOP');
      cleanup.push(async () => process.kill(pid, 'SIGCONT'));
      const read = await timed(answerWithoutWaitingForRedis(() => redis.get('anything')));
      expect(isRollcallError(read.error, 'redis_unavailable')).toBe(true);
      expect((read.error as Error).message).toContain('no reply within 1.5s');
      expect(read.ms).toBeGreaterThan(1400);
      expect(read.ms).toBeLessThan(2500);
      process.kill(pid, 'SIGCONT');
      expect(await answerWithoutWaitingForRedis(() => redis.ping())).toBe('PONG');
    },
  );

  it(
    'stops failing fast once the answer is given: work it left running waits for Redis as usual',
    { timeout: 30_000 },
    async () => {
      const { server, restart, redis } = await privateRedis();
      const key = `${testPrefix()}:later`;
      await server().stop();
      await expect.poll(() => redis.status, { timeout: 5000 }).not.toBe('ready');
      let leftRunning: Promise<unknown> | undefined;
      await answerWithoutWaitingForRedis(async () => {
        leftRunning = (async () => {
          await new Promise((r) => setTimeout(r, 100));
          return redis.set(key, 'late');
        })();
      });
      let settled = false;
      void leftRunning!.finally(() => (settled = true)).catch(() => {});
      await new Promise((r) => setTimeout(r, 1000));
      expect(settled).toBe(false);
      await restart();
      expect(await leftRunning).toBe('OK');
      expect(await redis.get(key)).toBe('late');
    },
  );
});
