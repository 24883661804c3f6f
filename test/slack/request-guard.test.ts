import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { closeRedis, createRedis } from '../../src/infra/redis.js';
import { checkRequest, SeenMemory, type RequestGuardOptions } from '../../src/surfaces/slack/request-guard.js';
import { slackSignature, slashCommandBody } from '../support/slack-request.js';

const SECRET = 'guard-test-secret-0123456789';
const redis = createRedis(process.env.REDIS_URL!);
afterAll(() => closeRedis(redis));

/** The guard's clock: every timestamp below is relative to it, never to today's date. */
const NOW_S = 1_900_000_000;
let requests = 0;

function options(): RequestGuardOptions {
  return {
    signingSecret: SECRET,
    redis,
    prefix: `rollcall-test-guard-${process.pid}-${requests++}`,
    logger: pino({ level: 'silent' }),
    now: () => NOW_S * 1000,
    memory: new SeenMemory(),
  };
}

/** A request as node's HTTP server hands it over: headers, and the body still to be read. */
function request(body: string, headers: Record<string, string>): IncomingMessage {
  const req = Readable.from([Buffer.from(body)]) as unknown as IncomingMessage;
  req.headers = { 'content-type': 'application/x-www-form-urlencoded', ...headers };
  return req;
}

function signed(body: string, timestamp = NOW_S, secret = SECRET): Record<string, string> {
  return {
    'x-slack-request-timestamp': String(timestamp),
    'x-slack-signature': slackSignature(secret, timestamp, body),
  };
}

const command = () => slashCommandBody({ text: 'status', response_url: 'https://hooks.slack.test/r/1' });

describe('the request guard checks the signature itself', () => {
  it('passes a request signed with the secret over its timestamp and body, and gives the form as parsed', async () => {
    const body = command();
    const verdict = await checkRequest(request(body, signed(body)), options());
    expect(verdict).toMatchObject({ pass: true, body: { command: '/argo', text: 'status' } });
  });

  it.each([
    ['another secret', (body: string) => signed(body, NOW_S, 'not-the-secret')],
    [
      'a timestamp other than the one signed',
      (body: string) => ({ ...signed(body), 'x-slack-request-timestamp': String(NOW_S + 1) }),
    ],
    ['another body', (body: string) => signed(`${body}&text=sync`)],
    [
      'the hash in capitals',
      (body: string) => ({ ...signed(body), 'x-slack-signature': signed(body)['x-slack-signature'].toUpperCase() }),
    ],
    [
      'a version other than v0',
      (body: string) => ({
        ...signed(body),
        'x-slack-signature': signed(body)['x-slack-signature'].replace('v0=', 'v1='),
      }),
    ],
    ['no signature', (body: string) => ({ 'x-slack-request-timestamp': signed(body)['x-slack-request-timestamp'] })],
    [
      'a timestamp that is not a number of seconds',
      (body: string) => ({ ...signed(body), 'x-slack-request-timestamp': `${NOW_S}.0` }),
    ],
    ['a timestamp more than 5 minutes old', (body: string) => signed(body, NOW_S - 301)],
  ])('refuses %s with 401', async (_what, headersOf) => {
    const body = command();
    const verdict = await checkRequest(request(body, headersOf(body)), options());
    expect(verdict).toEqual({ pass: false, status: 401, reason: 'unverified' });
  });

  it('passes a request signed 5 minutes ago to the second', async () => {
    const body = command();
    const verdict = await checkRequest(request(body, signed(body, NOW_S - 300)), options());
    expect(verdict.pass).toBe(true);
  });

  it("passes Slack's unsigned ssl_check as nothing but itself: what else the body carried is dropped before Bolt reads it", async () => {
    const req = request(`ssl_check=1&${command()}`, {});
    const verdict = await checkRequest(req, options());
    expect(verdict).toEqual({ pass: true, body: { ssl_check: '1' } });
    expect((req as IncomingMessage & { rawBody: Buffer }).rawBody.toString()).toBe('ssl_check=1');
  });

  it('refuses a signed form with two payloads, which Bolt would read as a slash command', async () => {
    const body = 'payload=%7B%7D&payload=%7B%7D';
    const verdict = await checkRequest(request(body, signed(body)), options());
    expect(verdict).toMatchObject({ pass: false, status: 400, reason: 'malformed' });
  });

  it('refuses the same signed request a second time as a replay', async () => {
    const body = command();
    const opts = options();
    expect((await checkRequest(request(body, signed(body)), opts)).pass).toBe(true);
    expect(await checkRequest(request(body, signed(body)), opts)).toEqual({
      pass: false,
      status: 401,
      reason: 'replay',
    });
  });

  it('reads the event_id of a signed JSON event, so a retried delivery is acked and not handled again', async () => {
    const body = JSON.stringify({
      type: 'event_callback',
      event_id: 'Ev0GUARD',
      event: { type: 'app_home_opened', user: 'U1' },
    });
    const opts = options();
    const json = (b: string, timestamp: number) =>
      request(b, { 'content-type': 'application/json', ...signed(b, timestamp) });
    expect((await checkRequest(json(body, NOW_S), opts)).pass).toBe(true);
    // Slack signs each retry anew: another timestamp, the same event.
    const retry = json(body, NOW_S + 1);
    retry.headers['x-slack-retry-num'] = '1';
    expect(await checkRequest(retry, opts)).toEqual({ pass: false, status: 200, reason: 'duplicate_delivery' });
  });
});
