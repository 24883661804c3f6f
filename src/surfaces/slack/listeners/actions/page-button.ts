import type { AllMiddlewareArgs, BlockAction, SlackActionMiddlewareArgs } from '@slack/bolt';
import { parseCommand } from '../../../../commands/index.js';
import { findCommand } from '../../../../commands/registry.js';
import { decodePageValue } from '../../../../views/blocks.js';
import { askedAtVersionOf, runCommand, slackContext, type SlackDeps } from '../../context.js';
import { deliverReply, originOf } from '../../deliver.js';

/** A page turn re-runs its command: only a read-only one may be (a sync's preview pages through `runs show ID`). */
function readOnlyCommand(text: string): boolean {
  try {
    return findCommand(parseCommand(text).command)?.readOnly === true;
  } catch {
    return false;
  }
}

/** "More (page 2/5)": re-runs the command (the fleet may have moved on) and shows the requested page in place. */
export function pageButton({ services, logger }: SlackDeps) {
  return async ({
    ack,
    body,
    action,
    respond,
    client,
    context,
  }: SlackActionMiddlewareArgs<BlockAction> & AllMiddlewareArgs): Promise<void> => {
    const askedAtVersion = askedAtVersionOf(context, services);
    await ack();
    const request = 'value' in action && typeof action.value === 'string' ? decodePageValue(action.value) : undefined;
    if (!request || !readOnlyCommand(request.command)) {
      logger.warn({ user: body.user.id }, 'page button with an unreadable value or a command that changes things');
      return;
    }
    const channel = body.channel?.id;
    try {
      const ctx = slackContext(services, { user: body.user.id, askedAtVersion, ...(channel ? { channel } : {}) });
      const reply = await runCommand(request.command, ctx, logger);
      await deliverReply({ reply, origin: originOf(body), respond, client, logger, replace: true, page: request.page });
    } catch (err) {
      logger.error({ err, user: body.user.id }, 'page button failed');
    }
  };
}
