/**
 * The one error model. Every failure rollcall reports carries a stable code from ERROR_CODES: it is the
 * `error.code` of `rollcall ask --json` and decides the exit code, so code, not message text, is what
 * callers branch on. A message says what happened and what to do; suggestions are commands or names
 * the user may have meant.
 */
import type { ErrorCode } from './error-codes.js';
import { errorReply, type ErrorReply, type ReplyBlock } from './reply.js';

export interface RollcallErrorOptions {
  /** Names or commands the user may have meant. */
  suggestions?: string[];
  /** What a reply's data carries besides the error (the candidates of an ambiguous name, lock conflicts). */
  data?: Record<string, unknown>;
  /** Blocks a reply shows under the message (the candidates of an ambiguous name, buttons to pick one). */
  blocks?: ReplyBlock[];
  /** The message a reply shows when it differs from `message` (which logs and wrapping errors use). */
  userMessage?: string;
  cause?: unknown;
}

export class RollcallError extends Error {
  override name = 'RollcallError';
  readonly code: ErrorCode;
  readonly suggestions?: string[];
  readonly data?: Record<string, unknown>;
  readonly blocks?: ReplyBlock[];
  /** What a reply says: `message` unless the error words it differently for a person. */
  readonly userMessage: string;
  constructor(code: ErrorCode, message: string, options: RollcallErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    if (options.suggestions?.length) this.suggestions = options.suggestions;
    if (options.data) this.data = options.data;
    if (options.blocks?.length) this.blocks = options.blocks;
    this.userMessage = options.userMessage ?? message;
  }
}

export function isRollcallError<C extends ErrorCode>(
  error: unknown,
  ...codes: C[]
): error is RollcallError & { code: C } {
  return error instanceof RollcallError && (!codes.length || (codes as ErrorCode[]).includes(error.code));
}

/**
 * The one mapping from anything a command threw to an error Reply. A RollcallError says what it is; anything
 * else is a bug in rollcall, answered as such (the logs have the stack).
 */
export function replyFromError(command: string, error: unknown): ErrorReply {
  if (error instanceof RollcallError) {
    const reply = errorReply(command, error.code, error.userMessage, error.suggestions);
    if (error.data) reply.data = { ...error.data };
    if (error.blocks) reply.blocks.push(...error.blocks);
    return reply;
  }
  const message = error instanceof Error ? error.message : String(error);
  return errorReply(
    command,
    'internal_error',
    `\`${command}\` failed unexpectedly: ${message}. This is a rollcall bug; the logs have the details.`,
  );
}
