import { findApp } from './app.js';
import { startRunbookAs } from './runbooks.js';
import { CommandError, checkOptions, checkPositional } from './parse.js';
import type { CommandSpec } from './registry.js';

const USAGE = 'rollback APP [ID] [instance=X] [prune=true] [dryRun=true]';

/**
 * `rollback APP [ID]`: the rollback runbook, as `argocd app rollback APP [ID]` (no ID: the previous
 * deployment). The app is resolved here, so a typo gets the names `app` would suggest before any run exists.
 */
export const rollbackCommand: CommandSpec<'rollback'> = {
  name: 'rollback',
  summary: 'Roll an app back to a deployment in its history (argocd app rollback), previewed and confirmed',
  usage: USAGE,
  usesRuns: true,
  help: [
    'Examples:',
    '`rollback checkout-prod-eu 41` — back to history entry 41 (`history checkout-prod-eu` lists the ids)',
    '`rollback checkout-prod-eu` — back to the previous deployment',
    "The preview shows what is deployed now and what it goes back to. Argo CD refuses while the app's auto-sync is on: `pause APP` turns it off (and `resume APP` restores it). Afterwards the app is OutOfSync with git until someone syncs it.",
  ].join('\n'),
  readOnly: false,
  async run(cmd, ctx) {
    checkOptions(cmd, ['instance', 'prune', 'dryRun'], USAGE);
    checkPositional(cmd, 2, USAGE);
    const [name, id] = cmd.positional;
    if (!name)
      throw new CommandError('usage', `Roll back which app? Usage: ${USAGE}, e.g. \`rollback checkout-prod-eu 41\`.`);
    if (id !== undefined && !/^\d{1,15}$/.test(id)) {
      throw new CommandError(
        'usage',
        `The history id is a number, as \`history ${name}\` lists them; got \`${id}\`. Usage: ${USAGE}.`,
      );
    }
    const found = findApp(
      ctx.services.fleet,
      name,
      cmd.options.instance,
      (i) => `rollback ${name}${id !== undefined ? ` ${id}` : ''} instance=${i}`,
    );
    const params: Record<string, string> = { app: name, instance: found.instance };
    if (id !== undefined) params.id = id;
    for (const k of ['prune', 'dryRun'] as const) if (cmd.options[k] !== undefined) params[k] = cmd.options[k];
    return startRunbookAs('rollback', params, ctx, 'rollback');
  },
};
