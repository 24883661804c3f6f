import type { AllMiddlewareArgs, BlockAction, SlackActionMiddlewareArgs } from '@slack/bolt';
import { runAction } from '../../../../commands/index.js';
import { findAction } from '../../../../commands/registry.js';
import { errorReply } from '../../../../core/reply.js';
import { baseActionId } from '../../../../views/blocks.js';
import { openFormModal } from '../../modals.js';
import { slackContext, type SlackDeps } from '../../context.js';
import { deliverReply, originOf } from '../../deliver.js';

/**
 * Buttons bound to a registered action (run.confirm, run.approve, run.pause ...): the action decides, and the
 * Reply it returns replaces the message the button was on. Permission checks are the action's.
 */
export function namedActionButton({ services, logger }: SlackDeps) {
  return async ({
    ack,
    body,
    action,
    respond,
    client,
  }: SlackActionMiddlewareArgs<BlockAction> & AllMiddlewareArgs): Promise<void> => {
    await ack();
    const name = baseActionId(action.action_id);
    const value = 'value' in action && typeof action.value === 'string' ? action.value : '';
    const origin = originOf(body);
    const channel = body.channel?.id;
    const threadTs = body.message?.thread_ts as string | undefined;
    try {
      const spec = findAction(name);
      if (!spec) {
        const reply = errorReply(
          name,
          'unknown_action',
          `This button (\`${name}\`) is not known to this rollcall version. Run the command again for fresh buttons.`,
        );
        await deliverReply({ reply, origin, respond, client, logger, replace: false });
        return;
      }
      const ctx = slackContext(services, {
        user: body.user.id,
        ...(channel ? { channel } : {}),
        ...(threadTs ? { threadTs } : {}),
        openForm: async (form) => {
          if (!origin.triggerId) return false;
          try {
            await openFormModal(client, origin.triggerId, form, {
              ...(channel ? { channel } : {}),
              ...(origin.responseUrl ? { responseUrl: origin.responseUrl } : {}),
            });
            return true;
          } catch (err) {
            logger.warn({ err, form: form.action }, 'could not open the form modal');
            return false;
          }
        },
      });
      const reply = await runAction(spec, value, ctx);
      if (reply) await deliverReply({ reply, origin, respond, client, logger, replace: reply.ok });
    } catch (err) {
      logger.error({ err, user: body.user.id, action: name }, 'button action failed');
      const reply = errorReply(
        name,
        'internal',
        `\`${name}\` failed unexpectedly. It was logged; try again or use \`/argo runs\`.`,
      );
      await deliverReply({ reply, origin, respond, client, logger, replace: false }).catch(() => {});
    }
  };
}
