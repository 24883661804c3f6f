import { ErrorCode, WebClientEvent, type WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import { RollcallError } from '../../core/errors.js';
import type { MessageRef, Notifier } from '../../core/notifier.js';
import type { Reply, ReplyFile } from '../../core/reply.js';
import { renderBlocks } from '../../views/blocks.js';
import { slackCallError, type SlackCall } from './web-api-errors.js';

export interface SlackNotifierOptions {
  /**
   * At most one chat.update per message in this window; updates in between are coalesced and the latest wins.
   * chat.update is a Tier 3 method (about 50/min per workspace), shared by every live message.
   * @defaultValue 2000
   */
  minIntervalMs?: number;
  /** Attempts for one call when Slack answers 429. @defaultValue 5 */
  maxRateLimitRetries?: number;
  logger?: Logger;
}

export interface SlackNotifierCounters {
  /** chat.postMessage calls that succeeded. */
  posts: number;
  /** chat.update calls that succeeded. */
  updates: number;
  /** Updates replaced by a newer one before they were sent. */
  coalesced: number;
  /** 429 answers seen (each waited out). */
  rateLimited: number;
  errors: number;
}

interface MessageState {
  ref: MessageRef;
  lastSentAt: number;
  pending?: Reply;
  timer?: NodeJS.Timeout;
  inflight?: Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function retryAfterMs(err: unknown): number | undefined {
  const e = err as { code?: string; retryAfter?: number };
  return e?.code === ErrorCode.RateLimitedError ? Math.max(0, (e.retryAfter ?? 1) * 1000) : undefined;
}

/**
 * Live messages in Slack (run progress): post once, then update the same message. Updates are coalesced per
 * message so a run with thousands of state changes makes a handful of calls, and 429s are waited out with
 * Retry-After before the latest content is sent.
 *
 * `update()` resolves once the content is queued; it is sent within minIntervalMs. `flush()` waits for delivery.
 * Give it a client with `rejectRateLimitedCalls: true` so 429s come back here instead of blocking the client's queue;
 * with a default client the client's own retry does the waiting and this class only sees the delay.
 */
export class SlackNotifier implements Notifier {
  readonly counters: SlackNotifierCounters = { posts: 0, updates: 0, coalesced: 0, rateLimited: 0, errors: 0 };
  private readonly minIntervalMs: number;
  private readonly maxRetries: number;
  private readonly messages = new Map<string, MessageState>();
  /** Set from the client's rate_limited event: nothing is sent before this time. */
  private pausedUntil = 0;

  constructor(
    private readonly client: WebClient,
    private readonly opts: SlackNotifierOptions = {},
  ) {
    this.minIntervalMs = opts.minIntervalMs ?? 2000;
    this.maxRetries = opts.maxRateLimitRetries ?? 5;
    // The client emits this for every 429, whether it then rejects the call or retries it itself.
    client.on(WebClientEvent.RATE_LIMITED, (seconds: number) => {
      this.counters.rateLimited += 1;
      this.pausedUntil = Math.max(this.pausedUntil, Date.now() + seconds * 1000);
    });
  }

  async post(target: { channel: string; threadTs?: string }, reply: Reply): Promise<MessageRef> {
    const { text, blocks } = renderBlocks(reply);
    const res = await this.withRateLimit({ method: 'chat.postMessage', channel: target.channel }, () =>
      this.client.chat.postMessage({
        channel: target.channel,
        text,
        blocks,
        ...(target.threadTs ? { thread_ts: target.threadTs } : {}),
      }),
    );
    this.counters.posts += 1;
    const ref: MessageRef = {
      channel: res.channel ?? target.channel,
      ts: res.ts!,
      ...(target.threadTs ? { threadTs: target.threadTs } : {}),
    };
    this.messages.set(key(ref), { ref, lastSentAt: Date.now() });
    return ref;
  }

  async update(ref: MessageRef, reply: Reply): Promise<void> {
    let state = this.messages.get(key(ref));
    if (!state) {
      state = { ref, lastSentAt: 0 };
      this.messages.set(key(ref), state);
    }
    if (state.pending) this.counters.coalesced += 1;
    state.pending = reply;
    this.schedule(state);
  }

  /** A public channel for an incident, with the declarer invited; resolves to its id. */
  async createChannel(name: string, invite: string[]): Promise<string> {
    const created = await this.withRateLimit({ method: 'conversations.create' }, () =>
      this.client.conversations.create({ name, is_private: false }),
    );
    const id = created.channel?.id;
    if (!id)
      throw new RollcallError('slack_api_error', `Slack's conversations.create returned no channel id for #${name}.`, {
        data: { method: 'conversations.create' },
      });
    const users = invite.filter((u) => /^[UW][A-Z0-9]+$/.test(u));
    if (users.length)
      await this.withRateLimit({ method: 'conversations.invite', channel: id }, () =>
        this.client.conversations.invite({ channel: id, users: users.join(',') }),
      );
    return id;
  }

  /** Files into a channel or thread with files.uploadV2 (getUploadURLExternal, the upload, completeUploadExternal). */
  async upload(target: { channel: string; threadTs?: string }, files: ReplyFile[], comment?: string): Promise<void> {
    await this.withRateLimit({ method: 'files.uploadV2', channel: target.channel }, () =>
      this.client.filesUploadV2({
        channel_id: target.channel,
        ...(target.threadTs ? { thread_ts: target.threadTs } : {}),
        ...(comment ? { initial_comment: comment } : {}),
        file_uploads: files.map((f) => ({ file: f.content, filename: f.name, title: f.title })),
      }),
    );
  }

  /** Sends every pending update (respecting the interval and rate limits) and resolves when all are delivered. */
  async flush(): Promise<void> {
    for (;;) {
      const busy = [...this.messages.values()].filter((s) => s.pending || s.inflight);
      if (busy.length === 0) return;
      await Promise.all(
        busy.map(async (s) => {
          if (s.inflight) await s.inflight;
          else if (s.pending) {
            if (s.timer) clearTimeout(s.timer);
            s.timer = undefined;
            await sleep(this.delayFor(s));
            if (!s.inflight && s.pending) await this.send(s);
          }
        }),
      );
    }
  }

  /** Forgets a message (the run ended); pending content is sent first. */
  async release(ref: MessageRef): Promise<void> {
    const state = this.messages.get(key(ref));
    if (!state) return;
    if (state.pending || state.inflight) await this.flush();
    this.messages.delete(key(ref));
  }

  private delayFor(state: MessageState): number {
    const now = Date.now();
    return Math.max(0, state.lastSentAt + this.minIntervalMs - now, this.pausedUntil - now);
  }

  private schedule(state: MessageState): void {
    if (state.timer || state.inflight) return;
    state.timer = setTimeout(() => {
      state.timer = undefined;
      void this.send(state);
    }, this.delayFor(state));
  }

  private send(state: MessageState): Promise<void> {
    if (!state.pending) return Promise.resolve();
    state.inflight = (async () => {
      let attempts = 0;
      try {
        for (;;) {
          const reply = state.pending;
          if (!reply) return;
          state.pending = undefined;
          const { text, blocks } = renderBlocks(reply);
          try {
            await this.client.chat.update({ channel: state.ref.channel, ts: state.ref.ts, text, blocks });
            this.counters.updates += 1;
            return;
          } catch (err) {
            const wait = retryAfterMs(err);
            if (wait === undefined || attempts++ >= this.maxRetries) throw err;
            this.pausedUntil = Math.max(this.pausedUntil, Date.now() + wait);
            // Retry with the latest content: what arrived while we were limited replaces what was refused.
            if (state.pending) this.counters.coalesced += 1;
            else state.pending = reply;
            await sleep(wait);
          }
        }
      } catch (err) {
        this.counters.errors += 1;
        const error = slackCallError({ method: 'chat.update', channel: state.ref.channel }, err);
        this.opts.logger?.warn(
          { err: errSummary(error), channel: state.ref.channel, ts: state.ref.ts },
          'slack message update failed',
        );
      } finally {
        state.lastSentAt = Date.now();
        state.inflight = undefined;
        if (state.pending) this.schedule(state);
      }
    })();
    return state.inflight;
  }

  /**
   * Runs a call, waiting out 429s (Retry-After) up to maxRateLimitRetries times. What still fails is
   * a RollcallError with a slack_* code (slackCallError).
   */
  private async withRateLimit<T>(what: SlackCall, call: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await call();
      } catch (err) {
        const wait = retryAfterMs(err);
        if (wait === undefined || attempt >= this.maxRetries) throw slackCallError(what, err);
        this.pausedUntil = Math.max(this.pausedUntil, Date.now() + wait);
        await sleep(wait);
      }
    }
  }
}

function key(ref: { channel: string; ts: string }): string {
  return `${ref.channel}/${ref.ts}`;
}

function errSummary(err: unknown): { code?: string; message: string; error?: string } {
  if (err instanceof RollcallError)
    return { code: err.code, message: err.message, error: err.data?.slackError as string | undefined };
  return { message: err instanceof Error ? err.message : String(err) };
}
