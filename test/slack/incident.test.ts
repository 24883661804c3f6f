import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '../../src/commands/index.js';
import { ChangeLog } from '../../src/domain/incidents/change-log.js';
import { IncidentService } from '../../src/domain/incidents/service.js';
import { IncidentStore } from '../../src/domain/incidents/store.js';
import { closeRedis, createRedis } from '../../src/infra/redis.js';
import { seedOutageFixture } from '../../src/sim/scenarios/seed-outage.js';
import { postInteraction, postSlashCommand } from '../support/slack-request.js';
import { testPrefix } from '../runbooks/fake-argo.js';
import { startHarness, SECRET, type Harness } from './harness.js';
import { allText, expectWithinSlackLimits } from './limits.js';

const redis = createRedis(process.env.REDIS_URL!);
const prefix = testPrefix();
let h: Harness;

beforeAll(async () => {
  h = await startHarness({
    fleet: seedOutageFixture(new Date()).instances,
    redisPrefix: prefix,
    config: { incidents: { createChannel: true } },
    configure(services) {
      services.changes = new ChangeLog(redis, prefix);
      services.incidents = new IncidentService(new IncidentStore(redis, prefix), services.changes, services.fleet);
    },
  });
});

afterAll(async () => {
  await h?.stop();
  await closeRedis(redis);
});

function messageShortcut(p: {
  channel: string;
  ts: string;
  author: string;
  text: string;
  clicker: string;
  threadTs?: string;
}) {
  return {
    type: 'message_action',
    callback_id: 'add_to_incident_timeline',
    trigger_id: '1337.44.abcdef',
    action_ts: '1764820100.000001',
    team: { id: 'T0TEAM', domain: 'fake' },
    user: { id: p.clicker, name: p.clicker.toLowerCase(), team_id: 'T0TEAM' },
    channel: { id: p.channel, name: 'inc' },
    message_ts: p.ts,
    message: {
      type: 'message',
      user: p.author,
      ts: p.ts,
      text: p.text,
      ...(p.threadTs ? { thread_ts: p.threadTs } : {}),
    },
    response_url: h.fake.responseUrl('shortcut'),
    token: 'legacy-verification-token',
  };
}

