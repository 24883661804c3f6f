import { createHmac, randomBytes } from 'node:crypto';
import { Agent } from 'node:http';
import axios from 'axios';
import type { Logger } from 'pino';

/**
 * A bot that has just started runs its request path for the first time when Slack's first requests come in, and an
 * incident's first crowd (everyone's `/argo status` within seconds, often right after a restart) pays for V8 compiling
 * it: its acks waited about twice as long as a later crowd's. So the HTTP receiver answers signed `url_verification`
 * requests of its own before the bot says it is ready: they take the path of every Slack request up to the ack (body
 * read, signature verified by the guard and by Bolt, the replay check in Redis, the 200 written), and run nothing.
 * Each leaves its signature in the replay memory for its TTL, as any request does.
 */
export const WARM_UP_REQUESTS = 300;
/**
 * As a crowd comes, several at once. With the answer path warmed as well (`rollcall start`), a 10,000-app bot's first
 * crowd of 50 `status` had its acks' p99 at 33–59 ms (median 42) over 8 bots, against 51–78 (median 73) unwarmed.
 */
const WARM_UP_AT_ONCE = 100;

/** Marks the warm-up's requests, so the ack histogram counts only Slack's. */
export const WARM_UP_HEADER = 'x-rollcall-warm-up';

/** The value of WARM_UP_HEADER this process sends: unknown outside it, so no request from outside leaves the histogram. */
export function warmUpToken(): string {
  return randomBytes(16).toString('hex');
}

/** `v0=` HMAC-SHA256 of `v0:timestamp:body`, as Slack signs a request (and the request guard checks it). */
export function slackSignature(secret: string, timestamp: number | string, body: string): string {
  return `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex')}`;
}

/**
 * Sends `requests` signed url_verification requests at once to the receiver on `port`, each with its own challenge,
 * and says how many came back with it. A failure is logged, never thrown: the bot serves without a warm-up.
 */
export async function warmIntake(opts: {
  port: number;
  signingSecret: string;
  token: string;
  logger: Logger;
  requests?: number;
}): Promise<number> {
  const started = performance.now();
  const requests = opts.requests ?? WARM_UP_REQUESTS;
  // A connection each, closed after its answer, as Slack's senders come: none is left open to the receiver.
  const agent = new Agent({ keepAlive: false });
  const one = async (): Promise<boolean> => {
    const challenge = randomBytes(12).toString('hex');
    const body = JSON.stringify({ type: 'url_verification', token: 'rollcall-warm-up', challenge });
    const timestamp = Math.floor(Date.now() / 1000);
    const res = await axios.post<unknown>(`http://127.0.0.1:${opts.port}/slack/events`, body, {
      headers: {
        'content-type': 'application/json',
        'x-slack-request-timestamp': String(timestamp),
        'x-slack-signature': slackSignature(opts.signingSecret, timestamp, body),
        [WARM_UP_HEADER]: opts.token,
      },
      // Loopback: never through an HTTP(S)_PROXY of the environment.
      proxy: false,
      httpAgent: agent,
      timeout: 5000,
      transformResponse: (text: string) => text,
      validateStatus: () => true,
    });
    return res.status === 200 && String(res.data).includes(challenge);
  };
  let answered = 0;
  for (let sent = 0; sent < requests; sent += WARM_UP_AT_ONCE) {
    const now = Array.from({ length: Math.min(WARM_UP_AT_ONCE, requests - sent) }, () => one().catch(() => false));
    answered += (await Promise.all(now)).filter(Boolean).length;
  }
  agent.destroy();
  const ms = Math.round(performance.now() - started);
  if (answered < requests)
    opts.logger.warn(
      { requests, answered, ms },
      'slack intake warm-up: some signed requests to this bot were not answered with their challenge',
    );
  else opts.logger.info({ requests, ms }, 'slack intake warmed');
  return answered;
}
