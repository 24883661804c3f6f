import type { App } from '@slack/bolt';
import { authorizeMiddleware } from '../authorize.js';
import type { SlackDeps } from '../context.js';
import { registerActionListeners } from './actions/index.js';
import { registerCommandListeners } from './commands/index.js';
import { registerEventListeners } from './events/index.js';
import { registerShortcutListeners } from './shortcuts/index.js';
import { registerViewListeners } from './views/index.js';

/** Every listener runs behind one authorization path (user, channel, access; refusals audited): see authorize.ts. */
export function registerListeners(app: App, deps: SlackDeps): void {
  app.use(authorizeMiddleware(deps));
  registerCommandListeners(app, deps);
  registerActionListeners(app, deps);
  registerViewListeners(app, deps);
  registerEventListeners(app, deps);
  registerShortcutListeners(app, deps);
}
