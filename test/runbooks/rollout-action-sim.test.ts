import { afterEach, describe, expect, it } from 'vitest';
import { dispatch } from '../../src/commands/index.js';
import type { RolloutActionPlan, Run } from '../../src/domain/runbooks/index.js';
import { createClients } from '../../src/infra/argocd/client.js';
import type { Rollout } from '../../src/infra/argocd/types.js';
import { loadScenario } from '../../src/sim/scenarios/index.js';
import { CANARY_ROLLOUTS_INSTANCE, SEARCH, STOREFRONT } from '../../src/sim/scenarios/canary-rollouts.js';
import { renderText } from '../../src/views/text.js';
import { okAnswer } from '../support/replies.js';
import { simFault, simOperations } from '../support/sim.js';
import { startControlSim, type ControlSim } from './control-sim.js';

// The rollout-action runbook (`promote`, `abort`, `retry`, `restart`, `pause|resume … kind=rollout`) on the
// canary-rollouts scenario: what Argo CD offers decides what is sent, each action goes once through
// /resource/actions/v2, and the simulator's operation log is the judge of what reached Argo CD.

const INSTANCE = CANARY_ROLLOUTS_INSTANCE;
const storefrontApps = () => loadScenario('canary-rollouts').fixture.instances[0].applications;

let env: ControlSim | undefined;
let ticker: NodeJS.Timeout | undefined;
afterEach(async () => {
  if (ticker) clearInterval(ticker);
  ticker = undefined;
  await env?.close();
  env = undefined;
});

async function start(fixture?: ReturnType<typeof loadScenario>['fixture']): Promise<ControlSim> {
  env = await startControlSim(fixture ? { fixture } : { scenario: 'canary-rollouts' });
  const sim = env.sim;
  env.services.now = () => sim.controller.clock.now();
  return env;
}

/** Lets simulated time run (1 s per 10 ms) while rollcall follows the Rollouts, so the controller acts on them. */
function tick(e: ControlSim) {
  ticker = setInterval(() => e.sim.controller.advance(1000), 10);
}

async function rolloutOf(e: ControlSim, app: string, name: string): Promise<Rollout> {
  const namespace = name === 'search' ? SEARCH.namespace : STOREFRONT.namespace;
  return e.services.argocd
    .get(INSTANCE)!
    .liveResource<Rollout>(
      { name: app },
      { group: 'argoproj.io', version: 'v1alpha1', kind: 'Rollout', namespace, name },
    );
}

const planOf = (run: Run) => (run.preview!.data as { plan: RolloutActionPlan }).plan;
const previewText = (run: Run) =>
  renderText({ ok: true, command: 'run', title: run.preview!.summary, data: {}, blocks: run.preview!.blocks });

/** Every mutating call the simulator received, as [method, app, action]. */
async function mutations(e: ControlSim) {
  return (await simOperations(e.sim, INSTANCE)).map((o) => ({
    method: o.method,
    path: o.path,
    app: o.app,
    status: o.status,
    action: (o.body as { action?: string } | undefined)?.action,
  }));
}

async function runToEnd(e: ControlSim, text: string) {
  const reply = await dispatch(text, e.ctx('U_OP'));
  expect(reply.ok, JSON.stringify(reply.error)).toBe(true);
  const runId = (reply.data as { runId: string }).runId;
  return { reply, end: await e.runs.waitForEnd(runId, 30_000) };
}

const apps = (names: string) => storefrontApps().filter((a) => a.metadata.name.startsWith(names));

