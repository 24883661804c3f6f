import type { InstanceHealth } from '../fleet/events.js';
import { canOperate, canRead, isScheduler, operateDeniedMessage, readDeniedMessage } from '../core/access.js';
import { helpReply, suggestCommands } from './help.js';
import { CommandError, commandText, parseCommand } from './parse.js';
import { replyFromError, RollcallError } from '../core/errors.js';
import { isErrorCode } from '../core/error-codes.js';
import {
  findCommand,
  registerAction,
  registerCommand,
  type ActionSpec,
  type AnyCommandSpec,
  type CommandContext,
  type ParsedCommand,
} from './registry.js';
import { formatCount, since } from '../core/format.js';
import { PAGE_SIZE, errorReply, replyPages, withUserText, type ErrorReply } from '../core/reply.js';
import type { DispatchReply } from './replies.js';
import { auditRefusal } from './runbooks.js';
import { withAuditOrigin, type AuditOrigin } from '../domain/audit/audit-log.js';
import { commandDuration, commandsTotal, secondsSince } from '../infra/metrics.js';
import { answerWithoutWaitingForRedis } from '../infra/redis.js';
import { sharedAnswer } from './shared-answers.js';
import { ANSWER_BUDGET_MS, withAnswerBudget } from './live.js';

import { actionsCommand } from './actions.js';
import { alertCommand, alertsCommand } from './alerts.js';
import { appCommand } from './app.js';
import { changesCommand } from './changes.js';
import { checkCommand, checksCommand } from './checks.js';
import { clustersCommand } from './clusters.js';
import { pauseCommand, pausedCommand, resumeCommand } from './control.js';
import { freezeCommand, frozenCommand, unfreezeCommand } from './freeze.js';
import { guardCommand, guardsCommand, unguardCommand } from './guard.js';
import { diagnoseCommand } from './diagnose.js';
import { diffCommand } from './diff.js';
import { digestCommand } from './digest.js';
import { helpCommand } from './help.js';
import { historyCommand } from './history.js';
import { declareCommand, incidentCommand, incidentNoteMessageAction, incidentsCommand } from './incident.js';
import { logsCommand } from './logs.js';
import { planCommand } from './plan.js';
import { refreshCommand } from './refresh.js';
import { rollbackCommand } from './rollback.js';
import { abortCommand, promoteCommand, restartCommand, retryCommand } from './rollout-actions.js';
import { terminateOpCommand } from './terminate-op.js';
import { actionCommand } from './action.js';
import { rolloutCommand } from './rollout.js';
import { rolloutsCommand } from './argo-rollouts.js';
import {
  auditCommand,
  runRunbookCommand,
  runConfirmAction,
  runFormAction,
  runsCommand,
  runVerbActions,
  syncCommand,
} from './runbooks.js';
import { statusCommand } from './status.js';

/**
 * Every chat command and every button or form action rollcall answers. A new command is a module that
 * exports its CommandSpec, listed here; nothing registers itself by being imported.
 */
export const COMMANDS: readonly AnyCommandSpec[] = [
  statusCommand,
  appCommand,
  historyCommand,
  diffCommand,
  logsCommand,
  rolloutCommand,
  rolloutsCommand,
  actionsCommand,
  actionCommand,
  promoteCommand,
  abortCommand,
  retryCommand,
  restartCommand,
  planCommand,
  diagnoseCommand,
  clustersCommand,
  checkCommand,
  checksCommand,
  helpCommand,
  pauseCommand,
  resumeCommand,
  pausedCommand,
  freezeCommand,
  unfreezeCommand,
  frozenCommand,
  guardCommand,
  guardsCommand,
  unguardCommand,
  runRunbookCommand,
  syncCommand,
  refreshCommand,
  rollbackCommand,
  terminateOpCommand,
  runsCommand,
  auditCommand,
  alertsCommand,
  alertCommand,
  digestCommand,
  changesCommand,
  incidentCommand,
  declareCommand,
  incidentsCommand,
];
export const ACTIONS: readonly ActionSpec[] = [
  runConfirmAction,
  runFormAction,
  ...runVerbActions,
  incidentNoteMessageAction,
];
for (const spec of COMMANDS) registerCommand(spec);
for (const spec of ACTIONS) registerAction(spec);

export { parseCommand } from './parse.js';
export { auditRefusal } from './runbooks.js';

