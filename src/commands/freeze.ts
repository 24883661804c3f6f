import { absoluteTime, mention, plural, when } from '../core/format.js';
import { errorReply, withUserText, type Reply, type ReplyBlock, type ReplyItem } from '../core/reply.js';
import { freezeActive } from '../fleet/freeze.js';
import {
  formatSelectorParam,
  freezesByRun,
  selectorText,
  type Freeze,
  type RunStatus,
} from '../domain/runbooks/index.js';
import type { FrozenData } from './replies.js';
// `freeze` and `unfreeze` are shortcuts for the freeze / unfreeze runbooks, started as `run` starts them
// (preview, confirm, approvals, permission checks, audit), as `pause` and `resume` are.
import { CommandError, checkOptions, selectorFromCommand } from './parse.js';
import type { CommandContext, CommandSpec, ParsedCommand } from './registry.js';
import { startRunbookAs } from './runbooks.js';
import { isIncidentId, normalizeId } from '../domain/incidents/service.js';

const FREEZE_USAGE =
  'freeze <app|glob ...> [-l selector] [cluster=X] [appset=X] [project=X] | project=NAME [instance=X] [for=DURATION] [manual=block] [incident=INC-N]';
const UNFREEZE_USAGE = 'unfreeze [<target as `frozen` lists it> | project=NAME] [instance=X]';

/** What someone means by `freeze list` and the like: the listing is `frozen`. */
const LISTING_WORDS = new Set(['list', 'ls', 'show', 'status']);

/**
 * `freeze list` (or `unfreeze show`) where no app or ApplicationSet has that name: pointed at `frozen` rather than
 * told only that no app is named "list".
 */
function refuseListingWord(cmd: ParsedCommand, ctx: CommandContext, verb: 'freeze' | 'unfreeze'): void {
  const [word, ...rest] = cmd.positional;
  if (rest.length || !LISTING_WORDS.has(word) || Object.keys(cmd.options).length) return;
  const fleet = ctx.services.fleet;
  if (fleet.appsNamed(word).length || fleet.appSetsNamed(word).length) return;
  throw new CommandError(
    'unknown_target',
    `No app or ApplicationSet named "${word}" to ${verb}; what is frozen is listed by \`frozen\`.`,
    ['frozen'],
  );
}

/**
 * The incident a command typed in an incident's own channel, or in its header's thread, belongs to. Only
 * there: a freeze typed in #oncall while some incident is open elsewhere is not that incident's.
 */
async function incidentHere(ctx: CommandContext): Promise<string | undefined> {
  if (!ctx.services.incidents || !ctx.channel) return undefined;
  const open = await ctx.services.incidents.open();
  const here = open.filter(
    (i) =>
      i.channel === ctx.channel ||
      (!!ctx.threadTs && i.header?.channel === ctx.channel && i.header?.ts === ctx.threadTs),
  );
  return here.length === 1 ? here[0].id : undefined;
}

/** `incident=INC-7`: an incident rollcall knows (its close asks about the freeze), named as it names it. */
async function namedIncident(ctx: CommandContext, word: string): Promise<string> {
  if (!isIncidentId(word))
    throw new CommandError('usage', `incident= takes an incident id such as INC-7 (got "${word}").`);
  return ctx.services.incidents ? (await ctx.services.incidents.resolve(word)).id : normalizeId(word);
}

