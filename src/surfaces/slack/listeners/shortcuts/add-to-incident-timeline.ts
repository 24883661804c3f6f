import type { AllMiddlewareArgs, MessageShortcut, SlackShortcutMiddlewareArgs } from '@slack/bolt';
import { runAction } from '../../../../commands/index.js';
import { findAction } from '../../../../commands/registry.js';
import { renderBlocks } from '../../../../views/blocks.js';
import { slackContext, type SlackDeps } from '../../context.js';
import { nextTurn } from '../../../../core/concurrency.js';

export const ADD_TO_TIMELINE_CALLBACK = 'add_to_incident_timeline';

/**
 * The "Add to incident timeline" message shortcut: ack, then hand the message (its own ts and
 * author, not the clicker's) to the incident.note-message action, and answer the clicker privately.
 */
export function addToIncidentTimeline({ services, logger }: SlackDeps) {
  return async ({
    shortcut,
    ack,
    respond,
  }: SlackShortcutMiddlewareArgs<MessageShortcut> & AllMiddlewareArgs): Promise<void> => {
    await ack();
    await nextTurn();
    try {
      const channel = shortcut.channel.id;
      const message = shortcut.message as {
        ts: string;
        thread_ts?: string;
        user?: string;
        bot_id?: string;
        text?: string;
      };
      const ctx = slackContext(services, {
        user: shortcut.user.id,
        channel,
        ...(message.thread_ts ? { threadTs: message.thread_ts } : {}),
      });
      const value = JSON.stringify({
        channel,
        ts: message.ts,
        threadTs: message.thread_ts,
        author: message.user ?? message.bot_id ?? shortcut.user.id,
        text: message.text ?? '',
      });
      const reply = await runAction(findAction('incident.note-message')!, value, ctx);
      if (reply) {
        const { text, blocks } = renderBlocks(reply);
        await respond({ response_type: 'ephemeral', text, blocks });
      }
    } catch (err) {
      logger.error({ err, user: shortcut.user.id }, 'adding a message to the incident timeline failed');
    }
  };
}
