import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import '../../src/commands/index.js';
import { registerTestCommand } from '../support/replies.js';
import { startEngine, type EngineHandle, type RunService } from '../../src/domain/runbooks/engine.js';
import { APPROVAL_RUNBOOK } from '../runbooks/harness.js';
import {
  blockActionsPayload,
  eventCallback,
  postEvent,
  postInteraction,
  postSlashCommand,
} from '../support/slack-request.js';
import { smallFleetObjects } from './fixture.js';
import { botRoleEngine, startHarness, SECRET, type Harness } from './harness.js';
import { allText } from './limits.js';

// A command that records that it ran: a replay must not run it again.
const probeCalls: string[] = [];
registerTestCommand({
  name: 'hardening-probe',
  summary: 'test probe',
  usage: 'hardening-probe',
  readOnly: true,
  async run(cmd, ctx) {
    probeCalls.push(`${ctx.user} ${cmd.raw}`);
    return {
      ok: true,
      command: 'hardening-probe',
      title: 'Probe',
      data: {},
      blocks: [{ kind: 'text', text: `ran ${cmd.positional.join(' ')}` }],
    };
  },
});

const settle = (ms = 200) => new Promise((r) => setTimeout(r, ms));
const nowS = () => Math.floor(Date.now() / 1000);

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

describe('request timestamps', () => {
  it('refuses a timestamp more than 5 minutes in the future with 401, as Bolt refuses a stale one, and runs nothing', async () => {
    const future = await postSlashCommand(
      h.url,
      SECRET,
      { text: 'hardening-probe', response_url: h.fake.responseUrl('future') },
      { timestamp: nowS() + 6 * 60 },
    );
    expect(future.status).toBe(401);
    const hourAhead = await postSlashCommand(
      h.url,
      SECRET,
      { text: 'hardening-probe', response_url: h.fake.responseUrl('hour') },
      { timestamp: nowS() + 3600 },
    );
    expect(hourAhead.status).toBe(401);
    await settle();
    expect(probeCalls).toEqual([]);
    expect(h.fake.responses).toEqual([]);
    // A clock a little ahead of ours is within Slack's window.
    const ahead = await postSlashCommand(
      h.url,
      SECRET,
      { text: 'hardening-probe', response_url: h.fake.responseUrl('ahead') },
      { timestamp: nowS() + 60 },
    );
    expect(ahead.status).toBe(200);
    await expect.poll(() => probeCalls.length).toBe(1);
  });
});

