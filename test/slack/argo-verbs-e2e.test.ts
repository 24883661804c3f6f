import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Application, RevisionHistory } from '../../src/infra/argocd/types.js';
import { createClients } from '../../src/infra/argocd/client.js';
import '../../src/commands/index.js';
import { FleetMirror } from '../../src/fleet/mirror.js';
import { startEngine, type EngineHandle, type RunService } from '../../src/domain/runbooks/engine.js';
import { loadRunbooks, SHIPPED_RUNBOOKS_DIR } from '../../src/domain/runbooks/loader.js';
import type { Fixture } from '../../src/sim/fixture-types.js';
import { loadFixture } from '../../src/sim/fixture.js';
import type { SimServer } from '../../src/sim/server.js';
import { blockActionsPayload, postInteraction, postSlashCommand } from '../support/slack-request.js';
import { fixturePath, simOperations, startTestSim } from '../support/sim.js';
import { FAST } from '../runbooks/harness.js';
import { startHarness, SECRET, type Harness } from './harness.js';
import { allText, expectWithinSlackLimits } from './limits.js';

// The new Argo CD verbs through Bolt's real HTTP path: signed requests in, the fake Web API recording what
// the bot says, a simulator behind a real client and mirror, a worker on real Redis.
const INSTANCE = 'prod';
const APP = 'payments-prod-eu1';
const REV = {
  r5: '1111111111111111111111111111111111111111',
  r6: '2222222222222222222222222222222222222222',
  r7: '4b825dc642cb6eb9a060e54bf8d69288fbee4904',
};

