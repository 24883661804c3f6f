import { afterEach, describe, expect, it } from 'vitest';
import type { Application, ApplicationSet } from '../../src/infra/argocd/types.js';
import { renderText } from '../../src/views/text.js';
import { dispatch } from '../../src/commands/index.js';
import { rolloutComplete } from '../../src/fleet/rollingsync.js';
import { PAUSE_RUN, PAUSED_AT, PAUSED_BY } from '../../src/domain/runbooks/rollout-pause.js';
import { progressiveInfraFixture, STUCK_APPS } from '../../src/sim/scenarios/progressive-infra.js';
import { simOperations } from '../support/sim.js';
import { comparable, eventually, startControlSim, type ControlSim } from './control-sim.js';
import { okAnswer } from '../support/replies.js';

const INSTANCE = 'infra';
const APPSET = 'progressive-infra';
const PARENT = 'cluster-addons-root';

let env: ControlSim | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

const appSetOf = (e: ControlSim, name = APPSET) => e.sim.state.instance(INSTANCE)!.appSets.get(name)!;
const appOf = (e: ControlSim, name: string) => e.sim.state.instance(INSTANCE)!.apps.get(name)!;
const statusOf = (appSet: ApplicationSet) =>
  new Map((appSet.status?.applicationStatus ?? []).map((s) => [s.application, s.status]));

async function runCommand(e: ControlSim, text: string, user = 'U_OP') {
  const reply = await dispatch(text, e.ctx(user));
  expect(reply.ok, JSON.stringify(reply.error)).toBe(true);
  const runId = (reply.data as { runId: string }).runId;
  const end = await e.runs.waitForEnd(runId, 20_000);
  return { reply, runId, end };
}

