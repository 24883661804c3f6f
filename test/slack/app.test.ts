import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Services } from '../../src/commands/registry.js';
import { configSchema } from '../../src/infra/config/schema.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { SlackStartError, startSlack } from '../../src/surfaces/slack/app.js';
import { boltLogger, redactTokens } from '../../src/surfaces/slack/logger.js';
import { SlackNotifier } from '../../src/surfaces/slack/notifier.js';
import { startFakeSlack, type FakeSlack } from '../support/fake-slack.js';
import { SECRET } from './harness.js';

let fake: FakeSlack;
beforeAll(async () => {
  fake = await startFakeSlack();
});
afterAll(async () => {
  await fake?.stop();
});

const servicesWith = (slack: Record<string, unknown>): Services => ({
  config: configSchema.parse({ instances: [{ name: 'prod', url: 'https://prod.argocd.example', token: 't' }], slack }),
  fleet: StaticFleet.fromObjects([{ name: 'prod', applications: [] }]),
  argocd: new Map(),
});

describe('startSlack', () => {
  it('checks the bot token with auth.test and fails with slack_auth_failed when Slack rejects it', async () => {
    fake.failWith('auth.test', 'invalid_auth');
    try {
      const err = await startSlack(
        servicesWith({ mode: 'http', botToken: 'xoxb-revoked', signingSecret: SECRET, port: 0, apiUrl: fake.apiUrl }),
        { logger: pino({ level: 'silent' }) },
      ).catch((e) => e);
      expect(err).toBeInstanceOf(SlackStartError);
      expect(err.code).toBe('slack_auth_failed');
      expect(err.message).toContain('invalid_auth');
      expect(err.message).toContain('slack.botToken');
      expect(err.message).not.toContain('xoxb-revoked');
    } finally {
      fake.failWith('auth.test', undefined);
    }
  });

  it('binds a free port with slack.port 0 and installs a SlackNotifier as services.notifier', async () => {
    const services = servicesWith({
      mode: 'http',
      botToken: 'xoxb-ok',
      signingSecret: SECRET,
      port: 0,
      apiUrl: fake.apiUrl,
    });
    const slack = await startSlack(services, { logger: pino({ level: 'silent' }) });
    try {
      expect(slack.port).toBeGreaterThan(0);
      expect(services.notifier).toBeInstanceOf(SlackNotifier);
      expect(services.notifier).toBe(slack.notifier);
      const res = await fetch(`http://127.0.0.1:${slack.port}/slack/events`, { method: 'POST', body: 'x' });
      expect(res.status).toBe(401); // unsigned
    } finally {
      await slack.stop();
    }
  });
});

describe('Slack logging', () => {
  it('never writes a Slack token to the log', () => {
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk, _enc, cb) => (lines.push(String(chunk)), cb()) });
    const log = boltLogger(pino({ level: 'debug' }, sink));
    log.setLevel('debug' as never);
    log.debug('http request', {
      url: 'https://slack.com/api/chat.postMessage',
      headers: { authorization: 'Bearer xoxb-123-456-abc' },
    });
    log.error(new Error('failed with token xapp-1-A0-99-ff'));
    log.warn('token', 'xoxp-9-8-7');
    const text = lines.join('');
    expect(text).not.toMatch(/xox[bp]-|xapp-/);
    expect(text.match(/\[redacted\]/g)?.length).toBeGreaterThanOrEqual(3);
    expect(redactTokens('no secrets here')).toBe('no secrets here');
  });
});