describe('abort / promote on Argo Rollouts, many apps at once', () => {
  it('abort storefront-* sends abort once per offered Rollout through /resource/actions/v2 and nothing else; they end Degraded', async () => {
    const e = await start();
    tick(e);
    const { reply, end } = await runToEnd(e, 'abort storefront-*');
    expect(end.status, end.error).toBe('succeeded');
    // --json: the answer's data carries the run and its preview's plan, typed for `abort`.
    const data = okAnswer(reply, 'abort').data;
    expect('runId' in data && data.preview?.plan.waves.flatMap((w) => w.rollouts)).toHaveLength(10);

    const plan = planOf(end);
    const offered = plan.waves.flatMap((w) => w.rollouts.map((r) => r.app)).sort();
    const promoted = STOREFRONT.promoted.map((c) => `storefront-${c}`).sort();
    const all = apps('storefront-').map((a) => a.metadata.name);
    expect(all).toHaveLength(12);
    expect(offered).toEqual(all.filter((a) => !promoted.includes(a)).sort());
    expect(plan.skipped.map((s) => [s.app, s.reason]).sort()).toEqual(
      promoted.map((a) => [a, 'Argo CD offers `abort` disabled now: fully promoted, nothing to abort']),
    );
    const paused = plan.waves[0].rollouts.find((r) => r.app === 'storefront-prod-us-east-1')!;
    expect(paused.before).toMatchObject({ strategy: 'canary', phase: 'Paused', step: 1, steps: 4, weight: 20 });
    expect(previewText(end)).toContain(
      'storefront-prod-us-east-1 · Rollout storefront · canary · Paused at step 1/4 · 20% of traffic',
    );

    const ops = await mutations(e);
    expect(ops.every((o) => o.method === 'POST' && o.path.endsWith('/resource/actions/v2'))).toBe(true);
    expect(ops.map((o) => [o.app, o.action, o.status]).sort()).toEqual(offered.map((a) => [a, 'abort', 200]));

    for (const app of offered) {
      const ro = await rolloutOf(e, app, 'storefront');
      expect(ro.status).toMatchObject({ abort: true, phase: 'Degraded' });
      expect(ro.status?.message).toMatch(/^RolloutAborted: Rollout aborted update to revision 7/);
    }
    for (const app of promoted) expect((await rolloutOf(e, app, 'storefront')).status?.phase).toBe('Healthy');

    const audit = await e.runs.audit.read({ runId: end.id, kinds: ['argocd.mutation'] });
    expect(audit.map((a) => [a.target, a.result]).sort()).toEqual(offered.map((a) => [`${INSTANCE}/${a}`, 'accepted']));
    const output = end.steps[0].output as { rollouts: { app: string; phase: string; message: string }[] };
    expect(output.rollouts.every((r) => r.phase === 'Degraded' && r.message.startsWith('RolloutAborted'))).toBe(true);
  });

  it('promote search-* promotes the blue-green Rollouts waiting for promotion (Argo CD resume) to Healthy', async () => {
    const e = await start();
    tick(e);
    const before = await rolloutOf(e, `search-${SEARCH.clusters[0]}`, 'search');
    const { end } = await runToEnd(e, 'promote search-*');
    expect(end.status, end.error).toBe('succeeded');
    expect(planOf(end)).toMatchObject({ verb: 'promote', action: 'resume', skipped: [] });
    const ops = await mutations(e);
    expect(ops.map((o) => [o.app, o.action, o.status]).sort()).toEqual(
      SEARCH.clusters.map((c) => [`search-${c}`, 'resume', 200]).sort(),
    );
    for (const c of SEARCH.clusters) {
      const ro = await rolloutOf(e, `search-${c}`, 'search');
      expect(ro.status).toMatchObject({ phase: 'Healthy', stableRS: before.status?.currentPodHash });
      expect(ro.status?.blueGreen?.activeSelector).toBe(before.status?.currentPodHash);
    }
  });

  it('promote storefront-* skips the Rollouts Argo CD does not offer resume on, and sends them nothing', async () => {
    const e = await start();
    tick(e);
    const { end } = await runToEnd(e, 'promote storefront-* concurrency=3');
    expect(end.status, end.error).toBe('succeeded');
    const plan = planOf(end);
    const skipped = new Map(plan.skipped.map((s) => [s.app, s.reason]));
    expect(skipped.get(`storefront-${STOREFRONT.degraded}`)).toBe(
      'Argo CD offers `resume` disabled now: not paused, nothing to promote (`promote … full=true` skips the remaining steps)',
    );
    for (const c of STOREFRONT.promoted)
      expect(skipped.get(`storefront-${c}`)).toBe(
        'Argo CD offers `resume` disabled now: not paused, nothing to promote (fully promoted)',
      );
    const sent = (await mutations(e)).map((o) => o.app);
    expect(sent).toHaveLength(9);
    expect(sent.some((a) => skipped.has(a!))).toBe(false);
    expect(new Set(sent).size).toBe(9);
    // Each promoted canary went on past its pause step.
    const ro = await rolloutOf(e, 'storefront-prod-us-east-1', 'storefront');
    expect(ro.status?.currentStepIndex).toBeGreaterThan(1);
  });

  it('retry storefront-* with nothing aborted is nothing to do: no run, nothing sent', async () => {
    const e = await start();
    const reply = await dispatch('retry storefront-*', e.ctx('U_OP'));
    const answer = okAnswer(reply, 'retry');
    expect(answer.data).toMatchObject({ nothingToDo: true });
    expect(answer.title + JSON.stringify(answer.data)).toContain('not aborted, nothing to retry');
    expect(await mutations(e)).toEqual([]);
  });
});

