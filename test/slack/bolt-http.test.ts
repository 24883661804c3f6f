import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import '../../src/commands/index.js';
import type { CommandContext } from '../../src/commands/registry.js';
import { registerTestAction, registerTestCommand } from '../support/replies.js';
import type { Reply } from '../../src/core/reply.js';
import { encodeModalMetadata, registerModalHandler } from '../../src/surfaces/slack/modals.js';
import { decodePageValue } from '../../src/views/blocks.js';
import {
  blockActionsPayload,
  eventCallback,
  postEvent,
  postInteraction,
  postSlashCommand,
  slackSignature,
  slashCommandBody,
} from '../support/slack-request.js';
import { smallFleetObjects } from './fixture.js';
import { startHarness, SECRET, type Harness } from './harness.js';
import { allText, expectWithinSlackLimits } from './limits.js';

// Commands that exist only in these tests: one that records it ran, one with a long list, one asking for a form.
const probeCalls: { text: string; user: string; channel?: string }[] = [];
registerTestCommand({
  name: 'probe',
  summary: 'test probe',
  usage: 'probe',
  readOnly: true,
  async run(cmd, ctx) {
    probeCalls.push({ text: cmd.raw, user: ctx.user, channel: ctx.channel });
    return {
      ok: true,
      command: 'probe',
      title: 'Probe',
      data: {},
      blocks: [{ kind: 'text', text: `probe ran for ${ctx.user}` }],
    };
  },
});
registerTestCommand({
  name: 'longlist',
  summary: 'a long list',
  usage: 'longlist N',
  readOnly: true,
  async run(cmd) {
    const n = Number(cmd.positional[0] ?? 120);
    return {
      ok: true,
      command: 'longlist',
      title: 'Long list',
      data: { n },
      blocks: [
        { kind: 'header', text: 'Long list' },
        {
          kind: 'list',
          title: 'Items',
          items: Array.from({ length: n }, (_, i) => ({
            text: `item-${i + 1}`,
            tone: 'ok' as const,
            detail: 'x'.repeat(150),
          })),
        },
      ],
    };
  },
});
const formSubmissions: { value: string; user: string; channel?: string }[] = [];
registerTestCommand({
  name: 'formprobe',
  summary: 'opens a form',
  usage: 'formprobe',
  readOnly: true,
  async run(_cmd, ctx: CommandContext) {
    const opened =
      (await ctx.openForm?.({
        action: 'test.form-submit',
        title: 'Bulk sync parameters that are far too long',
        metadata: 'runbook=bulk-sync',
        fields: [
          { name: 'selector', label: 'Selector', type: 'selector', required: true },
          { name: 'prune', label: 'Prune', type: 'bool', default: 'false' },
        ],
      })) ?? false;
    return {
      ok: true,
      command: 'formprobe',
      title: 'Form',
      data: { opened },
      blocks: [{ kind: 'text', text: opened ? 'Fill the form.' : 'no form' }],
    };
  },
});
registerTestAction({
  name: 'test.form-submit',
  validate(value) {
    const { values } = JSON.parse(value) as { values: Record<string, string> };
    return values.selector === 'bad(' ? { selector: 'not a selector' } : undefined;
  },
  async run(value, ctx) {
    formSubmissions.push({ value, user: ctx.user, channel: ctx.channel });
    return {
      ok: true,
      command: 'formprobe',
      title: 'Submitted',
      data: {},
      blocks: [{ kind: 'text', text: `got ${value}` }],
    };
  },
});
const approvals: { value: string; user: string }[] = [];
registerTestAction({
  name: 'test.approve',
  async run(value, ctx): Promise<Reply> {
    approvals.push({ value, user: ctx.user });
    if (ctx.user === 'U0MALLORY')
      return {
        ok: false,
        command: 'run',
        title: 'Refused',
        data: {},
        error: { code: 'forbidden', message: 'no' },
        blocks: [{ kind: 'text', text: ':x: You may not approve your own run.' }],
      };
    return {
      ok: true,
      command: 'run',
      title: 'Approved',
      data: {},
      blocks: [{ kind: 'text', text: `:white_check_mark: Approved by <@${ctx.user}>`, tone: 'ok' }],
    };
  },
});

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ fleet: smallFleetObjects() });
});
afterAll(async () => {
  await h?.stop();
});
beforeEach(() => {
  h.fake.reset();
  probeCalls.length = 0;
});

