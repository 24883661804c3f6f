import { afterEach, describe, expect, it } from 'vitest';
import { dispatch } from '../../src/commands/index.js';
import { FreezeSweeper } from '../../src/domain/runbooks/freeze-sweep.js';
import { freezeActive } from '../../src/fleet/freeze.js';
import { windowActive } from '../../src/infra/argocd/sync-windows.js';
import type { AppProject, SyncWindow } from '../../src/infra/argocd/types.js';
import { renderText } from '../../src/views/text.js';
import { okAnswer } from '../support/replies.js';
import { simOperations } from '../support/sim.js';
import { startControlSim, type ControlSim } from './control-sim.js';

// A for= freeze is a deny window on a yearly schedule: it stops holding at its end and would fire again on the same
// date next year. rollcall's sweep removes exactly its own spent windows from the simulator's AppProject; `frozen`
// and `status` never call a spent freeze active. Time is a clock the test moves: nothing waits on the wall clock.

const INSTANCE = 'infra';
const PROJECT = 'infra';
const MINUTE = 60_000;

let env: ControlSim | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

/** rollcall's clock, moved by the test (freeze windows are written and judged on it). */
const clock = { at: new Date('2030-06-12T10:15:30Z') };

async function start(): Promise<{ e: ControlSim; sweeper: FreezeSweeper }> {
  clock.at = new Date('2030-06-12T10:15:30Z');
  const e = await startControlSim({ scenario: 'progressive-infra' });
  env = e;
  e.services.now = () => clock.at;
  const sweeper = new FreezeSweeper({
    redis: e.redis,
    prefix: e.prefix,
    store: e.services.freezes!,
    argocd: e.services.argocd,
    audit: e.services.audit,
    now: () => clock.at,
  });
  return { e, sweeper };
}

const api = (e: ControlSim) => e.services.argocd.get(INSTANCE)!;

/** The project as a person compares it: spec and identity, not the counters the API server bumps. */
function comparable(p: AppProject) {
  const { resourceVersion: _rv, generation: _g, ...metadata } = p.metadata;
  return { metadata, spec: p.spec };
}

async function freeze(e: ControlSim, text: string) {
  const reply = await dispatch(text, e.ctx('U_OP'));
  expect(reply.ok, JSON.stringify(reply.error)).toBe(true);
  const end = await e.runs.waitForEnd((reply.data as { runId: string }).runId, 20_000);
  expect(end.status, end.error).toBe('succeeded');
  return end;
}

const frozen = async (e: ControlSim) => okAnswer(await dispatch('frozen', e.ctx('U_OP')), 'frozen');
const statusFrozen = async (e: ControlSim) =>
  okAnswer(await dispatch(`status project=${PROJECT}`, e.ctx('U_OP')), 'status').data.frozen;
const projectPuts = async (e: ControlSim) =>
  (await simOperations(e.sim, INSTANCE)).filter((o) => o.method === 'PUT' && o.path === `/api/v1/projects/${PROJECT}`);

/** Another team's own deny window, already in the project: the sweep must leave it as it is. */
const THEIRS: SyncWindow = {
  kind: 'deny',
  schedule: '0 22 * * 5',
  duration: '60h',
  applications: ['*'],
  timeZone: 'UTC',
  description: 'weekend freeze (platform team)',
};

