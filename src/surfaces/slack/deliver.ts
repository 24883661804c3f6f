import type { RespondFn } from '@slack/bolt';
import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { Reply } from '../../core/reply.js';
import { renderBlocks, renderReplyModal } from '../../views/blocks.js';
import { openModal } from './modals.js';

/** Where an interaction came from: a message (has a response_url) or a view (Home tab or modal). */
export interface InteractionOrigin {
  responseUrl?: string;
  triggerId?: string;
  view?: { id: string; type: string; hash?: string };
}

export function originOf(body: any): InteractionOrigin {
  const view = body?.container?.type === 'view' || (!body?.response_url && body?.view) ? body.view : undefined;
  return {
    ...(body?.response_url ? { responseUrl: body.response_url as string } : {}),
    ...(body?.trigger_id ? { triggerId: body.trigger_id as string } : {}),
    ...(view?.id
      ? { view: { id: view.id as string, type: view.type as string, hash: view.hash as string | undefined } }
      : {}),
  };
}

/**
 * Shows a reply where the interaction happened. In a message: through response_url (ephemeral unless the
 * message was public; `replace` swaps the original). In the Home tab, which has no response_url: a modal.
 * In a modal: the modal is updated in place.
 */
export async function deliverReply(p: {
  reply: Reply;
  origin: InteractionOrigin;
  respond: RespondFn;
  client: WebClient;
  logger: Logger;
  replace: boolean;
  page?: number;
}): Promise<void> {
  const { reply, origin } = p;
  const render = p.page ? { page: p.page } : {};
  if (origin.view?.type === 'modal') {
    await p.client.views.update({ view_id: origin.view.id, view: renderReplyModal(reply, render) });
    return;
  }
  if (origin.view?.type === 'home' || (!origin.responseUrl && origin.triggerId)) {
    if (!origin.triggerId) throw new Error('no trigger_id to open a modal with');
    await openModal(p.client, origin.triggerId, renderReplyModal(reply, render));
    return;
  }
  const { text, blocks } = renderBlocks(reply, render);
  await p.respond({
    text,
    blocks,
    replace_original: p.replace,
    ...(p.replace ? {} : { response_type: 'ephemeral' as const }),
  });
}
