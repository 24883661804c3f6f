import { Queue } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import type { Services } from '../../src/commands/registry.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { QUEUES } from '../../src/infra/queues.js';
import { bullPrefix, closeRedis, createRedis } from '../../src/infra/redis.js';
import { RecordingNotifier } from '../runbooks/harness.js';
import { cleanPrefix, makeApp, testConfig, testPrefix } from '../runbooks/fake-argo.js';
import { configSchema } from '../../src/infra/config/schema.js';
import { SCHEDULER } from '../../src/core/access.js';
import { backupSchedules, startSchedules, type Schedules } from '../../src/surfaces/workers/schedules.js';
import { sealedSecretsMigration } from '../../src/sim/kube/scenario.js';
import { simOperations } from '../support/sim.js';
import { eventually, startControlSim, type ControlSim } from '../runbooks/control-sim.js';

let env: ControlSim | undefined;
let schedules: Schedules | undefined;
afterEach(async () => {
  await schedules?.stop();
  schedules = undefined;
  await env?.close();
  env = undefined;
});

describe('generic schedules (config schedules)', () => {
  it("posts each tick's answer once however many workers run the schedules, on the schedule surface", async () => {
    const prefix = testPrefix();
    const redisUrl = process.env.REDIS_URL!;
    const notifier = new RecordingNotifier();
    const fleet = StaticFleet.fromObjects([
      { name: 'argo-test', applications: [makeApp('web-prod', 'prod', { sync: 'Synced' })] },
    ]);
    // Readers are restricted: only the scheduler's trust (or an `as` user on the list) gets an answer.
    const services: Services = { config: testConfig({ readers: ['U_READER'] }), fleet, argocd: new Map(), notifier };
    const workers = [
      await startSchedules({ services, redisUrl, prefix }),
      await startSchedules({ services, redisUrl, prefix }),
    ];
    const redis = createRedis(redisUrl);
    const queue = new Queue(QUEUES.schedules, { connection: redis, prefix: bullPrefix(prefix) });
    try {
      await workers[0].upsertSchedules([
        { id: 'fleet-status', cron: '* * * * * *', tz: 'UTC', command: 'status', channel: 'C_OPS' },
        { id: 'as-outsider', cron: '* * * * * *', tz: 'UTC', command: 'status', channel: 'C_OUT', as: 'U_OUTSIDER' },
      ]);
      await expect
        .poll(() => notifier.posts.filter((p) => p.target.channel === 'C_OPS').length, { timeout: 10_000 })
        .toBeGreaterThanOrEqual(3);
      await workers[1].upsertSchedules([]);
      expect(await workers[0].list()).toEqual([]);
      // Let a tick already taken finish before counting.
      await new Promise((r) => setTimeout(r, 500));
      const completed = await queue.getJobs(['completed'], 0, 1000);
      const ticks = completed.filter((j) => j.data.id === 'fleet-status');
      const posts = notifier.posts.filter((p) => p.target.channel === 'C_OPS');
      // One job per tick (its id names the tick) and one post per job: two workers never both answer a tick.
      expect(new Set(ticks.map((j) => j.id)).size).toBe(ticks.length);
      expect(posts).toHaveLength(ticks.length);
      expect(posts.every((p) => p.reply.ok && p.reply.command === 'status')).toBe(true);
      // `as` is checked like anyone else: U_OUTSIDER is not a reader, and the refusal is what gets posted.
      const refused = notifier.posts.filter((p) => p.target.channel === 'C_OUT');
      expect(refused.length).toBeGreaterThan(0);
      expect(refused.every((p) => p.reply.error?.code === 'forbidden')).toBe(true);
    } finally {
      for (const w of workers) await w.stop();
      await queue.close();
      await closeRedis(redis);
      await cleanPrefix(redisUrl, prefix);
    }
  }, 30_000);
});

describe('scheduled sealed-secrets key backups (sealedSecrets.schedules)', () => {
  it('backs a cluster up on its cron through an ordinary audited run, and drops a schedule the config no longer lists', async () => {
    env = await startControlSim({ fixture: sealedSecretsMigration() });
    const e = env;
    const config = {
      ...e.services.config,
      sealedSecrets: {
        ...e.services.config.sealedSecrets,
        schedules: [{ cluster: 'prod-old', cron: '* * * * * *', tz: 'UTC' }],
      },
    };
    schedules = await startSchedules({ services: e.services, redisUrl: process.env.REDIS_URL!, prefix: e.prefix });
    await schedules.upsertSchedules(backupSchedules(config));
    expect((await schedules.list()).map((s) => [s.id, s.pattern])).toEqual([
      ['backup-sealed-secrets-keys:prod-old', '* * * * * *'],
    ]);

    await eventually(
      async () =>
        (await e.runs.list(20)).some((r) => r.runbook === 'backup-sealed-secrets-keys' && r.status === 'succeeded'),
      15_000,
      'a scheduled backup run',
    );
    const run = (await e.runs.list(20)).find(
      (r) => r.runbook === 'backup-sealed-secrets-keys' && r.status === 'succeeded',
    )!;
    expect(run).toMatchObject({ requester: SCHEDULER, surface: 'schedule', params: { cluster: 'prod-old' } });
    const copies = (await simOperations(e.sim)).filter(
      (o) => o.instance === 'kube' && o.cluster === 'ops' && o.method === 'POST',
    );
    // Three keys on prod-old, each copied once however many ticks ran.
    expect(copies).toHaveLength(3);
    expect(
      (await e.runs.audit.latest(50)).some(
        (a) => a.kind === 'run.start' && a.who === SCHEDULER && a.surface === 'schedule',
      ),
    ).toBe(true);
    await schedules.stop();

    schedules = await startSchedules({ services: e.services, redisUrl: process.env.REDIS_URL!, prefix: e.prefix });
    await schedules.upsertSchedules(backupSchedules(e.services.config));
    expect(await schedules.list()).toEqual([]);
  }, 30_000);

  it('rejects a bad cron pattern or time zone when the config loads', () => {
    const base = { instances: [{ name: 'a', url: 'https://cd.example.com', token: 't' }] };
    const bad = configSchema.safeParse({
      ...base,
      sealedSecrets: { schedules: [{ cluster: 'x', cron: '61 3 * * *' }] },
    });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues[0]).toMatchObject({
      path: ['sealedSecrets', 'schedules', 0, 'cron'],
      message: expect.stringContaining('expected a cron pattern such as "0 3 * * *"'),
    });
    const tz = configSchema.safeParse({
      ...base,
      sealedSecrets: { schedules: [{ cluster: 'x', cron: '0 3 * * *', tz: 'Mars/Olympus' }] },
    });
    expect(tz.error!.issues[0]).toMatchObject({
      path: ['sealedSecrets', 'schedules', 0, 'tz'],
      message: expect.stringContaining('unknown time zone "Mars/Olympus"'),
    });
    expect(
      configSchema.safeParse({
        ...base,
        sealedSecrets: { schedules: [{ cluster: 'x', cron: '0 3 * * 1-5', tz: 'Europe/Berlin' }] },
      }).success,
    ).toBe(true);
  });
});
