import { TONE_EMOJI, code } from '../core/format.js';
import type { ReplyBlock } from '../core/reply.js';
import { ROLLOUT_GROUP, ROLLOUT_KIND } from '../fleet/argo-rollouts.js';
import type { FleetApp } from '../fleet/model.js';
import type { ResourceRef, ResourceStatus } from '../infra/argocd/types.js';
import { namedApp } from './app.js';
import { appRef, argoApiFor, withinLiveBudget } from './live.js';
import { CommandError, checkOptions, checkPositional } from './parse.js';
import type { CommandContext, CommandSpec, ParsedCommand } from './registry.js';
import type { ActionsData, ReplyOf } from './replies.js';

const USAGE = 'actions APP [KIND/NAME] [instance=X]';
const WORKLOADS = ['Rollout', 'Deployment', 'StatefulSet', 'DaemonSet', 'CronJob', 'Job'];

const refOf = (r: ResourceStatus, fa: FleetApp): ResourceRef => ({
  ...(r.group ? { group: r.group } : {}),
  version: r.version,
  kind: r.kind,
  namespace: r.namespace ?? fa.app.spec?.destination?.namespace,
  name: r.name,
});

const label = (r: Pick<ResourceStatus, 'kind' | 'name'>) => `${r.kind}/${r.name}`;

/**
 * The resource `actions` asks about: KIND/NAME among the app's resources (kind in any case), else its one
 * Rollout. The app's workloads are offered when that does not name one.
 */
function targetResource(fa: FleetApp, word: string | undefined): ResourceRef {
  const name = fa.app.metadata.name;
  const resources = fa.app.status?.resources ?? [];
  const offer = (list: ResourceStatus[]) =>
    [...list]
      .sort((a, b) => WORKLOADS.indexOf(b.kind) - WORKLOADS.indexOf(a.kind))
      .slice(0, 5)
      .map((r) => `actions ${name} ${label(r)}`);
  if (!word) {
    const rollouts = resources.filter((r) => r.kind === ROLLOUT_KIND && r.group === ROLLOUT_GROUP);
    if (rollouts.length === 1) return refOf(rollouts[0], fa);
    const workloads = resources.filter((r) => WORKLOADS.includes(r.kind));
    throw new CommandError(
      'usage',
      rollouts.length
        ? `\`${name}\` has ${rollouts.length} Rollouts: name one, e.g. \`actions ${name} ${label(rollouts[0])}\`.`
        : `\`${name}\` has no Argo Rollouts Rollout: name the resource, e.g. \`actions ${name} ${label(workloads[0] ?? resources[0] ?? { kind: 'Deployment', name })}\`.`,
      offer(rollouts.length ? rollouts : workloads),
    );
  }
  const [kind, resourceName] = word.includes('/') ? word.split('/', 2) : [undefined, word];
  const matches = resources.filter(
    (r) => r.name === resourceName && (!kind || r.kind.toLowerCase() === kind.toLowerCase()),
  );
  if (matches.length === 1) return refOf(matches[0], fa);
  if (matches.length > 1)
    throw new CommandError(
      'ambiguous_target',
      `\`${name}\` has ${matches.length} resources named \`${resourceName}\`: say which kind, e.g. \`actions ${name} ${label(matches[0])}\`.`,
      matches.map((r) => `actions ${name} ${label(r)}`),
    );
  throw new CommandError(
    'unknown_target',
    `\`${name}\` has no resource \`${word}\` (Argo CD lists ${resources.length} for it).`,
    offer(resources),
  );
}

export async function runActions(cmd: ParsedCommand, ctx: CommandContext): Promise<ReplyOf<'actions'>> {
  checkOptions(cmd, ['instance'], USAGE);
  checkPositional(cmd, 2, USAGE);
  const fa = namedApp(cmd, ctx, 'actions', USAGE, '`actions storefront-prod-eu-west-1`');
  const resource = targetResource(fa, cmd.positional[1]);
  const api = argoApiFor(ctx, fa, 'actions');
  const offered = await withinLiveBudget(fa.instance, () => api.listResourceActions(appRef(fa), resource));
  // Argo CD serves them in Go map order: enabled first, then by name, reads the same every time.
  const actions = offered
    .map((a) => ({
      name: a.name,
      disabled: a.disabled === true,
      displayName: a.displayName || null,
      params: (a.params ?? []).map((p) => p.name),
    }))
    .sort((a, b) => Number(a.disabled) - Number(b.disabled) || a.name.localeCompare(b.name));
  const what = `${resource.kind}/${resource.name}`;
  const data: ActionsData = {
    app: fa.app.metadata.name,
    instance: fa.instance,
    cluster: fa.cluster,
    resource,
    actions,
  };
  const blocks: ReplyBlock[] = [{ kind: 'header', text: `Actions on ${what} (${fa.app.metadata.name})` }];
  if (!actions.length)
    blocks.push({
      kind: 'text',
      text: `${TONE_EMOJI.info} Argo CD offers no action for a ${resource.kind}: it has no action script for the kind.`,
      tone: 'info',
    });
  else
    blocks.push({
      kind: 'list',
      items: actions.map((a) => ({
        text: `${code(a.name)}${a.displayName ? ` (${a.displayName})` : ''}${a.params.length ? ` · takes ${a.params.join(', ')}` : ''}${a.disabled ? ' · disabled now' : ''}`,
        ...(a.disabled ? {} : { tone: 'ok' as const }),
      })),
    });
  blocks.push({
    kind: 'context',
    text:
      `What Argo CD offers for ${what} as it is now on ${fa.cluster} (its discovery script reads the live object, so this changes ` +
      `with the ${resource.kind}'s state). Running one needs \`applications, action/${resource.group ?? ''}/${resource.kind}/<action>\` on the app.`,
  });
  return {
    ok: true,
    command: 'actions',
    title: `Actions on ${what} of ${fa.app.metadata.name}: ${actions.filter((a) => !a.disabled).length} of ${actions.length} enabled`,
    data,
    blocks,
  };
}

export const actionsCommand: CommandSpec<'actions'> = {
  name: 'actions',
  summary: 'The resource actions Argo CD offers now on an app’s Rollout (or another resource), enabled or disabled',
  usage: USAGE,
  help: [
    'Examples:',
    '`actions storefront-prod-eu-west-1` — the app’s Rollout: resume, abort, retry, promote-full, skip-current-step, pause, restart',
    '`actions web-prod-1 Deployment/web` — any resource of the app that has actions (Deployment: restart, pause, resume, scale)',
    'Argo CD decides from the live object which are enabled (a Rollout that is not paused has nothing to resume). Read-only: `action APP KIND/NAME ACTION` runs one.',
  ].join('\n'),
  readOnly: true,
  run: runActions,
};
