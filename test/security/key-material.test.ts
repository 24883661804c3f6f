import { WebClient } from '@slack/web-api';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dispatch } from '../../src/commands/index.js';
import type { Reply } from '../../src/core/reply.js';
import { sealedSecretsMigration } from '../../src/sim/kube/scenario.js';
import { SIM_KEYS } from '../../src/sim/kube/keys.js';
import { SlackNotifier } from '../../src/surfaces/slack/notifier.js';
import { renderBlocks } from '../../src/views/blocks.js';
import { renderText } from '../../src/views/text.js';
import { startControlSim, type ControlSim } from '../runbooks/control-sim.js';
import { startFakeSlack, type FakeSlack } from '../support/fake-slack.js';

/**
 * DESIGN.md: secrets and key material never enter Redis, Slack or logs. This runs the backup and the
 * restore of sealed-secrets-migration end to end (engine, Slack notifier, real Redis, simulator) and
 * then looks for every private key of src/sim/kube/keys.ts and every certificate the scenario issued — as PEM lines and as the
 * base64 of the PEM that Secret data holds — in the captured logs, every Redis key of the run's
 * prefix, every Slack Web API call, the audit stream and the rendered replies.
 */

/** Every key's certificate, as the scenario issued it (dated by its clock): read from the fixture's Secrets. */
let fixtureCerts = new Map<string, string>();

/** Fragments that any copy of the material would contain. */
function needles(): { what: string; text: string }[] {
  const out: { what: string; text: string }[] = [];
  const material = [
    ...Object.values(SIM_KEYS).map((pair) => ({ name: pair.name, part: 'key', pem: pair.key })),
    ...[...fixtureCerts].map(([name, pem]) => ({ name, part: 'cert', pem })),
  ];
  for (const { name, part, pem } of material) {
    const body = pem.split('\n').filter((l) => l && !l.startsWith('-----'));
    // PEM lines as they are (what a logged or pasted PEM would show).
    body
      .filter((l) => l.length >= 40)
      .forEach((line, i) => out.push({ what: `${name} ${part} PEM line ${i + 1}`, text: line }));
    // The same DER base64 without line breaks (JSON-escaped PEMs keep the lines, re-encoders drop them).
    const joined = body.join('');
    out.push({ what: `${name} ${part} base64 body`, text: joined.slice(100, 160) });
    // base64 of the whole PEM: what Secret `data` holds and what a dumped Secret would leak.
    const b64 = Buffer.from(pem).toString('base64');
    for (const at of [120, b64.length >> 1, b64.length - 120])
      out.push({ what: `${name} ${part} Secret data @${at}`, text: b64.slice(at, at + 48) });
  }
  return out;
}

