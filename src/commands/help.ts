import { code } from '../core/format.js';
import { CommandError } from './parse.js';
import { allCommands, findCommand, type AnyCommandSpec, type CommandSpec, type ParsedCommand } from './registry.js';
import type { ReplyBlock } from '../core/reply.js';
import type { ReplyOf } from './replies.js';
import { suggest } from '../core/suggest.js';

const USAGE = 'help [COMMAND]';
// The questions of an incident's first minutes come first; the rest (runbooks...) alphabetically.
const ORDER = [
  'status',
  'app',
  'rollout',
  'plan',
  'diagnose',
  'clusters',
  'history',
  'diff',
  'logs',
  'rollouts',
  'actions',
  'abort',
  'promote',
];

function rank(spec: AnyCommandSpec): number {
  const i = ORDER.indexOf(spec.name);
  return i === -1 ? (spec.name === 'help' ? 1000 : 100) : i;
}

export function commandNames(): string[] {
  return allCommands().flatMap((c) => [c.name, ...(c.aliases ?? [])]);
}

// What people type from the argocd CLI and kubectl, and the rollcall command that answers it.
const FAMILIAR_VERBS: Record<string, string> = {
  get: 'app',
  describe: 'app',
  list: 'status',
  ls: 'status',
  why: 'diagnose',
  terminate: 'terminate-op',
  'terminate-operation': 'terminate-op',
  'hard-refresh': 'refresh',
  revert: 'rollback',
  undo: 'rollback',
  // Argo CD's name for `promote full=true`.
  'promote-full': 'promote',
};

/**
 * Commands to suggest for a mistyped or unknown one: matched against names and aliases, offered by
 * their canonical name only (an alias like `st` is a shortcut, not something to learn from a hint).
 */
export function suggestCommands(word: string): string[] {
  const familiar = FAMILIAR_VERBS[word.toLowerCase()];
  if (familiar && findCommand(familiar)) return [familiar];
  return [...new Set(suggest(word, commandNames()).map((n) => findCommand(n)?.name ?? n))];
}

export function helpReply(topic?: string): ReplyOf<'help'> {
  if (topic) {
    const spec = findCommand(topic.toLowerCase());
    if (!spec) {
      const suggestions = suggestCommands(topic);
      throw new CommandError('unknown_command', `No command \`${topic}\`. \`help\` lists them all.`, suggestions);
    }
    const blocks: ReplyBlock[] = [
      { kind: 'header', text: spec.name },
      { kind: 'text', text: spec.summary },
      {
        kind: 'fields',
        fields: [
          { label: 'Usage', value: code(spec.usage) },
          ...(spec.aliases?.length ? [{ label: 'Aliases', value: spec.aliases.join(', ') }] : []),
        ],
      },
    ];
    if (spec.help) blocks.push({ kind: 'text', text: spec.help });
    // Runbook commands register as readOnly and check access themselves, so only the flat case is stated.
    if (!spec.readOnly) blocks.push({ kind: 'context', text: 'Changes the fleet: operators and admins only.' });
    return {
      ok: true,
      command: 'help',
      title: `help ${spec.name}`,
      data: {
        command: spec.name,
        usage: spec.usage,
        summary: spec.summary,
        aliases: spec.aliases ?? [],
        readOnly: spec.readOnly,
        help: spec.help ?? null,
      },
      blocks,
    };
  }
  const specs = [...allCommands()].sort((a, b) => rank(a) - rank(b) || (a.name < b.name ? -1 : 1));
  const blocks: ReplyBlock[] = [
    { kind: 'header', text: 'rollcall commands' },
    {
      kind: 'list',
      items: specs.map((s) => ({ text: `${code(s.usage)}`, detail: s.summary, tone: s.readOnly ? undefined : 'warn' })),
    },
    {
      kind: 'context',
      text: 'Targets: app names or globs (`auth-*`), `-l env=prod,tier=canary` or `selector="env in (prod)"`, `cluster=`, `project=`, `appset=`, `instance=`. Quote values with spaces. `help COMMAND` shows examples.',
    },
  ];
  return {
    ok: true,
    command: 'help',
    title: 'help',
    data: { commands: specs.map((s) => ({ name: s.name, usage: s.usage, summary: s.summary, readOnly: s.readOnly })) },
    blocks,
  };
}

export const helpCommand: CommandSpec<'help'> = {
  name: 'help',
  aliases: ['?', 'h'],
  summary: 'The commands, or one command with its usage and examples',
  usage: USAGE,
  help: 'Examples:\n`help`\n`help rollout`',
  readOnly: true,
  run: async (cmd: ParsedCommand) => helpReply(cmd.positional[0]),
};
