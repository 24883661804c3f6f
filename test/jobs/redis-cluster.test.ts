import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AlertRecord } from '../../src/domain/alerts/lifecycle.js';
import { AlertStore } from '../../src/domain/alerts/store.js';
import { dispatch } from '../../src/commands/index.js';
import '../../src/commands/runbooks.js';
import type { CommandContext, Services } from '../../src/commands/registry.js';
import { parseConfig } from '../../src/infra/config/load.js';
import { freePort } from '../../src/infra/redis-server.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { ChangeLog } from '../../src/domain/incidents/change-log.js';
import { ChangeRecorder } from '../../src/domain/incidents/recorder.js';
import { IncidentService } from '../../src/domain/incidents/service.js';
import { IncidentStore } from '../../src/domain/incidents/store.js';
import {
  closeRedis,
  configuredRedisUrl,
  createRedis,
  createRedisPinger,
  keyBase,
  persistenceProblem,
  probeRedis,
  scanKeys,
  type RedisClient,
} from '../../src/infra/redis.js';
import { QUEUES } from '../../src/infra/queues.js';
import { startSchedules } from '../../src/surfaces/workers/schedules.js';
import { startEngine, type EngineHandle } from '../../src/domain/runbooks/engine.js';
import { loadRunbooks, SHIPPED_RUNBOOKS_DIR } from '../../src/domain/runbooks/loader.js';
import type { SimServer } from '../../src/sim/server.js';
import { simOperations, startTestSim } from '../support/sim.js';
import { simConfigYaml } from '../../src/sim/cli.js';
import { checkRequest, type GuardVerdict } from '../../src/surfaces/slack/request-guard.js';
import { pino } from 'pino';
import {
  redisClusterUnsupported,
  startPrivateRedisCluster,
  type PrivateRedisCluster,
} from '../support/redis-cluster.js';
import { makeApp, testConfig } from '../runbooks/fake-argo.js';
import { FAST, RecordingNotifier } from '../runbooks/harness.js';
import { servicesForSim } from '../runbooks/sim-support.js';
import { okAnswer } from '../support/replies.js';

const root = path.resolve(import.meta.dirname, '../..');
const bin = path.join(root, 'bin/rollcall.js');
const run = promisify(execFile);

const unsupported = await redisClusterUnsupported();
if (unsupported) console.warn(`[tests] Redis Cluster tests skipped: ${unsupported}`);

// Checked before anything connects: no Cluster needs to run for these.
describe('Redis Cluster configuration', () => {
  const clusterUrl = 'redis+cluster://127.0.0.1:7000,127.0.0.1:7001';
  const cleanup: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => {});
  });

  it('config check and start refuse a prefix without a hash tag on a Cluster, saying why and the fix; other Redis take any prefix', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-cluster-config-'));
    cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
    const config = (url: string, p: string) =>
      `instances:\n  - name: prod\n    url: https://argocd.example\n    token: t\nredis:\n  url: ${url}\n  prefix: "${p}"\n`;
    const untagged = path.join(dir, 'untagged.yaml');
    writeFileSync(untagged, config(clusterUrl, 'rollcall'));
    const refused: { code?: number; stderr: string } = await run(process.execPath, [
      bin,
      'config',
      'check',
      '--config',
      untagged,
    ]).catch((e: { code: number; stderr: string }) => e);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      'redis.prefix: redis.prefix "rollcall" has no hash tag, and Redis Cluster needs one',
    );
    expect(refused.stderr).toContain('prefix: "{rollcall}"');
    expect(refused.stderr).toMatch(/\(line 7\)/);

    // `{}` is no hash tag (Redis hashes the whole key then), nor is an unclosed brace.
    expect(() => parseConfig(config(clusterUrl, 'rollcall{}'))).toThrow(/has no hash tag/);
    expect(() => parseConfig(config(clusterUrl, '{rollcall'))).toThrow(/has no hash tag/);
    expect(parseConfig(config(clusterUrl, 'team-a:{rollcall}')).redis.prefix).toBe('team-a:{rollcall}');
    expect(parseConfig(config('redis://127.0.0.1:6379', 'rollcall')).redis.prefix).toBe('rollcall');
    expect(parseConfig(config('redis+sentinel://127.0.0.1:26379/mymaster', 'rollcall')).redis.prefix).toBe('rollcall');

    // REDIS_URL is read after the file was checked: the same rule applies to it, and to the engine itself.
    const fileConfig = parseConfig(config('redis://127.0.0.1:6379', 'rollcall'));
    expect(() => configuredRedisUrl(fileConfig, { REDIS_URL: clusterUrl })).toThrow(/no hash tag/);
    expect(configuredRedisUrl(fileConfig, {})).toBe('redis://127.0.0.1:6379');
    const sim = await startTestSim({ scenario: 'seed-outage', manual: false, speed: 50 });
    cleanup.push(() => sim.stop());
    const { services, fleet } = await servicesForSim(sim);
    cleanup.push(() => fleet.stop());
    await expect(
      startEngine(services, { role: 'all', redisUrl: clusterUrl, prefix: 'rollcall', ...FAST }),
    ).rejects.toThrow(/prefix: "\{rollcall\}"/);

    const ok = path.join(dir, 'tagged.yaml');
    writeFileSync(ok, config(clusterUrl, '{rollcall}'));
    const accepted = await run(process.execPath, [bin, 'config', 'check', '--config', ok]);
    expect(accepted.stdout).toContain('prefix={rollcall}');
  }, 30_000);
});

