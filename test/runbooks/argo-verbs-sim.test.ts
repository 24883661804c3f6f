import { afterEach, describe, expect, it } from 'vitest';
import type { Application, RevisionHistory } from '../../src/infra/argocd/types.js';
import { dispatch } from '../../src/commands/index.js';
import type { CommandContext } from '../../src/commands/registry.js';
import { startEngine, type RunService } from '../../src/domain/runbooks/engine.js';
import { runButtons } from '../../src/domain/runbooks/replies.js';
import { loadRunbooks, SHIPPED_RUNBOOKS_DIR } from '../../src/domain/runbooks/loader.js';
import type { Fixture } from '../../src/sim/fixture-types.js';
import { loadFixture } from '../../src/sim/fixture.js';
import type { SimServer } from '../../src/sim/server.js';
import { fixturePath, simFault, simOperations, startTestSim } from '../support/sim.js';
import { cleanPrefix, testPrefix } from './fake-argo.js';
import { FAST, RecordingNotifier } from './harness.js';
import type { Notifier } from '../../src/core/notifier.js';
import { renderText } from '../../src/views/text.js';
import { servicesForSim } from './sim-support.js';

const INSTANCE = 'prod';
const APP = 'payments-prod-eu1';
const AUTO_APP = 'auth-service-prod-eu1';
const REV = {
  r5: '1111111111111111111111111111111111111111',
  r6: '2222222222222222222222222222222222222222',
  r7: '4b825dc642cb6eb9a060e54bf8d69288fbee4904',
};

let cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
  cleanup = [];
});

