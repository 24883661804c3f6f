import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import '../../src/commands/index.js';
import type { AuditEntry } from '../../src/domain/audit/audit-log.js';
import type { EngineHandle, RunService } from '../../src/domain/runbooks/engine.js';
import { UNKNOWN_SLACK_USER } from '../../src/surfaces/slack/authorize.js';
import { encodePageValue } from '../../src/views/blocks.js';
import { APPROVAL_RUNBOOK } from '../runbooks/harness.js';
import {
  blockActionsPayload,
  eventCallback,
  postEvent,
  postInteraction,
  postSlashCommand,
  signedPost,
} from '../support/slack-request.js';
import { smallFleetObjects } from './fixture.js';
import { botRoleEngine, startHarness, SECRET, type Harness } from './harness.js';
import { allText } from './limits.js';

const FORM = 'application/x-www-form-urlencoded';
const JSON_TYPE = 'application/json';
const settle = (ms = 300) => new Promise((r) => setTimeout(r, ms));

let h: Harness;
let engine: EngineHandle;
const runs = () => engine.runs as RunService;
const refusals = async (): Promise<AuditEntry[]> =>
  (await runs().audit.latest(200)).filter((e) => e.kind === 'run.refused');

// Promises rejected where nobody awaits them: what killed the bot. Vitest would also fail the run on one.
const strayRejections: unknown[] = [];
const onRejection = (reason: unknown) => void strayRejections.push(reason);

beforeAll(async () => {
  process.on('unhandledRejection', onRejection);
  h = await startHarness({
    fleet: smallFleetObjects(),
    channels: ['C0OPS'],
    access: { groups: { leads: ['U_LEAD'] }, operators: ['U0ALICE', 'U_REQ'], readers: ['U_AP1', 'U_AP2', 'U_LEAD'] },
    configure: botRoleEngine((e) => (engine = e)),
  });
});
afterAll(async () => {
  process.off('unhandledRejection', onRejection);
  await engine?.stop();
  await h?.stop();
});
beforeEach(() => h.fake.reset());
afterEach(() => expect(strayRejections).toEqual([]));

/** A normal signed `/argo help` from an allowed channel is answered: the bot is alive and serving. */
async function stillAnswers(id: string): Promise<void> {
  const res = await postSlashCommand(h.url, SECRET, { text: 'help', response_url: h.fake.responseUrl(id) });
  expect(res.status).toBe(200);
  await expect.poll(() => h.fake.responsesTo(id).length).toBe(1);
  expect(h.fake.responsesTo(id)[0].body.text).not.toBe('');
}

describe('signed bodies that are not a Slack request', () => {
  const payload = (json: string) => `payload=${encodeURIComponent(json)}`;
  const hostile: [string, string, string][] = [
    ['form payload=null', payload('null'), FORM],
    ['form payload=[]', payload('[]'), FORM],
    ['form payload=5', payload('5'), FORM],
    ['form payload="x"', payload('"x"'), FORM],
    ['form payload that is not JSON', payload('{"type":'), FORM],
    ['form with two payload fields', `${payload('{"type":"block_actions"}')}&${payload('{}')}`, FORM],
    ['form that is neither a command nor a payload', 'foo=bar', FORM],
    [
      'form payload whose channel is null',
      payload(JSON.stringify({ ...blockActionsPayload({ actionId: 'cmd', value: 'help' }), channel: null })),
      FORM,
    ],
    [
      'form payload whose actions are null',
      payload(JSON.stringify({ ...blockActionsPayload({ actionId: 'cmd', value: 'help' }), actions: null })),
      FORM,
    ],
    ['JSON null', 'null', JSON_TYPE],
    ['JSON []', '[]', JSON_TYPE],
    ['JSON "x"', '"x"', JSON_TYPE],
    ['JSON 5', '5', JSON_TYPE],
    ['invalid JSON', '{"type": "event_callback"', JSON_TYPE],
    ['JSON object without a type', '{}', JSON_TYPE],
    [
      'event_callback whose event is null',
      JSON.stringify({ type: 'event_callback', event_id: 'Ev0NULL', event: null }),
      JSON_TYPE,
    ],
  ];

  it.each(hostile)(
    'refuses %s with 400 before Bolt reads it, and still answers the next /argo command',
    async (name, body, contentType) => {
      const res = await signedPost(h.url, SECRET, body, contentType);
      expect(res.status).toBe(400);
      await stillAnswers(`after ${name}`);
    },
  );
});

