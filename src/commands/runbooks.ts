import {
  formatSelectorParam,
  type RunService,
  findRunbookAction,
  runPausable,
  paramReference,
  substitute,
  ParamError,
  describeParams,
  parseParams,
  type ParamValue,
  auditReply,
  NothingToDo,
  nothingToDoReply,
  previewReply,
  progressReply,
  runListReply,
  RunNotFoundError,
  runData,
  type Run,
  type NoopRunData,
  type RunData,
} from '../domain/runbooks/index.js';
import { selectApps } from '../fleet/select.js';
import type { FleetApp } from '../fleet/model.js';
import { CommandError, SELECTOR_OPTIONS, selectorFromCommand } from './parse.js';
import { type CommandContext, type ParsedCommand, type CommandSpec, type ActionSpec } from './registry.js';
import type { ReplyOf } from './replies.js';
import { unknownTarget } from './suggest.js';
import { errorReply, type ErrorReply, type Reply } from '../core/reply.js';
import type { ErrorCode } from '../core/error-codes.js';
import { replyFromError, RollcallError } from '../core/errors.js';
import { isScheduler } from '../core/access.js';

/**
 * Runbook commands. `run` and `sync` are mutating, so the dispatcher first requires an operator
 * (or admin) from the config; the engine then applies the runbook's own `access.runners`, which
 * narrow that set, and decides who may confirm, approve, pause or abort. `runs` and `audit` only
 * read (their cancel/pause/abort verbs are checked by the engine).
 */

function runsOf(ctx: CommandContext): RunService | undefined {
  return ctx.services.runs;
}

/** The commands that start a runbook: each answers its run's preview or end, or nothing to do, as itself. */
export type RunbookCommand =
  | 'run'
  | 'sync'
  | 'pause'
  | 'resume'
  | 'freeze'
  | 'unfreeze'
  | 'rollback'
  | 'terminate-op'
  | 'promote'
  | 'abort'
  | 'retry'
  | 'restart'
  | 'action';

/** What a runbook command answers (its CommandData is RunbookData): the run, nothing to do, or an error. */
type RunbookAnswer<C extends RunbookCommand> = Reply<C, RunData> | Reply<C, NoopRunData> | ErrorReply;

const noEngine = (command: string) =>
  errorReply(
    command,
    'runs_unavailable',
    'The runbook engine is not running in this process (it needs Redis: set redis.url in rollcall.yaml or REDIS_URL).',
  );

/** A RollcallError is answered here, under this command's name; anything else is a bug and goes to the dispatcher. */
function failure(command: string, error: unknown): ErrorReply {
  if (error instanceof RollcallError) return replyFromError(command, error);
  throw error;
}

/** Refusals of an action on a run: someone may not, or the run is not in a state that allows it. */
const REFUSAL_CODES = new Set<ErrorCode>(['forbidden', 'invalid_state', 'run_not_found']);

/**
 * Records a refused attempt in the audit log: who tried what on which run (the surface comes from the
 * request's audit origin). The refusal stands whether or not the write succeeds; a failed write is said.
 */
export async function auditRefusal(
  ctx: CommandContext,
  event: { target: string; runId?: string; result: string; message: string; params?: Record<string, unknown> },
): Promise<string | undefined> {
  const audit = ctx.services.audit;
  if (!audit) return undefined;
  try {
    await audit.record({ kind: 'run.refused', who: ctx.user, ...event });
    return undefined;
  } catch (error) {
    return `The audit log could not record this refusal: ${(error as Error).message}.`;
  }
}

/** An unknown run id, with the closest ids among the recent runs. */
async function runNotFound(runs: RunService, runId: string): Promise<RunNotFoundError> {
  const recent = await runs.list(50).catch(() => []);
  return new RunNotFoundError(
    runId,
    recent.map((r) => r.id),
  );
}

