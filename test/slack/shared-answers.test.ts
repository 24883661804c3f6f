import { connect } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { dispatch } from '../../src/commands/index.js';
import type { Services } from '../../src/commands/registry.js';
import { SHARED_ANSWER_MS } from '../../src/commands/shared-answers.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { configSchema } from '../../src/infra/config/schema.js';
import { registerTestCommand } from '../support/replies.js';
import { postSlashCommand } from '../support/slack-request.js';
import { smallFleetObjects } from './fixture.js';
import { startHarness, SECRET, type Harness } from './harness.js';

/**
 * A shared command whose answer the test releases: it counts how often it is computed, and each computation
 * waits for `release()`, so an ack that arrives while it waits cannot have waited for it.
 */
const runs: { user: string; text: string }[] = [];
let gate = open();
/** Called as a computation starts: a test makes the mirror change right then, as a watch event would. */
let onRun: (() => void) | undefined;
function open() {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  return { release, released };
}
registerTestCommand({
  name: 'sharedslow',
  summary: 'a shared answer that takes as long as the test says',
  usage: 'sharedslow [word]',
  readOnly: true,
  sharedAnswer: true,
  async run(cmd, ctx) {
    // Which computation this is, counted when it starts: two running at once each say their own.
    const computed = runs.push({ user: ctx.user, text: cmd.raw });
    onRun?.();
    await gate.released;
    return {
      ok: true,
      command: 'sharedslow',
      title: 'Shared',
      data: { computed },
      blocks: [{ kind: 'text', text: `computed ${computed} time(s) for ${cmd.positional.join(' ') || 'all'}` }],
    };
  },
});

