import { RollcallError } from '../core/errors.js';
import { TONE_EMOJI, code, countsLine, formatCount, plural, since } from '../core/format.js';
import type { ReplyBlock, ReplyButton, ReplyItem } from '../core/reply.js';
import { shortReason } from '../fleet/groups.js';
import type { FleetView } from '../fleet/model.js';
import { isRollingSync } from '../fleet/rollingsync.js';
import { CommandError, SELECTOR_OPTIONS, checkOptions } from './parse.js';
import type { CommandContext, CommandSpec, ParsedCommand } from './registry.js';
import type { ReplyOf, RolloutGroup } from './replies.js';
import type { RolloutRow, UnreadRollout } from './reply-data.js';
import { PHASE_TONE, readRollouts, rolloutState, rolloutTargets } from './rollout-reads.js';
import { resolveSelection, selectedApps } from './status.js';

const USAGE = 'rollouts [NAME|GLOB|CLUSTER|APPSET ...] [-l selector] [cluster=X] [project=X] [appset=X] [instance=X]';
const GROUPS_SHOWN = 20;
const PHASE_ORDER = ['Degraded', 'Progressing', 'Paused', 'Healthy'];

/**
 * The Argo Rollouts of the selected apps across instances and clusters: canary step and weight, pauses, aborts,
 * blue-green previews waiting for promotion. Rollouts in the same state on several clusters (same Rollout,
 * revision and images, same phase, step, weight and reason) are one line with their cluster count, as `status`
 * groups problems.
 */
export async function runRollouts(cmd: ParsedCommand, ctx: CommandContext): Promise<ReplyOf<'rollouts'>> {
  checkOptions(cmd, SELECTOR_OPTIONS, USAGE);
  const fleet = ctx.services.fleet;
  const now = ctx.services.now?.() ?? new Date();
  const { sel, scope } = resolveSelection(fleet, cmd);
  const apps = selectedApps(fleet, sel, scope);
  const targets = rolloutTargets(apps);
  const where = scope.join(', ') || 'the fleet';
  if (!targets.length) {
    pointToRollingSync(fleet, sel.appSet);
    return noRolloutsReply(apps.length, where);
  }
  const { rows, unread } = await readRollouts(ctx, targets);
  if (!rows.length) {
    const reasons = [...new Set(unread.map((u) => u.error))].slice(0, 3).join('; ');
    throw new RollcallError(
      'argocd_unavailable',
      `Could not read any of the ${plural(unread.length, 'Rollout')} of ${where} from Argo CD (${reasons}).`,
      { data: { unread } },
    );
  }
  const groups = groupRollouts(rows, unread);
  const multiInstance = fleet.instances().length > 1;
  const blocks: ReplyBlock[] = [
    { kind: 'header', text: `Argo Rollouts: ${where}` },
    {
      kind: 'fields',
      fields: [
        {
          label: 'Rollouts',
          value: `${formatCount(rows.length)} on ${plural(new Set(rows.map((r) => `${r.instance}/${r.cluster}`)).size, 'cluster')}`,
        },
        {
          label: 'Phase',
          value: countsLine(
            countBy(rows, (r) => r.phase),
            PHASE_ORDER,
          ),
        },
      ],
    },
    {
      kind: 'list',
      title: 'By Rollout and state, worst first',
      items: groups.slice(0, GROUPS_SHOWN).map((g) => groupItem(g, now, multiInstance)),
      total: groups.length,
    },
  ];
  if (unread.length) blocks.push({ kind: 'context', text: `:warning: ${unreadNote(unread, rows.length)}` });
  const worst = rows.find((r) => r.app === groups[0].apps[0]);
  blocks.push({
    kind: 'context',
    text: `One app's Rollouts: ${code(`app ${groups[0].apps[0]}`)} · what Argo CD offers to run on one: ${code(`actions ${groups[0].apps[0]}`)}`,
  });
  blocks.push({ kind: 'actions', buttons: buttons(worst, groups[0].apps[0]) });
  return {
    ok: true,
    command: 'rollouts',
    title: `Argo Rollouts: ${rows.length} on ${where}${unread.length ? `, ${unread.length} unread` : ''}`,
    data: { rollouts: rows, groups, unread },
    blocks,
  };
}

/** A RollingSync ApplicationSet whose apps have no Rollout is what `rollout` follows: say so instead of "none". */
function pointToRollingSync(fleet: FleetView, appSet: string | undefined): void {
  if (!appSet || !fleet.appSetsNamed(appSet).some((s) => isRollingSync(s.appSet))) return;
  throw new CommandError(
    'unknown_target',
    `\`${appSet}\` is a RollingSync ApplicationSet and none of its apps has an Argo Rollouts Rollout: \`rollout ${appSet}\` shows its steps.`,
    [`rollout ${appSet}`],
  );
}

