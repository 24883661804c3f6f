import type { Reply, ReplyFile } from './reply.js';

/** Where a posted reply lives, so a live message (a run's progress) can be updated in place. */
export interface MessageRef {
  channel: string;
  ts: string;
  threadTs?: string;
}

/**
 * Posts and updates replies on a surface. Implemented by Slack and the terminal. A call that fails on
 * the surface rejects with a RollcallError whose code says why (slack_channel_not_found,
 * slack_not_in_channel, slack_rate_limited, slack_auth_failed ...), so callers branch on the code.
 */
export interface Notifier {
  /** Posts a new message (in a thread when threadTs is given). */
  post(target: { channel: string; threadTs?: string }, reply: Reply): Promise<MessageRef>;
  /** Replaces a message's content. Implementations coalesce and respect rate limits. */
  update(ref: MessageRef, reply: Reply): Promise<void>;
  /** Slack: creates a public channel and invites users; resolves to the channel id. */
  createChannel?(name: string, invite: string[]): Promise<string>;
  /** Slack: uploads files into a channel or thread. */
  upload?(target: { channel: string; threadTs?: string }, files: ReplyFile[], comment?: string): Promise<void>;
}