describe('replays and retries', () => {
  it('drops a replay of a request already seen (same signature and timestamp), also when another bot process receives it', async () => {
    const other = await startHarness({ fleet: smallFleetObjects(), redisPrefix: h.services.config.redis.prefix });
    try {
      const ts = nowS();
      const fields = { text: 'hardening-probe once', response_url: h.fake.responseUrl('replayed') };
      const first = await postSlashCommand(h.url, SECRET, fields, { timestamp: ts });
      expect(first.status).toBe(200);
      await expect.poll(() => probeCalls).toEqual(['U0ALICE hardening-probe once']);
      // The same signed bytes again, to this process and to a second one sharing the Redis.
      const again = await postSlashCommand(h.url, SECRET, fields, { timestamp: ts });
      const elsewhere = await postSlashCommand(other.url, SECRET, fields, { timestamp: ts });
      expect([again.status, elsewhere.status]).toEqual([401, 401]);
      await settle();
      expect(probeCalls).toHaveLength(1);
      expect(h.fake.responsesTo('replayed')).toHaveLength(1);
      // The same command typed again is a new request (new timestamp, new signature): it runs.
      await postSlashCommand(h.url, SECRET, fields, { timestamp: ts + 1 });
      await expect.poll(() => probeCalls.length).toBe(2);
    } finally {
      await other.stop();
    }
  });

  it("acks Slack's retry of an event it already handled (x-slack-retry-num) without handling it twice; a retry of a lost one is handled", async () => {
    const event = eventCallback({
      type: 'app_home_opened',
      user: 'U0ALICE',
      channel: 'D0HOME',
      tab: 'home',
      event_ts: '1700000000.9',
    });
    const first = await postEvent(h.url, SECRET, event);
    expect(first.status).toBe(200);
    await expect.poll(() => h.fake.callsTo('views.publish').length).toBe(1);
    // Slack signs a retry anew (new timestamp): it is the same event_id that makes it a retry.
    const retry = await postEvent(h.url, SECRET, event, {
      timestamp: nowS() + 1,
      headers: { 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout' },
    });
    expect(retry.status).toBe(200);
    // Even the identical bytes, when they say they are a retry, get an ack rather than a refusal.
    const sameBytes = await postEvent(h.url, SECRET, event, {
      timestamp: nowS() + 1,
      headers: { 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout' },
    });
    expect(sameBytes.status).toBe(200);
    await settle(300);
    expect(h.fake.callsTo('views.publish')).toHaveLength(1);

    // The first delivery never arrived: its retry is the first this bot sees, and it is handled.
    const lost = eventCallback({
      type: 'app_home_opened',
      user: 'U0BOB',
      channel: 'D0HOME',
      tab: 'home',
      event_ts: '1700000001.0',
    });
    const retried = await postEvent(h.url, SECRET, lost, {
      headers: { 'x-slack-retry-num': '2', 'x-slack-retry-reason': 'http_error' },
    });
    expect(retried.status).toBe(200);
    await expect.poll(() => h.fake.callsTo('views.publish').map((c) => c.args.user_id)).toEqual(['U0ALICE', 'U0BOB']);
  });

  it('records what it has seen under the app prefix, with a TTL covering the 5-minute window both ways', async () => {
    const { createRedis, closeRedis } = await import('../../src/infra/redis.js');
    const redis = createRedis(process.env.REDIS_URL!);
    try {
      await postSlashCommand(h.url, SECRET, { text: 'hardening-probe ttl', response_url: h.fake.responseUrl('ttl') });
      await expect.poll(() => probeCalls.length).toBe(1);
      const keys = await redis.keys(`${h.services.config.redis.prefix}:slack:sig:*`);
      expect(keys.length).toBeGreaterThan(0);
      const ttls = await Promise.all(keys.map((k) => redis.ttl(k)));
      for (const ttl of ttls) expect(ttl).toBeGreaterThanOrEqual(600);
    } finally {
      await closeRedis(redis);
    }
  });
});

describe('replay check without Redis', () => {
  it('answers while Redis is unreachable (read-only questions must not stop with it), saying so once in the log', async () => {
    const { freePort } = await import('../../src/infra/redis-server.js');
    const lines: { level: number; msg: string }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const down = await startHarness({
      fleet: smallFleetObjects(),
      redisUrl: `redis://127.0.0.1:${await freePort()}`,
      logger,
    });
    try {
      for (const id of ['down-1', 'down-2']) {
        const res = await postSlashCommand(down.url, SECRET, {
          text: 'hardening-probe',
          response_url: down.fake.responseUrl(id),
        });
        expect(res.status).toBe(200);
        expect(res.ms).toBeLessThan(2500);
      }
      await expect.poll(() => probeCalls.length).toBe(2);
      expect(lines.filter((l) => l.msg.startsWith('slack replay check: Redis is unreachable'))).toHaveLength(1);
      // The signature and timestamp checks do not need Redis.
      const future = await postSlashCommand(
        down.url,
        SECRET,
        { text: 'hardening-probe', response_url: down.fake.responseUrl('down-3') },
        { timestamp: nowS() + 3600 },
      );
      expect(future.status).toBe(401);
    } finally {
      await down.stop();
    }
  });
});

describe('replay check while Redis is down', () => {
  it('refuses a replay of a request seen before Redis stopped, and serves a new one during the outage', async () => {
    const { startPrivateRedis } = await import('../../src/infra/redis-server.js');
    const redis = await startPrivateRedis();
    const own = await startHarness({ fleet: smallFleetObjects(), redisUrl: redis.url });
    try {
      const ts = nowS();
      const seen = { text: 'hardening-probe before', response_url: own.fake.responseUrl('before') };
      expect((await postSlashCommand(own.url, SECRET, seen, { timestamp: ts })).status).toBe(200);
      await expect.poll(() => probeCalls).toEqual(['U0ALICE hardening-probe before']);
      await redis.stop();

      // The same signed bytes while Redis cannot answer: this process saw them.
      const replay = await postSlashCommand(own.url, SECRET, seen, { timestamp: ts });
      expect(replay.status).toBe(401);
      // A request never seen is served, once; its own replay during the outage is refused too.
      const fresh = { text: 'hardening-probe during', response_url: own.fake.responseUrl('during') };
      const first = await postSlashCommand(own.url, SECRET, fresh, { timestamp: ts + 1 });
      expect(first.status).toBe(200);
      expect(first.ms).toBeLessThan(2500);
      await expect.poll(() => own.fake.responsesTo('during').length).toBe(1);
      expect((await postSlashCommand(own.url, SECRET, fresh, { timestamp: ts + 1 })).status).toBe(401);
      await settle();
      expect(probeCalls).toEqual(['U0ALICE hardening-probe before', 'U0ALICE hardening-probe during']);
      expect(own.fake.responsesTo('before')).toHaveLength(1);
    } finally {
      await own.stop();
      await redis.stop();
    }
  });

  it("bounds the process's own memory by count (oldest first) and by each key's TTL", async () => {
    const { SeenMemory } = await import('../../src/surfaces/slack/request-guard.js');
    const memory = new SeenMemory(3);
    const t0 = 1_000_000;
    expect(['a', 'b', 'c', 'd'].map((k) => memory.remember(k, 60, t0))).toEqual([false, false, false, false]);
    expect(memory.size).toBe(3);
    // `a` was the oldest and went; `d` is remembered.
    expect(memory.remember('d', 60, t0 + 1)).toBe(true);
    expect(memory.remember('a', 60, t0 + 1)).toBe(false);
    // Past its TTL a key is forgotten, and expired keys are dropped as new ones come.
    expect(memory.remember('d', 60, t0 + 61_000)).toBe(false);
    expect(memory.size).toBe(1);
  });
});

describe('what users type is echoed as text', () => {
  it('shows a typed <https://…|label> link, a <@U…> mention and <!channel> as text in the answer, not as links or pings', async () => {
    await postSlashCommand(h.url, SECRET, {
      text: 'hardening-probe <https://evil.example/login|Argo CD login> <@U0BOSS> <!channel> <#C0SECRET>',
      response_url: h.fake.responseUrl('typed'),
    });
    await expect.poll(() => h.fake.responsesTo('typed').length).toBe(1);
    const answer = h.fake.responsesTo('typed')[0].body;
    const posted = JSON.stringify(answer);
    expect(posted).not.toContain('<https://evil.example');
    expect(posted).not.toContain('<@U0BOSS>');
    expect(posted).not.toContain('<!channel>');
    expect(posted).not.toContain('<#C0SECRET>');
    expect(allText(answer.blocks)).toContain('&lt;https://evil.example/login|Argo CD login&gt;');
    expect(allText(answer.blocks)).toContain('&lt;@U0BOSS&gt;');
  });

  it('shows a link as text also when Slack sends the command text HTML-escaped (&lt;…&gt;), as it does', async () => {
    await postSlashCommand(h.url, SECRET, {
      text: 'hardening-probe &lt;https://evil.example|Runbook&gt; &lt;@U0BOSS&gt;',
      response_url: h.fake.responseUrl('escaped'),
    });
    await expect.poll(() => h.fake.responsesTo('escaped').length).toBe(1);
    const posted = JSON.stringify(h.fake.responsesTo('escaped')[0].body);
    expect(posted).toContain('ran &lt;https://evil.example|Runbook&gt;');
    expect(posted).not.toContain('<https://evil.example');
    expect(posted).not.toContain('<@U0BOSS>');
  });

  it('answers an unknown app typed as a link with the link as text', async () => {
    await postSlashCommand(h.url, SECRET, {
      text: 'app <https://evil.example|auth-service-prod-us1>',
      response_url: h.fake.responseUrl('app'),
    });
    await expect.poll(() => h.fake.responsesTo('app').length).toBe(1);
    const posted = JSON.stringify(h.fake.responsesTo('app')[0].body);
    expect(posted).not.toContain('<https://evil.example');
  });
});

describe('command length', () => {
  it('answers a command text of 100,000 characters at once with a clear error, without parsing or suggesting over it', async () => {
    const started = Date.now();
    await postSlashCommand(h.url, SECRET, {
      text: `hardening-probe ${'x'.repeat(100_000)}`,
      response_url: h.fake.responseUrl('long'),
    });
    await expect.poll(() => h.fake.responsesTo('long').length).toBe(1);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(allText(h.fake.responsesTo('long')[0].body.blocks)).toContain('rollcall reads at most 4,000');
    expect(probeCalls).toEqual([]);
  });
});

describe('refusals are audited with their surface', () => {
  let g: Harness;
  let engine: EngineHandle;
  const runs = () => engine.runs as RunService;

  beforeAll(async () => {
    g = await startHarness({
      fleet: smallFleetObjects(),
      access: {
        groups: { oncall: ['U0ALICE'], leads: ['U_LEAD'] },
        operators: ['U0ALICE', 'U_REQ'],
        readers: ['U0MALLORY'],
      },
      configure: botRoleEngine((e) => (engine = e)),
    });
  });
  afterAll(async () => {
    await engine?.stop();
    await g?.stop();
  });

  const press = async (actionId: string, runId: string, user: string) => {
    const id = `${actionId}-${user}-${Math.random().toString(36).slice(2)}`;
    const res = await postInteraction(
      g.url,
      SECRET,
      blockActionsPayload({ actionId, value: runId, user, responseUrl: g.fake.responseUrl(id) }),
    );
    expect(res.status).toBe(200);
    await expect.poll(() => g.fake.responsesTo(id).length).toBe(1);
    return g.fake.responsesTo(id)[0].body;
  };

  it('records who tried confirm, cancel, pause, resume, abort or approve on which run, from slack, when refused', async () => {
    await postSlashCommand(g.url, SECRET, {
      text: 'sync auth-config-prod-us1',
      response_url: g.fake.responseUrl('preview'),
    });
    await expect.poll(() => g.fake.responsesTo('preview').length).toBe(1);
    const [run] = await runs().list(1);
    expect(run.status).toBe('awaiting-confirmation');

    for (const action of ['run.confirm', 'run.cancel', 'run.pause', 'run.resume', 'run.abort']) {
      const answer = await press(action, run.id, 'U0MALLORY');
      expect(allText(answer.blocks)).toContain('may not');
    }
    // The requester pausing a run that is not running is refused too (by state): also audited.
    await press('run.pause', run.id, 'U0ALICE');
    expect((await runs().get(run.id))!.status).toBe('awaiting-confirmation');

    // An approval by the requester herself, of a run that needs someone else.
    const guarded = await runs().start({
      runbook: APPROVAL_RUNBOOK.name,
      params: { selector: 'auth-config-*' },
      user: 'U_REQ',
      surface: 'slack',
      channel: 'C0OPS',
    });
    await runs().confirm(guarded.id, 'U_REQ');
    await press('run.approve', guarded.id, 'U_REQ');

    const refusals = (await runs().audit.latest(100)).filter((e) => e.kind === 'run.refused');
    const mallory = refusals.filter((e) => e.who === 'U0MALLORY');
    expect(mallory.map((e) => e.target).sort()).toEqual([
      'run.abort',
      'run.cancel',
      'run.confirm',
      'run.pause',
      'run.resume',
    ]);
    for (const e of mallory)
      expect(e).toMatchObject({
        runId: run.id,
        surface: 'slack',
        result: 'forbidden',
        message: expect.stringContaining('may not'),
      });
    expect(refusals.find((e) => e.who === 'U0ALICE')).toMatchObject({
      target: 'run.pause',
      runId: run.id,
      surface: 'slack',
      result: 'invalid_state',
    });
    expect(refusals.find((e) => e.who === 'U_REQ')).toMatchObject({
      runId: guarded.id,
      surface: 'slack',
      result: 'approval refused',
    });
    // Each refusal once: the engine and the command layer do not both record it.
    expect(refusals.filter((e) => e.who === 'U_REQ')).toHaveLength(1);
    // Not a reader at all: refused before any command runs, and recorded.
    await postSlashCommand(g.url, SECRET, {
      text: 'status',
      user_id: 'U0OUTSIDER',
      response_url: g.fake.responseUrl('outsider'),
    });
    await expect.poll(() => g.fake.responsesTo('outsider').length).toBe(1);
    await expect
      .poll(async () => (await runs().audit.latest(20)).find((e) => e.who === 'U0OUTSIDER'))
      .toMatchObject({ kind: 'run.refused', target: 'status', surface: 'slack', result: 'forbidden' });
    // What was allowed says where it came from too.
    const start = (await runs().audit.latest(100)).find((e) => e.kind === 'run.start' && e.runId === run.id);
    expect(start).toMatchObject({ who: 'U0ALICE', surface: 'slack' });
  });

  it('posts the live run message in the channel with a typed link in its parameters as text', async () => {
    await postSlashCommand(g.url, SECRET, {
      text: 'sync web-prod-us1 includeSynced=true revision=<https://evil.example/x|main>',
      response_url: g.fake.responseUrl('typed-preview'),
    });
    await expect.poll(() => g.fake.responsesTo('typed-preview').length).toBe(1);
    expect(JSON.stringify(g.fake.responsesTo('typed-preview')[0].body)).not.toContain('<https://evil.example');
    const [run] = await runs().list(1);
    expect(run.params.revision).toBe('<https://evil.example/x|main>');
    await press('run.confirm', run.id, 'U0ALICE');
    await expect.poll(() => g.fake.callsTo('chat.postMessage').length).toBeGreaterThan(0);
    const posted = JSON.stringify(g.fake.callsTo('chat.postMessage').map((c) => c.args));
    expect(posted).toContain('revision=&lt;https://evil.example/x|main&gt;');
    expect(posted).not.toContain('<https://evil.example');
    await runs().abort(run.id, 'U0ALICE');
  });

  it('records a command declined in a channel rollcall does not answer in', async () => {
    let restrictedEngine: EngineHandle | undefined;
    const restricted = await startHarness({
      fleet: smallFleetObjects(),
      channels: ['C0INCIDENT'],
      configure: async (services) => {
        restrictedEngine = await startEngine(services, {
          role: 'bot',
          redisUrl: process.env.REDIS_URL!,
          prefix: services.config.redis.prefix,
        });
        services.runs = restrictedEngine.runs;
        services.audit = restrictedEngine.runs.audit;
      },
    });
    try {
      await postSlashCommand(restricted.url, SECRET, {
        text: 'sync auth-config-*',
        channel_id: 'C0RANDOM',
        channel_name: 'random',
        response_url: restricted.fake.responseUrl('declined'),
      });
      await expect.poll(() => restricted.fake.responsesTo('declined').length).toBe(1);
      const [entry] = await (restrictedEngine!.runs as RunService).audit.latest(1);
      expect(entry).toMatchObject({
        kind: 'run.refused',
        who: 'U0ALICE',
        target: 'sync',
        surface: 'slack',
        result: 'channel_not_allowed',
        params: { channel: 'C0RANDOM', command: 'sync auth-config-*' },
      });
    } finally {
      await restrictedEngine?.stop();
      await restricted.stop();
    }
  });
});