async function redisDump(e: ControlSim): Promise<string> {
  const parts: string[] = [];
  let cursor = '0';
  const keys: string[] = [];
  do {
    const [next, batch] = await e.redis.scan(cursor, 'MATCH', `${e.prefix}:*`, 'COUNT', 500);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  for (const key of keys) {
    const type = await e.redis.type(key);
    let value: unknown;
    if (type === 'string') value = await e.redis.get(key);
    else if (type === 'hash') value = await e.redis.hgetall(key);
    else if (type === 'stream') value = await e.redis.xrange(key, '-', '+');
    else if (type === 'list') value = await e.redis.lrange(key, 0, -1);
    else if (type === 'set') value = await e.redis.smembers(key);
    else if (type === 'zset') value = await e.redis.zrange(key, '0', '-1');
    else value = `(type ${type})`;
    parts.push(`${key} ${JSON.stringify(value)}`);
  }
  return parts.join('\n');
}

describe('no sealed-secrets key material leaves the cluster', () => {
  let env: ControlSim;
  let fake: FakeSlack;
  let notifier: SlackNotifier;
  const logs: string[] = [];
  const replies: Reply[] = [];
  let redisText = '';
  let auditText = '';

  beforeAll(async () => {
    fake = await startFakeSlack();
    notifier = new SlackNotifier(
      new WebClient('xoxb-test-token', { slackApiUrl: fake.apiUrl, retryConfig: { retries: 0 } }),
      { minIntervalMs: 20 },
    );
    const logger = pino({ level: 'trace' }, { write: (line: string) => void logs.push(line) });
    const fixture = sealedSecretsMigration();
    for (const k of fixture.kube!) if (k.sealedSecretsController) k.sealedSecretsController.startupMs = 100;
    fixtureCerts = new Map(
      fixture.kube!.flatMap((k) =>
        k.objects
          .filter((o: any) => o.type === 'kubernetes.io/tls')
          .map((o: any) => [o.metadata.name, Buffer.from(o.data['tls.crt'], 'base64').toString()] as [string, string]),
      ),
    );
    expect(fixtureCerts.size).toBe(4);
    env = await startControlSim({ fixture, logger, notifier });
    const say = async (text: string, user: string) => {
      const reply = await dispatch(text, { ...env.ctx(user), surface: 'slack', channel: 'C_ONCALL' });
      replies.push(reply);
      return reply;
    };
    const backup = await say('run backup-sealed-secrets-keys cluster=prod-old', 'U_OP');
    expect(backup.ok, JSON.stringify(backup.error)).toBe(true);
    expect((await env.runs.waitForEnd((backup.data as any).runId, 15_000)).status).toBe('succeeded');
    const restore = await say('run restore-sealed-secrets-keys to=prod-new from=prod-old', 'U_OP');
    expect(restore.ok, JSON.stringify(restore.error)).toBe(true);
    const runId = (restore.data as any).runId;
    await env.runs.approve(runId, 'U_ADMIN');
    const end = await env.runs.waitForEnd(runId, 20_000);
    expect(end.status, end.error).toBe('succeeded');
    await say(`runs show ${runId}`, 'U_OP');
    await say('runs', 'U_OP');
    await say('audit 100', 'U_OP');
    await notifier.flush();
    redisText = await redisDump(env);
    auditText = JSON.stringify(await env.runs.audit.latest(500));
  }, 60_000);

  afterAll(async () => {
    await env?.close();
    await fake?.stop();
  });

  const surfaces = () => ({
    logs: logs.join(''),
    redis: redisText,
    slack: JSON.stringify(fake.calls.map((c) => ({ method: c.method, args: c.args }))),
    audit: auditText,
    replies: JSON.stringify(replies) + replies.map((r) => renderText(r) + JSON.stringify(renderBlocks(r))).join('\n'),
  });

  it('captured what the run said on every surface (the scan looks at real traffic)', () => {
    const s = surfaces();
    expect(logs.length).toBeGreaterThan(5);
    expect(s.logs).toContain('argocd call');
    // Key names and fingerprints are reported where people look: the run records and the replies.
    for (const text of [s.redis, s.replies]) expect(text).toContain('sealed-secrets-keyb9w3d');
    expect(s.slack).toContain('Restore sealed-secrets keys');
    expect(s.redis).toMatch(/"fingerprint\\?":\\?"([0-9A-F]{2}:){31}[0-9A-F]{2}/);
    expect(fake.callsTo('chat.postMessage').length).toBeGreaterThan(0);
    expect(fake.callsTo('chat.update').length).toBeGreaterThan(0);
    expect(s.audit).toContain('kube.mutation');
    expect(s.audit).toContain('restore sealed-secrets keys onto prod-new');
  });

  it('finds no private key, certificate or Secret data in logs, Redis, Slack, the audit stream or replies', () => {
    const found: string[] = [];
    for (const [surface, text] of Object.entries(surfaces())) {
      for (const needle of needles()) if (text.includes(needle.text)) found.push(`${surface}: ${needle.what}`);
      if (/-----BEGIN [A-Z ]*(PRIVATE KEY|CERTIFICATE)-----/.test(text)) found.push(`${surface}: a PEM header`);
      if (/tls\.key\\?"\s*:\s*\\?"[A-Za-z0-9+/=]{20}/.test(text)) found.push(`${surface}: a tls.key value`);
    }
    expect(needles().length).toBeGreaterThan(50);
    expect(found).toEqual([]);
  });

  it('the scan would catch a leak (self-check with one real key in a log line)', () => {
    const leaked = JSON.stringify({
      msg: 'oops',
      data: { 'tls.key': Buffer.from(SIM_KEYS.old3.key).toString('base64') },
    });
    expect(needles().some((n) => leaked.includes(n.text))).toBe(true);
    const pemLeak = JSON.stringify({ secret: SIM_KEYS.new1.key });
    expect(needles().filter((n) => pemLeak.includes(n.text)).length).toBeGreaterThan(10);
  });
});