/** An action on a run (`runs confirm ID`, the Confirm button ...) that threw: refusals are audited, then answered. */
async function refusedOrFailed(
  ctx: CommandContext,
  command: string,
  action: string,
  runId: string,
  thrown: unknown,
): Promise<ErrorReply> {
  const runs = runsOf(ctx);
  const error = thrown instanceof RunNotFoundError && runs ? await runNotFound(runs, runId) : thrown;
  const code = error instanceof RollcallError ? error.code : undefined;
  const reply = failure(command, error);
  // The engine audits a refused approval itself (it is where approvers are decided).
  const auditedByEngine = action === 'run.approve' && code === 'forbidden';
  if (code && REFUSAL_CODES.has(code) && !auditedByEngine) {
    const unrecorded = await auditRefusal(ctx, {
      target: action,
      runId,
      result: code,
      message: (error as Error).message,
    });
    if (unrecorded && reply.error) reply.error.message += ` ${unrecorded}`;
  }
  return reply;
}

/** A run that was aborted as asked: the action succeeded, though the run did not. */
function abortedReply(run: Run): Reply<'runs', RunData> {
  return { ...progressReply(run), ok: true };
}

async function startAndReply<C extends RunbookCommand>(
  runs: RunService,
  ctx: CommandContext,
  runbook: string,
  params: Record<string, string>,
  command: C,
): Promise<RunbookAnswer<C>> {
  try {
    let run: Run = await runs.start({
      runbook,
      params,
      user: ctx.user,
      channel: ctx.channel,
      threadTs: ctx.threadTs,
      surface: ctx.surface,
      system: isScheduler(ctx),
    });
    if (!ctx.assumeYes) return previewReply(run, command);
    run = await runs.confirm(run.id, ctx.user, { channel: ctx.channel, threadTs: ctx.threadTs });
    const reply: Reply<C, RunData> = { ...progressReply(run), command };
    return reply;
  } catch (error) {
    if (error instanceof NothingToDo) return nothingToDoReply(error, command, params);
    return failure(command, error);
  }
}

/** Starts a runbook exactly as `run <runbook> key=value ...` does, answering as `command` (`pause`, `rollback` ...). */
export async function startRunbookAs<C extends RunbookCommand>(
  runbook: string,
  params: Record<string, string>,
  ctx: CommandContext,
  command: C,
): Promise<RunbookAnswer<C>> {
  const runs = runsOf(ctx);
  if (!runs) return noEngine(command);
  return startAndReply(runs, ctx, runbook, params, command);
}

export const runRunbookCommand: CommandSpec<'run'> = {
  name: 'run',
  usesRuns: true,
  summary: 'Run a runbook: preview, confirm, approvals, live progress',
  usage: 'run <runbook> [key=value ...]',
  help: 'Example: `run bulk-sync selector=auth-config-* prune=true`. Without params, Slack opens a form. `runs` lists recent runs.',
  readOnly: false,
  async run(cmd: ParsedCommand, ctx: CommandContext) {
    const runs = runsOf(ctx);
    if (!runs) return noEngine('run');
    const name = cmd.positional[0];
    const available = runs.runbooks();
    if (!name) {
      return errorReply(
        'run',
        'usage',
        `Which runbook? \`run <runbook> key=value ...\`. Runbooks: ${available.map((r) => r.name).join(', ') || 'none loaded'}.`,
      );
    }
    const runbook = available.find((r) => r.name === name);
    const params = { ...cmd.options };
    if (runbook && !Object.keys(params).length && Object.keys(runbook.params).length && ctx.openForm) {
      const opened = await ctx.openForm({
        action: 'run.form',
        title: runbook.title,
        submitLabel: 'Preview',
        metadata: runbook.name,
        intro: runbook.description,
        fields: Object.entries(runbook.params).map(([p, spec]) => ({
          name: p,
          label: p,
          type: spec.type,
          required: spec.required,
          default: spec.default === undefined ? undefined : String(spec.default),
          hint: spec.description,
          options: spec.values,
        })),
      });
      if (opened)
        return {
          ok: true,
          command: 'run',
          title: `${runbook.title}: parameters`,
          data: { form: runbook.name },
          blocks: [{ kind: 'context', text: `Fill in the ${runbook.name} form to see the preview.` }],
        };
    }
    return startAndReply(runs, ctx, name, params, 'run');
  },
};