describe('each verb followed to where its action leads', () => {
  it('promote full=true, abort then retry, restart: each ends where Argo Rollouts takes it', async () => {
    const e = await start();
    tick(e);
    const app = 'storefront-prod-us-east-1';
    const full = await runToEnd(e, `promote ${app} full=true`);
    expect(full.end.status, full.end.error).toBe('succeeded');
    const promoted = await rolloutOf(e, app, 'storefront');
    expect(promoted.status).toMatchObject({ phase: 'Healthy', stableRS: promoted.status?.currentPodHash });

    const other = 'storefront-prod-eu-west-2';
    expect((await runToEnd(e, `abort ${other}`)).end.status).toBe('succeeded');
    const retried = await runToEnd(e, `retry ${other}`);
    expect(retried.end.status, retried.end.error).toBe('succeeded');
    const afterRetry = await rolloutOf(e, other, 'storefront');
    expect(afterRetry.status?.abort).toBeUndefined();
    expect(afterRetry.status?.phase).not.toBe('Degraded');

    const restarted = await runToEnd(e, `restart ${app}`);
    expect(restarted.end.status, restarted.end.error).toBe('succeeded');
    const ro = await rolloutOf(e, app, 'storefront');
    expect(ro.spec.restartAt).toBeDefined();
    expect(ro.status?.restartedAt).toBe(ro.spec.restartAt);

    expect((await mutations(e)).map((o) => [o.app, o.action, o.status])).toEqual([
      [app, 'promote-full', 200],
      [other, 'abort', 200],
      [other, 'retry', 200],
      [app, 'restart', 200],
    ]);
  });

  it('a Rollout that does not get there in time fails that app, naming where it stands', async () => {
    const e = await start();
    // The clock stands still: Argo CD takes the abort, the controller never acts on it.
    const { end } = await runToEnd(e, 'abort storefront-prod-us-east-1 timeout=2s');
    expect(end.status).toBe('failed');
    expect(end.error).toContain(
      'storefront-prod-us-east-1: Argo CD took abort, but the Rollout did not get there in time: canary · Paused at step 1/4',
    );
    expect((await mutations(e)).map((o) => o.action)).toEqual(['abort']);
  });
});

describe('offered when sent, not only when previewed', () => {
  it('a Rollout aborted by someone else after the preview is followed, not sent abort again, and the summary says so', async () => {
    const e = await start();
    tick(e);
    const preview = await dispatch('abort search-*', { ...e.ctx('U_OP'), assumeYes: false });
    const runId = (preview.data as { runId: string }).runId;
    const first = `search-${SEARCH.clusters[0]}`;
    const ref = {
      group: 'argoproj.io',
      version: 'v1alpha1',
      kind: 'Rollout',
      namespace: SEARCH.namespace,
      name: 'search',
    };
    await e.services.argocd.get(INSTANCE)!.runResourceAction({ name: first }, ref, 'abort');
    await e.runs.confirm(runId, 'U_OP');
    const end = await e.runs.waitForEnd(runId, 30_000);
    expect(end.status, end.error).toBe('succeeded');
    const summary = (end.steps[0].output as { summary: string[] }).summary;
    expect(summary.find((l) => l.startsWith(first))).toMatch(
      /Degraded.*\(abort already done by someone else; not sent\)$/,
    );
    const ops = await mutations(e);
    expect(ops.map((o) => [o.app, o.action]).sort()).toEqual(
      SEARCH.clusters.map((c) => [`search-${c}`, 'abort']).sort(),
    );
  });
});

describe('waves', () => {
  it('a wave whose Rollout does not get there ends the run: later waves are sent nothing', async () => {
    const e = await start();
    // The clock stands still, so the first wave's aborts never reach Degraded.
    const { end } = await runToEnd(e, 'abort storefront-* waves="*-us-east-*;*-eu-*" timeout=2s');
    expect(end.status).toBe('failed');
    expect(planOf(end).waves.map((w) => [w.name, w.rollouts.length])).toEqual([
      ['*-us-east-*', 2],
      ['*-eu-*', 4],
      ['(the rest)', 4],
    ]);
    expect(end.error).toContain('2 Rollouts of 2 did not get there; 8 in later waves not started');
    expect((await mutations(e)).map((o) => o.app).sort()).toEqual([
      'storefront-prod-us-east-1',
      'storefront-prod-us-east-2',
    ]);
  });
});

