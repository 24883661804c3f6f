import type { ArgoApi, AppRef, PodLogsQuery } from '../infra/argocd/api.js';
import type { ResourceNode } from '../infra/argocd/types.js';
import { code, formatCount, plural } from '../core/format.js';
import type { ReplyBlock, ReplyButton } from '../core/reply.js';
import type { ReplyOf } from './replies.js';
import type { FleetApp } from '../fleet/model.js';
import { appRef, argoApiFor, namedApp, withinLiveBudget } from './app.js';
import { CommandError, booleanOption, checkOptions, checkPositional } from './parse.js';
import type { CommandContext, CommandSpec, ParsedCommand } from './registry.js';
import { suggest } from '../core/suggest.js';

const USAGE = 'logs APP [RESOURCE] [CONTAINER] [tail=N] [previous=true] [instance=X]';
/** Lines per pod by default, as a first look (kubectl shows all; a chat answer cannot). */
export const DEFAULT_TAIL = 50;
/** More than this is a job for a terminal with kubectl or `argocd app logs`. */
export const MAX_TAIL = 500;

const WORKLOAD_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job', 'CronJob', 'Rollout']);

function parseTail(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_TAIL;
  if (!/^\d{1,6}$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_TAIL) {
    throw new CommandError('usage', `tail= takes a number of lines per pod from 1 to ${MAX_TAIL}; got \`${raw}\`.`);
  }
  return Number(raw);
}

const nodeName = (n: ResourceNode) => `${n.kind}/${n.name}`;

/**
 * The query for the resource the user named, read against the app's live tree: `kind/name` of any
 * resource (its pods, as PodLogs selects them), or a pod's name, or a resource's bare name when only
 * one resource has it. Anything else is an unknown_target with the closest names of the tree.
 */
function resourceQuery(
  app: string,
  word: string,
  nodes: ResourceNode[],
): Pick<PodLogsQuery, 'podName' | 'kind' | 'group' | 'resourceName' | 'namespace'> {
  const slash = word.indexOf('/');
  let matches: ResourceNode[];
  if (slash > 0) {
    const kind = word.slice(0, slash).toLowerCase();
    const name = word.slice(slash + 1);
    matches = nodes.filter(
      (n) => n.name === name && (n.kind.toLowerCase() === kind || `${n.kind}.${n.group ?? ''}`.toLowerCase() === kind),
    );
  } else {
    const pod = nodes.find((n) => n.kind === 'Pod' && n.name === word);
    if (pod) return { podName: pod.name, namespace: pod.namespace };
    matches = nodes.filter((n) => n.name === word);
  }
  // A bare name often names a Deployment, its Service and its ConfigMap alike: only a workload has pods.
  if (matches.length > 1 && matches.filter((n) => WORKLOAD_KINDS.has(n.kind)).length === 1)
    matches = matches.filter((n) => WORKLOAD_KINDS.has(n.kind));
  if (matches.length === 1) {
    const n = matches[0];
    return { kind: n.kind, group: n.group ?? '', resourceName: n.name, namespace: n.namespace };
  }
  if (matches.length > 1) {
    throw new CommandError(
      'ambiguous_target',
      `\`${word}\` names ${matches.length} resources of ${app}: ${matches.map((n) => code(nodeName(n))).join(', ')}. Name one as KIND/NAME.`,
      matches.map((n) => `logs ${app} ${nodeName(n)}`),
    );
  }
  const candidates = nodes.filter((n) => n.kind === 'Pod' || WORKLOAD_KINDS.has(n.kind));
  const names = [...candidates.map(nodeName), ...candidates.filter((n) => n.kind === 'Pod').map((n) => n.name)];
  const close = suggest(word, names, 3);
  const listed = candidates
    .filter((n) => n.kind !== 'ReplicaSet')
    .slice(0, 8)
    .map((n) => code(nodeName(n)));
  throw new CommandError(
    'unknown_target',
    `${app} has no pod or resource \`${word}\`.${listed.length ? ` Its workloads and pods: ${listed.join(', ')}${candidates.length > 8 ? ', …' : ''}.` : ' It has no pods.'}`,
    close.map((n) => `logs ${app} ${n}`),
  );
}