export const freezeCommand: CommandSpec<'freeze'> = {
  name: 'freeze',
  summary: 'Stop deploys: a deny sync window on the AppProjects of the target; manual fixes still go',
  usage: FREEZE_USAGE,
  usesRuns: true,
  help:
    "Argo CD's own freeze: a deny sync window in each AppProject covering the target, so auto-sync and RollingSync " +
    "steps stop. Manual syncs still go (rollcall's own sync and rollback runs can ship a fix) unless `manual=block`. " +
    'Examples: `freeze project=payments for=2h` · `freeze auth-* cluster=prod-eu1` · `freeze -l team=checkout manual=block`. ' +
    "With `for=` the window ends by itself and rollcall's workers then remove it from the project; `unfreeze` removes exactly what this wrote; `frozen` lists what is frozen. " +
    "Typed in an incident's channel, the freeze is that incident's: closing it asks whether to unfreeze.",
  readOnly: false,
  async run(cmd, ctx) {
    checkOptions(
      cmd,
      ['selector', 'cluster', 'appset', 'project', 'instance', 'for', 'manual', 'incident'],
      FREEZE_USAGE,
    );
    refuseListingWord(cmd, ctx, 'freeze');
    const sel = selectorFromCommand(cmd);
    const target = formatSelectorParam({ ...sel, project: undefined, instance: undefined });
    if (!target && !cmd.options.project)
      return errorReply(
        'freeze',
        'usage',
        'Freeze what? e.g. `freeze project=payments for=2h` (a whole AppProject) or `freeze auth-* cluster=prod-eu1` (apps).',
      );
    const params: Record<string, string> = {};
    if (target) params.target = target;
    for (const key of ['project', 'instance', 'for', 'manual'] as const)
      if (cmd.options[key] !== undefined) params[key] = cmd.options[key];
    const incident = cmd.options.incident ? await namedIncident(ctx, cmd.options.incident) : await incidentHere(ctx);
    if (incident) params.incident = incident;
    return startRunbookAs('freeze', params, ctx, 'freeze');
  },
};

export const unfreezeCommand: CommandSpec<'unfreeze'> = {
  name: 'unfreeze',
  summary: "Lift rollcall's freeze: removes exactly the deny windows `freeze` wrote",
  usage: UNFREEZE_USAGE,
  usesRuns: true,
  help:
    'The target is what `frozen` lists (`unfreeze project=payments`, `unfreeze auth-* cluster=prod-eu1`); with one freeze, ' +
    '`unfreeze` alone. rollcall refuses, naming the project, when someone changed its window since.',
  readOnly: false,
  async run(cmd, ctx) {
    checkOptions(cmd, ['selector', 'cluster', 'appset', 'project', 'instance', 'run'], UNFREEZE_USAGE);
    refuseListingWord(cmd, ctx, 'unfreeze');
    const params: Record<string, string> = {};
    const text = selectorText(selectorFromCommand(cmd));
    if (text) params.target = text;
    for (const key of ['project', 'instance', 'run'] as const)
      if (cmd.options[key] !== undefined) params[key] = cmd.options[key];
    return startRunbookAs('unfreeze', params, ctx, 'unfreeze');
  },
};

function frozenItem(run: Freeze[], now: Date): ReplyItem {
  const f = run[0];
  const active = run.some((x) => freezeActive(x, now));
  const where = run.map((x) => `${x.project} on ${x.instance}`).join(', ');
  const until = f.until ? (active ? ` until ${absoluteTime(f.until)}` : ` (ended ${when(f.until, now)})`) : '';
  return {
    text: `*${f.target}*: frozen by ${mention(f.by)} ${when(f.at, now)}${f.incident ? ` for ${f.incident}` : ''}${until}${f.manualBlocked ? ' · manual syncs blocked too' : ''}`,
    detail: active
      ? `AppProject ${where} · \`unfreeze ${f.target}\``
      : run.some((x) => x.expiryRefused)
        ? `AppProject ${where}: ended, but rollcall left its window in place because someone changed it: ${run.find((x) => x.expiryRefused)!.expiryRefused}`
        : `AppProject ${where}: ended; rollcall's workers remove its window at their next sweep (\`unfreeze ${f.target}\` removes it now)`,
    tone: active ? 'warn' : 'info',
  };
}

/** Where a confirmed freeze or unfreeze run stands until it ends: writing, or waiting for an approval or a resume. */
const IN_PROGRESS = new Set<RunStatus>(['awaiting-approval', 'running', 'paused']);

/**
 * Freeze and unfreeze runs confirmed and not ended. What they write is recorded as they write it, so a `frozen`
 * asked right after a Confirm would say "nothing" of a freeze seconds from holding.
 */