/**
 * Every answer comes from the mirror: when an instance is unreachable or answers what is not Argo CD's,
 * "no such app" or "0 problems" would be a lie by omission, so the reply says which instances it is
 * missing, and how old the data it holds of them is. Items Argo CD listed as null are said too.
 */
function withMirrorWarning(reply: DispatchReply, ctx: CommandContext): DispatchReply {
  if (reply.command === 'help') return reply;
  const health = ctx.services.fleet.health();
  const missing = health.filter((h) => !h.synced);
  if (reply.ok && FLEET_SUMMARIES.has(reply.command) && blind(health)) return blindReply(reply.command, missing);
  const warnings = health.flatMap((h) => (h.warnings ?? []).map((w) => `${w}.`));
  if (missing.length) {
    const now = ctx.services.now?.() ?? new Date();
    const what = missing.map((h) => `${h.instance}${unsyncedDetail(h, now)}`).join('; ');
    warnings.unshift(
      `Not in sync with Argo CD instance${missing.length > 1 ? 's' : ''} ${what}: this answer may be incomplete or stale.`,
    );
  }
  if (!warnings.length) return reply;
  if (reply.error) reply.error.message += ` Note: ${warnings.join(' ')}`;
  // `ask --json` carries data, not blocks: say it there too, so a script cannot take a partial answer for a whole one.
  reply.data.warnings = warnings;
  if (missing.length)
    reply.data.unsyncedInstances = missing.map((h) => ({
      instance: h.instance,
      error: h.error ?? null,
      code: h.errorCode,
      dataAsOf: h.dataAsOf,
    }));
  const at = reply.blocks[0]?.kind === 'header' ? 1 : 0;
  reply.blocks.splice(at, 0, ...warnings.map((w) => ({ kind: 'context' as const, text: `:warning: ${w}` })));
  return reply;
}

/** Answers that summarise the whole fleet: with no instance read, their empty answer would read as all clear. */
const FLEET_SUMMARIES = new Set(['status', 'clusters', 'diagnose']);

/** No instance has ever been listed: the mirror holds nothing it could answer from. */
function blind(health: InstanceHealth[]): boolean {
  return health.length > 0 && health.every((h) => !h.synced && !h.dataAsOf && h.error);
}

/** The fleet could not be read at all: a failure with the instances' own errors, never "0 apps, nothing wrong". */
function blindReply(command: string, missing: InstanceHealth[]): ErrorReply {
  const codes = [...new Set(missing.map((h) => h.errorCode))];
  const code = codes.length === 1 && codes[0] && isErrorCode(codes[0]) ? codes[0] : 'argocd_unavailable';
  const what = missing.map((h) => `${h.instance}: ${h.error}`).join('; ');
  const noun =
    missing.length > 1 ? `any of the ${missing.length} Argo CD instances` : `Argo CD instance ${missing[0].instance}`;
  return replyFromError(
    command,
    new RollcallError(code, `Could not read ${noun}, so there is nothing to answer from (${what}).`),
  );
}

/** " (the error; showing its data from 6m ago)": why, and the age of what is shown instead. */
function unsyncedDetail(h: InstanceHealth, now: Date): string {
  const kept = h.dataAsOf ? `showing its data from ${since(h.dataAsOf, now)} ago` : undefined;
  const parts = [h.error, kept].filter(Boolean);
  return parts.length ? ` (${parts.join('; ')})` : '';
}

/** What the audit log records of where a request came from. */
export function auditOriginOf(ctx: CommandContext): AuditOrigin {
  return { surface: ctx.surface, ...(ctx.osUser ? { osUser: ctx.osUser } : {}), ...(ctx.actAs ? { actAs: true } : {}) };
}

/**
 * Runs one chat command: parse, find, check permission, run. Never throws: failures become error Replies.
 * Someone is waiting for the answer: a Redis that is down is said at once (`redis_unavailable`), not waited out.
 */
export async function dispatch(text: string, ctx: CommandContext): Promise<DispatchReply> {
  const started = process.hrtime.bigint();
  const reply = withUserText(
    await answerWithoutWaitingForRedis(() =>
      withAuditOrigin(auditOriginOf(ctx), () =>
        withAnswerBudget(answerBudgetOf(ctx), () => dispatchCommand(text, ctx)),
      ),
    ),
    text,
  );
  recordCommand(reply, started);
  return reply;
}