export const syncCommand: CommandSpec<'sync'> = {
  name: 'sync',
  usesRuns: true,
  summary: 'Sync apps (the bulk-sync runbook): each once, in waves, with a health gate',
  usage:
    'sync <app|glob ...> [-l selector] [cluster=X] [prune=true] [dryRun=true] [revision=R] [includeSynced=true] [confirm=N] [concurrency=10] [waves="a-*;b-*" | waves="tier=canary;tier=low@50%"] [canary=1] [gate=healthy|synced|none] [waveTimeout=10m] [bake=5m] [onFailure=pause|abort|continue|rollback] [check=NAME[,NAME]] [watch=10m] [onRegression=rollback|pause|notify]',
  help: 'Example: `sync auth-config-* prune=true`, or verified: `sync checkout-* canary=1 check=error-rate bake=5m onFailure=rollback watch=15m onRegression=rollback`. Shows the exact apps first; nothing changes until you confirm.',
  readOnly: false,
  async run(cmd, ctx) {
    const runs = runsOf(ctx);
    if (!runs) return noEngine('sync');
    const selector = formatSelectorParam(selectorFromCommand(cmd));
    if (!selector)
      return errorReply(
        'sync',
        'usage',
        'Which apps? e.g. `sync auth-config-* prune=true` or `sync -l team=auth cluster=prod-eu1`.',
      );
    // A typo'd name or glob is answered like `status` answers it, with the closest names, before any run exists.
    assertSelects(cmd, ctx, 'sync');
    const params: Record<string, string> = { selector };
    for (const [k, v] of Object.entries(cmd.options))
      if (!(SELECTOR_OPTIONS as readonly string[]).includes(k)) params[k] = v;
    return startAndReply(runs, ctx, 'bulk-sync', params, 'sync');
  },
};

/**
 * Throws when the command's selection matches no app: with the closest names (in a form the command
 * takes as it is: an appset becomes appset=NAME), before any run exists.
 */