const settle = (ms = 150) => new Promise((r) => setTimeout(r, ms));

async function slash(text: string, extra: Record<string, string> = {}) {
  const id = `r-${Math.random().toString(36).slice(2)}`;
  const res = await postSlashCommand(h.url, SECRET, { text, response_url: h.fake.responseUrl(id), ...extra });
  return { res, id };
}

describe('request verification', () => {
  it('rejects a bad signature with 401 and runs nothing', async () => {
    const res = await postSlashCommand(
      h.url,
      SECRET,
      { text: 'probe', response_url: h.fake.responseUrl('bad') },
      { signature: slackSignature('wrong-secret', Math.floor(Date.now() / 1000), 'x') },
    );
    expect(res.status).toBe(401);
    await settle();
    expect(probeCalls).toEqual([]);
    expect(h.fake.responses).toEqual([]);
  });

  it('refuses a request signed more than 5 minutes ago with 401, and serves one signed 4 minutes ago', async () => {
    const signedAgo = (minutes: number) =>
      postSlashCommand(
        h.url,
        SECRET,
        { text: 'probe', response_url: h.fake.responseUrl(`signed-${minutes}-minutes-ago`) },
        { timestamp: Math.floor(Date.now() / 1000) - minutes * 60 },
      );
    expect((await signedAgo(6)).status).toBe(401);
    await settle();
    expect(probeCalls).toEqual([]);
    expect((await signedAgo(4)).status).toBe(200);
    await vi.waitFor(() => expect(probeCalls).toHaveLength(1));
  });

  it('refuses with 401, and runs nothing, every request whose signature is missing, malformed or not over this body', async () => {
    const body = slashCommandBody({ text: 'probe', response_url: h.fake.responseUrl('forged') });
    const ts = String(Math.floor(Date.now() / 1000));
    const good = slackSignature(SECRET, Number(ts), body);
    const hex = good.slice('v0='.length);
    const cases: [string, Record<string, string>, string?][] = [
      ['no signature', { 'x-slack-request-timestamp': ts }],
      ['no timestamp', { 'x-slack-signature': good }],
      ['a timestamp that is no number', { 'x-slack-request-timestamp': 'soon', 'x-slack-signature': good }],
      [
        'another timestamp than the one signed',
        { 'x-slack-request-timestamp': String(Number(ts) - 1), 'x-slack-signature': good },
      ],
      ['another version', { 'x-slack-request-timestamp': ts, 'x-slack-signature': `v1=${hex}` }],
      ['no version', { 'x-slack-request-timestamp': ts, 'x-slack-signature': hex }],
      ['the hash in capitals', { 'x-slack-request-timestamp': ts, 'x-slack-signature': `v0=${hex.toUpperCase()}` }],
      ['the hash cut short', { 'x-slack-request-timestamp': ts, 'x-slack-signature': good.slice(0, -2) }],
      [
        'the signature of another body',
        { 'x-slack-request-timestamp': ts, 'x-slack-signature': slackSignature(SECRET, Number(ts), `${body}&x=1`) },
      ],
      [
        'a query string on the endpoint',
        { 'x-slack-request-timestamp': ts, 'x-slack-signature': 'v0=00' },
        '?via=proxy',
      ],
    ];
    for (const [what, headers, query] of cases) {
      const res = await fetch(`${h.url}${query ?? ''}`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      });
      expect(res.status, what).toBe(401);
    }
    const signed = await fetch(h.url, {
      method: 'POST',
      body,
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-slack-request-timestamp': ts,
        'x-slack-signature': good,
      },
    });
    expect(signed.status, 'the same request signed').toBe(200);
    await vi.waitFor(() => expect(probeCalls).toHaveLength(1));
    await settle();
    expect(probeCalls).toHaveLength(1);
  });

  it("acks Slack's unsigned ssl_check with 200 and runs nothing it carries", async () => {
    const smuggled = `ssl_check=1&${slashCommandBody({ text: 'probe', response_url: h.fake.responseUrl('smuggled') })}`;
    const res = await fetch(h.url, {
      method: 'POST',
      body: smuggled,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(200);
    await settle();
    expect(probeCalls).toEqual([]);
    expect(h.fake.responses).toEqual([]);
  });

  it('answers url_verification with the challenge', async () => {
    const res = await postEvent(h.url, SECRET, { type: 'url_verification', token: 't', challenge: 'chal-123' });
    expect(res.status).toBe(200);
    expect(res.body).toContain('chal-123');
  });
});

