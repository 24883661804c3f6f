import { secondsSince, slackAckDuration } from '../../infra/metrics.js';
import { createHash, timingSafeEqual } from 'node:crypto';
import { ServerResponse, type IncomingMessage } from 'node:http';
import { parse as parseQuery, type ParsedUrlQuery } from 'node:querystring';
import { HTTPModuleFunctions, type BufferedIncomingMessage, type HTTPReceiver } from '@slack/bolt';
import type { RedisClient } from '../../infra/redis.js';
import { typedDuration } from '../../core/format.js';
import type { Logger } from 'pino';
import { keyBase } from '../../infra/redis.js';
import { malformedBody, slackEntryOf, type SlackEntry } from './entry.js';
import { slackSignature, WARM_UP_HEADER } from './warm-up.js';
import { nextTurn } from '../../core/concurrency.js';

/** Slack's window for a request's timestamp, both ways. Bolt enforces it only for the past. */
export const REQUEST_WINDOW_S = 5 * 60;
/**
 * A signature is remembered while its timestamp can still pass the window: up to 5 minutes after it
 * (and it may arrive up to 5 minutes early), with a minute for clock skew between bot processes.
 */
const SEEN_SIGNATURE_TTL_S = 2 * REQUEST_WINDOW_S + 60;
/** Slack retries an event delivery three times over about five minutes; an hour covers them with room. */
const SEEN_EVENT_TTL_S = 3600;
/** A Redis that does not answer must not hold Slack's 3-second ack: the guard answers from its own memory instead. */
const REDIS_TIMEOUT_MS = 1000;
/** How many keys a process remembers itself: about 15 requests a second over a signature's TTL. */
const SEEN_IN_PROCESS = 10_000;

/**
 * What this process has seen, as a second memory to Redis: a request one process saw is refused by it again
 * while Redis cannot answer. Bounded by count (the oldest go first) and by each key's TTL.
 */
export class SeenMemory {
  private readonly seen = new Map<string, number>();
  constructor(private readonly max = SEEN_IN_PROCESS) {}

  /** Like SET NX EX: whether the key was there (and not expired); it is remembered from now on either way. */
  remember(key: string, ttlS: number, nowMs: number): boolean {
    const expires = this.seen.get(key);
    const known = expires !== undefined && expires > nowMs;
    if (!known) {
      // Re-inserted at the end: the Map's order is the order keys were last added, oldest first.
      this.seen.delete(key);
      this.seen.set(key, nowMs + ttlS * 1000);
    }
    for (const [k, at] of this.seen) {
      if (this.seen.size <= this.max && at > nowMs) break;
      this.seen.delete(k);
    }
    return known;
  }

  get size(): number {
    return this.seen.size;
  }
}

export interface RequestGuardOptions {
  signingSecret: string;
  /** Shared by every bot process, so a request seen by one is a replay for all. */
  redis: RedisClient;
  prefix: string;
  logger: Logger;
  /** The endpoints Bolt serves (POST); other paths pass straight through. @defaultValue ['/slack/events'] */
  endpoints?: string[];
  now?: () => number;
  /** Whether the last Redis check failed: a Redis outage is logged once, and its end once. */
  redisTrouble?: boolean;
  /** This process's own memory of what it saw. @defaultValue a new SeenMemory per guarded receiver */
  memory?: SeenMemory;
  /** A verified request that names no user is refused with 400 here; this records the refusal (the audit). */
  onNoUser?: (entry: SlackEntry) => Promise<void>;
  /**
   * Which verified requests are acked here, with an empty 200, as soon as every check above passed: those whose ack
   * Bolt's listener would send empty anyway (a slash command). Bolt then gets them on a later turn (`handOff`) and
   * runs all it would otherwise (its own signature check, the authorization middleware, the listener), writing
   * its ack to a response nobody reads. @defaultValue none: Bolt acks everything itself
   */
  ackAtOnce?: (body: unknown) => boolean;
  /** Where Bolt's handling of a request acked here starts. @defaultValue the next turn of the event loop */
  handOff?: () => Promise<void>;
  /** The warm-up's requests carry it in WARM_UP_HEADER (warm-up.ts): their acks are not Slack's, and go uncounted. */
  warmUpToken?: string;
}