export function assertSelects(cmd: ParsedCommand, ctx: CommandContext, verb: string): FleetApp[] {
  const sel = selectorFromCommand(cmd);
  const apps = selectApps(ctx.services.fleet, sel);
  if (apps.length) return apps;
  const word = [...(sel.patterns ?? []), sel.cluster, sel.appSet].find((w): w is string => !!w);
  const message = `No application matches ${[...(sel.patterns ?? []).map((p) => `\`${p}\``), ...(sel.labels ? [`-l \`${sel.labels}\``] : []), ...(sel.cluster ? [`cluster=${sel.cluster}`] : []), ...(sel.appSet ? [`appset=${sel.appSet}`] : [])].join(' ')}: nothing to ${verb}.`;
  if (word) {
    const near = unknownTarget(ctx.services.fleet, word.replace(/[*?[\]{}]/g, ''), 'app', message);
    const suggestions = near.suggestions?.map((s) =>
      s.replace(/^(\S+) \(appset\)$/, 'appset=$1').replace(/^(\S+) \(cluster\)$/, 'cluster=$1'),
    );
    throw new CommandError(near.code, near.message, suggestions);
  }
  throw new CommandError('unknown_target', message);
}

/** The verbs of `runs` that act on a run, as the buttons of its message do (run.confirm, run.abort ...). */
const RUN_VERBS: Record<string, (runs: RunService, id: string, ctx: CommandContext) => Promise<ReplyOf<'runs'>>> = {
  confirm: async (runs, id, ctx) =>
    progressReply(await runs.confirm(id, ctx.user, { channel: ctx.channel, threadTs: ctx.threadTs })),
  approve: async (runs, id, ctx) => progressReply(await runs.approve(id, ctx.user)),
  // Cancelling a run that already started aborts it: that is the cancel succeeding too.
  cancel: async (runs, id, ctx) => {
    const run = await runs.cancel(id, ctx.user);
    return run.status === 'aborted' ? abortedReply(run) : progressReply(run);
  },
  pause: async (runs, id, ctx) => progressReply(await runs.pause(id, ctx.user)),
  resume: async (runs, id, ctx) => progressReply(await runs.resume(id, ctx.user)),
  abort: async (runs, id, ctx) => abortedReply(await runs.abort(id, ctx.user)),
};

export const runsCommand: CommandSpec<'runs'> = {
  name: 'runs',
  usesRuns: true,
  summary: 'Recent runbook runs; show, confirm, approve, cancel, pause, resume or abort one',
  usage: 'runs [show|confirm|approve|cancel|pause|resume|abort|wait ID] [n]',
  help: 'The verbs do what the buttons on the run message do, with the same permission checks: `runs approve r-abc12` approves as you.',
  readOnly: true,
  async run(cmd, ctx) {
    const runs = runsOf(ctx);
    if (!runs) return noEngine('runs');
    const [verb, id] = cmd.positional;
    if (!verb || /^\d+$/.test(verb)) {
      try {
        return runListReply(await runs.list(verb ? Number(verb) : 20));
      } catch (error) {
        return failure('runs', error);
      }
    }
    if (!id) return errorReply('runs', 'usage', `\`runs ${verb} ID\` needs a run id (see \`runs\`).`);
    try {
      switch (verb) {
        case 'show': {
          const run = await runs.get(id);
          if (!run) throw await runNotFound(runs, id);
          return run.status === 'awaiting-confirmation' ? previewReply(run, 'runs') : progressReply(run);
        }
        case 'wait':
          return progressReply(await runs.waitForEnd(id, 6 * 3_600_000));
      }
    } catch (error) {
      return failure('runs', error instanceof RunNotFoundError ? await runNotFound(runs, id) : error);
    }
    const act = Object.hasOwn(RUN_VERBS, verb) ? RUN_VERBS[verb] : undefined;
    if (!act)
      return errorReply(
        'runs',
        'usage',
        `Unknown \`runs ${verb}\`: use show, confirm, approve, cancel, pause, resume, abort or wait.`,
      );
    try {
      return await act(runs, id, ctx);
    } catch (error) {
      return refusedOrFailed(ctx, 'runs', `run.${verb}`, id, error);
    }
  },
};

export const auditCommand: CommandSpec<'audit'> = {
  name: 'audit',
  usesRuns: true,
  summary: 'The latest entries of the audit log (runs, approvals, steps, Argo CD mutations)',
  usage: 'audit [n]',
  readOnly: true,
  async run(cmd, ctx) {
    const audit = ctx.services.audit;
    if (!audit) return noEngine('audit');
    const n = cmd.positional[0] ? Number(cmd.positional[0]) : 20;
    if (!Number.isInteger(n) || n < 1)
      return errorReply('audit', 'usage', '`audit [n]`: n is how many entries, e.g. `audit 50`.');
    return auditReply(await audit.latest(Math.min(n, 500)));
  },
};

function runAction(
  name: string,
  act: (runs: RunService, id: string, ctx: CommandContext) => Promise<ReplyOf<'runs'>>,
): ActionSpec {
  return {
    name,
    async run(value, ctx) {
      const runs = runsOf(ctx);
      if (!runs) return noEngine(name);
      try {
        return await act(runs, value, ctx);
      } catch (error) {
        return refusedOrFailed(ctx, name, name, value, error);
      }
    },
  };
}