function entry(id: number, revision: string, daysAgo: number): RevisionHistory {
  const at = new Date(Date.now() - daysAgo * 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z');
  return {
    id,
    revision,
    deployedAt: at,
    deployStartedAt: at,
    source: { repoURL: 'https://github.com/acme/deploy.git', path: 'apps/payments', targetRevision: 'main' },
    initiatedBy: { username: 'alice' },
  };
}

/** The multi-instance fixture with three deployments in payments-prod-eu1's history and two auth-config apps. */
function fixture(): Fixture {
  const f = loadFixture(fixturePath('sim-multi-instance.json'));
  const apps = f.instances.find((i) => i.name === INSTANCE)!.applications;
  const app = apps.find((a) => a.metadata.name === APP)!;
  app.status!.history = [entry(5, REV.r5, 9), entry(6, REV.r6, 5), entry(7, REV.r7, 2)];
  for (const cluster of ['prod-eu1', 'prod-us1']) {
    const copy = structuredClone(apps.find((a) => a.metadata.name === `payments-${cluster}`)!);
    copy.metadata.name = `auth-config-${cluster}`;
    copy.metadata.uid = `uid-auth-config-${cluster}`;
    apps.push(copy);
  }
  // A long history: more deployments than one Slack message lists.
  const long = apps.find((a) => a.metadata.name === 'ingress-prod-us1')!;
  long.status!.history = Array.from({ length: 60 }, (_, i) => entry(i + 1, String(i).padStart(40, 'a'), 60 - i));
  // A sync of this one runs for ten simulated minutes: long enough to be terminated.
  const slow = apps.find((a) => a.metadata.name === 'web-prod-us1')!;
  slow.metadata.annotations = { ...slow.metadata.annotations, 'sim.rollcall.io/sync-duration': '10m' };
  return f;
}

const buttonsOf = (body: any) =>
  (body.blocks ?? []).flatMap((b: any) => b.elements ?? []).filter((e: any) => e.type === 'button');

let sim: SimServer;
let h: Harness;
let engine: EngineHandle;
let worker: EngineHandle;
let mirror: FleetMirror;
const runs = () => engine.runs as RunService;
const simApp = (name: string): Application => sim.state.instance(INSTANCE)!.apps.get(name)!;

beforeAll(async () => {
  sim = await startTestSim({ fixture: fixture(), manual: false, speed: 20 });
  h = await startHarness({
    fleet: [],
    access: { operators: ['U0ALICE'] },
    config: { instances: sim.instances.map((i) => ({ name: i.name, url: i.url, token: i.token, timeout: 5000 })) },
    configure: async (services) => {
      const clients = createClients(services.config, {
        retry: { retries: 6, baseMs: 50, maxMs: 400, retryAfterCapMs: 500 },
      });
      mirror = new FleetMirror(
        clients,
        services.config.instances.map((i) => ({ name: i.name })),
        { relistDelayMs: 50, retryMs: 200 },
      );
      await mirror.start();
      services.fleet = mirror;
      services.argocd = clients;
      delete services.now;
      // The bot only queues; a worker on the same Redis runs the steps and keeps the run's message.
      const engineOpts = {
        redisUrl: process.env.REDIS_URL!,
        prefix: services.config.redis.prefix,
        runbooks: loadRunbooks(SHIPPED_RUNBOOKS_DIR),
        ...FAST,
      };
      engine = await startEngine(services, { role: 'bot', ...engineOpts });
      worker = await startEngine(services, { role: 'worker', ...engineOpts });
      services.runs = engine.runs;
      services.audit = engine.runs.audit;
    },
  });
}, 30_000);
afterAll(async () => {
  await worker?.stop();
  await engine?.stop();
  await h?.stop();
  mirror?.stop();
  await sim?.stop();
});
beforeEach(() => h.fake.reset());

async function slash(text: string, user = 'U0ALICE') {
  const id = `r-${Math.random().toString(36).slice(2)}`;
  const res = await postSlashCommand(h.url, SECRET, { text, user_id: user, response_url: h.fake.responseUrl(id) });
  expect(res.status).toBe(200);
  await expect.poll(() => h.fake.responsesTo(id).length, { timeout: 10_000 }).toBe(1);
  return h.fake.responsesTo(id)[0].body;
}

async function press(button: any, user: string) {
  const id = `b-${Math.random().toString(36).slice(2)}`;
  const res = await postInteraction(
    h.url,
    SECRET,
    blockActionsPayload({ actionId: button.action_id, value: button.value, user, responseUrl: h.fake.responseUrl(id) }),
  );
  expect(res.status).toBe(200);
  await expect.poll(() => h.fake.responsesTo(id).length, { timeout: 10_000 }).toBe(1);
  return h.fake.responsesTo(id)[0].body;
}

describe('/argo rollback in Slack', () => {
  it('previews, refuses a Confirm from a user who may not, then runs on Confirm with one live message updated in place, and audits both', async () => {
    const preview = await slash(`rollback ${APP}`);
    expectWithinSlackLimits(preview);
    expect(preview.response_type).toBe('ephemeral');
    const text = allText(preview.blocks);
    expect(text).toContain(`\`${REV.r7.slice(0, 7)}\``);
    expect(text).toContain(`\`${REV.r6.slice(0, 7)}\` (history #6`);
    const confirm = buttonsOf(preview).find((b: any) => b.text.text === 'Confirm');
    expect(confirm).toBeDefined();
    const [run] = await runs().list(5);
    expect(run).toMatchObject({ status: 'awaiting-confirmation', runbook: 'rollback' });
    expect(confirm.value).toBe(run.id);

    // Not an operator: refused, nothing runs, the refusal is in the audit log.
    const refused = await press(confirm, 'U0MALLORY');
    expect(refused.replace_original).toBe(false);
    expect(allText(refused.blocks)).toContain(`<@U0MALLORY> may not confirm run ${run.id}`);
    expect((await runs().get(run.id))!.status).toBe('awaiting-confirmation');
    const refusals = (await runs().audit.read({ runId: run.id })).filter((e) => e.who === 'U0MALLORY');
    expect(refusals).toEqual([
      expect.objectContaining({ kind: 'run.refused', target: 'run.confirm', result: 'forbidden', surface: 'slack' }),
    ]);

    const confirmed = await press(confirm, 'U0ALICE');
    expect(allText(confirmed.blocks)).toContain(`Confirmed \`${run.id}\``);
    const end = await runs().waitForEnd(run.id, 20_000);
    expect(end.status, end.error).toBe('succeeded');
    // The run's record can end before its summary reaches the live message: wait for that, then for delivery.
    await expect
      .poll(() => allText(h.fake.callsTo('chat.update').at(-1)?.args.blocks ?? []), { timeout: 10_000 })
      .toMatch(/succeeded/i);
    await h.slack.notifier.flush();

    // One live message in the channel, updated in place until the summary.
    const posts = h.fake.callsTo('chat.postMessage').filter((c) => c.args.channel === 'C0OPS');
    expect(posts).toHaveLength(1);
    const updates = h.fake.callsTo('chat.update');
    expect(updates.length).toBeGreaterThanOrEqual(1);
    const ts = (await runs().get(run.id))!.progressMessage!.ts;
    for (const u of updates) expect(u.args).toMatchObject({ channel: 'C0OPS', ts });
    for (const c of [...posts, ...updates]) expectWithinSlackLimits(c.args);
    const last = allText(updates.at(-1)!.args.blocks);
    expect(last).toMatch(/succeeded/i);
    expect(last).toContain(`Roll back an app ${run.id}: succeeded`);
    expect(last).toContain(`${APP} rolled back to #6 (revision ${REV.r6.slice(0, 7)})`);
    expect(last).not.toMatch(/Abort/);

    // The sim app ends on #6's revision, in a new history entry.
    const app = simApp(APP);
    expect(app.status!.history!.at(-1)).toMatchObject({ id: 8, revision: REV.r6 });
    expect(app.status!.operationState).toMatchObject({ phase: 'Succeeded', operation: { sync: { revision: REV.r6 } } });
    const rollbacks = (await simOperations(sim)).filter((o) => /\/rollback$/.test(o.path));
    expect(rollbacks).toHaveLength(1);
    const audit = await runs().audit.read({ runId: run.id });
    expect(audit.find((e) => e.kind === 'argocd.mutation')).toMatchObject({
      who: 'U0ALICE',
      target: `${INSTANCE}/${APP}`,
      result: 'accepted',
      params: { id: 6 },
    });
  }, 40_000);
});

describe('refusals', () => {
  it('refuses /argo rollback from a user who is not an operator: no run, the refusal audited', async () => {
    const before = (await runs().list(50)).length;
    const body = await slash(`rollback ${APP} 5`, 'U0MALLORY');
    expect(buttonsOf(body)).toEqual([]);
    expect(allText(body.blocks)).toContain('`rollback` changes the fleet; <@U0MALLORY> is not an operator.');
    expect((await runs().list(50)).length).toBe(before);
    const audit = (await runs().audit.latest(20)).filter((e) => e.who === 'U0MALLORY' && e.target === 'rollback');
    expect(audit).toEqual([
      expect.objectContaining({
        kind: 'run.refused',
        result: 'forbidden',
        surface: 'slack',
        params: { command: `rollback ${APP} 5` },
      }),
    ]);
  });

  it('refuses a refresh button pressed by a user who is not an operator: nothing refreshed, the refusal audited', async () => {
    const before = simApp('auth-config-prod-eu1').status?.reconciledAt;
    const body = await press({ action_id: 'cmd', value: 'refresh auth-config-* hard confirm=2' }, 'U0MALLORY');
    expect(allText(body.blocks)).toContain('`refresh` changes the fleet; <@U0MALLORY> is not an operator.');
    expect(simApp('auth-config-prod-eu1').status?.reconciledAt).toBe(before);
    const audit = (await runs().audit.latest(20)).filter((e) => e.who === 'U0MALLORY' && e.target === 'refresh');
    expect(audit).toEqual([
      expect.objectContaining({
        kind: 'run.refused',
        result: 'forbidden',
        surface: 'slack',
        params: { command: 'refresh auth-config-* hard confirm=2' },
      }),
    ]);
  });
});

describe('read-only verbs render within Slack limits', () => {
  it('/argo history APP', async () => {
    const body = await slash(`history ${APP}`);
    expectWithinSlackLimits(body);
    const text = allText(body.blocks);
    for (const r of [REV.r5, REV.r6, REV.r7]) expect(text).toContain(r.slice(0, 7));
    expect(text).toContain('#6');
  });

  it('/argo history of an app with 60 deployments', async () => {
    const body = await slash('history ingress-prod-us1');
    expectWithinSlackLimits(body);
    const text = allText(body.blocks);
    expect(text).toContain('*Deployments* (1–25 of 50)');
    expect(text).toContain('Page 1 of 2 · items 1–25 of 50');
    expect(text).toContain('The newest 50 are listed; the 10 older ones are in `argocd app history ingress-prod-us1`.');
    expect(text).not.toContain('narrow the selector');
    const more = buttonsOf(body).find((b: any) => b.action_id === 'page');
    const page2 = await press(more, 'U0ALICE');
    expectWithinSlackLimits(page2);
    const text2 = allText(page2.blocks);
    expect(text2).toContain('*#11*');
    expect(text2).not.toContain('*#10*');
    expect(text2).not.toContain('narrow the selector');
  });

  it('/argo diff APP', async () => {
    const body = await slash(`diff ${APP}`);
    expectWithinSlackLimits(body);
    expect(allText(body.blocks)).toContain(`Diff of ${APP}`);
    const diffs = {
      'payments-prod-us1': '*2 resources* differ from git',
      'ingress-prod-us1': '*1 resource* differs from git',
      'web-prod-us1': '*2 resources* differ from git',
    };
    for (const [other, says] of Object.entries(diffs)) {
      const diff = await slash(`diff ${other}`);
      expectWithinSlackLimits(diff);
      expect(allText(diff.blocks)).toContain(says);
    }
  });

  it('/argo logs APP tail=20', async () => {
    const body = await slash(`logs ${APP} tail=20`);
    expectWithinSlackLimits(body);
    const text = allText(body.blocks);
    expect(text).toContain('20 lines from 1 pod');
    expect(text.match(/request served/g)).toHaveLength(20);
    // More than one message holds: the newest lines, and a note of how many earlier ones were left out.
    const long = await slash(`logs ${APP} tail=500`);
    expectWithinSlackLimits(long);
    expect(allText(long.blocks)).toMatch(/earlier lines? not shown: too long for one Slack message/);
  });
});

describe('/argo refresh in Slack', () => {
  it('previews a selection, refreshes it hard on the button, moves reconciledAt and audits each app', async () => {
    const names = ['auth-config-prod-eu1', 'auth-config-prod-us1'];
    const before = Object.fromEntries(names.map((n) => [n, simApp(n).status?.reconciledAt]));
    const preview = await slash('refresh auth-config-* hard');
    expectWithinSlackLimits(preview);
    const previewText = allText(preview.blocks);
    expect(previewText).toContain('Hard-refresh 2 app(s)');
    // Slack's list rendering counts the items itself: the title says it once.
    expect(previewText).toContain('*Apps* (2)');
    expect(previewText).not.toMatch(/\(\d+\)\* \(\d+\)/);
    const go = buttonsOf(preview).find((b: any) => b.text.text === 'Refresh 2 apps');
    expect(go).toBeDefined();
    // The preview refreshed nothing.
    for (const n of names) expect(simApp(n).status?.reconciledAt).toBe(before[n]);
    await new Promise((r) => setTimeout(r, 1100)); // reconciledAt has second resolution

    const done = await press(go, 'U0ALICE');
    expectWithinSlackLimits(done);
    expect(allText(done.blocks)).toContain('2 of 2 app(s) compared again');
    for (const n of names) expect(simApp(n).status?.reconciledAt).not.toBe(before[n]);
    const audit = (await runs().audit.latest(50)).filter((e) => e.kind === 'argocd.refresh');
    expect(audit.map((e) => e.target).sort()).toEqual(names.map((n) => `${INSTANCE}/${n}`));
    for (const e of audit) expect(e).toMatchObject({ who: 'U0ALICE', params: { refresh: 'hard' }, result: 'ok' });
  }, 30_000);
});

describe('/argo terminate-op in Slack', () => {
  it('previews the running operation once-counted, and on Confirm terminates it: Failed "Operation terminated", audited', async () => {
    await h.services.argocd.get(INSTANCE)!.sync({ name: 'web-prod-us1' });
    await expect.poll(() => simApp('web-prod-us1').status?.operationState?.phase).toBe('Running');
    await expect
      .poll(() => h.services.fleet.appsNamed('web-prod-us1')[0]?.app.status?.operationState?.phase)
      .toBe('Running');
    const preview = await slash('terminate-op web-prod-us1');
    expectWithinSlackLimits(preview);
    const text = allText(preview.blocks);
    expect(text).toContain('*Operations to terminate* (1)');
    expect(text).toContain('*web-prod-us1* (prod-us1): Running');
    const confirm = buttonsOf(preview).find((b: any) => b.text.text === 'Confirm');
    await press(confirm, 'U0ALICE');
    const end = await runs().waitForEnd(confirm.value, 20_000);
    expect(end.status, end.error).toBe('succeeded');
    expect(simApp('web-prod-us1').status!.operationState).toMatchObject({
      phase: 'Failed',
      message: 'Operation terminated',
    });
    const audit = await runs().audit.read({ runId: end.id });
    expect(audit.find((e) => e.kind === 'argocd.mutation')).toMatchObject({
      who: 'U0ALICE',
      target: `${INSTANCE}/web-prod-us1`,
    });
  }, 30_000);
});