export type GuardVerdict =
  | { pass: true; body?: unknown }
  | {
      pass: false;
      status: 200 | 401 | 413;
      reason: 'future_timestamp' | 'replay' | 'duplicate_delivery' | 'unverified' | 'too_large';
    }
  | { pass: false; status: 400; reason: 'malformed'; detail: string }
  | { pass: false; status: 400; reason: 'no_user'; entry: SlackEntry };

/**
 * Puts the checks Bolt's HTTPReceiver leaves out in front of its request listener:
 * - a timestamp more than 5 minutes in the future is refused (401), as a stale one is;
 * - a signed request seen before (same signature, hence same timestamp and body) is a replay: 401, nothing runs;
 * - an Events API delivery whose event_id was seen is Slack retrying (x-slack-retry-num): acked with 200 and
 *   not run again. Slack signs each retry anew, so retries are told apart by event_id, not by signature;
 * - a body that is not a Slack request (not an object, a `payload` that is not one ...) is refused with 400:
 *   Bolt would throw on it in a promise nobody awaits; one that names no user is refused with 400 and audited.
 * What passes goes to Bolt with its body already read; Bolt verifies the signature again on it. What `ackAtOnce`
 * picks of it (a slash command) is acked here first, every check above passed.
 */
export function guardReceiver(receiver: HTTPReceiver, options: RequestGuardOptions): void {
  // Its own copy: the Redis-trouble flag and the memory of seen requests belong to this receiver.
  const opts = { ...options, memory: options.memory ?? new SeenMemory() };
  const bolt = receiver.requestListener;
  const endpoints = opts.endpoints ?? ['/slack/events'];
  receiver.requestListener = (req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    // Bolt routes (and refuses) everything else itself, synchronously: keep that path untouched.
    if (req.method?.toUpperCase() !== 'POST' || !endpoints.includes(path)) return bolt(req, res);
    // The ack is the response: Slack's 3 s clock runs from the request to its end.
    const started = process.hrtime.bigint();
    const warmUp = opts.warmUpToken !== undefined && req.headers[WARM_UP_HEADER] === opts.warmUpToken;
    if (!warmUp) res.once('finish', () => slackAckDuration.observe({ surface: 'http' }, secondsSince(started)));
    void checkRequest(req, opts)
      .then((verdict) => {
        if (verdict.pass && opts.ackAtOnce?.(verdict.body)) return ackThenHandOff(req, res, bolt, opts);
        if (verdict.pass) return bolt(req, res);
        if (verdict.status === 200) {
          res.writeHead(200).end();
          opts.logger.info(
            { reason: verdict.reason, retry: req.headers['x-slack-retry-num'] },
            'slack delivery already handled: acked, not run again',
          );
          return;
        }
        opts.logger.warn(
          { reason: verdict.reason, ...('detail' in verdict ? { detail: verdict.detail } : {}) },
          'slack request refused',
        );
        HTTPModuleFunctions.buildNoBodyResponse(res, verdict.status);
        if (verdict.reason === 'no_user') return opts.onNoUser?.(verdict.entry);
      })
      .catch((err: unknown) => {
        opts.logger.error({ err }, 'slack request check failed');
        if (!res.headersSent) HTTPModuleFunctions.buildNoBodyResponse(res, 500);
      });
  };
}

/**
 * Acks a verified request at once and gives it to Bolt later: its 200 goes out before the answer work of the requests
 * in front of it, and before Bolt's own work on it, which would hold the response until the turn ends.
 */
