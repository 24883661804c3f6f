import type { AllMiddlewareArgs, SlackViewMiddlewareArgs, ViewSubmitAction } from '@slack/bolt';
import { auditOriginOf, runAction } from '../../../../commands/index.js';
import { findAction } from '../../../../commands/registry.js';
import { withAuditOrigin } from '../../../../domain/audit/audit-log.js';
import { errorReply, type Reply } from '../../../../core/reply.js';
import { FORM_CALLBACK_PREFIX, renderBlocks } from '../../../../views/blocks.js';
import { slackContext, type SlackDeps } from '../../context.js';
import { decodeModalMetadata, findModalHandler, viewValues, type ModalOrigin } from '../../modals.js';

/**
 * A submitted modal: forms (callback_id `form:<action>`) run the registered action with
 * `{"metadata", "values"}`; other callback_ids go to handlers from registerModalHandler. The answer goes
 * back to where the modal was opened (the command's response_url, else an ephemeral message in the channel).
 */
export function modalSubmission({ services, logger }: SlackDeps) {
  return async ({
    ack,
    body,
    view,
    client,
  }: SlackViewMiddlewareArgs<ViewSubmitAction> & AllMiddlewareArgs): Promise<void> => {
    const callbackId = view.callback_id;
    const values = viewValues(view.state as { values?: Record<string, Record<string, any>> });
    const { metadata, origin } = decodeModalMetadata(view.private_metadata);
    const handler = findModalHandler(callbackId);
    const ctx = slackContext(services, { user: body.user.id, ...(origin.channel ? { channel: origin.channel } : {}) });
    const formAction =
      !handler && callbackId.startsWith(FORM_CALLBACK_PREFIX)
        ? findAction(callbackId.slice(FORM_CALLBACK_PREFIX.length))
        : undefined;
    const errors = handler
      ? handler.validate?.(values)
      : formAction?.validate?.(JSON.stringify({ metadata, values }), ctx);
    if (errors && Object.keys(errors).length) {
      await ack({ response_action: 'errors', errors });
      return;
    }
    await ack();
    let reply: Reply | undefined;
    try {
      if (handler) {
        reply = await withAuditOrigin(auditOriginOf(ctx), () =>
          handler.submit({ callbackId, values, metadata, user: body.user.id, viewId: view.id }, ctx),
        );
      } else if (callbackId.startsWith(FORM_CALLBACK_PREFIX)) {
        const name = callbackId.slice(FORM_CALLBACK_PREFIX.length);
        const spec = findAction(name);
        reply = spec
          ? await runAction(spec, JSON.stringify({ metadata, values }), ctx)
          : errorReply(
              name,
              'unknown_action',
              `This form (\`${name}\`) is not known to this rollcall version. Run the command again.`,
            );
      } else {
        logger.warn({ callbackId }, 'view submission with no handler');
        return;
      }
    } catch (err) {
      logger.error({ err, callbackId, user: body.user.id }, 'modal submission failed');
      reply = errorReply(callbackId, 'internal', 'Submitting the form failed unexpectedly. It was logged; try again.');
    }
    if (reply) await answerOrigin(reply, origin, body.user.id, client, logger);
  };
}

async function answerOrigin(
  reply: Reply,
  origin: ModalOrigin,
  user: string,
  client: AllMiddlewareArgs['client'],
  logger: SlackDeps['logger'],
): Promise<void> {
  const { text, blocks } = renderBlocks(reply);
  try {
    if (origin.responseUrl) {
      // A command's response_url stays valid for 30 minutes and 5 uses: enough for the answer to its form.
      const res = await fetch(origin.responseUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ response_type: 'ephemeral', replace_original: false, text, blocks }),
      });
      if (res.ok) return;
      logger.warn({ status: res.status }, 'response_url refused the form answer; posting it ephemerally instead');
    }
    if (origin.channel) await client.chat.postEphemeral({ channel: origin.channel, user, text, blocks });
  } catch (err) {
    logger.error({ err, user }, 'could not deliver the form answer');
  }
}