describe.skipIf(!!unsupported)('rollcall on a Redis Cluster (a private 3-master cluster of real redis-servers)', () => {
  let cluster: PrivateRedisCluster;
  let redis: RedisClient;
  const prefix = `{rollcall-cluster-${Math.random().toString(36).slice(2, 8)}}`;
  const cleanup: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    cluster = await startPrivateRedisCluster();
    redis = createRedis(cluster.url);
  }, 30_000);

  afterAll(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => {});
    if (redis) await closeRedis(redis);
    await cluster?.stop();
  });

  it('runs a bulk-sync exactly once end to end through the queue and a worker, with its audit trail read back', async () => {
    const sim: SimServer = await startTestSim({ scenario: 'seed-outage', manual: false, speed: 50 });
    cleanup.push(() => sim.stop());
    const notifier = new RecordingNotifier();
    const { services, fleet } = await servicesForSim(sim, { notifier });
    cleanup.push(() => fleet.stop());
    const engine: EngineHandle = await startEngine(services, {
      role: 'all',
      redisUrl: cluster.url,
      prefix,
      runbooks: loadRunbooks(SHIPPED_RUNBOOKS_DIR),
      ...FAST,
    });
    cleanup.push(() => engine.stop());
    services.runs = engine.runs;
    services.audit = engine.runs.audit;
    const ctx: CommandContext = { services, user: 'U_OP', surface: 'terminal', channel: 'terminal', assumeYes: true };

    expect(await engine.runs.workersOnline()).toBe(1);
    const reply = await dispatch('sync auth-config-* prune=true', ctx);
    expect(reply.ok, JSON.stringify(reply.error)).toBe(true);
    const runId = (reply.data as { runId: string }).runId;
    const end = await engine.runs.waitForEnd(runId, 20_000);
    expect(end.status, end.error).toBe('succeeded');

    const posts = (await simOperations(sim)).filter((o) => o.method === 'POST' && /\/sync$/.test(o.path));
    const apps = posts.map((p) => p.app).sort();
    expect(apps).toHaveLength(12);
    expect(new Set(apps).size).toBe(12);
    expect(apps.every((a) => a!.startsWith('auth-config-'))).toBe(true);

    // Read back through a second, independent Cluster connection.
    const { AuditLog } = await import('../../src/domain/audit/audit-log.js');
    const audit = await new AuditLog(redis, prefix).read({ runId, order: 'oldest' });
    const kinds = audit.map((e) => e.kind);
    expect(kinds[0]).toBe('run.start');
    expect(kinds).toContain('run.confirm');
    expect(kinds.filter((k) => k === 'argocd.sync')).toHaveLength(12);
    expect(audit.find((e) => e.kind === 'run.end')).toMatchObject({ runId, result: 'succeeded' });
    // The locks on the 12 apps were taken together (one script over 12 keys) and given back together.
    const locks: string[] = [];
    for await (const batch of scanKeys(redis, `${keyBase(prefix)}lock:*`)) locks.push(...batch);
    expect(locks).toEqual([]);
  }, 30_000);

  it('writes and reads alerts (compare-and-set script, transactions) and incidents (hashes, streams, scripts)', async () => {
    const alerts = new AlertStore(redis, prefix);
    const at = new Date().toISOString();
    const record = {
      id: 'al-c1',
      key: 'stuck-step/prod/auth',
      rule: 'stuck-step',
      severity: 'warning',
      instance: 'prod',
      apps: ['auth-config-prod-us-east-1'],
      summary: 'auth stuck',
      details: [],
      state: 'firing',
      firstSeenAt: at,
      firedAt: at,
      updatedAt: at,
      flaps: 0,
      version: 1,
      rendered: 0,
      notifiedApps: 1,
    } as unknown as AlertRecord;
    expect(await alerts.mutate(record.key, () => record)).toMatchObject({ id: 'al-c1', state: 'firing' });
    expect((await alerts.change('al-c1', { kind: 'ack', by: 'U_OP' })).ackedBy).toBe('U_OP');
    await alerts.archive({ ...record, id: 'al-c0', state: 'resolved', resolvedAt: at });
    expect((await alerts.all()).map((a) => a.id).sort()).toEqual(['al-c0', 'al-c1']);
    await alerts.removeArchived('al-c0');
    expect((await alerts.all()).map((a) => a.id)).toEqual(['al-c1']);
    expect((await new AlertStore(createRedisForCleanup(), prefix).get(record.key))!.ackedBy).toBe('U_OP');

    const sim = await startTestSim({ scenario: 'seed-outage', manual: false, speed: 50 });
    cleanup.push(() => sim.stop());
    const { services, fleet } = await servicesForSim(sim);
    cleanup.push(() => fleet.stop());
    services.changes = new ChangeLog(redis, prefix);
    services.incidents = new IncidentService(new IncidentStore(redis, prefix), services.changes, fleet);
    // What a worker's recorder backfills from Argo CD: a pipeline of record-once scripts (claim key + stream).
    const recorder = new ChangeRecorder(fleet, services.changes);
    await recorder.start();
    await recorder.stop();
    const ctx: CommandContext = { services, user: 'U_OP', surface: 'terminal', channel: 'terminal' };
    const changes = await dispatch('changes since=1d', ctx);
    expect(changes.ok, JSON.stringify(changes.error)).toBe(true);
    expect(JSON.stringify(changes.data)).toContain('auth-service');
    const declared = okAnswer(
      await dispatch('declare auth-service crash-looping sev=1 scope=auth-service-*', ctx),
      'incident start',
    );
    const id = declared.data.id;
    expect((await dispatch('incident note looking at auth-config', ctx)).ok).toBe(true);
    expect(okAnswer(await dispatch('incident sev 2', ctx), 'incident sev').data.incident).toMatchObject({
      id,
      severity: 2,
    });
    const store = new IncidentStore(createRedisForCleanup(), prefix);
    expect(await store.get(id)).toMatchObject({
      id,
      title: 'auth-service crash-looping',
      severity: 2,
      state: expect.any(String),
    });
    expect((await store.entries(id)).some((e) => JSON.stringify(e).includes('looking at auth-config'))).toBe(true);
    expect((await store.open()).map((i) => i.id)).toEqual([id]);
  }, 30_000);

  it('ticks config schedules through a BullMQ job scheduler and removes them', async () => {
    const notifier = new RecordingNotifier();
    const fleet = StaticFleet.fromObjects([
      { name: 'argo-test', applications: [makeApp('web-prod', 'prod', { sync: 'Synced' })] },
    ]);
    const services: Services = { config: testConfig(), fleet, argocd: new Map(), notifier };
    const schedules = await startSchedules({ services, redisUrl: cluster.url, prefix });
    cleanup.push(() => schedules.stop());
    await schedules.upsertSchedules([
      { id: 'fleet-status', cron: '* * * * * *', tz: 'UTC', command: 'status', channel: 'C_OPS' },
    ]);
    expect((await schedules.list()).map((s) => s.id)).toEqual(['fleet-status']);
    await expect.poll(() => notifier.posts.length, { timeout: 8000 }).toBeGreaterThanOrEqual(2);
    expect(
      notifier.posts.every((p) => p.target.channel === 'C_OPS' && p.reply.ok && p.reply.command === 'status'),
    ).toBe(true);
    await schedules.upsertSchedules([]);
    expect(await schedules.list()).toEqual([]);
  }, 20_000);

  it("refuses a replayed Slack request and a redelivered event: the guard's keys share the prefix's slot", async () => {
    const secret = 'cluster-signing-secret';
    const verdicts: GuardVerdict[] = [];
    const guard = http.createServer((req, res) => {
      void checkRequest(req, { signingSecret: secret, redis, prefix, logger: pino({ level: 'silent' }) }).then((v) => {
        verdicts.push(v);
        res.end();
      });
    });
    await new Promise<void>((resolve) => guard.listen(0, '127.0.0.1', resolve));
    cleanup.push(() => new Promise((r) => guard.close(r)));
    const url = `http://127.0.0.1:${(guard.address() as AddressInfo).port}/slack/events`;
    const send = (body: string, type: string, ts: number, headers: Record<string, string> = {}) =>
      fetch(url, {
        method: 'POST',
        body,
        headers: {
          'content-type': type,
          'x-slack-request-timestamp': String(ts),
          'x-slack-signature': `v0=${createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex')}`,
          ...headers,
        },
      });
    const now = Math.floor(Date.now() / 1000);
    const command = 'command=%2Fargo&text=status&user_id=U1';
    await send(command, 'application/x-www-form-urlencoded', now);
    await send(command, 'application/x-www-form-urlencoded', now);
    // Slack's retry of an event is signed anew; the event_id tells it apart.
    const event = JSON.stringify({
      type: 'event_callback',
      event_id: 'Ev0CLUSTER1',
      event: { type: 'app_mention', user: 'U1' },
    });
    await send(event, 'application/json', now);
    await send(event, 'application/json', now + 1, { 'x-slack-retry-num': '1' });
    expect(verdicts).toEqual([
      { pass: true, body: expect.objectContaining({ command: '/argo', text: 'status' }) },
      { pass: false, status: 401, reason: 'replay' },
      { pass: true, body: expect.objectContaining({ event_id: 'Ev0CLUSTER1' }) },
      { pass: false, status: 200, reason: 'duplicate_delivery' },
    ]);
  }, 20_000);

  it('`rollcall ask "sync ..." --yes --wait` runs a sync to the end from the terminal on the Cluster', async () => {
    const sim: SimServer = await startTestSim({ scenario: 'seed-outage', manual: false, speed: 50 });
    cleanup.push(() => sim.stop());
    const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-cluster-ask-'));
    cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
    const config = path.join(dir, 'rollcall.yaml');
    writeFileSync(config, simConfigYaml(sim, { redisUrl: cluster.url, redisPrefix: prefix, operator: 'terminal' }));
    const { stdout } = await run(
      process.execPath,
      [bin, 'ask', 'sync auth-config-*-eu-* prune=true', '--yes', '--wait', '--json', '--config', config],
      {
        // The simulator's config makes ROLLCALL_USER an operator; REDIS_URL (which wins over the file) names the Cluster.
        env: { ...process.env, LOG_LEVEL: 'error', ROLLCALL_USER: 'terminal', REDIS_URL: cluster.url },
        timeout: 60_000,
      },
    );
    const reply = JSON.parse(stdout) as { ok: boolean; data: { status: string; runId: string } };
    expect(reply).toMatchObject({ ok: true, data: { status: 'succeeded' } });
    const synced = (await simOperations(sim))
      .filter((o) => o.method === 'POST' && /\/sync$/.test(o.path))
      .map((o) => o.app);
    expect(synced.length).toBeGreaterThan(0);
    expect(synced.every((a) => /^auth-config-.*-eu-/.test(a!))).toBe(true);
    expect(new Set(synced).size).toBe(synced.length);
    // The run as the Cluster holds it, read by another client.
    const { RunStore } = await import('../../src/domain/runbooks/run-store.js');
    expect((await new RunStore(redis, prefix).get(reply.data.runId))?.status).toBe('succeeded');
  }, 90_000);

  function createRedisForCleanup(): RedisClient {
    const c = createRedis(cluster.url);
    cleanup.push(() => closeRedis(c));
    return c;
  }

  it('keeps every key it wrote under the prefix, all in the one slot of its hash tag; health checks ask every master', async () => {
    const keys: string[] = [];
    for await (const batch of scanKeys(redis, '*')) keys.push(...batch);
    // The cluster is private to this file: whatever is in it, rollcall (or BullMQ for it) wrote.
    expect(keys.length).toBeGreaterThan(10);
    expect(keys.filter((k) => !k.startsWith(prefix))).toEqual([]);
    const masters = (redis as import('ioredis').Cluster).nodes('master');
    expect(masters).toHaveLength(3);
    const slots = new Set(
      await Promise.all(keys.map(async (k) => Number(await masters[0].call('CLUSTER', 'KEYSLOT', k)))),
    );
    expect(slots.size).toBe(1);
    expect(keys.some((k) => k.startsWith(`${prefix}:${QUEUES.steps}:`))).toBe(true);
    expect(keys.some((k) => k.startsWith(`${prefix}:${QUEUES.schedules}:`))).toBe(true);
    expect(keys).toContain(`${prefix}:audit`);

    expect(await persistenceProblem(redis)).toMatch(
      /appendonly is off on 127\.0\.0\.1:\d+, 127\.0\.0\.1:\d+, 127\.0\.0\.1:\d+/,
    );
    const pinger = createRedisPinger(cluster.url);
    cleanup.push(() => pinger.close());
    await expect.poll(() => pinger.check(), { timeout: 5000 }).toBeUndefined();
    // `ask`'s quick probe: answers on the Cluster, and says why not when no seed node answers.
    expect(await probeRedis(cluster.url)).toBeUndefined();
    expect(await probeRedis(`redis+cluster://127.0.0.1:${await freePort()}`, 1000)).toMatch(
      /ECONNREFUSED|startup nodes/,
    );
  }, 20_000);
});