function ackThenHandOff(
  req: IncomingMessage,
  res: ServerResponse,
  bolt: (req: IncomingMessage, res: ServerResponse) => void,
  opts: RequestGuardOptions,
): void {
  res.writeHead(200).end();
  // Bolt's ack and any status it would write land here: the request is answered already.
  const acked = new ServerResponse(req);
  const handOff = opts.handOff?.() ?? nextTurn();
  void handOff
    .then(() => bolt(req, acked))
    .catch((err: unknown) => opts.logger.error({ err }, 'slack request hand-off to Bolt failed'));
}

/** The verdict on one request to the Slack endpoint. Reads (buffers) its body. */
export async function checkRequest(req: IncomingMessage, opts: RequestGuardOptions): Promise<GuardVerdict> {
  const nowS = Math.floor((opts.now?.() ?? Date.now()) / 1000);
  const timestamp = Number(req.headers['x-slack-request-timestamp']);
  if (Number.isFinite(timestamp) && timestamp > nowS + REQUEST_WINDOW_S) {
    req.resume();
    return { pass: false, status: 401, reason: 'future_timestamp' };
  }
  let buffered: BufferedIncomingMessage;
  try {
    buffered = await HTTPModuleFunctions.bufferIncomingMessage(req, HTTPModuleFunctions.defaultBodyLimit);
  } catch (err) {
    if (HTTPModuleFunctions.isRawBodyError(err) && (err as { statusCode?: number }).statusCode === 413)
      return { pass: false, status: 413, reason: 'too_large' };
    return { pass: false, status: 401, reason: 'unverified' };
  }
  const body = buffered.rawBody.toString();
  const form = req.headers['content-type'] === 'application/x-www-form-urlencoded' ? parseQuery(body) : undefined;
  if (form?.ssl_check === '1') {
    // Unsigned by Slack's design: it passes as nothing but itself, whatever else the body carried.
    buffered.rawBody = Buffer.from('ssl_check=1');
    return { pass: true, body: { ssl_check: '1' } };
  }
  if (!signedBySlack(opts.signingSecret, req, body, nowS)) return { pass: false, status: 401, reason: 'unverified' };
  const shape = readBody(body, form);
  if ('malformed' in shape) return { pass: false, status: 400, reason: 'malformed', detail: shape.malformed };
  const entry = slackEntryOf(shape.parsed);
  if (entry && !entry.user) return { pass: false, status: 400, reason: 'no_user', entry };
  const signature = req.headers['x-slack-signature'] as string;
  const base = `${keyBase(opts.prefix)}slack:`;
  const eventId = form ? undefined : eventIdOf(shape.parsed);
  const seen = await remember(opts, [
    [`${base}sig:${createHash('sha256').update(signature).digest('hex')}`, SEEN_SIGNATURE_TTL_S],
    ...(eventId ? ([[`${base}event:${eventId}`, SEEN_EVENT_TTL_S]] as [string, number][]) : []),
  ]);
  const retry = req.headers['x-slack-retry-num'] !== undefined;
  if (seen[1]) return { pass: false, status: 200, reason: 'duplicate_delivery' };
  // The very same signed request again: Slack never does that, except a retry (which is answered, not run).
  if (seen[0])
    return retry
      ? { pass: false, status: 200, reason: 'duplicate_delivery' }
      : { pass: false, status: 401, reason: 'replay' };
  return { pass: true, body: shape.parsed };
}

/**
 * Slack's signature (v0): `v0=` and the hex HMAC-SHA256 of `v0:<timestamp>:<body>` under the signing secret, compared
 * in constant time, with a timestamp no older than the window. What Bolt checks, at a fraction of its cost: its
 * comparison draws random bytes and computes two more HMACs per request, on the path every ack of a crowd waits on.
 */