describe('one authorization path for every Slack entry', () => {
  const press = async (actionId: string, value: string, user: string, channel: string) => {
    const id = `${actionId}-${user}-${channel}-${Math.random().toString(36).slice(2)}`;
    const res = await postInteraction(
      h.url,
      SECRET,
      blockActionsPayload({ actionId, value, user, channel, responseUrl: h.fake.responseUrl(id) }),
    );
    expect(res.status).toBe(200);
    await expect.poll(() => h.fake.responsesTo(id).length).toBe(1);
    return h.fake.responsesTo(id)[0].body;
  };

  it('refuses run buttons (approve, confirm, form) and cmd/page buttons from a channel outside slack.channels, and audits each', async () => {
    const guarded = await runs().start({
      runbook: APPROVAL_RUNBOOK.name,
      params: { selector: 'auth-config-*' },
      user: 'U_REQ',
      surface: 'slack',
      channel: 'C0OPS',
    });
    await runs().confirm(guarded.id, 'U_REQ');
    const preview = await runs().start({
      runbook: 'bulk-sync',
      params: { selector: 'web-prod-us1', includeSynced: 'true' },
      user: 'U0ALICE',
      surface: 'slack',
      channel: 'C0OPS',
    });

    for (const [actionId, value] of [
      ['run.approve', guarded.id],
      ['run.confirm', preview.id],
      ['run.form', preview.id],
      ['cmd', 'status'],
      ['page', encodePageValue({ command: 'status', page: 2 })],
    ]) {
      const answer = await press(actionId, value, actionId === 'run.approve' ? 'U_AP1' : 'U0ALICE', 'C0RANDOM');
      expect(allText(answer.blocks)).toContain('I only answer in #C0OPS');
    }
    expect((await runs().get(guarded.id))!).toMatchObject({ status: 'awaiting-approval', approvals: [] });
    expect((await runs().get(preview.id))!.status).toBe('awaiting-confirmation');
    const declined = (await refusals()).filter((e) => e.result === 'channel_not_allowed');
    expect(declined.map((e) => e.target).sort()).toEqual(['cmd', 'page', 'run.approve', 'run.confirm', 'run.form']);
    for (const e of declined)
      expect(e).toMatchObject({ surface: 'slack', params: { entry: 'action', channel: 'C0RANDOM' } });

    // The same approval from the channel the bot answers in counts: it was the channel that refused it.
    await press('run.approve', guarded.id, 'U_AP1', 'C0OPS');
    expect((await runs().get(guarded.id))!.approvals.map((a) => a.user)).toEqual(['U_AP1']);
    await runs().abort(guarded.id, 'U_REQ');
    await runs().cancel(preview.id, 'U0ALICE');
  });

  it('refuses a modal submitted from a modal opened in a foreign channel, and a message shortcut there, audited', async () => {
    const view = {
      id: 'V0FORM',
      type: 'modal',
      callback_id: 'form:run.form',
      private_metadata: JSON.stringify({ m: 'R-nothing', ch: 'C0RANDOM' }),
      state: { values: {} },
    };
    const submitted = await postInteraction(h.url, SECRET, {
      type: 'view_submission',
      team: { id: 'T0TEAM' },
      user: { id: 'U0ALICE' },
      api_app_id: 'A0ROLLCALL',
      view,
    });
    expect(submitted.status).toBe(200);
    const shortcut = await postInteraction(h.url, SECRET, {
      type: 'message_action',
      callback_id: 'add_to_incident_timeline',
      team: { id: 'T0TEAM' },
      user: { id: 'U0ALICE' },
      channel: { id: 'C0RANDOM', name: 'random' },
      message: { ts: '1700000000.000200', user: 'U0BOB', text: 'the pods restarted' },
      response_url: h.fake.responseUrl('shortcut'),
      trigger_id: '1.2.3',
    });
    expect(shortcut.status).toBe(200);
    await expect
      .poll(async () =>
        (await refusals())
          .filter((e) => e.result === 'channel_not_allowed' && e.params?.entry !== 'action')
          .map((e) => [e.target, e.params?.entry, e.params?.channel]),
      )
      .toEqual(
        expect.arrayContaining([
          ['form:run.form', 'view', 'C0RANDOM'],
          ['add_to_incident_timeline', 'shortcut', 'C0RANDOM'],
        ]),
      );
    await expect.poll(() => h.fake.responsesTo('shortcut').length).toBe(1);
    expect(allText(h.fake.responsesTo('shortcut')[0].body.blocks)).toContain('I only answer in #C0OPS');
  });

  it('refuses and audits a button, the Home tab and a command for a user in no access list', async () => {
    const answer = await press('cmd', 'status', 'U0OUTSIDER', 'C0OPS');
    expect(allText(answer.blocks)).toContain('may not query rollcall');
    await postEvent(
      h.url,
      SECRET,
      eventCallback({
        type: 'app_home_opened',
        user: 'U0OUTSIDER',
        channel: 'D0HOME',
        tab: 'home',
        event_ts: '1700000000.3',
      }),
    );
    await postSlashCommand(h.url, SECRET, {
      text: 'apps',
      user_id: 'U0OUTSIDER',
      response_url: h.fake.responseUrl('outsider'),
    });
    await expect.poll(() => h.fake.responsesTo('outsider').length).toBe(1);
    await expect
      .poll(async () => (await refusals()).filter((e) => e.who === 'U0OUTSIDER').map((e) => [e.target, e.result]))
      .toEqual(
        expect.arrayContaining([
          ['cmd', 'forbidden'],
          ['app_home_opened', 'forbidden'],
          ['apps', 'forbidden'],
        ]),
      );
    expect(h.fake.callsTo('views.publish')).toEqual([]);
  });
});

