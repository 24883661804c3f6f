import { afterEach, describe, expect, it } from 'vitest';
import { dispatch } from '../../src/commands/index.js';
import type { CommandContext } from '../../src/commands/registry.js';
import { startEngine, type RunService } from '../../src/domain/runbooks/engine.js';
import { loadRunbooks, SHIPPED_RUNBOOKS_DIR } from '../../src/domain/runbooks/loader.js';
import type { Fixture } from '../../src/sim/fixture-types.js';
import { loadScenario } from '../../src/sim/scenarios/index.js';
import type { SimServer } from '../../src/sim/server.js';
import { simFault, simOperations, startTestSim } from '../support/sim.js';
import { cleanPrefix, testPrefix } from './fake-argo.js';
import { FAST } from './harness.js';
import { servicesForSim } from './sim-support.js';

// `action APP KIND/NAME ACTION` on the simulator: one resource action through the resource-action runbook, with
// Argo CD's own Lua (apps/Deployment restart, batch/CronJob create-job) run on objects of a simulated cluster.

const APP = 'storefront-prod-us-east-1';
const CLUSTER = 'prod-us-east-1';
const NS = 'storefront';

let cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
  cleanup = [];
});

/** canary-rollouts with a Deployment and a CronJob beside the Rollout of APP, live on its cluster. */
function fixture(): Fixture {
  const { fixture: f } = loadScenario('canary-rollouts');
  const app = f.instances[0].applications.find((a) => a.metadata.name === APP)!;
  app.status!.resources!.push(
    {
      group: 'apps',
      version: 'v1',
      kind: 'Deployment',
      namespace: NS,
      name: 'storefront-worker',
      status: 'Synced',
      health: { status: 'Healthy' },
    },
    {
      group: 'batch',
      version: 'v1',
      kind: 'CronJob',
      namespace: NS,
      name: 'storefront-report',
      status: 'Synced',
      health: { status: 'Healthy' },
    },
  );
  const container = { name: 'worker', image: 'registry.example.com/storefront:1.4.2' };
  f.kube!.find((k) => k.cluster === CLUSTER)!.objects.push(
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'storefront-worker', namespace: NS },
      spec: { replicas: 2, template: { metadata: { labels: { app: 'worker' } }, spec: { containers: [container] } } },
    },
    {
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: { name: 'storefront-report', namespace: NS, uid: 'cj-1' },
      spec: {
        schedule: '0 3 * * *',
        jobTemplate: { spec: { template: { spec: { containers: [container], restartPolicy: 'OnFailure' } } } },
      },
    },
  );
  return f;
}

async function setup(opts: { fixture?: Fixture; token?: string } = {}) {
  const sim: SimServer = await startTestSim({ fixture: opts.fixture ?? fixture() });
  cleanup.push(() => sim.stop());
  if (opts.token) sim.instances[0].token = opts.token;
  const { services, fleet, clients } = await servicesForSim(sim);
  cleanup.push(() => fleet.stop());
  const prefix = testPrefix();
  const redisUrl = process.env.REDIS_URL!;
  cleanup.push(() => cleanPrefix(redisUrl, prefix));
  const engine = await startEngine(services, {
    role: 'all',
    redisUrl,
    prefix,
    runbooks: loadRunbooks(SHIPPED_RUNBOOKS_DIR),
    ...FAST,
  });
  cleanup.push(() => engine.stop());
  services.runs = engine.runs;
  services.audit = engine.runs.audit;
  const ctx = (user: string): CommandContext => ({
    services,
    user,
    surface: 'terminal',
    channel: 'terminal',
    assumeYes: true,
  });
  const live = async (kind: string, name: string, group: string) =>
    JSON.parse(
      (
        (await (
          await fetch(
            `${sim.instances[0].url}/api/v1/applications/${APP}/resource?${new URLSearchParams({ namespace: NS, resourceName: name, version: 'v1', kind, group })}`,
            { headers: { Authorization: `Bearer ${sim.instances[0].token}` } },
          )
        ).json()) as { manifest: string }
      ).manifest,
    ) as Record<string, any>;
  return {
    sim,
    services,
    engine,
    prefix,
    redisUrl,
    runs: engine.runs as RunService,
    ctx,
    live,
    api: clients.get('prod')!,
  };
}