/** How long the answer's live reads may take, all together (config `answers.budget`). */
function answerBudgetOf(ctx: CommandContext): number {
  return ctx.services.config.answers?.budget ?? ANSWER_BUDGET_MS;
}

/** By the command the reply answers (not the raw text: a typo would make a new label) and its error code. */
function recordCommand(reply: DispatchReply, started: bigint): void {
  const labels = {
    command: findCommand(reply.command) ? reply.command : 'unknown',
    result: reply.ok ? 'ok' : (reply.error?.code ?? 'error'),
  };
  commandsTotal.inc(labels);
  commandDuration.observe(labels, secondsSince(started));
}

/** Runs a registered action (a button, a form submission) for ctx's user, audited as coming from ctx's surface. */
export async function runAction(
  spec: ActionSpec,
  value: string,
  ctx: CommandContext,
): Promise<DispatchReply | undefined> {
  const reply = await answerWithoutWaitingForRedis(() =>
    withAuditOrigin(auditOriginOf(ctx), () => withAnswerBudget(answerBudgetOf(ctx), () => spec.run(value, ctx))),
  );
  // A form's value holds what the user typed into its fields.
  return reply && withUserText(reply, value);
}

/**
 * The longest command text read. Slack's own input box stops near this; a longer one is pasted data, and
 * parsing, selecting and suggesting over it would cost time for nothing.
 */
export const MAX_COMMAND_TEXT = 4000;

async function dispatchCommand(text: string, ctx: CommandContext): Promise<DispatchReply> {
  if (text.length > MAX_COMMAND_TEXT) {
    const command = text.slice(0, 40).trim().split(/\s+/)[0] || 'help';
    return errorReply(
      command,
      'command_too_long',
      `That command is ${formatCount(text.length)} characters long; rollcall reads at most ${formatCount(MAX_COMMAND_TEXT)}. Select apps with a glob (\`sync auth-config-*\`) or a label selector (\`-l team=auth\`) instead of listing them.`,
    );
  }
  let cmd: ParsedCommand;
  try {
    cmd = parseCommand(text);
  } catch (error) {
    return replyFromError(text.trim().split(/\s+/)[0] || 'help', error);
  }
  try {
    if (!cmd.command) return helpReply();
    const spec = findCommand(cmd.command);
    if (!spec) {
      return errorReply(
        cmd.command,
        'unknown_command',
        `Unknown command \`${cmd.command}\`. \`help\` lists the commands.`,
        suggestCommands(cmd.command),
      );
    }
    // No command takes --flags (--public is Slack's, stripped before here): a typo must not be ignored silently.
    const flags = [...cmd.flags].filter((f) => f !== 'public');
    if (flags.length) {
      return errorReply(
        spec.name,
        'usage',
        `\`${spec.name}\` does not take ${flags.map((f) => `--${f}`).join(', ')}. Usage: ${spec.usage}. Options are written key=value, e.g. \`prune=true\`.`,
      );
    }
    const config = ctx.services.config;
    if (isScheduler(ctx)) return withMirrorWarning(await spec.run(cmd, ctx), ctx);
    if (!canRead(ctx.user, config)) {
      const message = readDeniedMessage(ctx.user, config);
      const unrecorded = await auditRefusal(ctx, {
        target: spec.name,
        message,
        result: 'forbidden',
        params: { command: cmd.raw },
      });
      return errorReply(spec.name, 'forbidden', unrecorded ? `${message} ${unrecorded}` : message);
    }
    if (!spec.readOnly && !canOperate(ctx.user, config)) {
      const message = operateDeniedMessage(ctx.user, spec.name, config);
      // Someone tried to change the fleet and was stopped: that belongs in the audit log too.
      const unrecorded = await auditRefusal(ctx, {
        target: spec.name,
        message,
        result: 'forbidden',
        params: { command: cmd.raw },
      });
      return errorReply(spec.name, 'forbidden', unrecorded ? `${message} ${unrecorded}` : message);
    }
    const page = takePage(cmd);
    const reply = spec.sharedAnswer ? await sharedAnswer(spec, cmd, ctx) : await spec.run(cmd, ctx);
    // `more` answers with a whole dispatched reply: paged and warned about already.
    if (spec.name === 'more') return reply;
    return withMirrorWarning(paged(reply, { ...cmd, command: spec.name }, page, ctx, spec.readOnly), ctx);
  } catch (error) {
    return withMirrorWarning(replyFromError(findCommand(cmd.command)?.name ?? cmd.command, error), ctx);
  }
}

