import { describe, expect, it } from 'vitest';
import '../../src/commands/index.js';
import { helpReply } from '../../src/commands/help.js';
import { runOf, typedReply, type CommandReply } from '../../src/commands/replies.js';
import { errorReply, replyJson } from '../../src/core/reply.js';

/** Reads what a `help` answer lists; the compiler refuses a field the narrowed data does not have. */
function helpCommandsOf(reply: CommandReply): string[] {
  if (reply.command !== 'help') return [];
  if (!('commands' in reply.data)) return [reply.data.command];
  // @ts-expect-error: `help` data has no `run`: narrowing on `command` types the data, no guessing.
  expect(reply.data.run).toBeUndefined();
  return reply.data.commands.map((c) => c.name);
}

describe('typed replies', () => {
  it('narrows an answer on its command: help lists its commands by name, help TOPIC names its one', () => {
    expect(helpCommandsOf(typedReply(helpReply()))).toContain('status');
    expect(helpCommandsOf(typedReply(helpReply('status')))).toEqual(['status']);
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