describe('/argo', () => {
  it('acks status at once and answers ephemerally through response_url with the fleet counts', async () => {
    const { res, id } = await slash('status');
    expect(res.status).toBe(200);
    expect(res.ms).toBeLessThan(1000);
    await expect.poll(() => h.fake.responsesTo(id).length).toBe(1);
    const answer = h.fake.responsesTo(id)[0].body;
    expect(answer.response_type).toBe('ephemeral');
    expectWithinSlackLimits(answer);
    const text = allText(answer.blocks);
    expect(text).toContain('Fleet status');
    expect(text).toMatch(/\b5\b.*2 clusters/);
    expect(text).toContain('auth-service-prod-us1');
    expect(text).toContain('*auth-config* · OutOfSync on prod-us1');
    expect(text).not.toContain('web-prod-us1'); // healthy apps are not problems
    expect(text).toContain('Back-off restarting failed container');
    expect(text).toContain(':x:');
    // The handler never talks to Argo CD: the answer came from the fleet view and no Web API call was needed.
    expect(h.fake.calls.filter((c) => c.method !== 'auth.test')).toEqual([]);
  });

  it("acks 50 concurrent slash commands inside Slack's 3 s, and answers every one", async () => {
    // The test client shares the event loop with Bolt, so this bounds the ack, it does not benchmark it
    // (bench/ measures latency out of process).
    const all = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        postSlashCommand(h.url, SECRET, { text: 'status', response_url: h.fake.responseUrl(`c${i}`) }),
      ),
    );
    expect(all.map((r) => r.status)).toEqual(Array(50).fill(200));
    expect(Math.max(...all.map((r) => r.ms))).toBeLessThan(2500);
    await expect.poll(() => h.fake.responses.length, { timeout: 5000 }).toBe(50);
    for (const r of h.fake.responses) expect(allText(r.body.blocks)).toContain('Fleet status');
  });

  it('answers in the channel with --public, without passing the flag to the command', async () => {
    const { id } = await slash('probe --public');
    await expect.poll(() => h.fake.responsesTo(id).length).toBe(1);
    expect(h.fake.responsesTo(id)[0].body.response_type).toBe('in_channel');
    expect(probeCalls).toEqual([{ text: 'probe', user: 'U0ALICE', channel: 'C0OPS' }]);
  });

  it('turns an unknown command into an ephemeral error with suggestions', async () => {
    const { id } = await slash('stauts');
    await expect.poll(() => h.fake.responsesTo(id).length).toBe(1);
    const text = allText(h.fake.responsesTo(id)[0].body.blocks);
    expect(text).toContain('Unknown command');
    expect(text).toContain('status');
  });

  it('paginates a long list with a More button that shows the next page in place', async () => {
    const { id } = await slash('longlist 120');
    await expect.poll(() => h.fake.responsesTo(id).length).toBe(1);
    const first = h.fake.responsesTo(id)[0].body;
    expectWithinSlackLimits(first);
    const firstText = allText(first.blocks);
    expect(firstText).toContain('item-1\n');
    expect(firstText).toContain('item-25');
    expect(firstText).not.toContain('item-26');
    const more = first.blocks.flatMap((b: any) => b.elements ?? []).find((e: any) => e.action_id === 'page');
    expect(more.text.text).toBe('More (page 2/5)');
    expect(decodePageValue(more.value)).toEqual({ command: 'longlist 120', page: 2 });

    const pageId = 'page-resp';
    const res = await postInteraction(
      h.url,
      SECRET,
      blockActionsPayload({ actionId: more.action_id, value: more.value, responseUrl: h.fake.responseUrl(pageId) }),
    );
    expect(res.status).toBe(200);
    await expect.poll(() => h.fake.responsesTo(pageId).length).toBe(1);
    const second = h.fake.responsesTo(pageId)[0].body;
    expect(second.replace_original).toBe(true);
    expectWithinSlackLimits(second);
    const secondText = allText(second.blocks);
    expect(secondText).toContain('item-26');
    expect(secondText).toContain('item-50');
    expect(secondText).not.toContain('item-51');
    expect(secondText).toContain('Page 2 of 5');
  });
});