async function freezeRunsInProgress(ctx: CommandContext): Promise<FrozenData['inProgress']> {
  const runs = (await ctx.services.runs?.listOf(['freeze', 'unfreeze'], 50)) ?? [];
  return runs
    .filter((r) => IN_PROGRESS.has(r.status))
    .map((r) => ({
      runId: r.id,
      runbook: r.runbook,
      status: r.status,
      requester: r.requester,
      params: r.paramsText ?? '',
    }));
}

function inProgressBlock(inProgress: FrozenData['inProgress']): ReplyBlock {
  return {
    kind: 'list',
    title: 'In progress, not all written yet',
    items: inProgress.map((r) => ({
      text: `\`${r.runId}\` ${r.runbook}${r.params ? ` ${r.params}` : ''} — ${r.status}`,
      detail: `${mention(r.requester)} · \`runs show ${r.runId}\``,
      tone: 'info',
    })),
  };
}

function frozenData(runs: Freeze[][], inProgress: FrozenData['inProgress'], now: Date): FrozenData {
  return {
    frozen: runs.flatMap((run) =>
      run.map((f) => ({
        target: f.target,
        instance: f.instance,
        project: f.project,
        by: f.by,
        since: f.at,
        until: f.until ?? null,
        incident: f.incident ?? null,
        runId: f.runId,
        active: freezeActive(f, now),
        manualBlocked: f.manualBlocked,
      })),
    ),
    inProgress,
  };
}

export const frozenCommand: CommandSpec<'frozen'> = {
  name: 'frozen',
  summary: "What rollcall's freezes hold: by whom, since and until when, for which incident",
  usage: 'frozen',
  usesRuns: true,
  readOnly: true,
  async run(cmd, ctx) {
    if (cmd.positional.length || Object.keys(cmd.options).length)
      throw new CommandError('usage', '`frozen` takes no target: it lists every freeze rollcall recorded.');
    const store = ctx.services.freezes;
    if (!store)
      return errorReply(
        'frozen',
        'runs_unavailable',
        'Freezes are recorded in Redis, and this process has none (set redis.url in rollcall.yaml or REDIS_URL).',
      );
    const now = ctx.services.now?.() ?? new Date();
    const [runs, inProgress] = await Promise.all([store.list().then(freezesByRun), freezeRunsInProgress(ctx)]);
    const active = runs.filter((run) => run.some((f) => freezeActive(f, now)));
    const blocks: ReplyBlock[] = runs.length
      ? [
          {
            kind: 'list',
            title: 'Frozen by rollcall, oldest first',
            items: runs.map((r) => frozenItem(r, now)),
            total: runs.length,
          },
        ]
      : [{ kind: 'text', text: `rollcall has frozen nothing${inProgress.length ? ' yet' : ''}.`, tone: 'ok' }];
    if (inProgress.length) blocks.push(inProgressBlock(inProgress));
    const reply = {
      ok: true as const,
      command: 'frozen' as const,
      title: active.length ? `${plural(active.length, 'freeze')} active` : 'Nothing is frozen',
      data: frozenData(runs, inProgress, now),
      blocks,
    };
    return withUserText(reply, ...inProgress.map((r) => r.params));
  },
};

/** Blocks that ask, at an incident's close, whether to lift the freezes declared in it. */
export function unfreezeQuestion(incident: string, freezes: readonly Freeze[], now: Date): Reply['blocks'] {
  const runs = freezesByRun(freezes.filter((f) => freezeActive(f, now)));
  if (!runs.length) return [];
  return [
    {
      kind: 'text',
      tone: 'warn',
      text: `${incident} is closed, and rollcall's freeze${runs.length === 1 ? ' declared in it is' : 's declared in it are'} still on: ${runs
        .map(
          (r) =>
            `*${r[0].target}* (${r.map((f) => f.project).join(', ')}, by ${mention(r[0].by)}${r[0].until ? `, until ${absoluteTime(r[0].until)}` : ''})`,
        )
        .join('; ')}. Unfreeze?`,
    },
    {
      kind: 'actions',
      buttons: runs.slice(0, 5).map((r) => ({
        label: runs.length === 1 ? 'Unfreeze' : `Unfreeze ${r[0].target}`.slice(0, 75),
        command: `unfreeze run=${r[0].runId}`,
        style: 'primary' as const,
      })),
    },
  ];
}