function signedBySlack(secret: string, req: IncomingMessage, body: string, nowS: number): boolean {
  const signature = req.headers['x-slack-signature'];
  const timestamp = req.headers['x-slack-request-timestamp'];
  if (typeof signature !== 'string' || typeof timestamp !== 'string' || !/^[0-9]{1,12}$/.test(timestamp)) return false;
  if (Number(timestamp) < nowS - REQUEST_WINDOW_S) return false;
  const want = Buffer.from(slackSignature(secret, timestamp, body));
  const got = Buffer.from(signature);
  return got.length === want.length && timingSafeEqual(got, want);
}

/**
 * The body as Bolt will parse it (a form's `payload` is JSON; node's querystring, as Bolt's parser), or why Bolt must
 * not get it. A form is parsed once, by the caller.
 */
function readBody(text: string, form: ParsedUrlQuery | undefined): { parsed: unknown } | { malformed: string } {
  // Two `payload` fields parse to a list, which Bolt would take for a slash command's form.
  if (Array.isArray(form?.payload)) return { malformed: 'more than one `payload` field' };
  let parsed: unknown;
  try {
    parsed = form ? (typeof form.payload === 'string' ? JSON.parse(form.payload) : form) : JSON.parse(text);
  } catch (err) {
    return { malformed: `the body does not parse: ${(err as Error).message}` };
  }
  const malformed = malformedBody(parsed);
  return malformed ? { malformed } : { parsed };
}

/** An Events API envelope's event_id (JSON bodies only; commands and interactions are form-encoded). */
function eventIdOf(parsed: unknown): string | undefined {
  const envelope = parsed as { type?: unknown; event_id?: unknown };
  return envelope.type === 'event_callback' &&
    typeof envelope.event_id === 'string' &&
    /^[A-Za-z0-9]{1,64}$/.test(envelope.event_id)
    ? envelope.event_id
    : undefined;
}

/**
 * Says, per key, whether it was seen already: by any process (Redis, SET NX) or by this one (its memory, which
 * remembers every key too). When Redis cannot answer in time the memory alone answers (logged once per
 * outage): a request this process saw is still refused, and a new one is served — read-only answers must not
 * stop with Redis. What another process saw during the outage it cannot know; a run's own state machine still
 * refuses a second confirm or approve.
 */
async function remember(opts: RequestGuardOptions, keys: [string, number][]): Promise<boolean[]> {
  const nowMs = opts.now?.() ?? Date.now();
  // Without a memory of its own (a bare checkRequest call) a guard forgets nothing it could not have known.
  const inProcess = keys.map(([key, ttl]) => opts.memory?.remember(key, ttl, nowMs) ?? false);
  const shared = await rememberInRedis(opts, keys);
  return inProcess.map((seen, i) => seen || (shared?.[i] ?? false));
}

/** SET NX each key in Redis; says, per key, whether it was there already. Undefined when Redis cannot answer in time. */
async function rememberInRedis(opts: RequestGuardOptions, keys: [string, number][]): Promise<boolean[] | undefined> {
  // One SET NX per key, each atomic alone, rather than a MULTI per request (three commands): a crowd's SETs then go to
  // Redis together when the client pipelines what one turn of the event loop sends (enableAutoPipelining).
  const sets = Promise.all(keys.map(([key, ttl]) => opts.redis.set(key, '1', 'EX', ttl, 'NX')));
  let timer: NodeJS.Timeout | undefined;
  try {
    const results = await Promise.race([
      sets,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer from Redis within ${typedDuration(REDIS_TIMEOUT_MS)}`)),
          REDIS_TIMEOUT_MS,
        );
      }),
    ]);
    if (opts.redisTrouble) opts.logger.info('slack replay check: Redis answers again');
    opts.redisTrouble = false;
    return results.map((value) => value === null);
  } catch (err) {
    if (!opts.redisTrouble)
      opts.logger.warn(
        { err: (err as Error).message },
        'slack replay check: Redis is unreachable; checking against what this process has seen until it answers',
      );
    opts.redisTrouble = true;
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}
