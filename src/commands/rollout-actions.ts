import { formatSelectorParam } from '../domain/runbooks/index.js';
import { hasRollouts } from '../fleet/argo-rollouts.js';
import { isGlob, selectApps } from '../fleet/select.js';
// `promote`, `abort`, `retry`, `restart` (and `pause`/`resume` with kind=rollout) are shortcuts for the
// rollout-action runbook, started as `run` starts it (preview, confirm, approvals, permission checks, audit).
import { CommandError, SELECTOR_OPTIONS, checkOptions, selectorFromCommand } from './parse.js';
import type { CommandContext, CommandSpec, ParsedCommand } from './registry.js';
import type { AnswerOf } from './replies.js';
import { assertSelects, startRunbookAs, type RunbookCommand } from './runbooks.js';

type RolloutVerb = 'promote' | 'abort' | 'retry' | 'restart' | 'pause' | 'resume';

/** Options that are the runbook's own params rather than the app selection. */
const RUN_OPTIONS = ['concurrency', 'waves', 'canary', 'timeout'] as const;
const WAVE_USAGE = '[concurrency=10] [waves="a-*;b-*"] [canary=N] [timeout=5m]';
const SELECTION_USAGE = '<app|glob ...> [-l selector] [cluster=X] [appset=X] [project=X] [instance=X]';

export function rolloutActionUsage(verb: RolloutVerb): string {
  const own = verb === 'promote' ? ' [full=true]' : verb === 'pause' || verb === 'resume' ? ' kind=rollout' : '';
  return `${verb} ${SELECTION_USAGE}${own} ${WAVE_USAGE}`;
}

/** `kind=rollout` (any case, plural too): what `pause` and `resume` take to act on Argo Rollouts. */
export function wantsRollouts(cmd: ParsedCommand, verb: 'pause' | 'resume'): boolean {
  const kind = cmd.options.kind;
  if (kind === undefined) return false;
  if (/^rollouts?$/i.test(kind)) return true;
  throw new CommandError(
    'usage',
    `\`${verb}\` takes kind=rollout (an Argo Rollouts Rollout); got kind=${kind}. Without kind=, \`${verb}\` ${verb === 'pause' ? 'holds' : 'resumes'} a RollingSync ApplicationSet or auto-sync.`,
    [`${verb} ${cmd.positional.join(' ')} kind=rollout`.replace(/\s+/g, ' ')],
  );
}

/**
 * Starts the rollout-action runbook for `verb` on the command's selection. A selection that matches no app is
 * answered with the closest names before any run exists; one whose apps have no Rollout, by the preview.
 */
export async function startRolloutAction<C extends RunbookCommand>(
  verb: RolloutVerb,
  cmd: ParsedCommand,
  ctx: CommandContext,
  command: C,
) {
  const own = verb === 'promote' ? ['full'] : verb === 'pause' || verb === 'resume' ? ['kind'] : [];
  checkOptions(cmd, [...SELECTOR_OPTIONS, ...RUN_OPTIONS, ...own], rolloutActionUsage(verb));
  const selector = formatSelectorParam(selectorFromCommand(cmd));
  if (!selector)
    throw new CommandError(
      'usage',
      `${verb[0].toUpperCase()}${verb.slice(1)} which Rollouts? e.g. \`${verb} storefront-*\` or \`${verb} storefront-* cluster=prod-eu-west-1\`. Usage: ${rolloutActionUsage(verb)}.`,
    );
  const word = cmd.positional.length === 1 ? cmd.positional[0] : undefined;
  if ((verb === 'pause' || verb === 'resume') && word && ctx.services.fleet.appSetsNamed(word).length)
    throw new CommandError(
      'usage',
      `\`${word}\` is an ApplicationSet: \`${verb} ${word}\` ${verb === 'pause' ? 'holds its RollingSync or auto-sync' : 'resumes what rollcall paused of it'}; \`${verb} appset=${word} kind=rollout\` ${verb}s the Argo Rollouts of its apps.`,
      [`${verb} ${word}`, `${verb} appset=${word} kind=rollout`],
    );
  assertSelects(cmd, ctx, verb);
  const params: Record<string, string> = { selector, verb };
  for (const k of [...RUN_OPTIONS, 'full'] as const) if (cmd.options[k] !== undefined) params[k] = cmd.options[k];
  return startRunbookAs('rollout-action', params, ctx, command);
}

/**
 * `resume X` where rollcall paused nothing named X but X's apps have Argo Rollouts: the person most likely
 * means the Rollouts. Said before the resume runbook answers "not paused".
 */
export async function pointToRolloutResume(cmd: ParsedCommand, ctx: CommandContext, target: string): Promise<void> {
  const pauses = ctx.services.pauses;
  if (!pauses || (await pauses.find(target)).length) return;
  const apps = isGlob(target)
    ? selectApps(ctx.services.fleet, { patterns: [target] })
    : ctx.services.fleet.appsNamed(target);
  if (!apps.some((fa) => hasRollouts(fa.app))) return;
  throw new CommandError(
    'not_paused',
    `rollcall paused nothing named \`${target}\`, and its apps deploy Argo Rollouts: \`resume ${target} kind=rollout\` resumes the Rollouts (Argo CD's resume action), \`promote ${target}\` takes a paused canary to its next step.`,
    [`resume ${target} kind=rollout`, `promote ${target}`],
  );
}

function verbCommand<V extends 'promote' | 'abort' | 'retry' | 'restart'>(
  verb: V,
  summary: string,
  help: string[],
): CommandSpec<V> {
  return {
    name: verb,
    summary,
    usage: rolloutActionUsage(verb),
    usesRuns: true,
    help: [
      ...help,
      'Each Rollout is read live with the actions Argo CD offers for it now: those where the action is not offered are listed as skipped, never sent. Confirmed, then sent once per Rollout through Argo CD (`applications, action/argoproj.io/Rollout/<action>`), in waves like `sync` (`waves=`, `canary=`, `concurrency=`), and followed until each Rollout gets there (`timeout=`, 5m by default).',
    ].join('\n'),
    readOnly: false,
    // The rollout-action preview's data is `{ plan }` (domain rollout-action/preview.ts): RolloutActionData says so.
    run: async (cmd, ctx) => (await startRolloutAction(verb, cmd, ctx, verb)) as AnswerOf<V>,
  };
}

export const promoteCommand = verbCommand(
  'promote',
  'Promote Argo Rollouts canaries and blue-greens: the next step (Argo CD resume), or every step with full=true',
  [
    'Examples:',
    '`promote storefront-* cluster=prod-us-east-1` — a paused canary goes on to its next step',
    '`promote search-*` — a blue-green waiting for promotion switches its active service',
    '`promote storefront-* full=true` — Argo CD promote-full: every remaining step skipped',
  ],
);

export const abortCommand = verbCommand(
  'abort',
  'Abort Argo Rollouts canaries: all traffic back to stable, the Rollout Degraded (Argo CD abort)',
  [
    'Example: `abort storefront-*` — every canary of storefront back to stable; `retry storefront-*` starts the steps over.',
  ],
);

export const retryCommand = verbCommand('retry', 'Retry aborted Argo Rollouts: the steps start over (Argo CD retry)', [
  'Example: `retry storefront-* cluster=prod-eu-west-1`',
]);

export const restartCommand = verbCommand(
  'restart',
  'Restart the pods of Argo Rollouts (Argo CD restart: spec.restartAt)',
  ['Example: `restart search-*` — Argo Rollouts restarts the pods a few at a time'],
);