describe('requests that name no user', () => {
  it('refuses a slash command, a button, a modal submission and an event without a user with 400, audited under a placeholder actor', async () => {
    const command = new URLSearchParams({
      command: '/argo',
      text: 'status',
      channel_id: 'C0OPS',
      channel_name: 'ops',
      team_id: 'T0TEAM',
      response_url: h.fake.responseUrl('nobody'),
    });
    const withoutUser = {
      ...blockActionsPayload({
        actionId: 'run.approve',
        value: 'R-1',
        responseUrl: h.fake.responseUrl('nobody-button'),
      }),
      user: undefined,
    };
    const view = {
      type: 'view_submission',
      team: { id: 'T0TEAM' },
      view: { id: 'V0X', type: 'modal', callback_id: 'form:run.form', private_metadata: '', state: { values: {} } },
    };
    const statuses = [
      (await signedPost(h.url, SECRET, command.toString(), FORM)).status,
      (await postInteraction(h.url, SECRET, withoutUser)).status,
      (await postInteraction(h.url, SECRET, view)).status,
      (
        await postEvent(
          h.url,
          SECRET,
          eventCallback({ type: 'app_home_opened', tab: 'home', channel: 'D0HOME', event_ts: '1700000000.4' }),
        )
      ).status,
    ];
    expect(statuses).toEqual([400, 400, 400, 400]);
    // Read back through the audit reader, which skips entries it cannot decode: these decode.
    await expect
      .poll(async () =>
        (await runs().audit.read({ who: UNKNOWN_SLACK_USER, kinds: ['run.refused'] }))
          .map((e) => [e.target, e.params?.entry])
          .sort(),
      )
      .toEqual([
        ['app_home_opened', 'event'],
        ['form:run.form', 'view'],
        ['run.approve', 'action'],
        ['status', 'command'],
      ]);
    for (const e of await runs().audit.read({ who: UNKNOWN_SLACK_USER }))
      expect(e).toMatchObject({ surface: 'slack', result: 'user_missing' });
    await settle();
    expect(h.fake.responsesTo('nobody')).toEqual([]);
    expect(h.fake.responsesTo('nobody-button')).toEqual([]);
    await stillAnswers('after nobody');
  });
});