/** progressive-infra plus an app-of-apps parent (auto-sync + self-heal) that manages the appset from git. */
function withParent() {
  const fixture = progressiveInfraFixture();
  const instance = fixture.instances[0];
  const appSet = instance.applicationSets!.find((s) => s.metadata.name === APPSET)!;
  appSet.metadata.annotations = {
    ...appSet.metadata.annotations,
    'argocd.argoproj.io/tracking-id': `${PARENT}:argoproj.io/ApplicationSet:argocd/${APPSET}`,
  };
  const parent: Application = {
    metadata: { name: PARENT, namespace: 'argocd', labels: { team: 'infra' } },
    spec: {
      project: 'default',
      source: { repoURL: 'https://git.example.com/infra/cluster-addons.git', path: 'appsets', targetRevision: 'main' },
      destination: { server: 'https://kubernetes.default.svc', namespace: 'argocd' },
      syncPolicy: { automated: { prune: true, selfHeal: true }, syncOptions: ['ServerSideApply=true'] },
    },
    status: {
      sync: { status: 'Synced', revision: 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678' },
      health: { status: 'Healthy' },
    },
  };
  instance.applications.push(parent);
  return fixture;
}

describe('pause-rollout / resume-rollout on the simulator', () => {
  it('holds progressive-infra mid-rollout for an hour (no app leaves Waiting) and resume lets it finish, leaving the appset exactly as before', async () => {
    env = await startControlSim({ scenario: 'progressive-infra' });
    const e = env;
    const before = comparable(appSetOf(e));
    const { end, runId } = await runCommand(e, 'pause progressive-infra verifyAfter=0');
    expect(end.status, end.error).toBe('succeeded');

    const paused = appSetOf(e);
    // Steps 1 and 2 are complete: only step 3 (maxUpdate 25%) is held; nothing else in the object moved.
    expect(paused.spec.strategy!.rollingSync!.steps!.map((s) => s.maxUpdate)).toEqual([undefined, undefined, 0]);
    expect(paused.metadata.annotations).toMatchObject({ [PAUSED_BY]: 'U_OP', [PAUSE_RUN]: runId });
    expect(Date.parse(paused.metadata.annotations![PAUSED_AT])).not.toBeNaN();
    const upserts = (await simOperations(e.sim, INSTANCE)).filter(
      (o) => o.method === 'POST' && o.path.includes('/applicationsets'),
    );
    expect(upserts).toHaveLength(1);
    // The full object (there is no PATCH for appsets): generators and template travel back unchanged.
    expect((upserts[0].body as ApplicationSet).spec.generators).toEqual(appSetOf(e).spec.generators);
    expect((upserts[0].body as ApplicationSet).spec.template).toEqual(appSetOf(e).spec.template);

    // On-call fixes the three failed prod apps by hand. Without the pause that frees step 3's maxUpdate
    // and RollingSync releases the other nine, three at a time.
    const waiting = [...statusOf(appSetOf(e))].filter(([, s]) => s === 'Waiting').map(([name]) => name);
    expect(waiting).toHaveLength(9);
    for (const name of Object.keys(STUCK_APPS))
      e.sim.controller.requestSync(INSTANCE, name, { name, prune: true }, 'admin');
    e.sim.controller.advance(60 * 60_000);
    const held = statusOf(appSetOf(e));
    for (const name of Object.keys(STUCK_APPS)) expect(held.get(name)).toBe('Healthy');
    for (const name of waiting) {
      expect(held.get(name), name).toBe('Waiting');
      expect(appOf(e, name).operation, name).toBeUndefined();
      expect(appOf(e, name).status?.sync?.status, name).toBe('OutOfSync');
    }
    expect(rolloutComplete(appSetOf(e))).toBe(false);

    // rollout and plan lead with the pause, so nobody mistakes the held step for a stuck one.
    const rolloutText = async () => renderText(await dispatch('rollout progressive-infra', e.ctx('U_OP2')));
    await expect.poll(rolloutText, { timeout: 5000 }).toContain(`Paused by rollcall (U_OP`);
    expect(renderText(await dispatch('plan progressive-infra', e.ctx('U_OP2')))).toContain(
      'resume progressive-infra puts back the recorded values.',
    );
    const heldReply = okAnswer(await dispatch('rollout progressive-infra', e.ctx('U_OP2')), 'rollout');
    expect('paused' in heldReply.data && heldReply.data.paused).toEqual({ by: 'U_OP', at: expect.any(String), runId });
    const gate = heldReply.data.findings.find((f) => f.rule === 'manual-gate')!;
    expect(gate.message).toContain("held by rollcall's pause");
    expect(gate.fix).toContain('/argo resume progressive-infra');

    const listed = okAnswer(await dispatch('paused', e.ctx('U_OP2')), 'paused');
    expect(listed.data.paused).toEqual([
      { target: APPSET, instance: INSTANCE, by: 'U_OP', since: expect.any(String), runId, changes: 1 },
    ]);

    const resumed = await runCommand(e, 'resume progressive-infra', 'U_OP2');
    expect(resumed.end.status, resumed.end.error).toBe('succeeded');
    expect(comparable(appSetOf(e))).toEqual(before);
    expect(okAnswer(await dispatch('paused', e.ctx('U_OP')), 'paused').data.paused).toEqual([]);

    expect(e.sim.controller.advanceUntil(() => rolloutComplete(appSetOf(e)), 30 * 60_000)).toBe(true);
    expect([...statusOf(appSetOf(e)).values()].every((s) => s === 'Healthy')).toBe(true);
    for (const name of waiting) expect(appOf(e, name).status?.sync?.status, name).toBe('Synced');
  });

  it('(control) without the pause, the same manual fix releases the waiting prod apps within the hour', async () => {
    env = await startControlSim({ scenario: 'progressive-infra' });
    const e = env;
    const waiting = [...statusOf(appSetOf(e))].filter(([, s]) => s === 'Waiting').map(([name]) => name);
    for (const name of Object.keys(STUCK_APPS))
      e.sim.controller.requestSync(INSTANCE, name, { name, prune: true }, 'admin');
    e.sim.controller.advance(60 * 60_000);
    const after = statusOf(appSetOf(e));
    expect(waiting.filter((name) => after.get(name) !== 'Waiting')).toEqual(waiting);
  });

  it('pauses the parent app-of-apps too, says why in the preview, and resume restores both exactly', async () => {
    env = await startControlSim({ fixture: withParent() });
    const e = env;
    const beforeSet = comparable(appSetOf(e));
    const beforeParent = comparable(appOf(e, PARENT));

    const preview = await dispatch('pause progressive-infra verifyAfter=0', { ...e.ctx('U_OP'), assumeYes: false });
    expect(preview.ok, JSON.stringify(preview.error)).toBe(true);
    const text = JSON.stringify(preview.blocks);
    expect(text).toContain(`managed from git by the app ${PARENT} (auto-sync with self-heal)`);
    expect(text).toContain('would be reverted from git');
    const runId = (preview.data as { runId: string }).runId;
    await e.runs.confirm(runId, 'U_OP');
    const end = await e.runs.waitForEnd(runId, 20_000);
    expect(end.status, end.error).toBe('succeeded');

    expect(appOf(e, PARENT).spec.syncPolicy!.automated).toEqual({ prune: true, selfHeal: true, enabled: false });
    expect(appOf(e, PARENT).metadata.annotations).toMatchObject({ [PAUSED_BY]: 'U_OP', [PAUSE_RUN]: runId });
    expect(appSetOf(e).spec.strategy!.rollingSync!.steps![2].maxUpdate).toBe(0);

    const resumed = await runCommand(e, 'resume progressive-infra');
    expect(resumed.end.status, resumed.end.error).toBe('succeeded');
    expect(resumed.end.steps[0].output).toMatchObject({
      restored: [`Application ${PARENT}`, `ApplicationSet ${APPSET}`],
    });
    expect(comparable(appOf(e, PARENT))).toEqual(beforeParent);
    expect(comparable(appSetOf(e))).toEqual(beforeSet);
  });

  it('refuses to resume, naming the field, when someone changed the paused field since; the pause stays recorded', async () => {
    env = await startControlSim({ scenario: 'progressive-infra' });
    const e = env;
    expect((await runCommand(e, 'pause progressive-infra verifyAfter=0')).end.status).toBe('succeeded');
    // Someone edits the appset by hand while it is paused: step 3 now lets one app through.
    const api = e.services.argocd.get(INSTANCE)!;
    const edited = structuredClone(await api.getApplicationSet(APPSET));
    delete edited.status;
    edited.spec.strategy!.rollingSync!.steps![2].maxUpdate = 1;
    await api.upsertApplicationSet(edited);

    const { end } = await runCommand(e, 'resume progressive-infra');
    expect(end.status).toBe('failed');
    expect(end.error).toContain(
      `ApplicationSet ${APPSET} changed since the pause: rollingSync.maxUpdate is now [null,null,1] (the pause set [null,null,0])`,
    );
    expect(end.error).toContain('will not overwrite that');
    expect(appSetOf(e).spec.strategy!.rollingSync!.steps![2].maxUpdate).toBe(1);
    expect(okAnswer(await dispatch('paused', e.ctx('U_OP')), 'paused').data.paused).toHaveLength(1);
  });

  it('refuses a second pause of the same appset and a pause of one generated app, pointing at the appset', async () => {
    env = await startControlSim({ scenario: 'progressive-infra' });
    const e = env;
    expect((await runCommand(e, 'pause progressive-infra verifyAfter=0')).end.status).toBe('succeeded');
    await eventually(
      () => !!e.services.fleet.appSetsNamed(APPSET)[0]?.appSet.metadata.annotations?.[PAUSED_BY],
      5000,
      'the mirror to see the pause',
    );
    const again = await dispatch('pause progressive-infra', e.ctx('U_OP2'));
    expect(again.error?.code).toBe('already_paused');
    expect(again.error?.message).toContain('already paused by U_OP');

    const one = await dispatch('pause ingress-nginx-prod-4', e.ctx('U_OP'));
    expect(one.error?.code).toBe('conflict');
    expect(one.error?.message).toContain(
      'generated by the ApplicationSet progressive-infra, which would revert its auto-sync',
    );
    expect(one.error?.message).toContain('`pause progressive-infra`');

    expect((await dispatch('resume nothing-here', e.ctx('U_OP'))).error?.code).toBe('not_paused');
  });

  it('puts an appset without RollingSync on create-only with auto-sync off on its apps, and resume restores every field', async () => {
    const fixture = progressiveInfraFixture();
    const instance = fixture.instances[0];
    const addons = instance.applicationSets!.find((s) => s.metadata.name === 'platform-addons')!;
    delete addons.spec.strategy;
    delete addons.status?.applicationStatus;
    const owned = instance.applications.filter((a) =>
      a.metadata.ownerReferences?.some((o) => o.name === 'platform-addons'),
    );
    expect(owned.length).toBeGreaterThan(0);
    for (const a of owned) a.spec.syncPolicy = { ...a.spec.syncPolicy, automated: { prune: true, selfHeal: true } };
    env = await startControlSim({ fixture });
    const e = env;
    const beforeSet = comparable(appSetOf(e, 'platform-addons'));
    const beforeApps = owned.map((a) => comparable(appOf(e, a.metadata.name)));

    const { end } = await runCommand(e, 'pause platform-addons verifyAfter=0');
    expect(end.status, end.error).toBe('succeeded');
    expect(appSetOf(e, 'platform-addons').spec.syncPolicy?.applicationsSync).toBe('create-only');
    for (const a of owned)
      expect(appOf(e, a.metadata.name).spec.syncPolicy!.automated).toEqual({
        prune: true,
        selfHeal: true,
        enabled: false,
      });

    const resumed = await runCommand(e, 'resume platform-addons');
    expect(resumed.end.status, resumed.end.error).toBe('succeeded');
    expect(comparable(appSetOf(e, 'platform-addons'))).toEqual(beforeSet);
    expect(owned.map((a) => comparable(appOf(e, a.metadata.name)))).toEqual(beforeApps);
  });
});