/**
 * The container names the app's workloads declare, read from git's manifests and the live ones: the
 * pod tree does not name containers, and a mistyped one is only refused by Kubernetes, per pod.
 */
async function declaredContainers(api: ArgoApi, ref: AppRef): Promise<string[]> {
  const managed = await api.managedResources(ref);
  const names = new Set<string>();
  for (const item of managed.items ?? []) {
    if (!WORKLOAD_KINDS.has(item.kind)) continue;
    for (const state of [item.targetState, item.normalizedLiveState ?? item.liveState]) {
      if (!state || state === 'null') continue;
      try {
        const obj = JSON.parse(state) as {
          spec?: { template?: { spec?: PodSpec }; jobTemplate?: { spec?: { template?: { spec?: PodSpec } } } };
        };
        const pod = obj.spec?.template?.spec ?? obj.spec?.jobTemplate?.spec?.template?.spec;
        for (const c of [...(pod?.containers ?? []), ...(pod?.initContainers ?? [])]) if (c.name) names.add(c.name);
      } catch {
        // An unreadable manifest names no container.
      }
    }
  }
  return [...names];
}

interface PodSpec {
  containers?: { name?: string }[];
  initContainers?: { name?: string }[];
}

export async function runLogs(cmd: ParsedCommand, ctx: CommandContext): Promise<ReplyOf<'logs'>> {
  checkOptions(cmd, ['instance', 'tail', 'previous'], USAGE);
  checkPositional(cmd, 3, USAGE);
  const [name, resource, container] = cmd.positional;
  const fleet = ctx.services.fleet;
  const found: FleetApp = namedApp(
    cmd,
    ctx,
    'logs',
    USAGE,
    '`logs checkout-prod-eu` or `logs checkout-prod-eu deployment/checkout tail=100`',
  );
  const tail = parseTail(cmd.options.tail);
  const previous = booleanOption(cmd, 'previous', "the container's previous run, what crashed");
  const api = argoApiFor(ctx, found, 'logs');
  const ref = appRef(found);
  const tree = await withinLiveBudget(found.instance, () => api.resourceTree(ref));
  const nodes = tree.nodes ?? [];
  const pods = nodes.filter((n) => n.kind === 'Pod' && !n.group);
  if (!pods.length) {
    const workloads = nodes.filter((n) => WORKLOAD_KINDS.has(n.kind)).map((n) => code(nodeName(n)));
    throw new CommandError(
      'unknown_target',
      `${name} has no pods in its live resource tree, so there are no logs to read.${workloads.length ? ` Its workloads: ${workloads.join(', ')}.` : ''} \`app ${name}\` shows its resources and health.`,
      [`app ${name}`],
    );
  }
  const selection = resource ? resourceQuery(name, resource, nodes) : {};
  const entries = await withinLiveBudget(found.instance, () =>
    api.podLogs(ref, { ...selection, container, tailLines: tail, previous, follow: false }),
  );

  // Kubernetes' refusals (a container the pod does not run, no previous run) arrive as entries without a pod.
  const refusals = [...new Set(entries.filter((e) => !e.podName).map((e) => e.content ?? ''))].filter(Boolean);
  const lines = entries.filter((e) => e.podName);
  if (!lines.length && refusals.length) {
    const invalidContainer =
      container !== undefined && refusals.some((r) => r.startsWith(`container ${container} is not valid`));
    if (invalidContainer) {
      const known = await withinLiveBudget(found.instance, () => declaredContainers(api, ref)).catch(
        () => [] as string[],
      );
      const where = resource ? `${name} ${resource}` : name;
      throw new CommandError(
        'unknown_target',
        `The pods of ${where} run no container \`${container}\`.${known.length ? ` Its containers: ${known.map(code).join(', ')}.` : ''}`,
        (known.length ? suggest(container, known, 3).concat(known.length <= 3 ? known : []) : [])
          .filter((c, i, all) => all.indexOf(c) === i)
          .slice(0, 3)
          .map((c) => `logs ${where} ${c}`),
      );
    }
    throw new CommandError('unknown_target', `Kubernetes refused the logs of ${name}: ${refusals.join('; ')}.`);
  }

  const podsShown = [...new Set(lines.map((e) => e.podName!))];
  const multiInstance = fleet.instances().length > 1;
  const what = [resource, container].filter(Boolean).join(' ');
  const title = `Logs of ${name}${what ? ` ${what}` : ''}${multiInstance ? ` (${found.instance})` : ''}`;
  const blocks: ReplyBlock[] = [{ kind: 'header', text: title }];
  if (!lines.length) {
    blocks.push({
      kind: 'text',
      text: `No log lines${previous ? ' from the previous run' : ''}: ${resource ? `the pods of \`${resource}\`` : 'the pods'} wrote nothing${previous ? '' : ' yet'}.`,
      tone: 'info',
    });
  } else {
    const prefix = podsShown.length > 1;
    const text = lines.map((e) => `${prefix ? `${e.podName} ` : ''}${e.content ?? ''}`).join('\n');
    blocks.push({
      kind: 'context',
      text: `${formatCount(lines.length)} line${lines.length === 1 ? '' : 's'} from ${plural(podsShown.length, 'pod')}${podsShown.length === 1 ? ` ${code(podsShown[0])}` : ''}, the last ${tail} per pod${previous ? ', previous run' : ''}; oldest first.`,
    });
    blocks.push({ kind: 'code', text, keep: 'tail' });
  }
  if (refusals.length)
    blocks.push({ kind: 'context', text: `:warning: Some pods could not be read: ${refusals.join('; ')}` });
  const suffix = fleet.appsNamed(name).length > 1 ? ` instance=${found.instance}` : '';
  const buttons: ReplyButton[] = [{ label: 'App', command: `app ${name}${suffix}` }];
  // Only a container that restarted has a previous run; Kubernetes refuses the others.
  const restarted = pods.some(
    (p) =>
      podsShown.includes(p.name) &&
      (p.health?.status === 'Degraded' ||
        (p.info ?? []).some((i) => i.name === 'Restart Count' && Number(i.value) > 0)),
  );
  if (!previous && restarted)
    buttons.push({
      label: 'Previous run',
      command: `logs ${name}${resource ? ` ${resource}` : ''}${container ? ` ${container}` : ''} tail=${tail} previous=true${suffix}`,
    });
  blocks.push({ kind: 'actions', buttons });
  return {
    ok: true,
    command: 'logs',
    title,
    data: {
      app: name,
      instance: found.instance,
      tail,
      previous,
      pods: podsShown,
      lines: lines.map((e) => ({
        pod: e.podName,
        at: e.timeStampStr ?? e.timeStamp ?? null,
        content: e.content ?? '',
      })),
    },
    blocks,
  };
}

export const logsCommand: CommandSpec<'logs'> = {
  name: 'logs',
  aliases: ['log'],
  summary: "Container logs of an app's pods, the last lines of each (argocd app logs)",
  usage: USAGE,
  help: [
    'Examples:',
    '`logs checkout-prod-eu` — every pod of the app, last 50 lines each',
    '`logs checkout-prod-eu deployment/checkout tail=200` — the pods of one workload',
    '`logs checkout-prod-eu checkout-7d9f8-abcde checkout` — one pod, one container',
    '`logs checkout-prod-eu previous=true` — the run before the last restart: why a crash-looping container died',
    `RESOURCE is KIND/NAME or a pod name; tail= is per pod, at most ${MAX_TAIL}.`,
  ].join('\n'),
  readOnly: true,
  run: runLogs,
};