describe('channel restriction', () => {
  let restricted: Harness;
  beforeAll(async () => {
    restricted = await startHarness({ fleet: smallFleetObjects(), channels: ['C0INCIDENT', '#ops-argo'] });
  });
  afterAll(async () => {
    await restricted?.stop();
  });

  it('declines politely elsewhere, naming the channels where it answers, and runs nothing', async () => {
    const id = 'decline';
    await postSlashCommand(restricted.url, SECRET, {
      text: 'probe',
      channel_id: 'C0RANDOM',
      channel_name: 'random',
      response_url: restricted.fake.responseUrl(id),
    });
    await expect.poll(() => restricted.fake.responsesTo(id).length).toBe(1);
    const answer = restricted.fake.responsesTo(id)[0].body;
    expect(answer.response_type).toBe('ephemeral');
    const text = allText(answer.blocks);
    expect(text).toContain('<#C0INCIDENT>');
    expect(text).toContain('#ops-argo');
    expect(probeCalls).toEqual([]);
  });

  it('answers in an allowed channel, by id or by name', async () => {
    await postSlashCommand(restricted.url, SECRET, {
      text: 'probe',
      channel_id: 'C0INCIDENT',
      response_url: restricted.fake.responseUrl('ok1'),
    });
    await postSlashCommand(restricted.url, SECRET, {
      text: 'probe',
      channel_id: 'C0OTHER',
      channel_name: 'ops-argo',
      response_url: restricted.fake.responseUrl('ok2'),
    });
    await expect.poll(() => probeCalls.length).toBe(2);
  });
});

describe('buttons', () => {
  it('runs a command button as the user who pressed it and answers in a new ephemeral message', async () => {
    const id = 'cmd-resp';
    const res = await postInteraction(
      h.url,
      SECRET,
      blockActionsPayload({
        actionId: 'cmd',
        value: 'status auth-*',
        user: 'U0BOB',
        responseUrl: h.fake.responseUrl(id),
      }),
    );
    expect(res.status).toBe(200);
    await expect.poll(() => h.fake.responsesTo(id).length).toBe(1);
    const answer = h.fake.responsesTo(id)[0].body;
    expect(answer.replace_original).toBe(false);
    expect(answer.response_type).toBe('ephemeral');
    const text = allText(answer.blocks);
    expect(text).toContain('auth-service-prod-us1');
    expect(text).not.toContain('payments');
  });

  it('runs the second command button of a block (suffixed action id) too', async () => {
    const id = 'cmd2';
    await postInteraction(
      h.url,
      SECRET,
      blockActionsPayload({ actionId: 'cmd~1', value: 'probe', user: 'U0BOB', responseUrl: h.fake.responseUrl(id) }),
    );
    await expect.poll(() => probeCalls).toEqual([{ text: 'probe', user: 'U0BOB', channel: 'C0OPS' }]);
  });

  it('runs a named action and replaces the message with its reply; a refusal leaves the message alone', async () => {
    await postInteraction(
      h.url,
      SECRET,
      blockActionsPayload({
        actionId: 'test.approve',
        value: 'run-42',
        user: 'U0CAROL',
        responseUrl: h.fake.responseUrl('approve'),
      }),
    );
    await expect.poll(() => h.fake.responsesTo('approve').length).toBe(1);
    const ok = h.fake.responsesTo('approve')[0].body;
    expect(ok.replace_original).toBe(true);
    expect(allText(ok.blocks)).toContain('Approved by <@U0CAROL>');
    expect(approvals.at(-1)).toEqual({ value: 'run-42', user: 'U0CAROL' });

    await postInteraction(
      h.url,
      SECRET,
      blockActionsPayload({
        actionId: 'test.approve',
        value: 'run-42',
        user: 'U0MALLORY',
        responseUrl: h.fake.responseUrl('refuse'),
      }),
    );
    await expect.poll(() => h.fake.responsesTo('refuse').length).toBe(1);
    const refused = h.fake.responsesTo('refuse')[0].body;
    expect(refused.replace_original).toBe(false);
    expect(allText(refused.blocks)).toContain('may not approve');
  });

  it('opens a modal when a command button is pressed in the Home tab', async () => {
    await postInteraction(
      h.url,
      SECRET,
      blockActionsPayload({
        actionId: 'cmd',
        value: 'status',
        view: { id: 'VHOME', type: 'home' },
        triggerId: 'trig-home',
      }),
    );
    await expect.poll(() => h.fake.callsTo('views.open').length).toBe(1);
    const call = h.fake.callsTo('views.open')[0];
    expect(call.args.trigger_id).toBe('trig-home');
    expect(call.args.view.type).toBe('modal');
    expect(call.args.view.title.text.length).toBeLessThanOrEqual(24);
    expect(allText(call.args.view.blocks)).toContain('auth-service-prod-us1');
    expectWithinSlackLimits({ text: 'x', blocks: call.args.view.blocks }, 100);
  });
});