const actionPosts = async (sim: SimServer) =>
  (await simOperations(sim)).filter((o) => o.path.includes('/resource/actions'));

async function runToEnd(runs: RunService, reply: Awaited<ReturnType<typeof dispatch>>) {
  expect(reply.ok, JSON.stringify(reply.error)).toBe(true);
  return runs.waitForEnd((reply.data as { runId: string }).runId, 20_000);
}

describe('action APP KIND/NAME ACTION on the simulator', () => {
  it("restarts a Deployment: one POST …/resource/actions/v2, Argo CD's restart annotation on the live object, audited", async () => {
    const { sim, runs, ctx, live, services } = await setup();
    const reply = await dispatch(`action ${APP} Deployment/storefront-worker restart`, ctx('U_OP'));
    const end = await runToEnd(runs, reply);
    expect(end.status, end.error).toBe('succeeded');
    const ops = await simOperations(sim);
    expect(ops.map((o) => `${o.method} ${o.path}`)).toEqual([`POST /api/v1/applications/${APP}/resource/actions/v2`]);
    expect(ops[0].body).toEqual({
      name: APP,
      namespace: NS,
      resourceName: 'storefront-worker',
      version: 'v1',
      group: 'apps',
      kind: 'Deployment',
      action: 'restart',
      appNamespace: 'argocd',
      project: 'commerce',
    });
    const restartedAt = sim.controller.clock
      .now()
      .toISOString()
      .replace(/\.\d{3}Z$/, 'Z');
    expect((await live('Deployment', 'storefront-worker', 'apps')).spec.template.metadata.annotations).toEqual({
      'kubectl.kubernetes.io/restartedAt': restartedAt,
    });
    const audit = (await services.audit!.read({ runId: end.id })).filter((e) => e.kind === 'argocd.mutation');
    expect(audit).toEqual([
      expect.objectContaining({
        who: 'U_OP',
        target: `prod/${APP}`,
        message: `run resource action restart on Deployment/storefront-worker of ${APP}`,
        result: 'ok',
      }),
    ]);
  }, 40_000);

  it('runs a CronJob now with create-job; a second one within the minute is refused with the API server’s AlreadyExists, sent once', async () => {
    const { sim, runs, ctx } = await setup();
    const first = await runToEnd(
      runs,
      await dispatch(`action ${APP} CronJob/storefront-report create-job`, ctx('U_OP')),
    );
    expect(first.status, first.error).toBe('succeeded');
    const minute = sim.controller.clock
      .now()
      .toISOString()
      .replace(/^\d\d(\d\d)-(\d\d)-(\d\d)T(\d\d):(\d\d).*$/, '$1$2$3$4$5');
    const second = await runToEnd(
      runs,
      await dispatch(`action ${APP} CronJob/storefront-report create-job`, ctx('U_OP')),
    );
    expect(second.status).toBe('failed');
    expect(second.error).toContain(`jobs.batch "storefront-report-${minute}" already exists`);
    expect(await actionPosts(sim)).toHaveLength(2);
    sim.controller.advance(60_000);
    const third = await runToEnd(
      runs,
      await dispatch(`action ${APP} CronJob/storefront-report create-job`, ctx('U_OP')),
    );
    expect(third.status, third.error).toBe('succeeded');
    expect(await actionPosts(sim)).toHaveLength(3);
  }, 60_000);

  it('refuses before any run an action Argo CD does not offer, one it offers disabled, and a typo’d resource, with suggestions', async () => {
    const { sim, ctx } = await setup();
    const typo = await dispatch(`action ${APP} Deployment/storefront-worker restrat`, ctx('U_OP'));
    expect(typo.error).toMatchObject({ code: 'action_not_offered' });
    expect(typo.error!.message).toContain('Argo CD offers no action `restrat`');
    expect(typo.error!.suggestions).toEqual([`action ${APP} Deployment/storefront-worker restart`]);
    // discovery.lua offers resume only on a paused Deployment.
    const disabled = await dispatch(`action ${APP} Deployment/storefront-worker resume`, ctx('U_OP'));
    expect(disabled.error).toMatchObject({ code: 'action_not_offered' });
    expect(disabled.error!.message).toContain('but disabled now');
    const resource = await dispatch(`action ${APP} Deployment/storefront-wroker restart`, ctx('U_OP'));
    expect(resource.error).toMatchObject({ code: 'unknown_target' });
    expect(resource.error!.suggestions).toContain(`action ${APP} Deployment/storefront-worker restart`);
    const params = await dispatch(`action ${APP} Deployment/storefront-worker scale`, ctx('U_OP'));
    expect(params.error).toMatchObject({ code: 'invalid_params', message: expect.stringContaining('replicas=') });
    expect(await actionPosts(sim)).toEqual([]);
  }, 40_000);

  it('refuses a user who is not an operator, audits the refusal, and sends nothing', async () => {
    const { sim, ctx, services } = await setup();
    const reply = await dispatch(`action ${APP} Deployment/storefront-worker restart`, ctx('U_INTRUDER'));
    expect(reply.error!.code).toBe('forbidden');
    expect(await actionPosts(sim)).toEqual([]);
    const refused = (await services.audit!.latest(5)).find((e) => e.kind === 'run.refused');
    expect(refused).toMatchObject({ who: 'U_INTRUDER', target: 'action', result: 'forbidden' });
  }, 40_000);

  it('a 403 from Argo CD names the RBAC line rollcall’s account lacks', async () => {
    const f = fixture();
    f.instances[0].accounts = [
      {
        name: 'limited',
        token: 'limited-token',
        allow: ['applications, get, */*', 'applicationsets, get, */*', 'clusters, get, *', 'projects, get, *'],
      },
    ];
    const { runs, ctx, services } = await setup({ fixture: f, token: 'limited-token' });
    const end = await runToEnd(runs, await dispatch(`action ${APP} Deployment/storefront-worker restart`, ctx('U_OP')));
    expect(end.status).toBe('failed');
    expect(end.error).toContain(
      `p, role:rollcall, applications, action/apps/Deployment/restart, commerce/${APP}, allow`,
    );
    const audit = (await services.audit!.read({ runId: end.id })).filter((e) => e.kind === 'argocd.mutation');
    expect(audit).toEqual([expect.objectContaining({ result: 'refused: forbidden' })]);
  }, 40_000);

  it('an answer lost in transit is found in the app events, never re-sent', async () => {
    const { sim, runs, ctx, live } = await setup();
    await simFault(sim, {
      instance: 'prod',
      kind: 'answerLost',
      method: 'POST',
      match: '/resource/actions/v2',
      count: 5,
    });
    const end = await runToEnd(runs, await dispatch(`action ${APP} Deployment/storefront-worker restart`, ctx('U_OP')));
    expect(end.status, end.error).toBe('succeeded');
    expect(await actionPosts(sim)).toHaveLength(1);
    expect((await live('Deployment', 'storefront-worker', 'apps')).spec.template.metadata.annotations).toHaveProperty(
      'kubectl.kubernetes.io/restartedAt',
    );
  }, 40_000);

  it('a worker that dies while its POST is in flight: the next attempt finds the action in the app events and never sends it again', async () => {
    const { sim, engine, services, prefix, redisUrl, ctx, live } = await setup();
    // The POST reaches Argo CD 1.5 s after it leaves: the worker is gone by then.
    await simFault(sim, {
      instance: 'prod',
      kind: 'latency',
      ms: 1500,
      method: 'POST',
      match: '/resource/actions/v2',
      count: 1,
    });
    const reply = await dispatch(`action ${APP} Deployment/storefront-worker restart`, ctx('U_OP'));
    expect(reply.ok, JSON.stringify(reply.error)).toBe(true);
    const runId = (reply.data as { runId: string }).runId;
    await new Promise((r) => setTimeout(r, 600));
    await engine.crash();
    const second = await startEngine(services, {
      role: 'all',
      redisUrl,
      prefix,
      runbooks: loadRunbooks(SHIPPED_RUNBOOKS_DIR),
      ...FAST,
    });
    cleanup.push(() => second.stop());
    const end = await second.runs.waitForEnd(runId, 30_000);
    expect(end.status, end.error).toBe('succeeded');
    expect(end.steps[0].attempts).toBeGreaterThan(1);
    expect(await actionPosts(sim)).toHaveLength(1);
    expect((await live('Deployment', 'storefront-worker', 'apps')).spec.template.metadata.annotations).toHaveProperty(
      'kubectl.kubernetes.io/restartedAt',
    );
  }, 60_000);
});
