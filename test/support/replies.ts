import {
  registerAction,
  registerCommand,
  type ActionSpec,
  type AnyCommandSpec,
  type CommandContext,
  type ParsedCommand,
} from '../../src/commands/registry.js';
import { isAnswer, type CommandName, type DispatchReply, type ReplyOf } from '../../src/commands/replies.js';
import type { Reply } from '../../src/core/reply.js';

/** The reply as an ok answer of `command`, its data typed; the test fails with the reply's own error otherwise. */
export function okAnswer<C extends CommandName>(reply: DispatchReply | undefined, command: C): ReplyOf<C> {
  if (reply && isAnswer(reply, command)) return reply;
  const got = reply ? `\`${reply.command}\` ${reply.ok ? 'ok' : `failed: ${reply.error?.message}`}` : 'nothing';
  throw new Error(`expected an ok \`${command}\` answer, got ${got}`);
}

/**
 * Registers a command that exists only in a test. It answers under a name replies.ts does not list, which the
 * compiler refuses for a real command; the dispatcher handles it like any other.
 */
export function registerTestCommand(
  spec: Omit<AnyCommandSpec, 'run'> & { run(cmd: ParsedCommand, ctx: CommandContext): Promise<Reply> },
): void {
  registerCommand(spec as unknown as AnyCommandSpec);
}

/** Registers an action that exists only in a test (see registerTestCommand). */
export function registerTestAction(
  spec: Omit<ActionSpec, 'run'> & { run(value: string, ctx: CommandContext): Promise<Reply | undefined> },
): void {
  registerAction(spec as unknown as ActionSpec);
}

/** An error answer's own data (a RollcallError's, such as the candidates of an ambiguous name). */
export function errorData(reply: DispatchReply): Record<string, unknown> {
  if (reply.ok || !reply.error) throw new Error(`expected an error answer, got an ok \`${reply.command}\` answer`);
  return reply.data as Record<string, unknown>;
}
