import type { Reply } from './reply.js';

/** Where a posted reply lives, so a live message (a run's progress) can be updated in place. */
export interface MessageRef {
  channel: string;
  ts: string;
  threadTs?: string;
}

/** Posts and updates replies on a surface. Implemented by Slack and the terminal. */
export interface Notifier {
  /** Posts a new message (in a thread when threadTs is given). */
  post(target: { channel: string; threadTs?: string }, reply: Reply): Promise<MessageRef>;
  /** Replaces a message's content. Implementations coalesce and respect rate limits. */
  update(ref: MessageRef, reply: Reply): Promise<void>;
}