describe('forms', () => {
  it('opens a modal for a form and runs the action with the submitted values, answering on the response_url', async () => {
    const { id } = await slash('formprobe', { trigger_id: 'trig-form' });
    await expect.poll(() => h.fake.callsTo('views.open').length).toBe(1);
    const view = h.fake.callsTo('views.open')[0].args.view;
    expect(h.fake.callsTo('views.open')[0].args.trigger_id).toBe('trig-form');
    expect(view.callback_id).toBe('form:test.form-submit');
    expect(view.title.text.length).toBeLessThanOrEqual(24);
    expect(view.blocks.map((b: any) => b.block_id)).toEqual(['selector', 'prune']);
    await expect.poll(() => h.fake.responsesTo(id).length).toBe(1);
    expect(allText(h.fake.responsesTo(id)[0].body.blocks)).toContain('Fill the form.');

    const submission = {
      type: 'view_submission',
      team: { id: 'T0TEAM' },
      user: { id: 'U0ALICE' },
      api_app_id: 'A0ROLLCALL',
      token: 't',
      trigger_id: 'trig-2',
      view: {
        id: 'V1',
        type: 'modal',
        callback_id: view.callback_id,
        private_metadata: view.private_metadata,
        state: {
          values: {
            selector: { value: { type: 'plain_text_input', value: 'auth-config-*' } },
            prune: { value: { type: 'static_select', selected_option: { value: 'true' } } },
          },
        },
      },
    };
    // A value the form's action rejects comes back in the ack: the modal stays open with the field marked.
    const bad = structuredClone(submission);
    bad.view.state.values.selector.value.value = 'bad(';
    const refused = await postInteraction(h.url, SECRET, bad);
    expect(refused.status).toBe(200);
    expect(refused.json).toEqual({ response_action: 'errors', errors: { selector: 'not a selector' } });
    expect(formSubmissions).toHaveLength(0);

    const res = await postInteraction(h.url, SECRET, submission);
    expect(res.status).toBe(200);
    await expect.poll(() => formSubmissions.length).toBe(1);
    expect(JSON.parse(formSubmissions[0].value)).toEqual({
      metadata: 'runbook=bulk-sync',
      values: { selector: 'auth-config-*', prune: 'true' },
    });
    expect(formSubmissions[0]).toMatchObject({ user: 'U0ALICE', channel: 'C0OPS' });
    await expect.poll(() => h.fake.responsesTo(id).length).toBe(2);
    expect(allText(h.fake.responsesTo(id)[1].body.blocks)).toContain('auth-config-*');
  });
});

