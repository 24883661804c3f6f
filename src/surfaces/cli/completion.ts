import type { Command } from 'commander';

/** What a completion script offers: the CLI's commands with their own subcommands and options, and the chat verbs `ask` takes. */
export interface CompletionWords {
  commands: { name: string; subcommands: string[]; options: string[] }[];
  globalOptions: string[];
  verbs: string[];
}

export const COMPLETION_SHELLS = ['bash', 'zsh'] as const;
export type CompletionShell = (typeof COMPLETION_SHELLS)[number];

/** The words of the CLI as commander has them, so a new command or option completes without editing a list. */
export function completionWords(program: Command, verbs: string[]): CompletionWords {
  const longNames = (c: Command) => c.options.map((o) => o.long).filter((o): o is string => !!o);
  return {
    commands: program.commands.map((c) => ({
      name: c.name(),
      // Subcommands (`config check`) and the values an argument takes (`completion bash`).
      subcommands: [...c.commands.map((s) => s.name()), ...c.registeredArguments.flatMap((a) => a.argChoices ?? [])],
      options: [...longNames(c), '--help'],
    })),
    globalOptions: [...longNames(program), '--help'],
    verbs: [...new Set(verbs)].sort(),
  };
}

// Every word is a command, option or chat verb name ([a-z-]): safe inside single quotes in both shells.
const list = (words: string[]) => words.join(' ');

function bashScript(w: CompletionWords): string {
  const cases = w.commands
    .map((c) => `    ${c.name}) words='${list(c.name === 'ask' ? c.options : [...c.subcommands, ...c.options])}' ;;`)
    .join('\n');
  return `# rollcall completion for bash: eval "$(rollcall completion bash)" (e.g. in ~/.bashrc)
_rollcall() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" words
  if [ "$COMP_CWORD" -eq 1 ]; then
    words='${list([...w.commands.map((c) => c.name), ...w.globalOptions])}'
  elif [ "\${COMP_WORDS[1]}" = ask ] && [ "$COMP_CWORD" -eq 2 ]; then
    # The chat command's first word: the verbs of /argo.
    words='${list(w.verbs)}'
  else
    case "\${COMP_WORDS[1]}" in
${cases}
    esac
  fi
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -F _rollcall rollcall
`;
}

function zshScript(w: CompletionWords): string {
  const cases = w.commands
    .map((c) => `    ${c.name}) compadd -- ${list(c.name === 'ask' ? c.options : [...c.subcommands, ...c.options])} ;;`)
    .join('\n');
  return `#compdef rollcall
# rollcall completion for zsh: source <(rollcall completion zsh) after compinit, or save as _rollcall in $fpath
_rollcall() {
  if (( CURRENT == 2 )); then
    compadd -- ${list([...w.commands.map((c) => c.name), ...w.globalOptions])}
  elif [[ $words[2] == ask ]] && (( CURRENT == 3 )); then
    # The chat command's first word: the verbs of /argo.
    compadd -- ${list(w.verbs)}
  else
    case $words[2] in
${cases}
    esac
  fi
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then _rollcall "$@"; else compdef _rollcall rollcall; fi
`;
}

export function completionScript(shell: CompletionShell, words: CompletionWords): string {
  return shell === 'bash' ? bashScript(words) : zshScript(words);
}
