import { suggest } from '../core/suggest.js';
import { resolveResource } from '../domain/runbooks/index.js';
import { findApp } from './app.js';
import { CommandError } from './parse.js';
import type { CommandSpec } from './registry.js';
import { startRunbookAs } from './runbooks.js';

const USAGE = 'action APP KIND/NAME ACTION [namespace=X] [group=X] [instance=X] [PARAM=VALUE ...]';
/** Options that place the resource; any other option is one of the action's own parameters (scale's replicas=). */
const PLACING = ['instance', 'namespace', 'group'] as const;

/**
 * `action APP KIND/NAME ACTION`: the resource-action runbook, as `argocd app actions run`. The app and the
 * resource are resolved here from the mirror, so a typo gets its suggestions before any run exists; whether
 * Argo CD offers the action now is asked live by the runbook's preview.
 */
export const actionCommand: CommandSpec<'action'> = {
  name: 'action',
  summary: 'Run one Argo CD resource action (restart, create-job, …) on a resource of an app, previewed and confirmed',
  usage: USAGE,
  usesRuns: true,
  help: [
    'Examples:',
    '`action web-prod-1 Deployment/web restart` — a rolling restart, as `kubectl rollout restart` does',
    '`action reports-prod-1 CronJob/nightly create-job` — run the CronJob now, as `kubectl create job --from=cronjob/nightly`',
    '`action web-prod-1 Deployment/web scale replicas=3` — an action that takes parameters',
    '`actions APP KIND/NAME` lists what Argo CD offers now; the preview refuses an action it does not offer (or offers disabled). ' +
      'Sent once and audited; Argo CD checks `applications, action/GROUP/KIND/ACTION` on the app for rollcall’s account.',
  ].join('\n'),
  readOnly: false,
  async run(cmd, ctx) {
    const [app, resource, action, ...rest] = cmd.positional;
    if (rest.length)
      throw new CommandError(
        'usage',
        `\`action\` runs one action on one resource; got \`${rest.join(' ')}\` too. Usage: ${USAGE}.`,
      );
    if (!app || !resource || !action)
      throw new CommandError(
        'usage',
        `Which app, resource and action? Usage: ${USAGE}, e.g. \`action web-prod-1 Deployment/web restart\` (\`actions APP\` lists what Argo CD offers).`,
      );
    const slash = resource.indexOf('/');
    if (slash <= 0 || slash === resource.length - 1)
      throw new CommandError(
        'usage',
        `Name the resource as KIND/NAME, e.g. \`Deployment/${resource.replace(/^\/+|\/+$/g, '') || 'web'}\` (\`actions ${app}\` lists the app's resources with actions).`,
      );
    const params: Record<string, string> = {};
    for (const [key, value] of Object.entries(cmd.options)) {
      if ((PLACING as readonly string[]).includes(key)) continue;
      const near = suggest(key, PLACING);
      if (near.length || key === 'selector')
        throw new CommandError(
          'usage',
          `Unknown option \`${key}\` for \`action\`. Usage: ${USAGE}.`,
          near.map((n) => `${n}=…`),
        );
      params[key] = value;
    }
    const found = findApp(
      ctx.services.fleet,
      app,
      cmd.options.instance,
      (i) => `action ${app} ${resource} ${action} instance=${i}`,
    );
    const [kind, name] = [resource.slice(0, slash), resource.slice(slash + 1)];
    resolveResource(
      found,
      { kind, name, namespace: cmd.options.namespace, group: cmd.options.group },
      (r) => `action ${app} ${r} ${action}`,
    );
    const runParams: Record<string, string> = { app, instance: found.instance, kind, name, action };
    for (const key of ['namespace', 'group'] as const)
      if (cmd.options[key] !== undefined) runParams[key] = cmd.options[key];
    const paramText = Object.entries(params)
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    if (paramText) runParams.params = paramText;
    return startRunbookAs('resource-action', runParams, ctx, 'action');
  },
};
