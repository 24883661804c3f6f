import type { App } from '@slack/bolt';
import type { SlackDeps } from '../../context.js';
import { appHomeOpened } from './app-home-opened.js';

export function registerEventListeners(app: App, deps: SlackDeps): void {
  app.event('app_home_opened', appHomeOpened(deps));
}
