/**
 * A transport-neutral answer. Commands return a Reply; src/views renders it as Block Kit
 * (Slack) or text (terminal), and `rollcall ask --json` prints {ok, command, title, data, error}.
 *
 * Inline text uses Slack mrkdwn as the one markup: *bold*, `code`, <url|label>. The terminal view
 * converts it; nothing else needs to know about Slack.
 */
import type { ErrorCode } from './error-codes.js';

export type Tone = 'ok' | 'warn' | 'error' | 'progress' | 'unknown' | 'info';

export interface ReplyButton {
  label: string;
  /** The chat command the button runs, e.g. "rollout progressive-infra". */
  command?: string;
  /** Or a named action with a value (runbook confirm/approve/pause...). */
  action?: string;
  value?: string;
  url?: string;
  style?: 'primary' | 'danger';
}

export interface ReplyItem {
  text: string;
  tone?: Tone;
  /** Optional second line of detail (reason, message). */
  detail?: string;
  url?: string;
}

export type ReplyBlock =
  | { kind: 'header'; text: string }
  | { kind: 'text'; text: string; tone?: Tone }
  | { kind: 'fields'; fields: { label: string; value: string }[] }
  | {
      kind: 'list';
      title?: string;
      items: ReplyItem[];
      /** The real count when items were cut short. */
      total?: number;
    }
  | { kind: 'context'; text: string }
  /**
   * Verbatim text (log lines, a diff): no markup is read in it. Slack shows it in a code block cut to
   * fit one message, keeping the `keep` end (default `head`; logs keep their newest lines, `tail`).
   */
  | { kind: 'code'; text: string; keep?: 'head' | 'tail' }
  | { kind: 'actions'; buttons: ReplyButton[] }
  | { kind: 'divider' };

export interface ReplyError {
  /** Stable code from ERROR_CODES (core/error-codes.ts): the `--json` contract and the exit code. */
  code: ErrorCode;
  message: string;
  suggestions?: string[];
}

/** A file that goes with a reply: the terminal writes it (`--out DIR`), Slack uploads it. */
export interface ReplyFile {
  name: string;
  title: string;
  content: Buffer;
}

/** An Argo CD instance the mirror is not in sync with, as an answer's data says it. */
export interface UnsyncedInstance {
  instance: string;
  error: string | null;
  code?: string;
  dataAsOf?: string;
}

/**
 * What any answer's data may carry besides its command's own fields: the dispatcher's note that the
 * mirror is incomplete (`ask --json` carries data, not blocks), and where `ask --out` wrote its files.
 */
export type ReplyNotes = {
  warnings?: string[];
  unsyncedInstances?: UnsyncedInstance[];
  /** Written file paths by kind (`markdown`, `png`); null when the answer had files and no --out was given. */
  files?: Record<string, string> | null;
};

/**
 * An answer of `Command` whose data is `Data`. The default is any answer, seen from code that only
 * renders or forwards it (views, notifiers); `commands/replies.ts` names every command's data, and
 * `CommandReply` is the union a reader narrows on `command`.
 */
export interface Reply<Command extends string = string, Data extends object = Record<string, unknown>> {
  ok: boolean;
  command: Command;
  title: string;
  data: Data & ReplyNotes;
  error?: ReplyError;
  blocks: ReplyBlock[];
  /**
   * What users typed that this reply may echo: the command text, form values, a run's parameters.
   * Views show links and mentions found in it as text, never as markup the bot itself posted.
   */
  userText?: string[];
  /** Files that go with the answer (a report and its chart); not part of the JSON. */
  files?: ReplyFile[];
  /**
   * The command that gives this reply again, canonical and without its page: what "More" and "next
   * page" re-run (dispatch sets it on every answer; a scheduled digest, posted on its own, sets its
   * own), and what the terminal does not suggest as a next step after itself.
   */
  pageCommand?: string;
  /** The page of its lists the user asked for (`--page N`, `page=N`, `more`); views show that window. */
  page?: number;
}

/** List items one page shows: a Slack message has room for more than a terminal screen; a schedule posts to Slack. */
export const PAGE_SIZE = { slack: 25, terminal: 10, schedule: 25 } as const;

/** How many pages the reply's list items fill. */
export function replyPages(reply: Reply, perPage: number): number {
  const items = reply.blocks.reduce((n, b) => n + (b.kind === 'list' ? b.items.length : 0), 0);
  return Math.max(1, Math.ceil(items / Math.max(1, perPage)));
}

/** Marks text as typed by a user (see Reply.userText). */
export function withUserText<R extends Reply<string, object>>(reply: R, ...typed: string[]): R {
  // Slack sends command text with <, > and & as entities; the parser decodes them, so the reply echoes them decoded.
  const text = typed
    .map((t) => t.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&'))
    .filter((t) => t.includes('<'));
  if (text.length) reply.userText = [...(reply.userText ?? []), ...text];
  return reply;
}

/**
 * An answer built from an error (`errorReply`, `replyFromError`): not ok, carrying the error, its data the
 * error's own (mostly empty) rather than its command's. `ok: false` tells it apart from a command's answer
 * that is ok, which is always its command's data.
 */
export interface ErrorReply extends Reply<string, Record<string, unknown>> {
  ok: false;
  error: ReplyError;
}

export function errorReply(command: string, code: ErrorCode, message: string, suggestions?: string[]): ErrorReply {
  const blocks: ReplyBlock[] = [{ kind: 'text', text: `:x: ${message}`, tone: 'error' }];
  if (suggestions?.length)
    blocks.push({ kind: 'context', text: `Did you mean: ${suggestions.map((s) => `\`${s}\``).join(', ')}?` });
  return {
    ok: false,
    command,
    title: 'Error',
    data: {},
    error: { code, message, ...(suggestions?.length ? { suggestions } : {}) },
    blocks,
  };
}

/** The JSON contract of `rollcall ask --json`. */
export function replyJson(reply: Reply<string, object>): {
  ok: boolean;
  command: string;
  title: string;
  data: object;
  error?: ReplyError;
} {
  return {
    ok: reply.ok,
    command: reply.command,
    title: reply.title,
    data: reply.data,
    ...(reply.error ? { error: reply.error } : {}),
  };
}
