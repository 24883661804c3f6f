import type { App } from '@slack/bolt';
import type { SlackDeps } from '../context.js';
import { registerActionListeners } from './actions/index.js';
import { registerCommandListeners } from './commands/index.js';
import { registerEventListeners } from './events/index.js';
import { registerShortcutListeners } from './shortcuts/index.js';
import { registerViewListeners } from './views/index.js';

export function registerListeners(app: App, deps: SlackDeps): void {
  registerCommandListeners(app, deps);
  registerActionListeners(app, deps);
  registerViewListeners(app, deps);
  registerEventListeners(app, deps);
  registerShortcutListeners(app, deps);
}
