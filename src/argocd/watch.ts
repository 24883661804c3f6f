import { typedDuration } from '../core/format.js';
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
  /** How long to wait for the response headers. */
  connectTimeoutMs: number;
  backoff: Pick<RetryPolicy, 'baseMs' | 'maxMs'>;
  initialResourceVersion?: string;
  logger?: Logger;
}

export function openSseWatch<E>(spec: SseWatchSpec<E>, options: WatchOptions<E>): WatchHandle {
  let closed = false;
  let resourceVersion = spec.initialResourceVersion || undefined;
  let connectedOnce = false;
  let failures = 0;
  /** Connections in a row that ended on a message that is not Argo CD's. */
  let badStreak = 0;
  let current: AbortController | undefined;
  let reconnectTimer: NodeJS.Timeout | undefined;
  let livenessTimer: NodeJS.Timeout | undefined;
  let resolveReady!: () => void;
  const ready = new Promise<void>((resolve) => (resolveReady = resolve));
  const log = spec.logger;

  function clearLiveness() {
    if (livenessTimer) clearTimeout(livenessTimer);
    livenessTimer = undefined;
  }

  function armLiveness(ms: number, onDead: () => void) {
    clearLiveness();
    livenessTimer = setTimeout(onDead, ms);
  }

  function report(error: ArgoError) {
    try {
      options.onError?.(error);
    } catch (e) {
      log?.error({ err: e, instance: spec.instance }, 'watch onError handler threw');
    }
  }

  function scheduleReconnect(immediate = false) {
    if (closed || reconnectTimer) return;
    const delay = immediate ? 0 : backoffDelay(Math.min(Math.max(failures, badStreak), 16), spec.backoff);
    failures++;
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined;
      void connect();
    }, delay);
  }

  function expired() {
    if (options.onExpired) {
      close();
      options.onExpired();
    } else {
      // Without a caller that relists, start over: no resourceVersion means a full ADDED snapshot.
      resourceVersion = undefined;
      scheduleReconnect(true);
    }
  }

  async function connect(): Promise<void> {
    if (closed) return;
    const controller = new AbortController();
    current = controller;
    let finished = false;
    // One place ends a connection attempt, whatever ended it (drop, silence, error message, close()).
    const finish = (why: ArgoError | undefined, next: 'reconnect' | 'expired' | 'none' = 'reconnect') => {
      if (finished) return;
      finished = true;
      clearLiveness();
      controller.abort();
      if (closed) return;
      badStreak = why?.kind === 'bad_response' ? badStreak + 1 : 0;
      if (why) report(why);
      if (next === 'expired') expired();
      else if (next === 'reconnect') scheduleReconnect();
    };

    armLiveness(spec.connectTimeoutMs, () =>
      finish(new ArgoError(`Watch ${spec.describe} on instance ${spec.instance}: no answer within ${typedDuration(spec.connectTimeoutMs)}`, { kind: 'timeout', instance: spec.instance })),
    );
    let answer: StreamAnswer;
    try {
      answer = await spec.connect(resourceVersion, controller.signal);
    } catch (error) {
      if (!finished) finish(spec.transportError(error));
      return;
    }
    if (finished || closed) {
      answer.stream.destroy();
      return;
    }
    if (answer.status < 200 || answer.status >= 300) {
      const body = await readSmall(answer.stream);
      const error = spec.errorFor(answer.status, body);
      finish(error, error.kind === 'expired' ? 'expired' : 'reconnect');
      return;
    }

    const resumedFrom = resourceVersion;
    const silence = spec.keepAliveMs * 2;
    const onSilence = () =>
      finish(
        new ArgoError(`Watch ${spec.describe} on instance ${spec.instance} went silent for ${silence}ms (no event or keep-alive): reconnecting.`, {
          kind: 'timeout',
          instance: spec.instance,
        }),
      );
    armLiveness(silence, onSilence);
    if (!connectedOnce) {
      connectedOnce = true;
      resolveReady();
    } else {
      options.onReconnect?.(resumedFrom);
    }

    const stream = answer.stream;
    stream.setEncoding('utf8');
    let buffer = '';
    let data: string[] = [];
    const dispatch = (payload: string) => {
      let message: { result?: unknown; error?: { http_code?: number; grpc_code?: number; message?: string } } | null;
      try {
        message = JSON.parse(payload);
      } catch {
        finish(spec.badMessage(payload, 'a message of the stream is not JSON'));
        return;
      }
      if (message?.error) {
        const status = message.error.http_code ?? 500;
        const error = spec.errorFor(status, { code: message.error.grpc_code, message: message.error.message });
        finish(error, error.kind === 'expired' ? 'expired' : 'reconnect');
        return;
      }
      let event: E;
      try {
        event = spec.toEvent(message?.result);
      } catch (e) {
        finish(spec.badMessage(payload, (e as Error).message));
        return;
      }
      const rv = spec.resourceVersionOf(event);
      if (rv) resourceVersion = rv;
      try {
        options.onEvent(event);
      } catch (e) {
        log?.error({ err: e, instance: spec.instance }, 'watch onEvent handler threw');
      }
    };
    stream.on('data', (chunk: string) => {
      if (finished) return;
      failures = 0;
      armLiveness(silence, onSilence);
      buffer += chunk;
      let newline: number;
      while (!finished && (newline = buffer.indexOf('\n')) >= 0) {
        let line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        if (line.endsWith('\r')) line = line.slice(0, -1);
        if (line === '') {
          if (data.length) dispatch(data.join('\n'));
          data = [];
        } else if (line.startsWith(':')) {
          // keep-alive comment: liveness only
        } else if (line.startsWith('data:')) {
          data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
        } else if (SSE_FIELD.test(line)) {
          // event:, id:, retry: — valid SSE that Argo CD does not send; nothing to read in them.
        } else {
          // Newline-delimited JSON (what Argo CD sends without the SSE Accept header), or not Argo CD's at all.
          dispatch(line);
        }
      }
    });
    stream.on('error', (e) => finish(spec.transportError(e)));
    stream.on('end', () => {
      if (data.length && !finished) dispatch(data.join('\n'));
      finish(new ArgoError(`Watch ${spec.describe} on instance ${spec.instance} was closed by the server: reconnecting.`, { kind: 'network', instance: spec.instance }));
    });
    stream.on('close', () => finish(new ArgoError(`Watch ${spec.describe} on instance ${spec.instance} was dropped: reconnecting.`, { kind: 'network', instance: spec.instance })));
  }

  function close() {
    if (closed) return;
    closed = true;
    clearLiveness();
    if (reconnectTimer) clearTimeout(reconnectTimer);
    reconnectTimer = undefined;
    current?.abort();
  }

  void connect();
  return { close, ready };
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
