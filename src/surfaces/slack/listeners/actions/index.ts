import type { App } from '@slack/bolt';
import { ACTION_IDS } from '../../../../views/blocks.js';
import type { SlackDeps } from '../../context.js';
import { commandButton } from './command-button.js';
import { linkButton } from './link-button.js';
import { namedActionButton } from './named-action-button.js';
import { pageButton } from './page-button.js';

// Buttons carry a `~n` suffix when the same action appears twice in one actions block.
const suffixed = (id: string) => new RegExp(`^${id.replace(/\./g, '\\.')}(~\\d+)?$`);

export function registerActionListeners(app: App, deps: SlackDeps): void {
  app.action(suffixed(ACTION_IDS.command), commandButton(deps));
  app.action(suffixed(ACTION_IDS.page), pageButton(deps));
  app.action(suffixed(ACTION_IDS.link), linkButton());
  // Everything else is a named action (run.confirm, run.approve ...) from the action registry.
  app.action(
    new RegExp(`^(?!(${ACTION_IDS.command}|${ACTION_IDS.page}|${ACTION_IDS.link})(~\\d+)?$).+`),
    namedActionButton(deps),
  );
}
