import type { App } from '@slack/bolt';
import type { SlackDeps } from '../../context.js';
import { modalSubmission } from './modal-submission.js';

export function registerViewListeners(app: App, deps: SlackDeps): void {
  app.view({ type: 'view_submission', callback_id: /.+/ }, modalSubmission(deps));
}
