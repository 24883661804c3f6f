import type { AllMiddlewareArgs, SlackCommandMiddlewareArgs } from '@slack/bolt';
import { renderBlocks } from '../../../../views/blocks.js';
import {
  afterAcks,
  answerTurn,
  askedAtVersionOf,
  runCommand,
  slackContext,
  splitPublicFlag,
  type SlackDeps,
} from '../../context.js';
import { openFormModal } from '../../modals.js';

/**
 * `/argo <command> ...`: ack at once (Slack wants it within 3 s), then answer through response_url:
 * ephemeral by default, in the channel with `--public`. Who may ask, and where, the authorization middleware
 * decided before this runs.
 */
export function argoCommand(deps: SlackDeps) {
  const { services, logger } = deps;
  return async ({
    command,
    ack,
    respond,
    client,
    context,
  }: SlackCommandMiddlewareArgs & AllMiddlewareArgs): Promise<void> => {
    // What the mirror held when the asker asked: their answer may be shared with others', never older than this.
    const askedAtVersion = askedAtVersionOf(context, services);
    await ack();
    // The acks of other requests waiting on the event loop go out before this answer's work runs.
    await afterAcks(deps);
    const { text, isPublic } = splitPublicFlag(command.text ?? '');
    try {
      const ctx = slackContext(services, {
        user: command.user_id,
        channel: command.channel_id,
        askedAtVersion,
        openForm: async (form) => {
          try {
            await openFormModal(client, command.trigger_id, form, {
              channel: command.channel_id,
              responseUrl: command.response_url,
            });
            return true;
          } catch (err) {
            logger.warn({ err, form: form.action }, 'could not open the form modal');
            return false;
          }
        },
      });
      const reply = await runCommand(text, ctx, logger);
      // Rendering and posting wait for intake too: a crowd's answers go out a slice at a time, with acks between.
      await answerTurn(deps);
      // The reply's own pageCommand is what "More" re-runs: a read-only command, never the typed text of a sync.
      const { text: fallback, blocks } = renderBlocks(reply);
      await respond({ response_type: isPublic ? 'in_channel' : 'ephemeral', text: fallback, blocks });
    } catch (err) {
      logger.error({ err, user: command.user_id, channel: command.channel_id }, 'slash command answer failed');
    }
  };
}
