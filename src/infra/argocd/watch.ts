import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { WatchHandle, WatchOptions } from './api.js';
import { ArgoError } from './errors.js';
import { backoffDelay, type RetryPolicy } from './retry.js';

/**
 * Server-sent-events watch over Argo CD's stream endpoints (B5): `data: {"result":{...}}` lines,
 * `:` keep-alive comments every 15 s, `{"error":{...}}` messages. Reconnects with jittered
 * backoff and resumes from the last seen metadata.resourceVersion.
 *
 * A message that is not Argo CD's (not JSON, not an event, a line of a proxy's page) is an event the
 * watch cannot read, so the changes it follows have a hole: it is reported as `bad_response` and the
 * connection is dropped, and the reconnect (with its relist) closes the hole. Connections that keep
 * ending that way back off as failed connects do, so a server that always sends garbage is not hammered.
 *
 * Note: real Argo CD does not replay events on resume. With `resourceVersion` set it only
 * subscribes to new changes (server/application/application.go Watch), so anything that
 * changed while disconnected is lost; callers that keep a mirror must relist after
 * `onReconnect` (FleetMirror does).
 */
export interface StreamAnswer {
  status: number;
  stream: Readable;
}

export interface SseWatchSpec<E> {
  instance: string;
  /** e.g. `GET /stream/applications`, for messages. */
  describe: string;
  /** Opens the HTTP stream, resuming from `resourceVersion` when given. */
  connect(resourceVersion: string | undefined, signal: AbortSignal): Promise<StreamAnswer>;
  /** `result` of one message -> event; throws when it is not one. */
  toEvent(result: unknown): E;
  resourceVersionOf(event: E): string | undefined;
  /** Maps a non-2xx answer or an `{"error":...}` message. */
  errorFor(status: number, body: unknown): ArgoError;
  /** A message that is not Argo CD's: `text` as received, `problem` what is wrong with it. */
  badMessage(text: string, problem: string): ArgoError;
  /** Maps a connect failure without an answer. */
  transportError(error: unknown): ArgoError;
  /** Interval of the server's keep-alive comments; silence for twice this means the stream is dead. */
  keepAliveMs: number;
  /**
   * Argo CD answers a watch only with its first message: grpc-gateway's handler waits for the gRPC stream's
   * header, which the server sends with its first event, and the SSE keep-alives start after that. A watch that
   * skips the snapshot (`resourceVersion` set) over objects that do not change stays unanswered for as long. The
   * server subscribed when the request reached it, so a request still open, unrefused, after this long is followed
   * as an answered one is.
   */
  subscribeAfterMs: number;
  backoff: Pick<RetryPolicy, 'baseMs' | 'maxMs'>;
  initialResourceVersion?: string;
  logger?: Logger;
}

export function openSseWatch<E>(spec: SseWatchSpec<E>, options: WatchOptions<E>): WatchHandle {
  const watch = new SseWatch(spec, options);
  void watch.connect();
  return { close: () => watch.close(), drain: () => watch.drain(), ready: watch.ready };
}

/** What follows the end of a connection attempt. */
type AfterAttempt = 'reconnect' | 'expired' | 'none';

/** One connection attempt; it ends once, whatever ended it (drop, silence, error message, close()). */
interface Attempt {
  controller: AbortController;
  finished: boolean;
  /** Counted as subscribed: answered, or still open after subscribeAfterMs. */
  subscribed: boolean;
  /** performance.now() when it was opened. */
  openedAt: number;
  /** The resourceVersion it resumed from. */
  resumedFrom: string | undefined;
  finish(why: ArgoError | undefined, next?: AfterAttempt): void;
}

