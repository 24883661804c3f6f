import { describe, expect, it } from 'vitest';
import '../../src/commands/index.js';
import { helpReply } from '../../src/commands/help.js';
import type { CommandSpec } from '../../src/commands/registry.js';
import { isAnswer, runOf, type DispatchReply } from '../../src/commands/replies.js';
import { errorReply, replyJson } from '../../src/core/reply.js';

/** Reads what a `help` answer lists; the compiler refuses a field the narrowed data does not have. */
function helpCommandsOf(reply: DispatchReply): string[] {
  if (!isAnswer(reply, 'help')) return [];
  if (!('commands' in reply.data)) return [reply.data.command];
  // @ts-expect-error: `help` data has no `run`: narrowing on the answer types the data, no guessing.
  expect(reply.data.run).toBeUndefined();
  return reply.data.commands.map((c) => c.name);
}

// A command cannot answer with another command's data: the compiler refuses it (checked by `tsc`).
export const wronglyTyped: CommandSpec<'status'> = {
  name: 'status',
  summary: 'answers with help data',
  usage: 'status',
  readOnly: true,
  // @ts-expect-error: a `status` command's answer must carry status data, not help's.
  run: async () => helpReply(),
};

describe('typed replies', () => {
  it('narrows an answer on its command: help lists its commands by name, help TOPIC names its one', () => {
    expect(helpCommandsOf(helpReply())).toContain('status');
    expect(helpCommandsOf(helpReply('status'))).toEqual(['status']);
  });

  it('takes an error answer for no command answer, even under that command name', () => {
    const failed = errorReply('help', 'usage', 'bad');
    expect(isAnswer(failed, 'help')).toBe(false);
    expect(helpCommandsOf(failed)).toEqual([]);
  });

  it('finds no run in an answer that is not a run, nor in an error answer of a run command', () => {
    expect(runOf(helpReply())).toBeUndefined();
    expect(runOf(errorReply('runs', 'run_not_found', 'No run R-1.'))).toBeUndefined();
  });

  it('keeps the --json contract of an error answer: ok, command, title, empty data, error', () => {
    expect(replyJson(errorReply('sync', 'usage', 'bad'))).toEqual({
      ok: false,
      command: 'sync',
      title: 'Error',
      data: {},
      error: { code: 'usage', message: 'bad' },
    });
  });
});
