import { clockTime } from '../../core/format.js';
import type { MessageRef, Notifier } from '../../core/notifier.js';
import type { Reply } from '../../core/reply.js';
import { runOf } from '../../commands/replies.js';
import { renderText } from '../../views/text.js';

/**
 * The terminal's stand-in for Slack's one live message. Every post here follows a command whose
 * reply the terminal has just printed in full, so the post and each update print one progress
 * line (the reply's first text); repeats are skipped.
 */
export class TerminalNotifier implements Notifier {
  private seq = 0;
  private last = new Map<string, string>();

  /**
   * @param fullSummary print the whole reply when a run ends (the demo, where nothing else shows the
   *   summary); `ask --wait` prints the final state itself.
   */
  constructor(
    private readonly write: (line: string) => void,
    private readonly fullSummary = false,
  ) {}

  async post(target: { channel: string; threadTs?: string }, reply: Reply): Promise<MessageRef> {
    const ts = `${Date.now()}.${String(++this.seq).padStart(6, '0')}`;
    // A message says what it is about (an alert firing is nothing but its header).
    const line = progressLine(reply, { withHeader: true });
    this.last.set(ts, line);
    this.write(line);
    return { channel: target.channel, ts, threadTs: target.threadTs };
  }

  async update(ref: MessageRef, reply: Reply): Promise<void> {
    const status = runOf(reply)?.status;
    if (this.fullSummary && status && ENDED.includes(status)) {
      if (this.last.get(ref.ts) === status) return;
      this.last.set(ref.ts, status);
      this.write(renderText(reply, { actions: 'omit' }));
      return;
    }
    // Alerts update side by side: each of their lines says which alert it is. A run's lines follow its own post,
    // and its header carries the status the body already says.
    const line = progressLine(reply, { withHeader: !status });
    if (this.last.get(ref.ts) === line) return;
    this.last.set(ref.ts, line);
    this.write(line);
  }
}

const ENDED = ['succeeded', 'failed', 'aborted', 'cancelled', 'paused'];

export function progressLine(reply: Reply, opts: { withHeader?: boolean } = {}): string {
  const firstText = reply.blocks.find((b) => b.kind === 'text');
  const header = opts.withHeader ? reply.blocks.find((b) => b.kind === 'header') : undefined;
  const body = firstText && firstText.kind === 'text' ? firstText.text : reply.title;
  const text = header && header.kind === 'header' && header.text !== body ? `${header.text}: ${body}` : body;
  return `  ${clockTime(new Date())} ${renderText({ ...reply, blocks: [{ kind: 'text', text }] })
    .split('\n')
    .join(' ')}`;
}