/** Who asks for help: all a help answer needs of a CommandContext (it pages, and remembers the page for `more`). */
type Asker = Pick<CommandContext, 'user' | 'surface' | 'channel' | 'threadTs'>;

/**
 * `help` and `help COMMAND` answered from the command list alone, without config, Argo CD or Redis, so help
 * works before rollcall.yaml exists. Undefined when the text asks for something else.
 */
export function answerHelp(text: string, asker: Asker): DispatchReply | undefined {
  let cmd: ParsedCommand;
  try {
    cmd = parseCommand(text);
  } catch {
    return undefined;
  }
  if (cmd.command && findCommand(cmd.command)?.name !== 'help') return undefined;
  try {
    const page = takePage(cmd);
    return paged(helpReply(cmd.positional[0]), { ...cmd, command: 'help' }, page, asker, true);
  } catch (error) {
    return replyFromError('help', error);
  }
}

/** `--page N` / `page=N`: which window of a long answer to show. Every command takes it. */
function takePage(cmd: ParsedCommand): number | undefined {
  const raw = cmd.options.page;
  if (raw === undefined) return undefined;
  delete cmd.options.page;
  if (!/^[1-9]\d{0,5}$/.test(raw))
    throw new CommandError('usage', `--page needs a page number (1, 2, ...); got \`${raw}\`.`);
  return Number(raw);
}

// The last long answer per person and conversation, for `more`. In memory: in Slack the "More" button
// carries its page itself, so only a conversation with one process (the terminal, the demo) relies on it.
const lastPaged = new Map<string, { command: string; page: number }>();
const MAX_REMEMBERED = 1000;
const conversationOf = (ctx: Asker) => [ctx.user, ctx.channel ?? '', ctx.threadTs ?? ''].join('\u0000');

/** Stamps the page and the command on a reply, refuses a page past the end, and remembers it for `more`. */
function paged(
  reply: DispatchReply,
  cmd: ParsedCommand,
  page: number | undefined,
  ctx: Asker,
  readOnly: boolean,
): DispatchReply {
  if (!reply.ok) return reply;
  const text = commandText(cmd);
  // Turning a page re-runs the command: only one that reads may be re-run that way, never a sync.
  if (readOnly) reply.pageCommand ??= text;
  const pages = replyPages(reply, PAGE_SIZE[ctx.surface]);
  if (page && page > pages) {
    return errorReply(
      reply.command,
      'usage',
      `\`${text}\` has ${pages === 1 ? 'one page' : `${pages} pages`} of ${PAGE_SIZE[ctx.surface]} items here; page ${page} is past the end.`,
    );
  }
  if (page) reply.page = page;
  const key = conversationOf(ctx);
  lastPaged.delete(key);
  // Only read-only commands are re-run by `more`: a runbook command's reply pages through its own
  // pageCommand (a preview through `runs show ID`), never by running twice.
  if (reply.pageCommand && pages > (page ?? 1)) {
    lastPaged.set(key, { command: reply.pageCommand ?? text, page: page ?? 1 });
    if (lastPaged.size > MAX_REMEMBERED) lastPaged.delete(lastPaged.keys().next().value!);
  }
  return reply;
}

registerCommand({
  name: 'more',
  summary: 'The next page of the last long answer in this conversation',
  usage: 'more',
  help: 'Every list shows one page at a time (10 items in a terminal, 25 in Slack). `more` shows the next page of the last answer that had one; `COMMAND --page N` shows page N of any answer.',
  readOnly: true,
  async run(cmd, ctx) {
    if (cmd.positional.length || Object.keys(cmd.options).length)
      throw new CommandError(
        'usage',
        '`more` takes nothing: it continues the last long answer. For a given page: `COMMAND --page N`.',
      );
    const last = lastPaged.get(conversationOf(ctx));
    if (!last)
      throw new CommandError(
        'usage',
        'Nothing to continue here: `more` shows the next page of the last answer that had more than one. For a given page: `COMMAND --page N`.',
      );
    return dispatchCommand(`${last.command} --page ${last.page + 1}`, ctx);
  },
});
