import { afterEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { dispatch } from '../../src/commands/index.js';
import '../../src/commands/runbooks.js';
import type { CommandContext } from '../../src/commands/registry.js';
import { startEngine, type RunService } from '../../src/domain/runbooks/engine.js';
import { AuditLog } from '../../src/domain/audit/audit-log.js';
import { foreignRunReason, instanceUrls } from '../../src/domain/runbooks/deployment.js';
import { loadRunbooks, SHIPPED_RUNBOOKS_DIR } from '../../src/domain/runbooks/loader.js';
import type { SimServer } from '../../src/sim/server.js';
import { simOperations, startTestSim } from '../support/sim.js';
import { cleanPrefix, testPrefix } from './fake-argo.js';
import { FAST } from './harness.js';
import { servicesForSim } from './sim-support.js';
import { okAnswer } from '../support/replies.js';

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
  cleanup = [];
});

const syncPosts = async (sim: SimServer) =>
  (await simOperations(sim)).filter((o) => o.method === 'POST' && /\/sync$/.test(o.path));

describe('a worker and the deployment a run belongs to', () => {
  it('tells a run requested against other Argo CD URLs by name and URL', () => {
    const config = { instances: [{ name: 'prod', url: 'https://cd.example.com/' }] } as Parameters<
      typeof instanceUrls
    >[0];
    expect(instanceUrls(config)).toEqual({ prod: 'https://cd.example.com' });
    expect(foreignRunReason({ instanceUrls: { prod: 'https://cd.example.com' } }, config)).toBeUndefined();
    expect(foreignRunReason({}, config)).toBeUndefined();
    expect(foreignRunReason({ instanceUrls: { prod: 'http://127.0.0.1:4000/i/prod' } }, config)).toBe(
      'run requested by another deployment: prod is http://127.0.0.1:4000/i/prod for the run but https://cd.example.com here',
    );
    expect(foreignRunReason({ instanceUrls: { staging: 'https://stg.example.com' } }, config)).toMatch(
      /staging \(https:\/\/stg.example.com\) is not configured here/,
    );
  });

  it("refuses, audits and leaves alone a run of another deployment on the same prefix; the run's own worker then executes it", async () => {
    const redisUrl = process.env.REDIS_URL!;
    const prefix = testPrefix();
    cleanup.push(() => cleanPrefix(redisUrl, prefix));
    const runbooks = loadRunbooks(SHIPPED_RUNBOOKS_DIR);

    // Two deployments, same instance name, different Argo CD: the requester's and a stranger's.
    const ours = await startTestSim({ scenario: 'seed-outage', manual: false, speed: 50 });
    const theirs = await startTestSim({ scenario: 'seed-outage', manual: false, speed: 50 });
    cleanup.push(
      () => ours.stop(),
      () => theirs.stop(),
    );
    const requester = await servicesForSim(ours);
    const stranger = await servicesForSim(theirs);
    cleanup.push(
      () => requester.fleet.stop(),
      () => stranger.fleet.stop(),
    );

    // The requester has no worker of its own yet: the stranger's worker is the only one taking steps.
    const bot = await startEngine(requester.services, { role: 'bot', redisUrl, prefix, runbooks, ...FAST });
    cleanup.push(() => bot.stop());
    requester.services.runs = bot.runs;
    const strangerWorker = await startEngine(stranger.services, {
      role: 'worker',
      redisUrl,
      prefix,
      runbooks,
      ...FAST,
    });
    cleanup.push(() => strangerWorker.stop());

    const ctx: CommandContext = {
      services: requester.services,
      user: 'U_OP',
      surface: 'terminal',
      channel: 'terminal',
      assumeYes: true,
    };
    const reply = okAnswer(await dispatch('sync auth-config-* prune=true', ctx), 'sync');
    const runId = 'runId' in reply.data ? reply.data.runId : '';

    const redis = new Redis(redisUrl);
    cleanup.push(async () => void redis.disconnect());
    const audit = new AuditLog(redis, prefix);
    await expect
      .poll(async () => (await audit.latest(50)).find((e) => e.kind === 'run.refused' && e.runId === runId), {
        timeout: 10_000,
      })
      .toMatchObject({
        result: 'other_deployment',
        surface: 'engine',
        message: expect.stringContaining(`for the run but ${theirs.instances[0].url.replace(/\/$/, '')} here`),
      });
    expect(await syncPosts(theirs)).toEqual([]);
    expect(await syncPosts(ours)).toEqual([]);

    const ownWorker = await startEngine(requester.services, { role: 'worker', redisUrl, prefix, runbooks, ...FAST });
    cleanup.push(() => ownWorker.stop());
    const end = await (bot.runs as RunService).waitForEnd(runId, 30_000);
    expect(end.status, end.error).toBe('succeeded');
    expect((await syncPosts(ours)).map((o) => o.app).sort()).toHaveLength(12);
    expect(await syncPosts(theirs)).toEqual([]);
    // Reported once, however often the job came back to the stranger.
    expect((await audit.latest(200)).filter((e) => e.kind === 'run.refused' && e.runId === runId)).toHaveLength(1);
  });
});
