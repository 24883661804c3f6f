import { afterEach, describe, expect, it } from 'vitest';
import type { ArgoApi } from '../../src/infra/argocd/api.js';
import type { AppProject, ApplicationSet } from '../../src/infra/argocd/types.js';
import { dispatch } from '../../src/commands/index.js';
import type { Run } from '../../src/domain/runbooks/index.js';
import { evaluateAlertRules } from '../../src/domain/alerts/rules.js';
import { rolloutComplete } from '../../src/fleet/rollingsync.js';
import { renderText } from '../../src/views/text.js';
import { application, commit } from '../../src/sim/scenarios/builders.js';
import { progressiveInfraFixture, STUCK_APPS } from '../../src/sim/scenarios/progressive-infra.js';
import { okAnswer } from '../support/replies.js';
import { simFault, simOperations } from '../support/sim.js';
import { eventually, startControlSim, type ControlSim } from './control-sim.js';
import { RecordingNotifier } from './harness.js';
import { ChangeLog } from '../../src/domain/incidents/change-log.js';
import { IncidentService } from '../../src/domain/incidents/service.js';
import { IncidentStore } from '../../src/domain/incidents/store.js';

const INSTANCE = 'infra';
const PROJECT = 'infra';
const APPSET = 'progressive-infra';
/** A plain app with auto-sync in the same project: what a freeze must stop from syncing a new commit. */
const AUTO_APP = 'metrics-server-stage-1';

let env: ControlSim | undefined;
let ticker: NodeJS.Timeout | undefined;
afterEach(async () => {
  if (ticker) clearInterval(ticker);
  ticker = undefined;
  await env?.close();
  env = undefined;
});

function fixture() {
  const f = progressiveInfraFixture();
  const now = new Date();
  f.instances[0].applications.push(
    application({
      name: AUTO_APP,
      now,
      project: PROJECT,
      source: { repoURL: 'https://git.example.com/infra/metrics-server.git', path: 'stage-1', targetRevision: 'main' },
      destination: { server: 'https://k8s-stage-1.infra.example.net:6443', namespace: 'kube-system' },
      syncPolicy: { automated: { prune: true } },
      resources: [
        {
          group: 'apps',
          version: 'v1',
          kind: 'Deployment',
          namespace: 'kube-system',
          name: 'metrics-server',
          status: 'Synced',
        },
      ],
      sync: 'Synced',
      revision: commit('metrics-server: v0.7.1'),
      health: 'Healthy',
    }),
  );
  return f;
}

/** rollcall on the simulator, its clock the simulator's (windows are judged on Argo CD's clock). */
async function start(): Promise<ControlSim> {
  env = await startControlSim({ fixture: fixture() });
  const sim = env.sim;
  env.services.now = () => sim.controller.clock.now();
  return env;
}

const appOf = (e: ControlSim, name: string) => e.sim.state.instance(INSTANCE)!.apps.get(name)!;
const appSetOf = (e: ControlSim) => e.sim.state.instance(INSTANCE)!.appSets.get(APPSET)!;
const statusOf = (appSet: ApplicationSet) =>
  new Map((appSet.status?.applicationStatus ?? []).map((s) => [s.application, s.status]));
const api = (e: ControlSim) => e.services.argocd.get(INSTANCE)!;

/** The project as a person compares it: spec and identity, not the counters the API server bumps. */
function comparable(p: AppProject) {
  const { resourceVersion: _rv, generation: _g, ...metadata } = p.metadata;
  return { metadata, spec: p.spec };
}

async function run(e: ControlSim, text: string, user = 'U_OP') {
  const reply = await dispatch(text, e.ctx(user));
  expect(reply.ok, JSON.stringify(reply.error)).toBe(true);
  const runId = (reply.data as { runId: string }).runId;
  const end = await e.runs.waitForEnd(runId, 20_000);
  return { reply, runId, end };
}

