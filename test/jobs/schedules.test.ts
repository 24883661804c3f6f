import { afterEach, describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.js';
import { SCHEDULER_USER, startSchedules, type Schedules } from '../../src/jobs/schedules.js';
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

describe('scheduled sealed-secrets key backups (sealedSecrets.schedules)', () => {
  it('backs a cluster up on its cron through an ordinary audited run, and drops a schedule the config no longer lists', async () => {
    env = await startControlSim({ fixture: sealedSecretsMigration() });
    const e = env;
    const config = { ...e.services.config, sealedSecrets: { ...e.services.config.sealedSecrets, schedules: [{ cluster: 'prod-old', cron: '* * * * * *', tz: 'UTC' }] } };
    schedules = await startSchedules({ config, runs: e.runs, redisUrl: process.env.REDIS_URL!, prefix: e.prefix });
    expect((await schedules.list()).map((s) => [s.id, s.pattern])).toEqual([['backup-sealed-secrets-keys:prod-old', '* * * * * *']]);

    await eventually(async () => (await e.runs.list(20)).some((r) => r.runbook === 'backup-sealed-secrets-keys' && r.status === 'succeeded'), 15_000, 'a scheduled backup run');
    const run = (await e.runs.list(20)).find((r) => r.runbook === 'backup-sealed-secrets-keys' && r.status === 'succeeded')!;
    expect(run).toMatchObject({ requester: SCHEDULER_USER, params: { cluster: 'prod-old' } });
    const copies = (await simOperations(e.sim)).filter((o) => o.instance === 'kube' && o.cluster === 'ops' && o.method === 'POST');
    // Three keys on prod-old, each copied once however many ticks ran.
    expect(copies).toHaveLength(3);
    expect((await e.runs.audit.latest(50)).some((a) => a.kind === 'run.start' && a.who === SCHEDULER_USER)).toBe(true);
    await schedules.stop();

    schedules = await startSchedules({ config: e.services.config, runs: e.runs, redisUrl: process.env.REDIS_URL!, prefix: e.prefix });
    expect(await schedules.list()).toEqual([]);
  }, 30_000);

  it('rejects a bad cron pattern or time zone when the config loads', () => {
    const base = { instances: [{ name: 'a', url: 'https://cd.example.com', token: 't' }] };
    const bad = configSchema.safeParse({ ...base, sealedSecrets: { schedules: [{ cluster: 'x', cron: '61 3 * * *' }] } });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues[0]).toMatchObject({ path: ['sealedSecrets', 'schedules', 0, 'cron'], message: expect.stringContaining('expected a cron pattern such as "0 3 * * *"') });
    const tz = configSchema.safeParse({ ...base, sealedSecrets: { schedules: [{ cluster: 'x', cron: '0 3 * * *', tz: 'Mars/Olympus' }] } });
    expect(tz.error!.issues[0]).toMatchObject({ path: ['sealedSecrets', 'schedules', 0, 'tz'], message: expect.stringContaining('unknown time zone "Mars/Olympus"') });
    expect(configSchema.safeParse({ ...base, sealedSecrets: { schedules: [{ cluster: 'x', cron: '0 3 * * 1-5', tz: 'Europe/Berlin' }] } }).success).toBe(true);
  });
});