class SseWatch<E> {
  readonly ready: Promise<void>;
  private resolveReady!: () => void;
  private closed = false;
  private resourceVersion: string | undefined;
  private connectedOnce = false;
  private failures = 0;
  /** Connections in a row that ended on a message that is not Argo CD's. */
  private badStreak = 0;
  private current: AbortController | undefined;
  /** The messages of the stream now followed, read and not yet all handled. */
  private slices: MessageSlices | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private livenessTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly spec: SseWatchSpec<E>,
    private readonly options: WatchOptions<E>,
  ) {
    this.resourceVersion = spec.initialResourceVersion || undefined;
    this.ready = new Promise<void>((resolve) => (this.resolveReady = resolve));
  }

  drain(): void {
    this.slices?.flush();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.clearLiveness();
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    this.current?.abort();
  }

  async connect(): Promise<void> {
    if (this.closed) return;
    const spec = this.spec;
    const attempt = this.startAttempt();
    // Neither an answer nor its absence says the stream is dead before the first message; a refused or reset
    // request fails the attempt, and a silent one is followed (keep-alives are checked once it is answered).
    const grace = setTimeout(() => this.subscribed(attempt, false), spec.subscribeAfterMs);
    grace.unref();
    attempt.controller.signal.addEventListener('abort', () => clearTimeout(grace), { once: true });
    let answer: StreamAnswer;
    try {
      answer = await spec.connect(this.resourceVersion, attempt.controller.signal);
    } catch (error) {
      if (!attempt.finished) attempt.finish(spec.transportError(error));
      return;
    }
    if (attempt.finished || this.closed) {
      answer.stream.destroy();
      return;
    }
    if (answer.status < 200 || answer.status >= 300) {
      const body = await readSmall(answer.stream);
      const error = spec.errorFor(answer.status, body);
      attempt.finish(error, error.kind === 'expired' ? 'expired' : 'reconnect');
      return;
    }
    this.follow(answer.stream, attempt);
  }

  /** The attempt follows the changes from now on: the first one makes the watch ready, a later one reconnected it. */
  private subscribed(attempt: Attempt, answered: boolean): void {
    if (attempt.finished || attempt.subscribed || this.closed) return;
    attempt.subscribed = true;
    // An answer says the server is up. An unanswered request says so only once it has stayed open a while (finish).
    if (answered) this.failures = 0;
    if (!this.connectedOnce) {
      this.connectedOnce = true;
      this.resolveReady();
    } else {
      this.options.onReconnect?.(attempt.resumedFrom, answered);
    }
  }

  private startAttempt(): Attempt {
    const attempt: Attempt = {
      controller: new AbortController(),
      finished: false,
      subscribed: false,
      openedAt: performance.now(),
      resumedFrom: this.resourceVersion,
      finish: (why, next = 'reconnect') => {
        if (attempt.finished) return;
        attempt.finished = true;
        this.clearLiveness();
        attempt.controller.abort();
        if (this.closed) return;
        // A quiet stream a proxy cuts for idleness (nginx: after 60 s) was a stream: reconnect without backing off.
        // One that ends sooner, unanswered (a 503 after two seconds), is a failed attempt like a refused one.
        if (attempt.subscribed && performance.now() - attempt.openedAt >= this.silenceMs) this.failures = 0;
        this.badStreak = why?.kind === 'bad_response' ? this.badStreak + 1 : 0;
        if (why) this.report(why);
        if (next === 'expired') this.expired();
        else if (next === 'reconnect') this.scheduleReconnect();
      },
    };
    this.current = attempt.controller;
    return attempt;
  }

  /** Reads an accepted stream until it ends, is dropped or goes silent. */
  private follow(stream: Readable, attempt: Attempt): void {
    const spec = this.spec;
    const silence = this.silenceMs;
    const onSilence = () =>
      attempt.finish(
        new ArgoError(
          `Watch ${spec.describe} on instance ${spec.instance} went silent for ${silence}ms (no event or keep-alive): reconnecting.`,
          {
            kind: 'timeout',
            instance: spec.instance,
          },
        ),
      );
    this.armLiveness(silence, onSilence);
    this.subscribed(attempt, true);

    stream.setEncoding('utf8');
    const slices = new MessageSlices(
      stream,
      (payload) => this.dispatch(payload, attempt),
      () => attempt.finished || this.closed,
      () => this.armLiveness(silence, onSilence),
    );
    this.slices = slices;
    const reader = new SseMessageReader(
      (payload) => slices.push(payload),
      () => attempt.finished,
    );
    // What arrived before the stream ended is read before the attempt ends: the reconnect resumes after it.
    const end = (why: ArgoError) => {
      slices.flush();
      attempt.finish(why);
    };
    stream.on('data', (chunk: string) => {
      if (attempt.finished) return;
      this.failures = 0;
      this.armLiveness(silence, onSilence);
      reader.push(chunk);
    });
    stream.on('error', (e) => end(spec.transportError(e)));
    stream.on('end', () => {
      reader.end();
      end(
        new ArgoError(`Watch ${spec.describe} on instance ${spec.instance} was closed by the server: reconnecting.`, {
          kind: 'network',
          instance: spec.instance,
        }),
      );
    });
    stream.on('close', () =>
      end(
        new ArgoError(`Watch ${spec.describe} on instance ${spec.instance} was dropped: reconnecting.`, {
          kind: 'network',
          instance: spec.instance,
        }),
      ),
    );
  }

  /** One message of the stream: an event, Argo CD's `{"error":...}`, or something that is not Argo CD's. */
  private dispatch(payload: string, attempt: Attempt): void {
    const spec = this.spec;
    let message: { result?: unknown; error?: { http_code?: number; grpc_code?: number; message?: string } } | null;
    try {
      message = JSON.parse(payload);
    } catch {
      attempt.finish(spec.badMessage(payload, 'a message of the stream is not JSON'));
      return;
    }
    if (message?.error) {
      const status = message.error.http_code ?? 500;
      const error = spec.errorFor(status, { code: message.error.grpc_code, message: message.error.message });
      attempt.finish(error, error.kind === 'expired' ? 'expired' : 'reconnect');
      return;
    }
    let event: E;
    try {
      event = spec.toEvent(message?.result);
    } catch (e) {
      attempt.finish(spec.badMessage(payload, (e as Error).message));
      return;
    }
    const rv = spec.resourceVersionOf(event);
    if (rv) this.resourceVersion = rv;
    try {
      this.options.onEvent(event);
    } catch (e) {
      this.spec.logger?.error({ err: e, instance: spec.instance }, 'watch onEvent handler threw');
    }
  }

  /** How long an answered stream may stay silent: two of the server's keep-alive intervals. */
  private get silenceMs(): number {
    return this.spec.keepAliveMs * 2;
  }

  private clearLiveness(): void {
    if (this.livenessTimer) clearTimeout(this.livenessTimer);
    this.livenessTimer = undefined;
  }

  private armLiveness(ms: number, onDead: () => void): void {
    this.clearLiveness();
    this.livenessTimer = setTimeout(onDead, ms);
  }

  private report(error: ArgoError): void {
    try {
      this.options.onError?.(error);
    } catch (e) {
      this.spec.logger?.error({ err: e, instance: this.spec.instance }, 'watch onError handler threw');
    }
  }

  private scheduleReconnect(immediate = false): void {
    if (this.closed || this.reconnectTimer) return;
    const delay = immediate
      ? 0
      : backoffDelay(Math.min(Math.max(this.failures, this.badStreak), 16), this.spec.backoff);
    this.failures++;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      void this.connect();
    }, delay);
  }

  private expired(): void {
    if (this.options.onExpired) {
      this.close();
      this.options.onExpired();
    } else {
      // Without a caller that relists, start over: no resourceVersion means a full ADDED snapshot.
      this.resourceVersion = undefined;
      this.scheduleReconnect(true);
    }
  }
}

