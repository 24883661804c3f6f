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
import { Redis } from 'ioredis';
import { metricsRegistry } from '../../src/infra/metrics.js';
import { WARM_UP_REQUESTS } from '../../src/surfaces/slack/warm-up.js';
import { cleanPrefix, testPrefix } from '../runbooks/fake-argo.js';
import { slackSignature } from '../support/slack-request.js';

let fake: FakeSlack;
beforeAll(async () => {
  fake = await startFakeSlack();
});
afterAll(async () => {
  await fake?.stop();
});

// The requests a bot has seen (its warm-up's too) are remembered in Redis: under a prefix of this file's own.
const prefix = testPrefix();
afterAll(() => cleanPrefix(process.env.REDIS_URL!, prefix));

const servicesWith = (slack: Record<string, unknown>): Services => ({
  config: configSchema.parse({
    instances: [{ name: 'prod', url: 'https://prod.argocd.example', token: 't' }],
    slack,
    redis: { url: process.env.REDIS_URL!, prefix },
  }),
  fleet: StaticFleet.fromObjects([{ name: 'prod', applications: [] }]),
  argocd: new Map(),
});

/** A bot in HTTP mode on a free port, its Web API the fake's. */
const httpServices = () =>
  servicesWith({ mode: 'http', botToken: 'xoxb-ok', signingSecret: SECRET, port: 0, apiUrl: fake.apiUrl });

/** The ack histogram's count of observations so far. */
async function acksCounted(): Promise<number> {
  const metric = await metricsRegistry().getSingleMetric('rollcall_slack_ack_seconds')!.get();
  return metric.values
    .filter((v) => (v as { metricName?: string }).metricName === 'rollcall_slack_ack_seconds_count')
    .reduce((n, v) => n + v.value, 0);
}

/** A signed url_verification request, with the warm-up's header set to `warmUp`. */
async function verification(port: number, warmUp: string): Promise<{ status: number; text: string }> {
  const body = JSON.stringify({ type: 'url_verification', token: 't', challenge: 'from-outside' });
  const timestamp = Math.floor(Date.now() / 1000);
  const res = await fetch(`http://127.0.0.1:${port}/slack/events`, {
    method: 'POST',
    body,
    headers: {
      'content-type': 'application/json',
      'x-slack-request-timestamp': String(timestamp),
      'x-slack-signature': slackSignature(SECRET, timestamp, body),
      'x-rollcall-warm-up': warmUp,
    },
  });
  return { status: res.status, text: await res.text() };
}

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
    const services = httpServices();
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

describe('the warm-up before Slack comes', () => {
  it('answers 300 signed requests of its own before startSlack returns, none of them counted as an ack of Slack', async () => {
    metricsRegistry();
    const before = await acksCounted();
    const lines: { msg?: string; requests?: number }[] = [];
    const sink = new Writable({ write: (chunk, _enc, cb) => (lines.push(JSON.parse(String(chunk))), cb()) });
    const services = httpServices();
    const slack = await startSlack(services, { logger: pino({ level: 'info' }, sink) });
    try {
      expect(lines.find((l) => l.msg === 'slack intake warmed')?.requests).toBe(WARM_UP_REQUESTS);
      expect(WARM_UP_REQUESTS).toBe(300);
      expect(lines.filter((l) => /warm-up/.test(l.msg ?? ''))).toEqual([]);
      // Each went through the replay check: its signature is remembered in Redis, as any request's is.
      const redis = new Redis(process.env.REDIS_URL!);
      try {
        expect((await redis.keys(`${prefix}:slack:sig:*`)).length).toBeGreaterThanOrEqual(WARM_UP_REQUESTS);
      } finally {
        redis.disconnect();
      }
      expect(await acksCounted()).toBe(before);
      // The header alone, from outside, does not hide a request from the histogram: only this process's token does.
      const outside = await verification(slack.port!, 'guessed');
      expect(outside.status).toBe(200);
      expect(JSON.parse(outside.text)).toEqual({ challenge: 'from-outside' });
      expect(await acksCounted()).toBe(before + 1);
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