/** Lets simulated time run (1 s per 10 ms) while rollcall waits on Argo CD, as a sync run does. */
function tick(e: ControlSim) {
  ticker = setInterval(() => e.sim.controller.advance(1000), 10);
}
function stopTicking() {
  clearInterval(ticker);
  ticker = undefined;
}

/** The preview a person confirmed, as the terminal shows it. */
const previewText = (run: Run) =>
  renderText({ ok: true, command: 'run', title: run.preview!.summary, data: {}, blocks: run.preview!.blocks });

const frozenNow = async (e: ControlSim) => okAnswer(await dispatch('frozen', e.ctx('U_OP')), 'frozen').data.frozen;

const projectPuts = async (e: ControlSim) =>
  (await simOperations(e.sim, INSTANCE)).filter((o) => o.method === 'PUT' && o.path === `/api/v1/projects/${PROJECT}`);

describe('freeze / unfreeze on the simulator', () => {
  it('freeze project=infra holds auto-sync and the next RollingSync step while rollcall fixes by hand; unfreeze leaves the project exactly as before', async () => {
    const e = await start();
    const before = await api(e).getProject(PROJECT);
    const { end, runId } = await run(e, 'freeze project=infra for=2h');
    expect(end.status, end.error).toBe('succeeded');
    expect(previewText(end)).toContain('Manual syncs still go (manualSync: true)');

    const frozen = await api(e).getProject(PROJECT);
    expect(frozen.spec.syncWindows).toEqual([
      {
        kind: 'deny',
        schedule: expect.stringMatching(/^\d+ \d+ \d+ \d+ \*$/),
        duration: expect.stringMatching(/^2h\d+m$/),
        applications: ['*'],
        manualSync: true,
        timeZone: 'UTC',
        description: expect.stringMatching(
          new RegExp(`^rollcall freeze by U_OP at .+ until .+ \\(run ${runId}\\): project=infra$`),
        ),
      },
    ]);
    expect((await projectPuts(e)).map((o) => o.status)).toEqual([200]);
    const audit = await e.runs.audit.read({ runId, kinds: ['argocd.mutation'] });
    expect(audit).toEqual([
      expect.objectContaining({
        who: 'U_OP',
        target: 'infra/appproject:infra',
        result: 'ok',
        message: 'freeze AppProject infra: add deny window',
      }),
    ]);
    const listed = await dispatch('frozen', e.ctx('U_OP2'));
    expect(okAnswer(listed, 'frozen').data.frozen).toEqual([
      expect.objectContaining({
        target: 'project=infra',
        project: 'infra',
        by: 'U_OP',
        active: true,
        manualBlocked: false,
        runId,
      }),
    ]);

    // A new commit for an auto-synced app: Argo CD writes no operation while the window holds.
    e.sim.controller.newCommit(INSTANCE, [AUTO_APP]);
    e.sim.controller.advance(10 * 60_000);
    expect(appOf(e, AUTO_APP).operation).toBeUndefined();
    expect(appOf(e, AUTO_APP).status!.sync!.status).toBe('OutOfSync');

    // rollcall's own fix of the three failed prod apps is a manual sync: it goes.
    const waiting = [...statusOf(appSetOf(e))].filter(([, s]) => s === 'Waiting').map(([name]) => name);
    expect(waiting).toHaveLength(9);
    tick(e);
    const fix = await run(e, `sync ${Object.keys(STUCK_APPS).join(' ')} gate=synced`);
    stopTicking();
    expect(fix.end.status, fix.end.error).toBe('succeeded');
    const syncs = (await simOperations(e.sim, INSTANCE)).filter((o) => o.path.endsWith('/sync'));
    expect(syncs.map((o) => [o.app, o.status]).sort()).toEqual(
      Object.keys(STUCK_APPS)
        .map((a) => [a, 200])
        .sort(),
    );

    // RollingSync moves the next prod apps on and writes their operations; the window holds every one Running.
    e.sim.controller.advance(20 * 60_000);
    const held = waiting.filter(
      (name) => appOf(e, name).status?.operationState?.message === 'Sync operation blocked by sync window',
    );
    // maxUpdate 25% of the 12 prod apps: three at a time, and the three held never finish.
    expect(held).toHaveLength(3);
    for (const name of waiting) expect(appOf(e, name).status!.sync!.status, name).toBe('OutOfSync');
    expect(appOf(e, AUTO_APP).operation).toBeUndefined();

    // The alert rules say both stalls are expected, naming the freeze; status says what is frozen.
    await eventually(() => e.services.fleet.appsNamed(held[0])[0]?.app.status?.operationState?.phase === 'Running');
    const rules = evaluateAlertRules({
      fleet: e.services.fleet,
      now: e.sim.controller.clock.now(),
      config: e.services.config.alerts,
      freezes: await e.services.freezes!.list(),
    });
    expect(rules.conditions.filter((c) => c.apps.includes(AUTO_APP) || c.apps.some((a) => held.includes(a)))).toEqual(
      [],
    );
    expect(rules.expected.map((x) => x.message)).toEqual(
      expect.arrayContaining([
        expect.stringContaining("held by rollcall's freeze of project=infra"),
        expect.stringContaining("stay OutOfSync under rollcall's freeze of project=infra"),
      ]),
    );
    const status = await dispatch('status', e.ctx('U_OP2'));
    expect(okAnswer(status, 'status').data.frozen).toEqual([
      expect.objectContaining({ target: 'project=infra', by: 'U_OP' }),
    ]);
    expect(renderText(status)).toContain('Frozen by rollcall');

    const lifted = await run(e, 'unfreeze project=infra', 'U_OP2');
    expect(lifted.end.status, lifted.end.error).toBe('succeeded');
    expect(comparable(await api(e).getProject(PROJECT))).toEqual(comparable(before));
    expect((await projectPuts(e)).map((o) => o.status)).toEqual([200, 200]);
    expect(await frozenNow(e)).toEqual([]);
    expect(await e.runs.audit.read({ runId: lifted.runId, kinds: ['argocd.mutation'] })).toEqual([
      expect.objectContaining({ who: 'U_OP2', target: 'infra/appproject:infra', result: 'ok' }),
    ]);

    // The held syncs run: the rollout completes and the auto-synced app takes its commit.
    expect(e.sim.controller.advanceUntil(() => rolloutComplete(appSetOf(e)), 60 * 60_000)).toBe(true);
    expect(e.sim.controller.advanceUntil(() => appOf(e, AUTO_APP).status!.sync!.status === 'Synced', 10 * 60_000)).toBe(
      true,
    );
  });

  it('for= lifts itself when the window ends: the held auto-sync then runs, and `frozen` says the window is spent', async () => {
    const e = await start();
    const { end } = await run(e, `freeze ${AUTO_APP} for=30m`);
    expect(end.status, end.error).toBe('succeeded');
    const [window] = (await api(e).getProject(PROJECT)).spec.syncWindows!;
    expect(window).toMatchObject({ applications: [AUTO_APP], manualSync: true });
    e.sim.controller.newCommit(INSTANCE, [AUTO_APP]);
    e.sim.controller.advance(25 * 60_000);
    expect(appOf(e, AUTO_APP).operation).toBeUndefined();
    e.sim.controller.advance(10 * 60_000);
    expect(appOf(e, AUTO_APP).status!.operationState).toMatchObject({
      phase: 'Succeeded',
      operation: { initiatedBy: { automated: true } },
    });
    const listed = await dispatch('frozen', e.ctx('U_OP'));
    expect(okAnswer(listed, 'frozen').data.frozen).toEqual([
      expect.objectContaining({ target: AUTO_APP, active: false }),
    ]);
    expect(renderText(listed)).toContain("ended; rollcall's workers remove its window at their next sweep");
  });

  it('`frozen` asked while a confirmed freeze still writes names that run, and lists the freeze once it is written', async () => {
    const e = await start();
    // Argo CD takes 1.5 s to answer the project's write: the run is confirmed and has not written yet.
    await simFault(e.sim, {
      instance: INSTANCE,
      kind: 'latency',
      ms: 1500,
      method: 'PUT',
      match: '/projects/',
      count: 1,
    });
    const reply = await dispatch('freeze project=infra for=1h', e.ctx('U_OP'));
    const runId = (reply.data as { runId: string }).runId;
    await eventually(async () => (await e.runs.get(runId))?.status === 'running', 5000, 'the freeze run started');
    const during = await dispatch('frozen', e.ctx('U_OP2'));
    expect(okAnswer(during, 'frozen').data).toEqual({
      frozen: [],
      inProgress: [
        {
          runId,
          runbook: 'freeze',
          status: 'running',
          requester: 'U_OP',
          params: expect.stringContaining('project=infra'),
        },
      ],
    });
    expect(renderText(during)).toContain('rollcall has frozen nothing yet.');
    expect(renderText(during)).toContain(`runs show ${runId}`);

    expect((await e.runs.waitForEnd(runId, 20_000)).status).toBe('succeeded');
    const after = okAnswer(await dispatch('frozen', e.ctx('U_OP2')), 'frozen').data;
    expect(after.inProgress).toEqual([]);
    expect(after.frozen).toEqual([expect.objectContaining({ target: 'project=infra', runId, active: true })]);
  });

  it("manual=block says so loudly, and Argo CD then refuses rollcall's own sync with its own text", async () => {
    const e = await start();
    const { end } = await run(e, 'freeze project=infra manual=block');
    expect(end.status, end.error).toBe('succeeded');
    expect(end.preview!.summary).toContain('MANUAL SYNCS BLOCKED TOO');
    expect(previewText(end)).toContain('manual=block: manual syncs are refused too');
    const [window] = (await api(e).getProject(PROJECT)).spec.syncWindows!;
    expect(window.manualSync).toBeUndefined();

    const stuck = Object.keys(STUCK_APPS)[0];
    tick(e);
    const fix = await run(e, `sync ${stuck} gate=synced onFailure=abort`);
    stopTicking();
    expect(fix.end.status).toBe('failed');
    expect(fix.end.error).toContain('ingress-nginx-prod-1 (sync refused: cannot sync: blocked by sync window)');
    const refused = (await simOperations(e.sim, INSTANCE)).filter((o) => o.path.endsWith('/sync'));
    expect(refused.map((o) => [o.app, o.status])).toEqual([[stuck, 403]]);
    const res = await fetch(`${e.sim.instances[0].url}/api/v1/applications/${stuck}/sync`, {
      method: 'POST',
      headers: { authorization: `Bearer ${e.sim.instances[0].token}` },
      body: '{}',
    });
    expect(await res.json()).toMatchObject({ code: 7, message: 'cannot sync: blocked by sync window' });
  });

  it("reads the project again when someone edits it between rollcall's read and write, and refuses clearly when it keeps changing", async () => {
    const e = await start();
    const real = api(e);
    let edits = 1;
    // Another writer lands between each GET and PUT of rollcall's (the resourceVersion rollcall read goes stale).
    const racing: ArgoApi = Object.create(real, {
      updateProject: {
        value: async (project: AppProject) => {
          if (edits-- > 0) {
            const store = e.sim.state.instance(INSTANCE)!;
            const next = structuredClone(store.projects.get(project.metadata.name)!);
            next.spec.description = `edited by someone else (${edits})`;
            store.putProject(next);
          }
          return real.updateProject(project);
        },
      },
    });
    (e.services.argocd as Map<string, ArgoApi>).set(INSTANCE, racing);

    const once = await run(e, 'freeze project=infra for=1h');
    expect(once.end.status, once.end.error).toBe('succeeded');
    expect((await projectPuts(e)).map((o) => o.status)).toEqual([409, 200]);
    const kept = await real.getProject(PROJECT);
    expect(kept.spec.description).toBe('edited by someone else (0)');
    expect(kept.spec.syncWindows).toHaveLength(1);
    const lifted = await run(e, 'unfreeze project=infra');
    expect(lifted.end.status, lifted.end.error).toBe('succeeded');

    edits = 99;
    const busy = await run(e, 'freeze project=infra for=1h');
    expect(busy.end.status).toBe('failed');
    expect(busy.end.error).toContain('AppProject infra on instance infra changed under rollcall 3 times in a row');
    expect(busy.end.error).toContain('nothing was written');
    expect((await projectPuts(e)).map((o) => o.status)).toEqual([409, 200, 200, 409, 409, 409]);
    expect((await real.getProject(PROJECT)).spec.syncWindows).toBeUndefined();
    expect(await frozenNow(e)).toEqual([]);
    expect(await e.runs.audit.read({ runId: busy.runId, kinds: ['argocd.mutation'] })).toEqual([
      expect.objectContaining({ result: expect.stringMatching(/^failed: AppProject infra .* changed under rollcall/) }),
    ]);
  });

  it('unfreeze refuses to remove a window someone edited, naming the project, and changes nothing', async () => {
    const e = await start();
    expect((await run(e, 'freeze project=infra')).end.status).toBe('succeeded');
    const store = e.sim.state.instance(INSTANCE)!;
    const edited = structuredClone(store.projects.get(PROJECT)!);
    edited.spec.syncWindows![0].manualSync = false;
    store.putProject(edited);
    const putsBefore = (await projectPuts(e)).length;

    const reply = await dispatch('unfreeze project=infra', e.ctx('U_OP'));
    expect(reply.ok).toBe(false);
    expect(reply.error!.code).toBe('conflict');
    expect(reply.error!.message).toContain(
      "rollcall's window in AppProject infra on instance infra was changed since the freeze",
    );
    expect(reply.error!.message).toContain('argocd proj windows delete infra 0');
    expect((await projectPuts(e)).length).toBe(putsBefore);
    expect((await api(e).getProject(PROJECT)).spec.syncWindows).toEqual([expect.objectContaining({ kind: 'deny' })]);
    expect(await frozenNow(e)).toHaveLength(1);
  });

  it('scopes a selector to applications and clusters (AND), one window per project, and refuses a second identical freeze', async () => {
    const e = await start();
    const { end } = await run(e, 'freeze ingress-nginx-* cluster=prod-1,prod-2');
    expect(end.status, end.error).toBe('succeeded');
    const [window] = (await api(e).getProject(PROJECT)).spec.syncWindows!;
    expect(window).toMatchObject({
      applications: ['ingress-nginx-*'],
      clusters: ['https://k8s-prod-1.infra.example.net:6443', 'https://k8s-prod-2.infra.example.net:6443'],
      andOperator: true,
    });
    const again = await dispatch('freeze ingress-nginx-* cluster=prod-1,prod-2', e.ctx('U_OP2'));
    expect(again.ok).toBe(false);
    expect(again.error!.message).toContain('is already frozen by U_OP');

    // A window recurs yearly: a freeze longer than 30 days would overlap its own next firing.
    const tooLong = await dispatch('freeze project=infra for=40d', e.ctx('U_OP'));
    expect(tooLong.ok).toBe(false);
    expect(tooLong.error!.message).toContain('for= is at most 30d');
    expect((await dispatch('freeze project=infra for=30s', e.ctx('U_OP'))).error!.message).toContain(
      'for= is at least 1m',
    );
    expect((await dispatch('freeze project=nope', e.ctx('U_OP'))).error).toMatchObject({
      code: 'unknown_target',
      message: expect.stringContaining('no AppProject named nope on infra'),
    });

    // Only operators may freeze or unfreeze: a refusal changes nothing and is audited.
    const putsBefore = (await projectPuts(e)).length;
    const denied = await dispatch('unfreeze ingress-nginx-* cluster=prod-1,prod-2', e.ctx('U_VISITOR'));
    expect(denied.error).toMatchObject({ code: 'forbidden' });
    expect((await dispatch('freeze project=infra', e.ctx('U_VISITOR'))).error).toMatchObject({ code: 'forbidden' });
    expect((await projectPuts(e)).length).toBe(putsBefore);
    const refusals = await e.runs.audit.read({ kinds: ['run.refused'], who: 'U_VISITOR' });
    expect(refusals.map((r) => [r.target, r.result]).sort()).toEqual([
      ['freeze', 'forbidden'],
      ['unfreeze', 'forbidden'],
    ]);
  });

  it('records the incident of the channel it is typed in, and closing that incident asks in its thread whether to unfreeze', async () => {
    const notifier = new RecordingNotifier();
    env = await startControlSim({ fixture: fixture(), notifier });
    const e = env;
    e.services.now = () => e.sim.controller.clock.now();
    const changes = new ChangeLog(e.redis, e.prefix);
    e.services.incidents = new IncidentService(new IncidentStore(e.redis, e.prefix), changes, e.services.fleet);
    const declared = await dispatch('incident start ingress webhooks down sev=2', e.ctx('U_OP'));
    const id = (declared.data as { id: string }).id;
    await e.services.incidents.store.update(id, {
      channel: 'C_INC',
      header: { channel: 'C_INC', ts: '1700000000.000100' },
    });
    expect((await dispatch('freeze project=infra incident=INC-99', e.ctx('U_OP'))).error).toMatchObject({
      code: 'incident_not_found',
    });
    // Typed elsewhere while the incident is open: not that incident's freeze.
    const elsewhere = await run(e, 'freeze ingress-nginx-prod-1 for=1h');
    expect(elsewhere.end.status, elsewhere.end.error).toBe('succeeded');

    const inIncident = { ...e.ctx('U_OP'), channel: 'C_INC' };
    const reply = await dispatch('freeze project=infra', inIncident);
    expect(reply.ok, JSON.stringify(reply.error)).toBe(true);
    const runId = (reply.data as { runId: string }).runId;
    expect((await e.runs.waitForEnd(runId, 20_000)).status).toBe('succeeded');
    const [window] = (await api(e).getProject(PROJECT)).spec.syncWindows!.filter((w) => w.description?.includes(runId));
    expect(window.description).toContain(`for ${id}`);
    expect((await e.services.freezes!.ofIncident(id)).map((f) => f.runId)).toEqual([runId]);

    const closed = await dispatch(`incident close ${id} webhooks restored`, e.ctx('U_OP2'));
    expect(closed.ok, JSON.stringify(closed.error)).toBe(true);
    const button = { label: 'Unfreeze', command: `unfreeze run=${runId}`, style: 'primary' };
    expect(closed.blocks).toContainEqual({ kind: 'actions', buttons: [button] });
    // The freeze's own run posted its progress in the channel; the question goes to the header's thread.
    const asked = notifier.posts.filter(
      (p) => p.target.channel === 'C_INC' && p.target.threadTs === '1700000000.000100',
    );
    expect(asked).toHaveLength(1);
    expect(renderText(asked[0].reply)).toContain(
      `${id} is closed, and rollcall's freeze declared in it is still on: project=infra (infra, by U_OP). Unfreeze?`,
    );
    expect(asked[0].reply.blocks).toContainEqual({ kind: 'actions', buttons: [button] });

    // The button runs `unfreeze run=…`: only that freeze goes; the one typed elsewhere stays.
    const lifted = await run(e, button.command, 'U_OP2');
    expect(lifted.end.status, lifted.end.error).toBe('succeeded');
    expect((await api(e).getProject(PROJECT)).spec.syncWindows).toEqual([
      expect.objectContaining({ applications: ['ingress-nginx-prod-1'] }),
    ]);
    expect(await frozenNow(e)).toEqual([expect.objectContaining({ target: 'ingress-nginx-prod-1', incident: null })]);
  });
});