describe('an incident in Slack (Bolt HTTP path, fake Web API)', () => {
  it('declares with its own channel and a header, takes a note by shortcut with the message time and author, and uploads the report to the thread', async () => {
    const started = await postSlashCommand(h.url, SECRET, {
      text: 'incident start auth-service crash-looping sev=1 scope=auth-service-*',
      response_url: h.fake.responseUrl('start'),
    });
    expect(started.status).toBe(200);
    await expect.poll(() => h.fake.responsesTo('start').length, { timeout: 10_000 }).toBe(1);
    const answer = h.fake.responsesTo('start')[0].body;
    expectWithinSlackLimits(answer);
    expect(allText(answer.blocks)).toMatch(/INC-\d+ · SEV1 · auth-service crash-looping/);

    // Its own channel, the declarer invited, the header posted there.
    const [create] = h.fake.callsTo('conversations.create');
    expect(create.args.name).toMatch(/^inc-\d+-auth-service-crash-looping$/);
    expect(h.fake.callsTo('conversations.invite')[0].args).toMatchObject({ channel: 'C0INC1', users: 'U0ALICE' });
    const [header] = h.fake.callsTo('chat.postMessage');
    expect(header.args.channel).toBe('C0INC1');
    expectWithinSlackLimits(header.args);
    expect(allText(header.args.blocks)).toContain('12 apps on 12 clusters');
    const headerTs = '1700000000.000001';

    // Bob's message in the incident channel, added by Alice: Bob's words, Bob's time. Twice is once.
    const ts = `${Math.floor(Date.now() / 1000) - 120}.000300`;
    const shortcut = messageShortcut({
      channel: 'C0INC1',
      ts,
      author: 'U0BOB',
      text: 'rolling back auth-config on us-east-1',
      clicker: 'U0ALICE',
    });
    expect((await postInteraction(h.url, SECRET, shortcut)).status).toBe(200);
    await expect.poll(() => h.fake.responsesTo('shortcut').length, { timeout: 10_000 }).toBe(1);
    expect(allText(h.fake.responsesTo('shortcut')[0].body.blocks)).toContain('Added to INC-');
    expect((await postInteraction(h.url, SECRET, { ...shortcut, trigger_id: '1337.45.abcdef' })).status).toBe(200);
    await expect.poll(() => h.fake.responsesTo('shortcut').length, { timeout: 10_000 }).toBe(2);
    expect(allText(h.fake.responsesTo('shortcut')[1].body.blocks)).toContain('already on');
    // The header was updated in place (same ts), not posted again.
    await expect
      .poll(() => h.fake.callsTo('chat.update').filter((c) => c.args.ts === headerTs).length, { timeout: 10_000 })
      .toBeGreaterThanOrEqual(1);
    expect(h.fake.callsTo('chat.postMessage')).toHaveLength(1);

    const incident = (await h.services.incidents!.open())[0];
    const notes = (await h.services.incidents!.timeline(incident)).filter((e) => e.kind === 'note');
    expect(notes).toEqual([
      expect.objectContaining({
        by: 'U0BOB',
        text: 'rolling back auth-config on us-east-1',
        at: new Date(Number(ts.split('.')[0]) * 1000 + 0.3).toISOString(),
      }),
    ]);

    // A long timeline, paginated within Block Kit limits, in the incident's thread.
    for (let i = 0; i < 60; i++)
      await h.services.incidents!.note(incident, `update ${i}: ${'x'.repeat(200)}`, 'U0CAROL');
    await postSlashCommand(h.url, SECRET, {
      text: 'incident timeline',
      channel_id: 'C0INC1',
      response_url: h.fake.responseUrl('timeline'),
    });
    // 1 declaration + 1 shortcut note + 60 notes = 62 entries: three pages of at most 25.
    await expect
      .poll(() => h.fake.callsTo('chat.postMessage').filter((c) => c.args.thread_ts === headerTs).length, {
        timeout: 10_000,
      })
      .toBe(3);
    const thread = h.fake.callsTo('chat.postMessage').filter((c) => c.args.thread_ts === headerTs);
    for (const message of thread) expectWithinSlackLimits(message.args);
    expect(thread.map((m) => allText(m.args.blocks).match(/page \d of 3/)?.[0])).toEqual([
      'page 1 of 3',
      'page 2 of 3',
      'page 3 of 3',
    ]);
    expect(allText(thread[2].args.blocks)).toContain('update 59');

    // The report: Markdown and PNG through files.uploadV2 into the thread.
    await postSlashCommand(h.url, SECRET, {
      text: 'incident report',
      channel_id: 'C0INC1',
      response_url: h.fake.responseUrl('report'),
    });
    await expect.poll(() => h.fake.callsTo('files.completeUploadExternal').length, { timeout: 15_000 }).toBe(1);
    const names = h.fake
      .callsTo('files.getUploadURLExternal')
      .map((c) => c.args.filename)
      .sort();
    expect(names).toEqual([`${incident.id}.md`, `${incident.id}.png`]);
    const complete = h.fake.callsTo('files.completeUploadExternal')[0].args;
    expect(complete).toMatchObject({ channel_id: 'C0INC1', thread_ts: headerTs });
    expect(complete.files).toHaveLength(2);
    const png = h.fake.uploads.find((u) =>
      u.body.includes(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
    );
    expect(png, 'the PNG bytes reached the upload URL').toBeDefined();
    await expect.poll(() => h.fake.responsesTo('report').length, { timeout: 10_000 }).toBe(1);
    expectWithinSlackLimits(h.fake.responsesTo('report')[0].body);
  }, 60_000);
});