describe('answers shared between askers, through Bolt’s HTTP receiver', () => {
  let h: Harness;
  const t0 = new Date('2026-12-02T18:00:00Z').getTime();
  let nowMs = t0;
  let id = 0;

  beforeAll(async () => {
    h = await startHarness({
      fleet: smallFleetObjects(),
      access: { operators: ['U0OPS'], admins: [], readers: ['U0ALICE', 'U0BOB', 'U0OPS'] },
    });
    h.services.now = () => new Date(nowMs);
  });
  afterAll(() => h?.stop());
  beforeEach(() => {
    runs.length = 0;
    gate = open();
    onRun = undefined;
    // Each test starts past the previous one's shared answers.
    nowMs += 10 * SHARED_ANSWER_MS;
  });

  /** Fires a signed slash command; resolves with the HTTP status and the response_url id its answer goes to. */
  async function ask(user: string, text: string): Promise<{ status: number; id: string }> {
    const rid = `shared-${++id}`;
    const res = await postSlashCommand(h.url, SECRET, {
      text,
      user_id: user,
      response_url: h.fake.responseUrl(rid),
    });
    return { status: res.status, id: rid };
  }
  const answerText = (rid: string) => JSON.stringify(h.fake.responsesTo(rid)[0]?.body ?? null);

  it('acks every asker before the answer is done, computes it once and sends it to each', async () => {
    const asked = await Promise.all(['U0ALICE', 'U0BOB', 'U0ALICE'].map((u) => ask(u, 'sharedslow')));
    // All three have their 200 while the one computation still waits to be released.
    expect(asked.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(asked.every((a) => h.fake.responsesTo(a.id).length === 0)).toBe(true);
    await expect.poll(() => runs.length).toBe(1);
    gate.release();
    for (const a of asked) await expect.poll(() => h.fake.responsesTo(a.id).length).toBe(1);
    expect(runs).toHaveLength(1);
    for (const a of asked) expect(answerText(a.id)).toContain('computed 1 time(s) for all');
  });

  it('serves a finished answer again at the same mirror version, and recomputes once the mirror changes', async () => {
    gate.release();
    const first = await ask('U0ALICE', 'sharedslow');
    await expect.poll(() => h.fake.responsesTo(first.id).length).toBe(1);
    const again = await ask('U0BOB', 'sharedslow');
    await expect.poll(() => h.fake.responsesTo(again.id).length).toBe(1);
    expect(runs).toHaveLength(1);

    // One app changes: the same question now has a new answer.
    const fleet = h.services.fleet as StaticFleet;
    fleet.upsertApp({ ...fleet.apps()[0] });
    const afterChange = await ask('U0BOB', 'sharedslow');
    await expect.poll(() => h.fake.responsesTo(afterChange.id).length).toBe(1);
    expect(runs).toHaveLength(2);
    expect(answerText(afterChange.id)).toContain('computed 2 time(s)');
  });

  it('computes once for a crowd even when the mirror changes after the first of them starts the answer', async () => {
    const fleet = h.services.fleet as StaticFleet;
    onRun = () => {
      onRun = undefined;
      fleet.upsertApp({ ...fleet.apps()[0] });
    };
    const asked = await Promise.all(['U0ALICE', 'U0BOB', 'U0ALICE'].map((u) => ask(u, 'sharedslow')));
    await expect.poll(() => runs.length).toBe(1);
    gate.release();
    for (const a of asked) await expect.poll(() => h.fake.responsesTo(a.id).length).toBe(1);
    // All three asked before that change, and the answer was started after they asked: it is theirs.
    expect(runs).toHaveLength(1);
    for (const a of asked) expect(answerText(a.id)).toContain('computed 1 time(s)');
  });

  it('never gives someone who asked after a change the answer still being computed from before it', async () => {
    const before = await ask('U0ALICE', 'sharedslow');
    await expect.poll(() => runs.length).toBe(1);
    const fleet = h.services.fleet as StaticFleet;
    fleet.upsertApp({ ...fleet.apps()[0] });
    const after = await ask('U0BOB', 'sharedslow');
    await expect.poll(() => runs.length).toBe(2);
    gate.release();
    await expect.poll(() => h.fake.responsesTo(after.id).length).toBe(1);
    await expect.poll(() => h.fake.responsesTo(before.id).length).toBe(1);
    expect(answerText(before.id)).toContain('computed 1 time(s)');
    expect(answerText(after.id)).toContain('computed 2 time(s)');
  });

  it('recomputes a finished answer once it is older than the sharing window, the mirror unchanged', async () => {
    gate.release();
    const first = await ask('U0ALICE', 'sharedslow');
    await expect.poll(() => h.fake.responsesTo(first.id).length).toBe(1);
    nowMs += SHARED_ANSWER_MS;
    const later = await ask('U0ALICE', 'sharedslow');
    await expect.poll(() => h.fake.responsesTo(later.id).length).toBe(1);
    expect(runs).toHaveLength(2);
  });

  it('never shares between askers with different permissions, nor between different questions', async () => {
    const asked = await Promise.all([
      ask('U0ALICE', 'sharedslow'),
      ask('U0OPS', 'sharedslow'),
      ask('U0BOB', 'sharedslow payments'),
      ask('U0BOB', 'sharedslow'),
    ]);
    expect(asked.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    gate.release();
    for (const a of asked) await expect.poll(() => h.fake.responsesTo(a.id).length).toBe(1);
    // Alice and Bob (readers) share one, computed for whichever came first; the operator gets their own;
    // `payments` is another question.
    const questions = runs.map(
      (r) => `${r.user === 'U0BOB' && r.text === 'sharedslow' ? 'U0ALICE' : r.user} ${r.text}`,
    );
    expect(questions.sort()).toEqual(['U0ALICE sharedslow', 'U0BOB sharedslow payments', 'U0OPS sharedslow'].sort());
  });

  it('counts as asked when the request arrived: a change before the listener runs does not make the asker newer', async () => {
    gate.release();
    const fleet = h.services.fleet as StaticFleet;
    const first = await ask('U0ALICE', 'sharedslow');
    await expect.poll(() => h.fake.responsesTo(first.id).length).toBe(1);
    // A request still being read holds every hand-off to Bolt (acks first): Bob's arrives, is acked, and waits.
    const { port } = new URL(h.url);
    const reading = connect(Number(port), '127.0.0.1');
    await new Promise((r) => reading.once('connect', r));
    reading.write(
      'POST /slack/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ntoken=',
    );
    const bob = await ask('U0BOB', 'sharedslow');
    expect(bob.status).toBe(200);
    // The mirror changes after Bob asked and before his command runs.
    fleet.upsertApp({ ...fleet.apps()[0] });
    reading.destroy();
    await expect.poll(() => h.fake.responsesTo(bob.id).length).toBe(1);
    // The answer computed before that change was computed after he asked: it is his, not computed again.
    expect(runs).toHaveLength(1);
    expect(answerText(bob.id)).toContain('computed 1 time(s)');
  });

  it('refuses someone who may not read even while the same question is being answered for a reader', async () => {
    const reader = await ask('U0ALICE', 'sharedslow');
    const outsider = await ask('U0MALLORY', 'sharedslow');
    await expect.poll(() => h.fake.responsesTo(outsider.id).length).toBe(1);
    expect(answerText(outsider.id)).toContain('may not query rollcall');
    expect(answerText(outsider.id)).not.toContain('computed');
    gate.release();
    await expect.poll(() => h.fake.responsesTo(reader.id).length).toBe(1);
    expect(runs.map((r) => r.user)).toEqual(['U0ALICE']);
  });
});

/** Services as a bot has them over `fleet`, whose instances are `objects`', at a fixed time. */
function servicesOver(objects: { name: string }[], fleet: StaticFleet): Services {
  return {
    config: configSchema.parse({
      instances: objects.map((i) => ({ name: i.name, url: `https://${i.name}.argocd.example`, token: 't' })),
    }),
    fleet,
    argocd: new Map(),
    now: () => new Date('2026-12-02T18:00:00Z'),
  };
}

describe('a shared status answer', () => {
  /** One instance the mirror lost: every answer says so, once. */
  class LostFleet extends StaticFleet {
    override health() {
      return [
        { instance: 'prod', synced: true },
        { instance: 'staging', synced: false, error: 'stream closed', dataAsOf: '2026-12-02T17:58:00Z' },
      ];
    }
  }

  it('is stamped per asker: warnings and pages are not added twice to the shared answer', async () => {
    const objects = [...smallFleetObjects(), { name: 'staging', applications: [] }];
    const base = StaticFleet.fromObjects(objects);
    const fleet = new LostFleet(['prod', 'staging']);
    fleet.load([...base.apps()], [...base.appSets()], [...base.clusters()]);
    const services = servicesOver(objects, fleet);
    const ask = (user: string) => dispatch('status', { services, user, surface: 'slack' });
    const [a, b] = await Promise.all([ask('U1'), ask('U2')]);
    const c = await ask('U3');
    for (const reply of [a, b, c]) {
      expect(reply.ok).toBe(true);
      const warnings = reply.blocks.filter((x) => x.kind === 'context' && x.text.includes('staging'));
      expect(warnings).toHaveLength(1);
      expect(reply.data.warnings).toHaveLength(1);
    }
    // The same answer, not three equal ones computed apart: the blocks' contents are the very same objects.
    expect(b.blocks.at(-1)).toBe(a.blocks.at(-1));
    expect(c.blocks.at(-1)).toBe(a.blocks.at(-1));
  });
});

describe('a shared diagnose or plan answer', () => {
  it.each(['diagnose', 'plan payments'])(
    '%s is computed once for a crowd at one mirror version, and anew once the mirror changes',
    async (text) => {
      const objects = smallFleetObjects();
      const fleet = StaticFleet.fromObjects(objects);
      const services = servicesOver(objects, fleet);
      const ask = (user: string) => dispatch(text, { services, user, surface: 'slack' });
      const [a, b] = await Promise.all([ask('U1'), ask('U2')]);
      const c = await ask('U3');
      expect([a, b, c].every((r) => r.ok)).toBe(true);
      expect(b.blocks[0]).toBe(a.blocks[0]);
      expect(c.blocks[0]).toBe(a.blocks[0]);
      fleet.upsertApp({ ...fleet.apps()[0] });
      const d = await ask('U1');
      expect(d.blocks[0]).not.toBe(a.blocks[0]);
      expect(d.blocks[0]).toEqual(a.blocks[0]);
    },
  );
});

describe('a shared answer while the mirror takes in changes', () => {
  it('serves those who asked before a change from a computation started after it, and no one from an older one', async () => {
    runs.length = 0;
    gate = open();
    const objects = smallFleetObjects();
    const fleet = StaticFleet.fromObjects(objects);
    const services = servicesOver(objects, fleet);
    const change = () => fleet.upsertApp({ ...fleet.apps()[0] });
    const ask = (user: string, askedAtVersion: number) =>
      dispatch('sharedslow', { services, user, surface: 'slack', askedAtVersion });
    const crowdAsked = fleet.version();
    change();
    // The first of the crowd starts the computation after a change none of them could have seen the end of.
    const first = ask('U1', crowdAsked);
    await expect.poll(() => runs.length).toBe(1);
    // Another event comes in before the second asker's turn: they asked before it, so the running answer is theirs.
    change();
    const second = ask('U2', crowdAsked);
    // Someone asking after that event gets an answer computed after it.
    const later = ask('U3', fleet.version());
    await expect.poll(() => runs.length).toBe(2);
    gate.release();
    const [a, b, c] = await Promise.all([first, second, later]);
    expect(b.blocks[0]).toBe(a.blocks[0]);
    expect(c.blocks[0]).not.toBe(a.blocks[0]);
    expect(runs.map((r) => r.user)).toEqual(['U1', 'U3']);
  });
});