function entry(id: number, revision: string, daysAgo: number, path = 'apps/payments'): RevisionHistory {
  const at = new Date(Date.now() - daysAgo * 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z');
  return {
    id,
    revision,
    deployedAt: at,
    deployStartedAt: at,
    source: { repoURL: 'https://github.com/acme/deploy.git', path, targetRevision: 'main' },
    initiatedBy: { username: 'alice' },
  };
}

/** The multi-instance fixture with three deployments in payments-prod-eu1's history and two in auth-service-prod-eu1's (auto-sync on). */
function fixture(): Fixture {
  const f = loadFixture(fixturePath('sim-multi-instance.json'));
  const apps = f.instances.find((i) => i.name === INSTANCE)!.applications;
  const app = apps.find((a) => a.metadata.name === APP)!;
  app.status!.history = [entry(5, REV.r5, 9), entry(6, REV.r6, 5, 'apps/payments-v2'), entry(7, REV.r7, 2)];
  const auto = apps.find((a) => a.metadata.name === AUTO_APP)!;
  auto.status!.history = [
    entry(1, REV.r5, 4, 'apps/auth'),
    ...(auto.status!.history ?? []).map((h) => ({ ...h, id: 2 })),
  ];
  // A sync of this one runs for ten simulated minutes: long enough to be terminated.
  const slow = apps.find((a) => a.metadata.name === 'web-prod-us1')!;
  slow.metadata.annotations = { ...slow.metadata.annotations, 'sim.rollcall.io/sync-duration': '10m' };
  return f;
}

async function setup(opts: { rateLimit?: { max: number; per: number }; notifier?: Notifier; fixture?: Fixture } = {}) {
  const sim: SimServer = await startTestSim({ fixture: opts.fixture ?? fixture(), manual: false, speed: 20 });
  cleanup.push(() => sim.stop());
  const { services, fleet, clients } = await servicesForSim(sim, { notifier: opts.notifier });
  cleanup.push(() => fleet.stop());
  if (opts.rateLimit) for (const i of services.config.instances) i.rateLimit = opts.rateLimit;
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
  const ctx = (user: string, assumeYes = true): CommandContext => ({
    services,
    user,
    surface: 'terminal',
    channel: 'terminal',
    assumeYes,
  });
  const simApp = (name: string): Application => sim.state.instance(INSTANCE)!.apps.get(name)!;
  return {
    sim,
    services,
    engine,
    prefix,
    redisUrl,
    runs: engine.runs as RunService,
    ctx,
    simApp,
    api: clients.get(INSTANCE)!,
  };
}

const posts = async (sim: SimServer, path: RegExp) => (await simOperations(sim)).filter((o) => path.test(o.path));

describe('rollback on the simulator', () => {
  it('rolls payments-prod-eu1 back to history #6: one rollback POST, the app ends at #6 with a new history entry, the audit log names who asked', async () => {
    const { sim, runs, ctx, simApp, services } = await setup();
    const reply = await dispatch(`rollback ${APP} 6`, ctx('U_OP'));
    expect(reply.ok, JSON.stringify(reply.error)).toBe(true);
    const runId = (reply.data as { runId: string }).runId;
    // Nothing to pause in a rollback: `runs pause` refuses as the missing button does.
    await expect(runs.pause(runId, 'U_OP')).rejects.toMatchObject({
      code: 'invalid_state',
      message: expect.stringContaining('cannot be paused'),
    });
    const end = await runs.waitForEnd(runId, 20_000);
    expect(end.status, end.error).toBe('succeeded');

    const sent = await posts(sim, /\/rollback$/);
    expect(sent).toHaveLength(1);
    expect(sent[0].body).toEqual({
      name: APP,
      id: 6,
      prune: false,
      dryRun: false,
      appNamespace: 'argocd',
      project: 'payments',
    });
    const app = simApp(APP);
    const history = app.status!.history!;
    expect(history.map((h) => h.id)).toEqual([5, 6, 7, 8]);
    expect(history[3]).toMatchObject({
      revision: REV.r6,
      source: { path: 'apps/payments-v2' },
      initiatedBy: { username: 'admin' },
    });
    expect(app.status!.operationState).toMatchObject({ phase: 'Succeeded', operation: { sync: { revision: REV.r6 } } });
    // git's revision is another one: Argo CD shows the rolled-back app OutOfSync.
    expect(app.status!.sync!.status).toBe('OutOfSync');

    const preview = (await runs.get(runId))!.preview!;
    expect(preview.summary).toContain(`from \`${REV.r7.slice(0, 7)}\``);
    expect(preview.summary).toContain(`to \`${REV.r6.slice(0, 7)}\` (history #6, deployed 5d`);
    const audit = await services.audit!.read({ runId });
    const mutation = audit.find((e) => e.kind === 'argocd.mutation');
    expect(mutation).toMatchObject({
      who: 'U_OP',
      target: `${INSTANCE}/${APP}`,
      result: 'accepted',
      params: { id: 6, attribution: expect.stringContaining('no infos') },
    });
    // The run's message offers no Pause: the rollback is one request Argo CD carries out on its own.
    expect(runButtons({ ...end, status: 'running' }).map((b) => b.label)).toEqual(['Abort']);
  });

  it('a dry run says what it would do, everywhere: preview, live progress, summary and audit; the preview shows the images before and after', async () => {
    const f = fixture();
    const app = f.instances.find((i) => i.name === INSTANCE)!.applications.find((a) => a.metadata.name === APP)!;
    app.status!.history![1].source = {
      ...app.status!.history![1].source!,
      kustomize: { images: ['ghcr.io/acme/payments:1.40.3'] },
    };
    const notifier = new RecordingNotifier();
    const { runs, ctx, simApp, services, sim } = await setup({ notifier, fixture: f });
    const preview = await dispatch(`rollback ${APP} 6 dryRun=true`, ctx('U_OP', false));
    expect(preview.ok, JSON.stringify(preview.error)).toBe(true);
    const runId = (preview.data as { runId: string }).runId;
    const shown = renderText(preview);
    expect(shown).toContain(`Dry run: would roll back ${APP} on`);
    expect(shown).toMatch(/Would roll back to:\s+2222222 \(history #6/);
    expect(shown).toMatch(
      /Images \(now → #6\):\s+ghcr\.io\/acme\/payments:1\.42\.0 → ghcr\.io\/acme\/payments:1\.40\.3/,
    );
    expect(shown).not.toMatch(/will be OutOfSync|Rolls back to/);
    expect((preview.data as { preview: { images: unknown } }).preview.images).toEqual({
      now: ['ghcr.io/acme/payments:1.42.0'],
      then: ['ghcr.io/acme/payments:1.40.3'],
    });

    await runs.confirm(runId, 'U_OP', { channel: 'C_OPS' });
    const end = await runs.waitForEnd(runId, 20_000);
    expect(end.status, end.error).toBe('succeeded');
    const sent = await posts(sim, /\/rollback$/);
    expect(sent.map((o) => o.body)).toEqual([expect.objectContaining({ id: 6, dryRun: true })]);
    // Nothing was applied: the app still runs what it ran.
    expect(simApp(APP).status!.history!.map((h) => h.id)).toEqual([5, 6, 7]);

    const summary = JSON.stringify(end.steps.map((s) => s.output));
    expect(summary).toContain(`would roll back ${APP} to #6 (revision 2222222); dry run: nothing applied`);
    const everything = [
      summary,
      ...notifier.posts.map((p) => renderText(p.reply)),
      ...notifier.updates.map((u) => renderText(u.reply)),
    ].join('\n');
    // The live message followed it in the same words.
    expect(notifier.updates.map((u) => renderText(u.reply)).join('\n')).toContain(
      `dry run: would roll back ${APP} to #6 (revision 2222222)`,
    );
    expect(everything).not.toMatch(/rolled back|rolling back/i);
    const mutation = (await services.audit!.read({ runId })).find((e) => e.kind === 'argocd.mutation');
    expect(mutation).toMatchObject({
      result: 'accepted',
      message: `dry run of a rollback of ${APP} to #6 (revision 2222222) (nothing applied)`,
      params: { dryRun: true },
    });
  });

  it('without an id previews the previous deployment (history[len-2]), as the argocd CLI picks it', async () => {
    const { ctx, sim } = await setup();
    const reply = await dispatch(`rollback ${APP}`, ctx('U_OP', false));
    expect(reply.ok, JSON.stringify(reply.error)).toBe(true);
    const data = reply.data as { preview: { plan: { id: number; revision: string } } };
    expect(data.preview.plan).toMatchObject({ id: 6, revision: REV.r6 });
    expect(await posts(sim, /\/rollback$/)).toEqual([]);
  });

  it('sends the rollback POST once when its answer is lost: read back, found, followed to the end', async () => {
    const { sim, runs, ctx, simApp, services } = await setup();
    expect(
      (await simFault(sim, { instance: INSTANCE, kind: 'answerLost', method: 'POST', match: '/rollback', count: 5 }))
        .status,
    ).toBe(200);
    const reply = await dispatch(`rollback ${APP} 5`, ctx('U_OP'));
    expect(reply.ok, JSON.stringify(reply.error)).toBe(true);
    const end = await runs.waitForEnd((reply.data as { runId: string }).runId, 30_000);
    expect(end.status, end.error).toBe('succeeded');
    expect(await posts(sim, /\/rollback$/)).toHaveLength(1);
    // The answer really was lost: the POST failed in transit, and was read back instead of re-sent.
    const audit = await services.audit!.read({ runId: end.id });
    expect(audit.find((e) => e.kind === 'argocd.mutation')).toMatchObject({ result: 'error: network' });
    const history = simApp(APP).status!.history!;
    expect(history.filter((h) => h.id > 7)).toEqual([expect.objectContaining({ id: 8, revision: REV.r5 })]);
  });

  it('a worker that dies while its rollback POST is in flight: the next attempt reads the app back and never sends it again', async () => {
    const { sim, engine, services, prefix, redisUrl, ctx, simApp } = await setup();
    // The POST reaches Argo CD 1.5 s after it leaves: the worker is gone by then.
    await simFault(sim, {
      instance: INSTANCE,
      kind: 'latency',
      ms: 1500,
      method: 'POST',
      match: '/rollback',
      count: 1,
    });
    const reply = await dispatch(`rollback ${APP} 6`, ctx('U_OP'));
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
    expect(await posts(sim, /\/rollback$/)).toHaveLength(1);
    expect(simApp(APP).status!.history!.filter((h) => h.id > 7)).toEqual([
      expect.objectContaining({ revision: REV.r6 }),
    ]);
  });

  it("refuses while auto-sync is on, with Argo CD's reason and what to do; nothing is sent, the refusal is audited", async () => {
    const { sim, ctx, services } = await setup();
    const reply = await dispatch(`rollback ${AUTO_APP} 1`, ctx('U_OP'));
    expect(reply.ok).toBe(false);
    expect(reply.error!.code).toBe('auto_sync_enabled');
    expect(reply.error!.message).toContain('rollback cannot be initiated when auto-sync is enabled');
    expect(reply.error!.message).toContain(`pause ${AUTO_APP}`);
    expect(await posts(sim, /\/rollback$/)).toEqual([]);
    const refused = (await services.audit!.latest(20)).find((e) => e.kind === 'run.refused' && e.target === 'rollback');
    expect(refused).toMatchObject({ who: 'U_OP', message: expect.stringContaining('auto-sync') });
  });

  it('answers an unknown history id, a non-numeric id and a typo with clear errors, sending nothing', async () => {
    const { sim, ctx } = await setup();
    const unknownId = await dispatch(`rollback ${APP} 42`, ctx('U_OP'));
    expect(unknownId.error).toMatchObject({
      code: 'unknown_history_id',
      message: expect.stringContaining(`does not have deployment id '42' in history`),
    });
    expect(unknownId.error!.message).toContain('#7');
    expect((await dispatch(`rollback ${APP} latest`, ctx('U_OP'))).error).toMatchObject({
      code: 'usage',
      message: expect.stringContaining('history id is a number'),
    });
    const typo = await dispatch('rollback payments-prod-eu', ctx('U_OP'));
    expect(typo.error!.code).toBe('unknown_target');
    expect(typo.error!.suggestions).toContain(APP);
    expect(await posts(sim, /\/rollback$/)).toEqual([]);
  });

  it('refuses a user who is not an operator, audits the refusal, and sends nothing', async () => {
    const { sim, ctx, services } = await setup();
    const reply = await dispatch(`rollback ${APP} 6`, ctx('U_INTRUDER'));
    expect(reply.error!.code).toBe('forbidden');
    expect(await posts(sim, /\/rollback$/)).toEqual([]);
    const refused = (await services.audit!.latest(5)).find((e) => e.kind === 'run.refused');
    expect(refused).toMatchObject({ who: 'U_INTRUDER', target: 'rollback', result: 'forbidden' });
  });
});

describe('bulk-sync dry run on the simulator', () => {
  it('a bulk-sync dry run says what would sync, in the preview, the live message and the summary, never that it synced', async () => {
    const notifier = new RecordingNotifier();
    const { runs, ctx, sim } = await setup({ notifier });
    const preview = await dispatch(`sync ${APP} dryRun=true includeSynced=true`, ctx('U_OP', false));
    expect(preview.ok, JSON.stringify(preview.error)).toBe(true);
    expect(renderText(preview)).toContain('Dry run: would sync 1 app on 1 cluster in 1 wave; nothing is applied.');
    const runId = (preview.data as { runId: string }).runId;
    await runs.confirm(runId, 'U_OP', { channel: 'C_OPS' });
    const end = await runs.waitForEnd(runId, 20_000);
    expect(end.status, end.error).toBe('succeeded');
    expect((await posts(sim, /\/sync$/)).map((o) => o.body)).toEqual([expect.objectContaining({ dryRun: true })]);
    const summary = end.steps.flatMap((st) => (st.output?.summary as string[] | undefined) ?? []).join('\n');
    expect(summary).toContain('1 app(s) would sync on 1 cluster(s) (dry run: nothing applied)');
    const live = notifier.updates.map((u) => renderText(u.reply)).join('\n');
    expect(live).toContain('1/1 would sync (dry run: nothing applied)');
    expect(`${summary}\n${live}`).not.toMatch(/\bsynced\b(?! and Healthy)/);
  });
});

describe('the simulator answers rollback as Argo CD does', () => {
  it("refuses auto-sync, an unknown id and a pending operation with Argo CD's messages; an unknown app is 403", async () => {
    const { api } = await setup();
    await expect(api.rollback({ name: AUTO_APP }, { id: 1 })).rejects.toMatchObject({
      kind: 'auto_sync_enabled',
      argoMessage: 'rollback cannot be initiated when auto-sync is enabled',
    });
    await expect(api.rollback({ name: APP }, { id: 99 })).rejects.toMatchObject({
      kind: 'invalid',
      argoMessage: `application ${APP} does not have deployment with id 99`,
    });
    await expect(api.rollback({ name: 'no-such-app' }, { id: 1 })).rejects.toMatchObject({
      kind: 'forbidden',
      status: 403,
    });
    const started = await api.rollback({ name: APP }, { id: 5 });
    expect(started.operation).toMatchObject({
      sync: { revision: REV.r5, source: { path: 'apps/payments' }, syncStrategy: { apply: {} } },
      initiatedBy: { username: 'admin' },
    });
    await expect(api.rollback({ name: APP }, { id: 6 })).rejects.toMatchObject({ kind: 'operation_in_progress' });
  });
});

describe('terminate-op on the simulator', () => {
  it('previews the running sync (phase, since when, by whom), terminates it, and the operation ends Failed "Operation terminated"', async () => {
    const { sim, ctx, runs, simApp, api } = await setup();
    await api.sync({ name: 'web-prod-us1' });
    await new Promise((r) => setTimeout(r, 300));
    expect(simApp('web-prod-us1').status!.operationState!.phase).toBe('Running');
    const preview = await dispatch('terminate-op web-prod-us1', ctx('U_OP', false));
    expect(preview.ok, JSON.stringify(preview.error)).toBe(true);
    const running = (
      preview.data as { preview: { running: { app: string; phase: string; by: string; startedAt: string }[] } }
    ).preview.running;
    expect(running).toEqual([expect.objectContaining({ app: 'web-prod-us1', phase: 'Running', by: 'admin' })]);
    const runId = (preview.data as { runId: string }).runId;
    await runs.confirm(runId, 'U_OP');
    const end = await runs.waitForEnd(runId, 20_000);
    expect(end.status, end.error).toBe('succeeded');
    expect(simApp('web-prod-us1').status!.operationState).toMatchObject({
      phase: 'Failed',
      message: 'Operation terminated',
    });
    expect(await posts(sim, /\/operation$/)).toHaveLength(1);
    expect(String(end.steps[0].output?.summary)).toContain('terminated: Failed "Operation terminated"');
  });

  it('with nothing running says so and sends nothing', async () => {
    const { sim, ctx } = await setup();
    const reply = await dispatch(`terminate-op ${APP}`, ctx('U_OP'));
    expect(reply.error).toMatchObject({
      code: 'nothing_to_terminate',
      message: expect.stringContaining('No operation is in progress'),
    });
    // Bad input is answered before anything is previewed: a selector that does not parse, a typo'd name.
    expect((await dispatch('terminate-op -l "env in (prod"', ctx('U_OP'))).error?.code).toBe('invalid_selector');
    const typo = await dispatch('terminate-op web-prod-us', ctx('U_OP'));
    expect(typo.error).toMatchObject({ code: 'unknown_target', suggestions: expect.arrayContaining(['web-prod-us1']) });
    expect((await dispatch('refresh -l "env in (prod"', ctx('U_OP'))).error?.code).toBe('invalid_selector');
    expect(await posts(sim, /\/operation$/)).toEqual([]);
  });
});

describe('refresh on the simulator', () => {
  it('refreshes one app at once, normal and hard: reconciledAt moves and each refresh is audited', async () => {
    const { ctx, simApp, services } = await setup();
    const before = simApp(APP).status!.reconciledAt!;
    const reply = await dispatch(`refresh ${APP}`, ctx('U_OP'));
    expect(reply.ok, JSON.stringify(reply.error)).toBe(true);
    const after = simApp(APP).status!.reconciledAt!;
    expect(Date.parse(after)).toBeGreaterThan(Date.parse(before));
    expect((reply.data as { apps: { reconciledAt: string }[] }).apps[0].reconciledAt).toBe(after);
    const hard = await dispatch(`refresh ${APP} hard`, ctx('U_OP'));
    expect(hard.ok).toBe(true);
    const audited = (await services.audit!.latest(5)).filter((e) => e.kind === 'argocd.refresh');
    expect(audited.map((e) => e.params)).toEqual([{ refresh: 'hard' }, { refresh: 'normal' }]);
    expect(audited[0]).toMatchObject({ who: 'U_OP', target: `${INSTANCE}/${APP}`, result: 'ok' });
  });

  it('previews a selection with its count and refreshes it only with that count confirmed', async () => {
    const { ctx, simApp, services } = await setup();
    const before = simApp('payments-prod-us1').status!.reconciledAt!;
    const preview = await dispatch('refresh payments-prod-* hard', ctx('U_OP', false));
    expect(preview.ok).toBe(true);
    expect(preview.data).toMatchObject({ preview: true, count: 2, refresh: 'hard' });
    const button = preview.blocks.find((b) => b.kind === 'actions');
    expect(button).toMatchObject({ buttons: [{ command: 'refresh payments-prod-* hard confirm=2' }] });
    expect(simApp('payments-prod-us1').status!.reconciledAt).toBe(before);
    const wrong = await dispatch('refresh payments-prod-* hard confirm=3', ctx('U_OP', false));
    expect(wrong.data).toMatchObject({ preview: true, count: 2 });
    const done = await dispatch('refresh payments-prod-* hard confirm=2', ctx('U_OP', false));
    expect(done.ok, JSON.stringify(done.error)).toBe(true);
    expect(Date.parse(simApp('payments-prod-us1').status!.reconciledAt!)).toBeGreaterThan(Date.parse(before));
    expect((await services.audit!.latest(5)).filter((e) => e.kind === 'argocd.refresh')).toHaveLength(2);
  });

  it("paces a selection under the instance's rateLimit, shared with syncs", async () => {
    const { ctx, services } = await setup({ rateLimit: { max: 1, per: 700 } });
    const api = services.argocd.get(INSTANCE)!;
    const get = api.getApplication.bind(api);
    const refreshedAt: number[] = [];
    api.getApplication = (ref, o) => {
      if (o?.refresh) refreshedAt.push(Date.now());
      return get(ref, o);
    };
    const done = await dispatch('refresh payments-prod-* confirm=2', ctx('U_OP', false));
    expect(done.ok, JSON.stringify(done.error)).toBe(true);
    expect(refreshedAt).toHaveLength(2);
    // One call per 700 ms on this instance: the second refresh waited for its turn although 4 may run at once.
    expect(refreshedAt[1] - refreshedAt[0]).toBeGreaterThanOrEqual(600);
  });

  it('refuses a user who is not an operator and audits the refusal', async () => {
    const { ctx, services, simApp } = await setup();
    const before = simApp(APP).status!.reconciledAt;
    const reply = await dispatch(`refresh ${APP} hard`, ctx('U_INTRUDER'));
    expect(reply.error!.code).toBe('forbidden');
    expect(simApp(APP).status!.reconciledAt).toBe(before);
    expect((await services.audit!.latest(3)).find((e) => e.kind === 'run.refused')).toMatchObject({
      who: 'U_INTRUDER',
      target: 'refresh',
    });
  });
});