export const runConfirmAction: ActionSpec = {
  name: 'run.confirm',
  async run(value, ctx) {
    const runs = runsOf(ctx);
    if (!runs) return noEngine('run.confirm');
    try {
      const run = await runs.confirm(value, ctx.user, { channel: ctx.channel, threadTs: ctx.threadTs });
      // In Slack the run now has its one live message in the channel; the (ephemeral) preview says so
      // instead of becoming a second, frozen copy with buttons that go stale.
      if (ctx.surface === 'slack' && (run.status === 'running' || run.status === 'awaiting-approval')) {
        const where =
          run.status === 'running'
            ? `Its progress, with ${runPausable(run) ? 'Pause and Abort' : 'Abort'}, is in the channel message.`
            : 'It waits for approval in the channel message, where an approver presses Approve.';
        return {
          ok: true,
          command: 'runs',
          title: `${run.title} ${run.id}: confirmed`,
          data: runData(run),
          blocks: [{ kind: 'text', text: `:white_check_mark: Confirmed \`${run.id}\`. ${where}`, tone: 'ok' }],
        };
      }
      return progressReply(run);
    } catch (error) {
      return refusedOrFailed(ctx, 'run.confirm', 'run.confirm', value, error);
    }
  },
};
/** The buttons on a run's message: approve, cancel, pause, resume, abort. */
export const runVerbActions: ActionSpec[] = ['approve', 'cancel', 'pause', 'resume', 'abort'].map((verb) =>
  runAction(`run.${verb}`, RUN_VERBS[verb]),
);

function formParams(value: string): { runbook: string; params: Record<string, string> } | undefined {
  try {
    const parsed = JSON.parse(value) as { metadata?: string; values?: Record<string, string> };
    const params = Object.fromEntries(
      Object.entries(parsed.values ?? {}).filter(([, v]) => v !== undefined && String(v).trim() !== ''),
    );
    return { runbook: parsed.metadata ?? '', params };
  } catch {
    return undefined;
  }
}

/** Submission of the parameters form opened by `run <runbook>`: value = {"metadata": runbook, "values": {...}}. */
export const runFormAction: ActionSpec = {
  name: 'run.form',
  validate(value, ctx) {
    const form = formParams(value);
    const runbook =
      form &&
      runsOf(ctx)
        ?.runbooks()
        .find((r) => r.name === form.runbook);
    if (!form || !runbook) return undefined;
    let params: Record<string, ParamValue>;
    try {
      params = parseParams(runbook, form.params);
    } catch (error) {
      if (!(error instanceof ParamError)) return undefined;
      // The message starts with the field's name; next to the field it only needs the problem, and the close value (`gate=healthy`: healthy).
      return Object.fromEntries(
        error.problems.map((p) => {
          const near =
            p.code === 'invalid_value' && p.suggestion
              ? `; did you mean ${p.suggestion.slice(p.param.length + 1)}?`
              : '';
          return [p.param, `${p.message.replace(new RegExp(`^${p.param}: `), '')}${near}`];
        }),
      );
    }
    // Then what each step's action accepts (ranges, one of two fields): shown at the param that feeds it.
    const errors: Record<string, string> = {};
    for (const step of runbook.steps) {
      const action = findRunbookAction(step.action);
      if (!action) continue;
      const parsed = action.input.safeParse(substitute(step.with, params));
      if (parsed.success) continue;
      const fed = Object.entries(step.with ?? {}).flatMap(([key, v]) => {
        const param = paramReference(v);
        return param ? [[key, param] as const] : [];
      });
      const paramOf = new Map(fed);
      for (const issue of parsed.error.issues) {
        const key = issue.path[0];
        const param =
          (typeof key === 'string' && paramOf.get(key)) ||
          fed.find(([, p]) => params[p] === undefined)?.[1] ||
          fed[0]?.[1];
        if (param && !errors[param]) errors[param] = issue.message.replace(/^Invalid input: /, '');
      }
    }
    return Object.keys(errors).length ? errors : undefined;
  },
  async run(value, ctx) {
    const runs = runsOf(ctx);
    if (!runs) return noEngine('run');
    let parsed: { metadata?: string; values?: Record<string, string> };
    try {
      parsed = JSON.parse(value);
    } catch {
      return errorReply('run', 'usage', 'The form submission could not be read; run the command again.');
    }
    const runbook = parsed.metadata ?? '';
    const params = Object.fromEntries(
      Object.entries(parsed.values ?? {}).filter(([, v]) => v !== undefined && String(v).trim() !== ''),
    );
    return startAndReply(runs, ctx, runbook, params, 'run');
  },
};

export { describeParams };