describe('sent once, whatever the answer', () => {
  it('an answer lost after Argo CD ran the action: seen on the Rollout, never sent again', async () => {
    const e = await start();
    tick(e);
    await simFault(e.sim, { kind: 'answerLost', match: '/resource/actions/v2', count: 3 });
    const { end } = await runToEnd(e, 'abort search-*');
    expect(end.status, end.error).toBe('succeeded');
    const ops = await mutations(e);
    expect(ops.map((o) => [o.app, o.action]).sort()).toEqual(
      SEARCH.clusters.map((c) => [`search-${c}`, 'abort']).sort(),
    );
    for (const c of SEARCH.clusters)
      expect((await rolloutOf(e, `search-${c}`, 'search')).status).toMatchObject({ abort: true, phase: 'Degraded' });
  });

  it(
    'a 503 before Argo CD ran it: sent again only after the posting window shows nothing of it on the Rollout',
    { timeout: 40_000 },
    async () => {
      const e = await start();
      tick(e);
      await simFault(e.sim, { kind: 'http5xx', status: 503, match: '/resource/actions/v2', count: 1 });
      const app = `search-${SEARCH.clusters[0]}`;
      const { end } = await runToEnd(e, `abort ${app}`);
      expect(end.status, end.error).toBe('succeeded');
      // The 503 never reached the simulated Argo CD: only the one POST that ran is in its log.
      const ops = await mutations(e);
      expect(ops.map((o) => [o.app, o.action, o.status])).toEqual([[app, 'abort', 200]]);
      const audit = await e.runs.audit.read({ runId: end.id, kinds: ['argocd.mutation'] });
      // Newest first: the 503 recorded, then the one that ran.
      expect(audit.map((a) => a.result)).toEqual(['accepted', 'error: unavailable']);
    },
  );
});

describe('refusals', () => {
  it('a token without the action grant: each Rollout refused once, the run failed with the RBAC line to add', async () => {
    const { fixture } = loadScenario('canary-rollouts');
    fixture.instances[0].accounts = [{ name: 'reader', token: 'reader-token', allow: ['applications, get, */*'] }];
    const e = await start(fixture);
    // rollcall's own client with the reader's token: it may read and list actions, not run them.
    const config = {
      ...e.services.config,
      instances: e.services.config.instances.map((i) => ({ ...i, token: 'reader-token' })),
    };
    e.services.argocd = createClients(config, { retry: { retries: 3, baseMs: 50, maxMs: 200 } });
    const { end } = await runToEnd(e, 'abort search-*');
    expect(end.status).toBe('failed');
    expect(end.error).toContain(
      `add \`p, role:rollcall, applications, action/argoproj.io/Rollout/abort, ${SEARCH.project}/search-${SEARCH.clusters[0]}, allow\` to argocd-rbac-cm`,
    );
    const ops = await mutations(e);
    expect(ops.map((o) => [o.app, o.action, o.status]).sort()).toEqual(
      SEARCH.clusters.map((c) => [`search-${c}`, 'abort', 403]).sort(),
    );
    for (const c of SEARCH.clusters)
      expect((await rolloutOf(e, `search-${c}`, 'search')).status?.abort).toBeUndefined();
  });

  it('a selector without Rollouts, and the wrong kind of pause, are answered with where to look', async () => {
    const e = await start();
    const none = await dispatch('abort storefrnt-*', e.ctx('U_OP'));
    expect(none.ok).toBe(false);
    expect(none.error?.code).toBe('unknown_target');
    const wrong = await dispatch('pause storefront-prod-us-east-1 kind=deployment', e.ctx('U_OP'));
    expect(wrong.error?.message).toContain('takes kind=rollout');
    const resume = await dispatch('resume storefront-*', e.ctx('U_OP'));
    expect(resume.error?.code).toBe('not_paused');
    expect(resume.error?.suggestions).toContain('resume storefront-* kind=rollout');
    expect(await mutations(e)).toEqual([]);
  });

  it('pause … kind=rollout pauses the canaries (Argo CD pause) and resume … kind=rollout lifts it', async () => {
    const e = await start();
    tick(e);
    const paused = await runToEnd(e, 'pause storefront-prod-us-east-1 kind=rollout');
    expect(paused.end.status, paused.end.error).toBe('succeeded');
    const ro = await rolloutOf(e, 'storefront-prod-us-east-1', 'storefront');
    expect(ro.spec.paused).toBe(true);
    const resumed = await runToEnd(e, 'resume storefront-prod-us-east-1 kind=rollout');
    expect(resumed.end.status, resumed.end.error).toBe('succeeded');
    expect((await mutations(e)).map((o) => o.action)).toEqual(['pause', 'resume']);
    expect((await rolloutOf(e, 'storefront-prod-us-east-1', 'storefront')).spec.paused).not.toBe(true);
  });
});
