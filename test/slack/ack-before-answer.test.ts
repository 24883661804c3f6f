import type { AnyMiddlewareArgs } from '@slack/bolt';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { postSlashCommand } from '../support/slack-request.js';
import { smallFleetObjects } from './fixture.js';
import { startHarness, SECRET, type Harness } from './harness.js';

/**
 * The 200 of a slash command is written as soon as its request is verified: nothing Bolt does with it afterwards
 * (the authorization middleware, the listener, the answer and its POST) stands between the request and its ack.
 * Here Bolt's work is held on a gate the test opens, so a 200 that waited for it would never arrive while it is shut.
 */
describe('a slash command is acked before Bolt handles it', () => {
  let h: Harness;
  let gate: { release: () => void; released: Promise<void> };
  /** The commands Bolt's middleware saw, in order. */
  const seen: string[] = [];
  let rid = 0;

  beforeAll(async () => {
    h = await startHarness({
      fleet: smallFleetObjects(),
      channels: ['C0OPS'],
      access: { operators: [], admins: [], readers: ['U0ALICE', 'U0BOB'] },
    });
    // After the authorization middleware, before every listener: holds Bolt's handling of each slash command.
    h.slack.app.use(async ({ body, next }: AnyMiddlewareArgs & { next: () => Promise<void> }) => {
      const command = (body as { text?: string; command?: string }).command ? (body as { text: string }).text : '';
      if (command) {
        seen.push(command);
        await gate.released;
      }
      await next();
    });
  });
  afterAll(() => h?.stop());
  beforeEach(() => {
    seen.length = 0;
    let release!: () => void;
    gate = { release: () => {}, released: new Promise<void>((r) => (release = r)) };
    gate.release = release;
  });

  const ask = async (text: string, fields: { user_id?: string; channel_id?: string; channel_name?: string } = {}) => {
    const id = `ack-${++rid}`;
    const res = await postSlashCommand(h.url, SECRET, { text, response_url: h.fake.responseUrl(id), ...fields });
    return { status: res.status, body: res.body, id };
  };
  const answer = (id: string) => JSON.stringify(h.fake.responsesTo(id)[0]?.body ?? null);

  it('acks every command while the answers of the ones before it are held, then answers each', async () => {
    const first = await ask('status');
    expect(first).toMatchObject({ status: 200, body: '' });
    await expect.poll(() => seen).toEqual(['status']);
    // The first command's handling is stuck; the next requests are still acked.
    const more = await Promise.all([ask('help'), ask('status'), ask('help', { user_id: 'U0BOB' })]);
    expect(more.map((r) => r.status)).toEqual([200, 200, 200]);
    for (const r of [first, ...more]) expect(h.fake.responsesTo(r.id)).toEqual([]);
    gate.release();
    for (const r of [first, ...more]) await expect.poll(() => h.fake.responsesTo(r.id).length).toBe(1);
    expect(answer(first.id)).toContain('Fleet status');
    expect(answer(more[0].id)).toContain('help');
  });

  it('still refuses, after the ack, what the authorization path refuses: a channel outside slack.channels, a user who may not read', async () => {
    const elsewhere = await ask('status', { channel_id: 'C0RANDOM', channel_name: 'random' });
    const outsider = await ask('status', { user_id: 'U0MALLORY' });
    expect([elsewhere.status, outsider.status]).toEqual([200, 200]);
    gate.release();
    await expect.poll(() => h.fake.responsesTo(elsewhere.id).length).toBe(1);
    await expect.poll(() => h.fake.responsesTo(outsider.id).length).toBe(1);
    expect(answer(elsewhere.id)).toContain('I only answer in');
    expect(answer(outsider.id)).toContain('may not query rollcall');
    // Refused before any listener ran: the middleware behind the authorization one never saw them.
    expect(seen).toEqual([]);
  });

  it('acks nothing it could not verify: a bad signature, a replay or a stale timestamp get their 401 and reach no listener', async () => {
    const fields = { text: 'status', response_url: h.fake.responseUrl('ack-bad') };
    const forged = await postSlashCommand(h.url, SECRET, fields, { signature: 'v0=' + '0'.repeat(64) });
    const stale = await postSlashCommand(h.url, SECRET, fields, { timestamp: Math.floor(Date.now() / 1000) - 600 });
    const ts = Math.floor(Date.now() / 1000);
    const once = await postSlashCommand(h.url, SECRET, fields, { timestamp: ts });
    const replay = await postSlashCommand(h.url, SECRET, fields, { timestamp: ts });
    expect([forged.status, stale.status, once.status, replay.status]).toEqual([401, 401, 200, 401]);
    gate.release();
    await expect.poll(() => h.fake.responsesTo('ack-bad').length).toBe(1);
    expect(seen).toEqual(['status']);
  });
});
