import type { App } from '@slack/bolt';
import type { SlackDeps } from '../../context.js';
import { argoCommand } from './argo-command.js';

export function registerCommandListeners(app: App, deps: SlackDeps): void {
  app.command(deps.services.config.slack?.command ?? '/argo', argoCommand(deps));
}