describe('modal handlers', () => {
  const submitted: { values: Record<string, string>; metadata: string; channel?: string }[] = [];
  registerModalHandler('test.restore-keys', {
    validate: (values) =>
      /^[a-z0-9-]+$/.test(values.cluster ?? '')
        ? undefined
        : { cluster: 'Use the Argo CD cluster name, e.g. prod-eu1.' },
    async submit(sub, ctx) {
      submitted.push({ values: sub.values, metadata: sub.metadata, channel: ctx.channel });
      return {
        ok: true,
        command: 'run',
        title: 'Queued',
        data: {},
        blocks: [{ kind: 'text', text: `restore on ${sub.values.cluster} queued` }],
      };
    },
  });
  const submission = (cluster: string) => ({
    type: 'view_submission',
    team: { id: 'T0TEAM' },
    user: { id: 'U0ALICE' },
    api_app_id: 'A0ROLLCALL',
    token: 't',
    trigger_id: 'trig-3',
    view: {
      id: 'V9',
      type: 'modal',
      callback_id: 'test.restore-keys',
      private_metadata: encodeModalMetadata('sealed-secrets', { channel: 'C0OPS' }),
      state: { values: { cluster: { value: { type: 'plain_text_input', value: cluster } } } },
    },
  });

  it('shows validation errors in the modal through the ack, and runs nothing', async () => {
    const res = await postInteraction(h.url, SECRET, submission('Prod EU'));
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      response_action: 'errors',
      errors: { cluster: 'Use the Argo CD cluster name, e.g. prod-eu1.' },
    });
    await settle();
    expect(submitted).toEqual([]);
  });

  it('runs the handler and answers ephemerally in the channel the modal came from when there is no response_url', async () => {
    const res = await postInteraction(h.url, SECRET, submission('prod-eu1'));
    expect(res.status).toBe(200);
    expect(res.body).toBe('');
    await expect.poll(() => h.fake.callsTo('chat.postEphemeral').length).toBe(1);
    expect(submitted).toEqual([{ values: { cluster: 'prod-eu1' }, metadata: 'sealed-secrets', channel: 'C0OPS' }]);
    const call = h.fake.callsTo('chat.postEphemeral')[0];
    expect(call.args).toMatchObject({ channel: 'C0OPS', user: 'U0ALICE' });
    expect(allText(call.args.blocks)).toContain('restore on prod-eu1 queued');
  });
});

describe('App Home', () => {
  it('publishes the fleet summary and the rollouts in flight when the Home tab opens', async () => {
    const res = await postEvent(
      h.url,
      SECRET,
      eventCallback({
        type: 'app_home_opened',
        user: 'U0ALICE',
        channel: 'D0HOME',
        tab: 'home',
        event_ts: '1700000000.1',
      }),
    );
    expect(res.status).toBe(200);
    await expect.poll(() => h.fake.callsTo('views.publish').length).toBe(1);
    const call = h.fake.callsTo('views.publish')[0];
    expect(call.args.user_id).toBe('U0ALICE');
    expect(call.args.view.type).toBe('home');
    expectWithinSlackLimits({ text: 'home', blocks: call.args.view.blocks }, 100);
    const text = allText(call.args.view.blocks);
    expect(text).toContain('5 on 2 clusters');
    expect(text).toContain('Degraded 1');
    // Worst clusters: only prod-us1 has problem apps.
    expect(text).toContain('*prod-us1* — 4 apps');
    expect(text).not.toContain('*prod-eu1*');
    expect(text).toContain('<https://argocd.example/applicationsets/payments|payments> — step 2 of 2');
    const buttons = call.args.view.blocks.flatMap((b: any) => (b.type === 'actions' ? b.elements : []));
    expect(buttons.map((b: any) => b.value)).toContain('rollout payments');
  });

  it('ignores app_home_opened for the messages tab', async () => {
    await postEvent(
      h.url,
      SECRET,
      eventCallback({
        type: 'app_home_opened',
        user: 'U0ALICE',
        channel: 'D0HOME',
        tab: 'messages',
        event_ts: '1700000000.2',
      }),
    );
    await settle();
    expect(h.fake.callsTo('views.publish')).toEqual([]);
  });
});