describe('spent for= freezes', () => {
  it('stop counting as active at their end and a year on; the sweep removes exactly rollcall’s window, audited, once', async () => {
    const { e, sweeper } = await start();
    const project = await api(e).getProject(PROJECT);
    await api(e).updateProject({ ...project, spec: { ...project.spec, syncWindows: [THEIRS] } });
    const before = comparable(await api(e).getProject(PROJECT));
    const end = await freeze(e, `freeze project=${PROJECT} for=1h`);
    const [record] = await e.services.freezes!.list();
    expect(record.until).toBe('2030-06-12T11:16:00.000Z');
    expect((await api(e).getProject(PROJECT)).spec.syncWindows).toHaveLength(2);

    clock.at = new Date('2030-06-12T10:45:30Z');
    expect(await sweeper.sweep()).toEqual({ removed: [], gone: [], refused: [] });
    expect((await frozen(e)).data.frozen).toEqual([expect.objectContaining({ active: true })]);
    expect(await statusFrozen(e)).toHaveLength(1);

    // At its end, before any sweep: no longer active anywhere.
    clock.at = new Date(record.until!);
    expect((await frozen(e)).data.frozen).toEqual([expect.objectContaining({ active: false })]);
    expect(await statusFrozen(e)).toEqual([]);
    // A year on, Argo CD would hold syncs again under the window; rollcall does not call that its freeze.
    const nextYear = new Date('2031-06-12T10:45:00Z');
    expect(windowActive(record.window, nextYear)).toBe(true);
    expect(freezeActive(record, nextYear)).toBe(false);

    clock.at = new Date(Date.parse(record.until!) + MINUTE);
    const putsBefore = (await projectPuts(e)).length;
    const swept = await sweeper.sweep();
    expect(swept.removed.map((f) => f.project)).toEqual([PROJECT]);
    expect(comparable(await api(e).getProject(PROJECT))).toEqual(before);
    expect(await e.services.freezes!.list()).toEqual([]);
    expect(await projectPuts(e)).toHaveLength(putsBefore + 1);
    const audit = (await e.services.audit!.read({ runId: end.id })).filter(
      (a) => a.kind === 'argocd.mutation' && a.who === 'rollcall',
    );
    expect(audit).toEqual([
      expect.objectContaining({
        target: `${INSTANCE}/appproject:${PROJECT}`,
        result: 'ok',
        message: expect.stringContaining("remove rollcall's deny window"),
      }),
    ]);
    expect(await sweeper.sweep()).toEqual({ removed: [], gone: [], refused: [] });
    expect(await projectPuts(e)).toHaveLength(putsBefore + 1);
    expect((await frozen(e)).title).toBe('Nothing is frozen');
  });

  it('leaves a window someone changed since the freeze, says so once, and `frozen` shows why', async () => {
    const { e, sweeper } = await start();
    await freeze(e, `freeze project=${PROJECT} for=30m`);
    const [record] = await e.services.freezes!.list();
    const project = await api(e).getProject(PROJECT);
    const edited = { ...project.spec.syncWindows![0], duration: '3h' };
    await api(e).updateProject({ ...project, spec: { ...project.spec, syncWindows: [edited] } });

    clock.at = new Date(Date.parse(record.until!) + MINUTE);
    const putsBefore = (await projectPuts(e)).length;
    expect((await sweeper.sweep()).refused).toHaveLength(1);
    expect((await sweeper.sweep()).refused).toHaveLength(0);
    expect((await api(e).getProject(PROJECT)).spec.syncWindows).toEqual([edited]);
    expect(await projectPuts(e)).toHaveLength(putsBefore);
    const refusals = (await e.services.audit!.latest(20)).filter(
      (a) => a.who === 'rollcall' && a.result?.startsWith('refused'),
    );
    expect(refusals).toHaveLength(1);
    expect(refusals[0].result).toContain(`argocd proj windows delete ${PROJECT} 0`);
    const listed = await frozen(e);
    expect(listed.data.frozen).toEqual([expect.objectContaining({ active: false })]);
    expect(renderText(listed)).toContain('rollcall left its window in place because someone changed it');
  });

  it('a window already removed by hand: the sweep only forgets the record', async () => {
    const { e, sweeper } = await start();
    await freeze(e, `freeze project=${PROJECT} for=30m`);
    const [record] = await e.services.freezes!.list();
    const project = await api(e).getProject(PROJECT);
    const { syncWindows: _gone, ...spec } = project.spec;
    await api(e).updateProject({ ...project, spec });
    clock.at = new Date(Date.parse(record.until!) + MINUTE);
    expect((await sweeper.sweep()).gone.map((f) => f.runId)).toEqual([record.runId]);
    expect(await e.services.freezes!.list()).toEqual([]);
  });

  it('takes one sweep per interval across processes', async () => {
    const { e, sweeper } = await start();
    await freeze(e, `freeze project=${PROJECT} for=30m`);
    const [record] = await e.services.freezes!.list();
    clock.at = new Date(Date.parse(record.until!) + MINUTE);
    const other = new FreezeSweeper({
      redis: e.redis,
      prefix: e.prefix,
      store: e.services.freezes!,
      argocd: e.services.argocd,
      audit: e.services.audit,
      now: () => clock.at,
      everyMs: 60_000,
    });
    const putsBefore = (await projectPuts(e)).length;
    sweeper.trigger();
    other.trigger();
    await Promise.all([sweeper.stop(), other.stop()]);
    expect(await e.services.freezes!.list()).toEqual([]);
    expect(await projectPuts(e)).toHaveLength(putsBefore + 1);
    // A second sweep after the first would have audited "already gone": only one process swept.
    const sweeps = (await e.services.audit!.latest(20)).filter(
      (a) => a.who === 'rollcall' && a.target === `${INSTANCE}/appproject:${PROJECT}`,
    );
    expect(sweeps.map((a) => a.result)).toEqual(['ok']);
  });
});
