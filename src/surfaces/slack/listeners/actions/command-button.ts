import type { AllMiddlewareArgs, BlockAction, SlackActionMiddlewareArgs } from '@slack/bolt';
import { afterAcks, answerTurn, askedAtVersionOf, runCommand, slackContext, type SlackDeps } from '../../context.js';
import { deliverReply, originOf } from '../../deliver.js';

/** A button that runs a chat command ("Show rollout", "Refresh") as the user who pressed it. */
export function commandButton(deps: SlackDeps) {
  const { services, logger } = deps;
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
    await afterAcks(deps);
    const text = 'value' in action && typeof action.value === 'string' ? action.value : '';
    const channel = body.channel?.id;
    try {
      const ctx = slackContext(services, { user: body.user.id, askedAtVersion, ...(channel ? { channel } : {}) });
      const reply = await runCommand(text, ctx, logger);
      await answerTurn(deps);
      await deliverReply({ reply, origin: originOf(body), respond, client, logger, replace: false });
    } catch (err) {
      logger.error({ err, user: body.user.id, command: text.split(' ')[0] }, 'command button failed');
    }
  };
}