/** How long one slice of a stream's messages may hold the event loop. */
export const SLICE_MS = 4;
/** Messages read and not yet handled past which the stream is paused until they are. */
export const PAUSE_AT_MESSAGES = 2000;

/**
 * A stream's messages, handled a few milliseconds at a time, in order. A sync of hundreds of apps sends thousands of
 * events within a second, and node reads a socket's backlog in one go (up to 32 reads of 64 KiB): handled as read,
 * they held the event loop 30–90 ms per burst, and every Slack request arriving meanwhile waited for its ack. Between
 * slices the loop takes other work. Past PAUSE_AT_MESSAGES waiting, the stream is paused, so a burst waits in the
 * socket (the server's backpressure) rather than in memory here.
 */
export class MessageSlices {
  private queue: string[] = [];
  private head = 0;
  private scheduled = false;
  private paused = false;

  constructor(
    private readonly stream: Pick<Readable, 'pause' | 'resume'>,
    private readonly handle: (payload: string) => void,
    private readonly stopped: () => boolean,
    /** Called after each slice that handled messages: handling them is a sign of life as their arrival was. */
    private readonly progressed: () => void = () => {},
  ) {}

  push(payload: string): void {
    this.queue.push(payload);
    if (!this.paused && this.queue.length - this.head >= PAUSE_AT_MESSAGES) {
      this.paused = true;
      this.stream.pause();
    }
    this.schedule();
  }

