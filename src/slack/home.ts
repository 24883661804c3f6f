import type { HomeView } from '@slack/web-api';
import type { Logger } from 'pino';
import type { CommandContext } from '../commands/registry.js';
import type { Reply, ReplyItem, Tone } from '../core/reply.js';
import type { FleetView } from '../fleet/model.js';
import { currentStepFromStatus, isRollingSync, rolloutComplete, rolloutSteps } from '../fleet/rollingsync.js';
import { renderHomeView } from '../views/blocks.js';
import { runCommand } from './context.js';
import { link } from '../core/format.js';

const WORST_CLUSTERS = 5;
const MAX_ROLLOUTS = 15;

interface StatusCounts {
  apps: number;
  sync: Record<string, number>;
  health: Record<string, number>;
}
interface ClusterCounts extends StatusCounts {
  instance: string;
  cluster: string;
}

/** Apps on the cluster that need attention: not Synced, or Degraded/Missing/Unknown. */
function problemScore(c: ClusterCounts): number {
  const outOfSync = c.apps - (c.sync.Synced ?? 0);
  const unhealthy = (c.health.Degraded ?? 0) + (c.health.Missing ?? 0) + (c.health.Unknown ?? 0);
  return Math.max(outOfSync, unhealthy) + unhealthy * 0.001;
}

function countsText(counts: Record<string, number>): string {
  return Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ${n}`)
    .join(' · ');
}

/**
 * The fleet summary for the Home tab, from the `status` reply's JSON contract (issue 3 §3): totals and the
 * worst clusters. An error reply (e.g. a reader without access) is shown as it is.
 */
export function fleetSummaryReply(status: Reply): Reply {
  if (!status.ok) return status;
  const total = status.data.total as StatusCounts | undefined;
  const clusters = (status.data.clusters as ClusterCounts[] | undefined) ?? [];
  const multiInstance = new Set(clusters.map((c) => c.instance)).size > 1;
  const worst = clusters
    .map((c) => ({ c, score: problemScore(c) }))
    .filter((x) => x.score > 0)
    .sort((a, b) => b.score - a.score)
    .slice(0, WORST_CLUSTERS);
  const items: ReplyItem[] = worst.map(({ c }) => {
    const tone: Tone = (c.health.Degraded ?? 0) + (c.health.Missing ?? 0) > 0 ? 'error' : 'warn';
    const name = multiInstance ? `${c.instance}/${c.cluster}` : c.cluster;
    return { text: `*${name}* — ${c.apps} apps`, detail: `sync ${countsText(c.sync)}; health ${countsText(c.health)}`, tone };
  });
  const healthy = total ? (total.health.Healthy ?? 0) === total.apps && (total.sync.Synced ?? 0) === total.apps : false;
  return {
    ok: true,
    command: 'status',
    title: 'Fleet',
    data: status.data,
    blocks: [
      { kind: 'header', text: 'Fleet' },
      {
        kind: 'fields',
        fields: [
          { label: 'Apps', value: `${total?.apps ?? 0} on ${clusters.length} clusters` },
          { label: 'Sync', value: total ? countsText(total.sync) || '—' : '—' },
          { label: 'Health', value: total ? countsText(total.health) || '—' : '—' },
        ],
      },
      worst.length
        ? { kind: 'list', title: 'Worst clusters', items, total: worst.length }
        : { kind: 'text', text: healthy ? 'Every app is Synced and Healthy.' : 'No cluster has problem apps.', tone: 'ok' },
      { kind: 'actions', buttons: [{ label: 'Full status', command: 'status' }, { label: 'Diagnose rollouts', command: 'diagnose' }] },
    ],
  };
}

/** RollingSync appsets whose RolloutProgressing condition is True, with the step Argo CD reports. */
export function rolloutsReply(fleet: FleetView): Reply {
  const inFlight = fleet
    .appSets()
    .filter(({ appSet }) => isRollingSync(appSet) && !rolloutComplete(appSet) && currentStepFromStatus(appSet) !== null)
    .sort((a, b) => a.appSet.metadata.name.localeCompare(b.appSet.metadata.name) || a.instance.localeCompare(b.instance));
  const multiInstance = fleet.instances().length > 1;
  const shown = inFlight.slice(0, MAX_ROLLOUTS);
  const items: ReplyItem[] = shown.map(({ instance, appSet }) => {
    const step = currentStepFromStatus(appSet)!;
    const steps = rolloutSteps(appSet).length;
    const name = appSet.metadata.name;
    const url = fleet.appSetUrl(instance, name);
    const label = url ? link(name, url) : `*${name}*`;
    return { text: `${label}${multiInstance ? ` (${instance})` : ''} — step ${step} of ${steps}`, tone: 'progress' };
  });
  const buttons = shown.slice(0, 5).map(({ instance, appSet }) => ({
    label: `Rollout ${appSet.metadata.name}`,
    command: `rollout ${appSet.metadata.name}${multiInstance ? ` instance=${instance}` : ''}`,
  }));
  return {
    ok: true,
    command: 'rollout',
    title: 'Rollouts in flight',
    data: { rollouts: inFlight.map(({ instance, appSet }) => ({ appSet: appSet.metadata.name, instance, currentStep: currentStepFromStatus(appSet) })) },
    blocks: [
      { kind: 'header', text: 'Rollouts in flight' },
      inFlight.length
        ? { kind: 'list', items, total: inFlight.length }
        : { kind: 'text', text: 'No RollingSync rollout is in progress.', tone: 'info' },
      ...(buttons.length ? [{ kind: 'actions' as const, buttons }] : []),
    ],
  };
}

/** The Home tab: what on-call wants at a glance. Goes through `status` like any other surface. */
export async function buildHomeView(ctx: CommandContext, logger: Logger): Promise<HomeView> {
  const status = await runCommand('status', ctx, logger);
  const view = renderHomeView([fleetSummaryReply(status), rolloutsReply(ctx.services.fleet)]);
  view.blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: `Updated <!date^${Math.floor((ctx.services.now?.() ?? new Date()).getTime() / 1000)}^{date_short_pretty} {time}|now>. Type \`/argo help\` in a channel for every command.` }] });
  view.blocks = view.blocks.slice(0, 100);
  return view;
}
