import type { AllMiddlewareArgs, AnyMiddlewareArgs, Middleware, RespondFn } from '@slack/bolt';
import { withAuditOrigin } from '../../domain/audit/audit-log.js';
import { auditOriginOf, auditRefusal } from '../../commands/index.js';
import { canRead, readDeniedMessage } from '../../core/access.js';
import { errorReply, type Reply } from '../../core/reply.js';
import { renderBlocks } from '../../views/blocks.js';
import { answerTurn, channelAllowed, declineReply, slackContext, splitPublicFlag, type SlackDeps } from './context.js';
import { slackEntryOf, type SlackEntry } from './entry.js';

/**
 * Who the audit log names for a request that named no user. Slack always names one; a payload without one
 * is refused, and its refusal is still recorded under this actor.
 */
export const UNKNOWN_SLACK_USER = 'slack:unknown-user';

/** Why an entry was refused, as the audit log's `result` says it. */
export type EntryRefusal = 'user_missing' | 'channel_not_allowed' | 'forbidden';

/** The audit target of an entry: the command word, or the button, form, shortcut or event it was. */
function targetOf(entry: SlackEntry): string {
  if (entry.kind === 'command') return splitPublicFlag(entry.what).text.split(' ')[0] || 'help';
  return entry.what || entry.kind;
}

export interface Refusal {
  result: EntryRefusal;
  reply: Reply;
}

/**
 * The checks every Slack entry passes, whatever it is (a slash command, a button, a modal, a shortcut, an
 * event): it names a user, it comes from a channel rollcall answers in (when it has one), and that user may
 * use rollcall at all. What the user may then do (operate, approve) is the command's or action's own check.
 * Decided without I/O, so a refusal is acked before it is audited.
 */
export function refusalOf(config: SlackDeps['services']['config'], entry: SlackEntry): Refusal | undefined {
  const target = targetOf(entry);
  if (!entry.user)
    return {
      result: 'user_missing',
      reply: errorReply(
        target,
        'forbidden',
        'This Slack request names no user; rollcall answers only requests from a person.',
      ),
    };
  if (entry.channel && !channelAllowed(config.slack, entry.channel))
    return { result: 'channel_not_allowed', reply: declineReply(config.slack) };
  if (!canRead(entry.user, config))
    return { result: 'forbidden', reply: errorReply(target, 'forbidden', readDeniedMessage(entry.user, config)) };
  return undefined;
}

/**
 * Records a refused Slack entry as every refusal is recorded (`run.refused`, surface slack), under
 * UNKNOWN_SLACK_USER when it named no user. When the audit log cannot take it, the reply says so.
 */
export async function auditEntryRefusal(deps: SlackDeps, entry: SlackEntry, refusal: Refusal): Promise<void> {
  const ctx = slackContext(deps.services, {
    user: entry.user ?? UNKNOWN_SLACK_USER,
    ...(entry.channel ? { channel: entry.channel.id } : {}),
  });
  const message = refusal.reply.error!.message;
  const params = {
    entry: entry.kind,
    ...(entry.channel ? { channel: entry.channel.id } : {}),
    [entry.kind === 'command' ? 'command' : 'id']: entry.what,
  };
  const unrecorded = await withAuditOrigin(auditOriginOf(ctx), () =>
    auditRefusal(ctx, { target: targetOf(entry), result: refusal.result, message, params }),
  );
  if (!unrecorded) return;
  deps.logger.error({ result: refusal.result, user: entry.user, what: targetOf(entry) }, unrecorded);
  refusal.reply.error!.message += ` ${unrecorded}`;
}

/**
 * Global middleware: every listener runs behind it, so a new one cannot skip the checks. A refused entry is
 * acked (Slack shows no error for it), answered privately where Slack gave a way to answer, and goes no further.
 */
export function authorizeMiddleware(deps: SlackDeps): Middleware<AnyMiddlewareArgs> {
  return async (args: AnyMiddlewareArgs & AllMiddlewareArgs) => {
    const entry = slackEntryOf(args.body);
    const refusal = entry && refusalOf(deps.services.config, entry);
    if (!entry || !refusal) return args.next();
    // Events are acked by Bolt itself before middleware runs; everything else waits for this.
    if ('ack' in args && typeof args.ack === 'function') await (args.ack as () => Promise<void>)();
    await auditEntryRefusal(deps, entry, refusal);
    const respond = 'respond' in args ? (args.respond as RespondFn | undefined) : undefined;
    if (!respond) return;
    await answerTurn(deps);
    const { text, blocks } = renderBlocks(refusal.reply);
    await respond({ response_type: 'ephemeral', replace_original: false, text, blocks }).catch((err: unknown) =>
      deps.logger.warn({ err, what: entry?.kind }, 'could not answer a refused Slack request'),
    );
  };
}
