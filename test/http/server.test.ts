import { afterEach, describe, expect, it } from 'vitest';
import { startHttpServer, type HealthSource } from '../../src/surfaces/http/server.js';
import { StaticFleet } from '../../src/fleet/model.js';
import type { InstanceHealth } from '../../src/fleet/events.js';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findBinary, freePort, onTheMachineClock, startPrivateRedis } from '../../src/infra/redis-server.js';
import { createRedis, closeRedis, createRedisPinger, persistenceProblem, redisTarget } from '../../src/infra/redis.js';

type FleetWithHealth = StaticFleet;

/** One app on `prod`, and the mirror state the test says each instance is in. */
function fleetOf(instances: InstanceHealth[]): FleetWithHealth {
  const fleet = StaticFleet.fromObjects([
    {
      name: 'prod',
      applications: [{ metadata: { name: 'a' }, spec: { project: 'default', destination: { name: 'c1' } } }],
    },
  ]);
  fleet.health = () => instances;
  return fleet;
}

describe('health endpoints', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  async function serve(fleet: FleetWithHealth, health: HealthSource) {
    const server = await startHttpServer({ port: 0, fleet, health, now: () => Date.parse('2026-12-04T10:00:30Z') });
    closers.push(server.close);
    return `http://127.0.0.1:${server.port}`;
  }

  it('stays ready while an Argo CD instance is down, and reports that instance in /status and /metrics instead', async () => {
    const fleet = fleetOf([
      { instance: 'prod', synced: true, lastEventAt: '2026-12-04T10:00:00Z' },
      { instance: 'staging', synced: false, error: 'connect ECONNREFUSED 10.0.0.9:443' },
    ]);
    const base = await serve(fleet, {
      redis: async () => undefined,
      runsByState: async () => ({ running: 2, 'awaiting-approval': 1 }),
    });
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ ready: true, redis: { ok: true } });
    const status = (await (await fetch(`${base}/status`)).json()) as { instances: InstanceHealth[] };
    expect(status.instances).toEqual([
      { instance: 'prod', synced: true, lastEventAt: '2026-12-04T10:00:00Z' },
      { instance: 'staging', synced: false, error: 'connect ECONNREFUSED 10.0.0.9:443' },
    ]);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toContain('rollcall_argocd_instance_up{instance="prod"} 1');
    expect(metrics).toContain('rollcall_argocd_instance_up{instance="staging"} 0');
    expect(metrics).toContain('rollcall_mirror_lag_seconds{instance="prod"} 30');
    expect(metrics).toContain('rollcall_fleet_apps{instance="prod"} 1');
    expect(metrics).toContain('rollcall_runs{state="awaiting-approval"} 1');
  });

  it('is not ready while a bot is not connected to Slack, and live all the same', async () => {
    let connected = false;
    const base = await serve(fleetOf([]), { redis: async () => undefined, slack: () => connected });
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const notReady = await fetch(`${base}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toMatchObject({ ready: false, slack: { connected: false } });
    connected = true;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
  });

  it('is not ready while Redis does not answer, and ready again once it is back (a real redis-server, stopped and restarted)', async () => {
    const redis = await startPrivateRedis();
    closers.push(() => redis.stop());
    const pinger = createRedisPinger(redis.url, 500);
    closers.push(() => pinger.close());
    const base = await serve(fleetOf([]), { redis: () => pinger.check() });
    await expect.poll(async () => (await fetch(`${base}/readyz`)).status, { timeout: 5000 }).toBe(200);

    await redis.stop();
    await expect.poll(async () => (await fetch(`${base}/readyz`)).status, { timeout: 5000 }).toBe(503);
    const body = (await (await fetch(`${base}/readyz`)).json()) as {
      ready: boolean;
      redis: { ok: boolean; error?: string };
    };
    expect(body.ready).toBe(false);
    expect(body.redis.ok).toBe(false);
    expect(body.redis.error).toMatch(/not connected|no answer/);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);

    const again = await startPrivateRedis({ port: redis.port });
    closers.push(() => again.stop());
    await expect.poll(async () => (await fetch(`${base}/readyz`)).status, { timeout: 10_000 }).toBe(200);
  });

  it('warns when Redis does not persist, and not when it does', async () => {
    const volatile = await startPrivateRedis();
    const persistent = await startPrivateRedis({ persistent: true });
    closers.push(
      () => volatile.stop(),
      () => persistent.stop(),
    );
    const a = createRedis(volatile.url);
    const b = createRedis(persistent.url);
    closers.push(
      () => closeRedis(a),
      () => closeRedis(b),
    );
    expect(await persistenceProblem(a)).toMatch(/appendonly is off/);
    expect(await persistenceProblem(b)).toBeUndefined();
  });
});

describe('Redis URLs', () => {
  it('reads redis://, rediss://, redis+sentinel:// and redis+cluster:// URLs, and refuses what it cannot connect to with a clear message', () => {
    expect(redisTarget('redis://:s3cret@redis.example:6380/2')).toEqual({
      host: 'redis.example',
      port: 6380,
      password: 's3cret',
      db: 2,
    });
    expect(redisTarget('rediss://default:pw@cache.example')).toMatchObject({
      host: 'cache.example',
      port: 6379,
      username: 'default',
      tls: {},
    });
    expect(redisTarget('redis+sentinel://:pw@s1:26379,s2/mymaster/1')).toEqual({
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26379 },
      ],
      name: 'mymaster',
      password: 'pw',
      db: 1,
    });
    expect(() => redisTarget('redis+sentinel://s1:26379')).toThrow(/needs the master name/);
    expect(redisTarget('redis+cluster://u:pw@n1:7000,n2')).toEqual({
      clusterNodes: [
        { host: 'n1', port: 7000 },
        { host: 'n2', port: 6379 },
      ],
      username: 'u',
      password: 'pw',
    });
    expect(redisTarget('rediss+cluster://n1:6379')).toMatchObject({
      clusterNodes: [{ host: 'n1', port: 6379 }],
      tls: {},
    });
    expect(() => redisTarget('redis+cluster://n1:6379/2')).toThrow(
      /Redis Cluster has no databases to pick: drop "\/2"/,
    );
    expect(() => redisTarget('redis://n1:6379,n2:6379')).toThrow(/redis\+cluster:\/\/\.\.\. for Redis Cluster/);
    expect(() => redisTarget('http://:hunter2@x')).toThrow(/scheme "http:"/);
    expect(() => redisTarget('nonsense')).toThrow(/is not a Redis URL/);
  });

  it('connects through Sentinel to the master it names (a real redis-server and redis-sentinel)', async () => {
    const master = await startPrivateRedis();
    const sentinelPort = await freePort();
    const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-sentinel-'));
    const conf = path.join(dir, 'sentinel.conf');
    writeFileSync(
      conf,
      `port ${sentinelPort}\nbind 127.0.0.1\nsentinel monitor rollcallmaster 127.0.0.1 ${master.port} 1\n`,
    );
    const sentinel = spawn(findBinary('redis-server')!, [conf, '--sentinel'], {
      stdio: 'ignore',
      env: onTheMachineClock(process.env),
    });
    try {
      const redis = createRedis(`redis+sentinel://127.0.0.1:${sentinelPort}/rollcallmaster`);
      try {
        await expect.poll(async () => redis.status, { timeout: 10_000 }).toBe('ready');
        await redis.set('rollcall-sentinel-test', 'via sentinel', 'EX', 30);
        const direct = createRedis(master.url);
        expect(await direct.get('rollcall-sentinel-test')).toBe('via sentinel');
        await closeRedis(direct);
      } finally {
        await closeRedis(redis);
      }
    } finally {
      sentinel.kill('SIGKILL');
      await master.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