function noRolloutsReply(apps: number, where: string): ReplyOf<'rollouts'> {
  const text = `${TONE_EMOJI.info} None of the ${plural(apps, 'app')} of ${where} deploys an Argo Rollouts Rollout.`;
  return {
    ok: true,
    command: 'rollouts',
    title: `Argo Rollouts: none on ${where}`,
    data: { rollouts: [], groups: [], unread: [] },
    blocks: [
      { kind: 'header', text: `Argo Rollouts: ${where}` },
      { kind: 'text', text, tone: 'info' },
    ],
  };
}

function countBy<T>(items: readonly T[], key: (t: T) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const t of items) out[key(t)] = (out[key(t)] ?? 0) + 1;
  return out;
}

/** Rows alike but for their cluster, with the clusters their Rollout exists on in the selection as denominator. */
export function groupRollouts(rows: readonly RolloutRow[], unread: readonly UnreadRollout[]): RolloutGroup[] {
  const clustersOf = new Map<string, Set<string>>();
  for (const r of [...rows, ...unread]) {
    const k = `${r.instance}\u0000${r.name}`;
    if (!clustersOf.has(k)) clustersOf.set(k, new Set());
    clustersOf.get(k)!.add(r.cluster);
  }
  const groups = new Map<string, RolloutGroup>();
  for (const r of rows) {
    const state = rolloutState({ ...r, message: r.message && shortReason(r.message) });
    const key = [r.instance, r.namespace, r.name, r.revision, r.images.join(','), state].join('\u0000');
    let g = groups.get(key);
    if (!g) {
      g = {
        instance: r.instance,
        namespace: r.namespace,
        name: r.name,
        state,
        phase: r.phase,
        revision: r.revision,
        images: r.images,
        clusters: [],
        apps: [],
        clustersOfRollout: clustersOf.get(`${r.instance}\u0000${r.name}`)!.size,
        since: r.since,
      };
      groups.set(key, g);
    }
    g.clusters.push(r.cluster);
    g.apps.push(r.app);
    if (r.since && (!g.since || r.since < g.since)) g.since = r.since;
  }
  const rank = (phase: string) => (PHASE_ORDER.includes(phase) ? PHASE_ORDER.indexOf(phase) : 0);
  return [...groups.values()].sort(
    (a, b) =>
      rank(a.phase) - rank(b.phase) ||
      a.name.localeCompare(b.name) ||
      b.clusters.length - a.clusters.length ||
      a.instance.localeCompare(b.instance),
  );
}

/** "*storefront* · canary · Paused at step 1/4 · 20% of traffic · CanaryPauseStep · on 9/12 clusters · for 38m" */
function groupItem(g: RolloutGroup, now: Date, multiInstance: boolean): ReplyItem {
  const where = (c: string) => (multiInstance ? `${g.instance}/${c}` : c);
  const on =
    g.clusters.length === 1 && g.clustersOfRollout === 1
      ? where(g.clusters[0])
      : g.clusters.length === 1
        ? `${where(g.clusters[0])} (1/${plural(g.clustersOfRollout, 'cluster')})`
        : `${formatCount(g.clusters.length)}/${plural(g.clustersOfRollout, 'cluster')}`;
  const age = since(g.since, now);
  return {
    text: `*${g.name}* · ${g.state} · on ${on}${age ? ` · for ${age}` : ''}`,
    tone: PHASE_TONE[g.phase] ?? 'unknown',
    detail: [g.revision ? `revision ${g.revision}` : '', g.images.map(code).join(', ')].filter(Boolean).join(' · '),
  };
}

function unreadNote(unread: readonly UnreadRollout[], read: number): string {
  const shown = unread
    .slice(0, 3)
    .map((u) => `${u.app} (${u.error})`)
    .join('; ');
  return `${plural(unread.length, 'Rollout')} of ${formatCount(unread.length + read)} could not be read live from Argo CD, so they are not counted above: ${shown}${unread.length > 3 ? ` and ${unread.length - 3} more` : ''}.`;
}

function buttons(worst: RolloutRow | undefined, app: string): ReplyButton[] {
  const out: ReplyButton[] = [{ label: `App ${app}`, command: `app ${app}` }];
  if (worst) out.push({ label: `Actions on ${worst.name}`, command: `actions ${app}` });
  return out;
}

export const rolloutsCommand: CommandSpec<'rollouts'> = {
  name: 'rollouts',
  summary:
    'Argo Rollouts of the selected apps: canary step and weight, pauses, aborts, blue-green waiting for promotion',
  usage: USAGE,
  help: [
    'Examples:',
    '`rollouts` — every Argo Rollouts Rollout in the fleet',
    '`rollouts storefront` — the apps of an ApplicationSet (or `storefront-*`, `cluster=prod-eu-west-1`, `-l team=commerce`)',
    'Rollouts in the same state on several clusters are one line: "storefront · canary · Paused at step 1/4 · 20% of traffic · CanaryPauseStep · on 9/12 clusters".',
    'Steps count from 0 as Argo Rollouts does (`kubectl argo rollouts get` shows "Step: 1/4"). Each Rollout is read live from Argo CD;',
    'those that cannot be read are named, never left out silently. RollingSync progress of an ApplicationSet is `rollout APPSET`.',
  ].join('\n'),
  readOnly: true,
  run: runRollouts,
};
