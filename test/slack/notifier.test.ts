import { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RollcallError, isRollcallError } from '../../src/core/errors.js';
import type { Reply } from '../../src/core/reply.js';
import { SlackNotifier } from '../../src/surfaces/slack/notifier.js';
import { startFakeSlack, type FakeSlack } from '../support/fake-slack.js';
import { allText, expectWithinSlackLimits } from './limits.js';

const progress = (n: number): Reply => ({
  ok: true,
  command: 'run',
  title: `bulk-sync: ${n} synced`,
  data: { n },
  blocks: [{ kind: 'text', text: `synced ${n} of 540`, tone: 'progress' }],
});

let fake: FakeSlack;
beforeAll(async () => {
  fake = await startFakeSlack();
});
afterAll(async () => {
  await fake?.stop();
});
beforeEach(() => fake.reset());

const client = (extra: Record<string, unknown> = {}) =>
  new WebClient('xoxb-test', {
    slackApiUrl: fake.apiUrl,
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
    ...extra,
  });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('SlackNotifier', () => {
  it('posts in a thread and returns the message ref', async () => {
    const notifier = new SlackNotifier(client(), { minIntervalMs: 100 });
    const ref = await notifier.post({ channel: 'C0OPS', threadTs: '1700000000.000009' }, progress(0));
    expect(ref).toEqual({ channel: 'C0OPS', ts: '1700000000.000001', threadTs: '1700000000.000009' });
    const call = fake.callsTo('chat.postMessage')[0];
    expect(call.args).toMatchObject({ channel: 'C0OPS', thread_ts: '1700000000.000009' });
    expect(call.headers.authorization).toBe('Bearer xoxb-test');
    expectWithinSlackLimits(call.args);
    expect(allText(call.args.blocks)).toContain('synced 0 of 540');
    expect(notifier.counters.posts).toBe(1);
  });

  it('coalesces 10 rapid updates into at most 2 chat.update calls per window; the latest content wins', async () => {
    const interval = 300;
    const notifier = new SlackNotifier(client(), { minIntervalMs: interval });
    const ref = await notifier.post({ channel: 'C0OPS' }, progress(0));
    const started = Date.now();
    for (let i = 1; i <= 10; i++) {
      await notifier.update(ref, progress(i));
      await sleep(5);
    }
    await sleep(interval / 2);
    // Nothing yet inside the first window after the post; then exactly one update with the latest content.
    expect(fake.callsTo('chat.update').length).toBeLessThanOrEqual(1);
    await notifier.flush();
    const updates = fake.callsTo('chat.update');
    expect(updates.length).toBeGreaterThanOrEqual(1);
    expect(updates.length).toBeLessThanOrEqual(2);
    expect(updates.at(-1)!.args).toMatchObject({ channel: 'C0OPS', ts: ref.ts });
    expect(allText(updates.at(-1)!.args.blocks)).toContain('synced 10 of 540');
    expect(updates[0].at - started).toBeGreaterThanOrEqual(interval - 50);
    for (let i = 1; i < updates.length; i++)
      expect(updates[i].at - updates[i - 1].at).toBeGreaterThanOrEqual(interval - 20);
    expect(notifier.counters.updates).toBe(updates.length);
    expect(notifier.counters.coalesced).toBe(10 - updates.length);
  });

  it('spaces a steady stream of updates at least minIntervalMs apart', async () => {
    const interval = 120;
    const notifier = new SlackNotifier(client(), { minIntervalMs: interval });
    const ref = await notifier.post({ channel: 'C0OPS' }, progress(0));
    const started = Date.now();
    for (let i = 1; i <= 40; i++) {
      await notifier.update(ref, progress(i));
      await sleep(15);
    }
    await notifier.flush();
    const elapsed = Date.now() - started;
    const updates = fake.callsTo('chat.update');
    // ~600 ms of updates at one per 120 ms: a handful of calls, not 40. A loaded machine stretches the stream,
    // so the bound is what the time it really took allows: one per window, and the final flush.
    expect(updates.length).toBeGreaterThanOrEqual(3);
    expect(updates.length).toBeLessThanOrEqual(Math.floor(elapsed / interval) + 2);
    expect(updates.length).toBeLessThan(20);
    for (let i = 1; i < updates.length; i++)
      expect(updates[i].at - updates[i - 1].at).toBeGreaterThanOrEqual(interval - 20);
    expect(allText(updates.at(-1)!.args.blocks)).toContain('synced 40 of 540');
  });

  it('keeps separate windows per message', async () => {
    const notifier = new SlackNotifier(client(), { minIntervalMs: 200 });
    const a = await notifier.post({ channel: 'C0OPS' }, progress(0));
    const b = await notifier.post({ channel: 'C0OPS' }, progress(0));
    await notifier.update(a, progress(1));
    await notifier.update(b, progress(2));
    await notifier.flush();
    expect(
      fake
        .callsTo('chat.update')
        .map((c) => c.args.ts)
        .sort(),
    ).toEqual([a.ts, b.ts].sort());
  });

  it('waits out a 429 (Retry-After) on update and then sends the latest content', async () => {
    const notifier = new SlackNotifier(client(), { minIntervalMs: 50 });
    const ref = await notifier.post({ channel: 'C0OPS' }, progress(0));
    fake.rateLimit('chat.update', 1, 1);
    await sleep(60);
    await notifier.update(ref, progress(1));
    await sleep(150); // the first attempt is refused now
    await notifier.update(ref, progress(2)); // arrives while waiting out Retry-After
    const limitedAt = fake.calls.find((c) => c.method === 'chat.update' && c.rateLimited)!.at;
    await notifier.flush();
    const updates = fake.callsTo('chat.update');
    expect(updates).toHaveLength(1);
    expect(updates[0].at - limitedAt).toBeGreaterThanOrEqual(950);
    expect(allText(updates[0].args.blocks)).toContain('synced 2 of 540');
    expect(notifier.counters.rateLimited).toBe(1);
    expect(notifier.counters.updates).toBe(1);
  });

  it('with a default client (which waits out 429s itself) still sends only the latest content afterwards', async () => {
    const notifier = new SlackNotifier(
      client({ rejectRateLimitedCalls: false, retryConfig: { retries: 1, minTimeout: 0, maxTimeout: 0 } }),
      { minIntervalMs: 50 },
    );
    const ref = await notifier.post({ channel: 'C0OPS' }, progress(0));
    fake.rateLimit('chat.update', 1, 1);
    await sleep(60);
    await notifier.update(ref, progress(1));
    await sleep(100);
    for (let i = 2; i <= 6; i++) await notifier.update(ref, progress(i)); // while the client holds the first call
    await notifier.flush();
    const updates = fake.callsTo('chat.update');
    expect(updates.map((u) => allText(u.args.blocks))).toEqual([
      expect.stringContaining('synced 1 of 540'),
      expect.stringContaining('synced 6 of 540'),
    ]);
    expect(notifier.counters.rateLimited).toBe(1);
    expect(notifier.counters.coalesced).toBe(4);
  });

  it('waits out a 429 on post and retries', async () => {
    const notifier = new SlackNotifier(client(), { minIntervalMs: 50 });
    fake.rateLimit('chat.postMessage', 1, 1);
    const started = Date.now();
    const ref = await notifier.post({ channel: 'C0OPS' }, progress(0));
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(ref.ts).toBeTruthy();
    expect(fake.calls.filter((c) => c.method === 'chat.postMessage').map((c) => c.rateLimited)).toEqual([true, false]);
  });

  it('counts a failed update and keeps going with the next one', async () => {
    const notifier = new SlackNotifier(client(), { minIntervalMs: 30 });
    const ref = await notifier.post({ channel: 'C0OPS' }, progress(0));
    fake.failWith('chat.update', 'message_not_found');
    await notifier.update(ref, progress(1));
    await notifier.flush();
    expect(notifier.counters.errors).toBe(1);
    fake.failWith('chat.update', undefined);
    await notifier.update(ref, progress(2));
    await notifier.flush();
    expect(notifier.counters.updates).toBe(1);
  });
});

