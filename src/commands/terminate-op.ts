import { formatSelectorParam } from '../domain/runbooks/index.js';
import { startRunbookAs } from './runbooks.js';
import { CommandError, SELECTOR_OPTIONS, checkOptions, selectorFromCommand } from './parse.js';
import type { CommandSpec } from './registry.js';
import { assertSelects } from './runbooks.js';

const USAGE = 'terminate-op <app|glob ...> [-l selector] [cluster=X] [project=X] [appset=X] [instance=X]';

/** `terminate-op APP|SELECTOR`: the terminate-op runbook, as `argocd app terminate-op APP` for one app or many. */
export const terminateOpCommand: CommandSpec<'terminate-op'> = {
  name: 'terminate-op',
  summary: 'Terminate the running sync of apps (argocd app terminate-op), previewed and confirmed',
  usage: USAGE,
  usesRuns: true,
  help: [
    'Examples:',
    '`terminate-op checkout-prod-eu`',
    '`terminate-op auth-config-* cluster=prod-eu1`',
    'The preview lists each running operation (phase, since when, by whom). Argo CD stops the sync where it is and ends it Failed "Operation terminated"; what was applied stays applied.',
  ].join('\n'),
  readOnly: false,
  async run(cmd, ctx) {
    checkOptions(cmd, SELECTOR_OPTIONS, USAGE);
    const selector = formatSelectorParam(selectorFromCommand(cmd));
    if (!selector)
      throw new CommandError(
        'usage',
        `Terminate the operation of which apps? Usage: ${USAGE}, e.g. \`terminate-op checkout-prod-eu\`.`,
      );
    assertSelects(cmd, ctx, 'terminate');
    return startRunbookAs('terminate-op', { selector }, ctx, 'terminate-op');
  },
};