describe.skipIf(!!unsupported)(
  'rollcall on a Redis Cluster whose master fails over (3 masters, 1 replica each)',
  () => {
    let cluster: PrivateRedisCluster;
    const cleanup: (() => Promise<unknown>)[] = [];
    afterAll(async () => {
      for (const c of cleanup.reverse()) await c().catch(() => {});
      await cluster?.stop();
    });

    /** The master holding `prefix`'s slot, and its replica, as the cluster says. */
    async function ownerOf(redis: RedisClient, prefix: string): Promise<number> {
      return (await shardOf(redis, prefix)).master;
    }
    /**
     * Waits until the replica of the master holding `prefix` has every write made so far (replication is one ordered
     * stream: a write of ours acknowledged by WAIT carries all before it). A master killed after this loses only what
     * was written since, as a master dying mid-run does; on a loaded machine a replica can otherwise be seconds behind,
     * and a failover would lose the run it was asked to survive.
     */
    async function caughtUp(redis: RedisClient, prefix: string): Promise<void> {
      const { master } = await shardOf(redis, prefix);
      const node = (redis as import('ioredis').Cluster).nodes('master').find((n) => n.options.port === master)!;
      await node.set(`${prefix}:caught-up`, String(Date.now()));
      expect(Number(await node.call('WAIT', '1', '10000'))).toBe(1);
    }
    async function shardOf(redis: RedisClient, prefix: string): Promise<{ master: number; replica?: number }> {
      const first = (redis as import('ioredis').Cluster).nodes('master')[0];
      const slot = Number(await first.call('CLUSTER', 'KEYSLOT', prefix));
      const slots = (await first.call('CLUSTER', 'SLOTS')) as [number, number, [string, number], [string, number]?][];
      const [, , master, replica] = slots.find(([from, to]) => slot >= from && slot <= to)!;
      return { master: master[1], replica: replica?.[1] };
    }

    /**
     * A 540-app bulk sync on a private 3-master, 1-replica Cluster, with the engine's log kept; `midRun` runs once
     * the first 60 syncs are out. Resolves with the run's end, every sync the simulator received, and the log.
     */
    async function bulkSyncThrough(
      prefix: string,
      midRun: (cluster: PrivateRedisCluster, probe: RedisClient) => Promise<void>,
    ) {
      const own = await startPrivateRedisCluster(3, 1);
      cleanup.push(() => own.stop());
      const probe = createRedis(own.url);
      cleanup.push(() => closeRedis(probe));
      const sim: SimServer = await startTestSim({ scenario: 'seed-outage', manual: false, speed: 15 });
      cleanup.push(() => sim.stop());
      const { services, fleet } = await servicesForSim(sim, { notifier: new RecordingNotifier() });
      cleanup.push(() => fleet.stop());
      const said: string[] = [];
      const logger = {
        info: (_: unknown, m?: string) => said.push(`info ${m}`),
        warn: (_: unknown, m?: string) => said.push(`warn ${m}`),
        error: (_: unknown, m?: string) => said.push(`error ${m}`),
      };
      const engine: EngineHandle = await startEngine(services, {
        role: 'all',
        redisUrl: own.url,
        prefix,
        runbooks: loadRunbooks(SHIPPED_RUNBOOKS_DIR),
        logger,
        ...FAST,
      });
      cleanup.push(() => engine.stop());
      services.runs = engine.runs;
      services.audit = engine.runs.audit;
      const ctx: CommandContext = { services, user: 'U_OP', surface: 'terminal', channel: 'terminal', assumeYes: true };
      const reply = await dispatch('sync * concurrency=20 includeSynced=true confirm=540 gate=none', ctx);
      expect(reply.ok, JSON.stringify(reply.error)).toBe(true);
      const runId = (reply.data as { runId: string }).runId;
      const syncs = async () =>
        (await simOperations(sim))
          .filter((o) => o.method === 'POST' && /\/sync$/.test(o.path))
          .map((o) => `${o.instance}/${o.app}`);
      await expect.poll(async () => (await syncs()).length, { timeout: 20_000, interval: 50 }).toBeGreaterThan(60);
      await midRun(own, probe);
      const end = await engine.runs.waitForEnd(runId, 60_000);
      return { end, sent: await syncs(), said };
    }

    it('finishes a bulk sync whose master is killed mid-run: the worker starts afresh, no app is synced twice', async () => {
      const prefix = '{rollcall-failover-run}';
      const { end, sent, said } = await bulkSyncThrough(prefix, async (cluster, probe) => {
        await caughtUp(probe, prefix);
        cluster.kill(await ownerOf(probe, prefix));
      });
      expect(end.status, end.error).toBe('succeeded');
      expect(sent).toHaveLength(540);
      expect(new Set(sent).size).toBe(540);
      expect(said).toContain('warn a Redis Cluster master left: starting the step worker afresh');
    }, 120_000);

    it('carries on through a replica that dies mid-run: the step worker is not started afresh, no app is synced twice', async () => {
      const prefix = '{rollcall-replica-loss}';
      const { end, sent, said } = await bulkSyncThrough(prefix, async (cluster, probe) =>
        cluster.kill((await shardOf(probe, prefix)).replica!),
      );
      expect(end.status, end.error).toBe('succeeded');
      expect(sent).toHaveLength(540);
      expect(new Set(sent).size).toBe(540);
      // The worker kept its fetch on the master: no lock was lost and no worker was started afresh.
      expect(said.filter((m) => /master left|lost the lock/.test(m))).toEqual([]);
    }, 120_000);

    it('waits through the failover: what is written while the master is down lands on its replica once promoted', async () => {
      cluster = await startPrivateRedisCluster(3, 1);
      const prefix = '{rollcall-failover}';
      const redis = createRedis(cluster.url);
      cleanup.push(() => closeRedis(redis));
      const { AuditLog } = await import('../../src/domain/audit/audit-log.js');
      const audit = new AuditLog(redis, prefix);
      await audit.record({ kind: 'run.start', who: 'U1', target: 'bulk-sync', result: 'before' });
      await caughtUp(redis, prefix);
      const owner = await ownerOf(redis, prefix);
      cluster.kill(owner);
      const started = Date.now();
      // ioredis's defaults give up after 16 redirections 100 ms apart, long before a replica takes over.
      await audit.record({ kind: 'run.end', who: 'U1', target: 'bulk-sync', result: 'during' });
      const waited = Date.now() - started;
      const entries = await audit.latest(5);
      expect(entries.map((e) => e.result)).toEqual(['during', 'before']);
      expect((redis as import('ioredis').Cluster).nodes('master').map((n) => n.options.port)).not.toContain(owner);
      expect(waited).toBeGreaterThan(500);
    }, 60_000);
  },
);