  /** Everything read so far, handled now. */
  flush(): void {
    this.drain(Infinity);
  }

  private drain(budgetMs: number): void {
    const until = performance.now() + budgetMs;
    const from = this.head;
    while (this.head < this.queue.length && !this.stopped()) {
      this.handle(this.queue[this.head++]);
      if (performance.now() >= until) break;
    }
    if (this.head > from && !this.stopped()) this.progressed();
    if (this.stopped() || this.head >= this.queue.length) {
      this.queue = [];
      this.head = 0;
      if (this.paused && !this.stopped()) {
        this.paused = false;
        this.stream.resume();
      }
    } else {
      // A stream that never quite catches up never empties the queue: drop what was handled now and then.
      if (this.head >= PAUSE_AT_MESSAGES) {
        this.queue = this.queue.slice(this.head);
        this.head = 0;
      }
      this.schedule();
    }
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.drain(SLICE_MS);
    });
  }
}

/**
 * Splits a stream's text into messages: SSE `data:` lines up to a blank line, or a bare line. Stops
 * reading as soon as `stopped()` says the connection has ended (a message may end it).
 */
class SseMessageReader {
  private buffer = '';
  private data: string[] = [];

  constructor(
    private readonly onMessage: (payload: string) => void,
    private readonly stopped: () => boolean,
  ) {}

  push(chunk: string): void {
    this.buffer += chunk;
    let newline: number;
    while (!this.stopped() && (newline = this.buffer.indexOf('\n')) >= 0) {
      let line = this.buffer.slice(0, newline);
      this.buffer = this.buffer.slice(newline + 1);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      this.readLine(line);
    }
  }

  /** The stream ended: `data:` lines not yet closed by a blank line are still a message. */
  end(): void {
    if (this.data.length && !this.stopped()) this.onMessage(this.data.join('\n'));
  }

  private readLine(line: string): void {
    if (line === '') {
      if (this.data.length) this.onMessage(this.data.join('\n'));
      this.data = [];
    } else if (line.startsWith(':')) {
      // keep-alive comment: liveness only
    } else if (line.startsWith('data:')) {
      this.data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
    } else if (SSE_FIELD.test(line)) {
      // event:, id:, retry: — valid SSE that Argo CD does not send; nothing to read in them.
    } else {
      // Newline-delimited JSON (what Argo CD sends without the SSE Accept header), or not Argo CD's at all.
      this.onMessage(line);
    }
  }
}

const SSE_FIELD = /^(event|id|retry):/;

async function readSmall(stream: Readable, limit = 64 * 1024): Promise<string> {
  let text = '';
  try {
    stream.setEncoding('utf8');
    for await (const chunk of stream) {
      text += chunk as string;
      if (text.length > limit) break;
    }
  } catch {
    // the body of an error answer is best effort
  }
  stream.destroy();
  return text;
}