describe('SlackNotifier failures carry stable codes', () => {
  const failedPost = async (notifier: SlackNotifier, channel = 'C0GONE'): Promise<RollcallError> => {
    const error: unknown = await notifier.post({ channel }, progress(0)).then(
      () => expect.fail('post should have failed'),
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(RollcallError);
    return error as RollcallError;
  };

  it.each([
    [
      'channel_not_found',
      'slack_channel_not_found',
      /no channel C0GONE the bot can see .*invite the bot if the channel is private/,
    ],
    ['not_in_channel', 'slack_not_in_channel', /not a member of channel C0GONE .*\/invite the bot/],
    ['token_revoked', 'slack_auth_failed', /token_revoked.*update slack.botToken/],
    ['is_archived', 'slack_api_error', /Slack refused chat.postMessage in channel C0GONE: is_archived/],
  ])('maps Slack {ok:false, error:"%s"} on chat.postMessage to %s', async (slackError, code, message) => {
    fake.failWith('chat.postMessage', slackError);
    const error = await failedPost(new SlackNotifier(client()));
    expect(isRollcallError(error)).toBe(true);
    expect(error.code).toBe(code);
    expect(error.message).toMatch(message);
    expect(error.data).toEqual({ method: 'chat.postMessage', channel: 'C0GONE', slackError });
  });

  it('names the scope Slack says is missing (missing_scope with needed/provided) in slack_missing_scope', async () => {
    fake.failWith('chat.postMessage', 'missing_scope', {
      needed: 'chat:write.public',
      provided: 'chat:write,commands',
    });
    const error = await failedPost(new SlackNotifier(client()));
    expect(error.code).toBe('slack_missing_scope');
    expect(error.message).toContain('lacks the chat:write.public scope for chat.postMessage');
  });

  it('gives up on a 429 after maxRateLimitRetries with slack_rate_limited and the Retry-After it saw', async () => {
    fake.rateLimit('chat.postMessage', 3, 1);
    const started = Date.now();
    const error = await failedPost(new SlackNotifier(client(), { maxRateLimitRetries: 1 }), 'C0OPS');
    expect(error.code).toBe('slack_rate_limited');
    expect(error.message).toContain('last Retry-After 1s');
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(fake.calls.filter((c) => c.method === 'chat.postMessage').map((c) => c.rateLimited)).toEqual([true, true]);
  });

  it('maps a failed conversations.create to a RollcallError, not the Web API error', async () => {
    const error: unknown = await new SlackNotifier(client())
      .createChannel('Not A Valid Name', [])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RollcallError);
    if (!(error instanceof RollcallError)) return;
    expect(error.code).toBe('slack_api_error');
    expect(error.message).toContain('invalid_name_specials');
  });

  it('logs a failed live update with its stable code and Slack error', async () => {
    const warnings: { o: { err: { code?: string; error?: string } }; m?: string }[] = [];
    const logger = { warn: (o: never, m?: string) => warnings.push({ o, m }) } as unknown as Logger;
    const notifier = new SlackNotifier(client(), { minIntervalMs: 30, logger });
    const ref = await notifier.post({ channel: 'C0OPS' }, progress(0));
    fake.failWith('chat.update', 'not_in_channel');
    await notifier.update(ref, progress(1));
    await notifier.flush();
    expect(notifier.counters.errors).toBe(1);
    expect(warnings).toHaveLength(1);
    expect(warnings[0].m).toBe('slack message update failed');
    expect(warnings[0].o.err).toMatchObject({ code: 'slack_not_in_channel', error: 'not_in_channel' });
  });
});
