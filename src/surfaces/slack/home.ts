import type { HomeView } from '@slack/web-api';
import type { Logger } from 'pino';
import type { CommandContext } from '../../commands/registry.js';
import type { Reply, ReplyItem, Tone } from '../../core/reply.js';
import { renderHomeView } from '../../views/blocks.js';
import { downCount } from '../../fleet/status.js';
import { rolloutsInFlightReply } from '../../commands/rollouts.js';
import { runCommand } from './context.js';

const WORST_CLUSTERS = 5;

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
  const unhealthy = downCount(c.health) + (c.health.Unknown ?? 0);
  return Math.max(outOfSync, unhealthy) + unhealthy * 0.001;
}

function countsText(counts: Record<string, number>): string {
  return Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ${n}`)
    .join(' · ');
}

/**
 * The fleet summary for the Home tab, from the `status` reply's data (its `--json` contract): totals and the
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
    const tone: Tone = downCount(c.health) > 0 ? 'error' : 'warn';
    const name = multiInstance ? `${c.instance}/${c.cluster}` : c.cluster;
    return {
      text: `*${name}* — ${c.apps} apps`,
      detail: `sync ${countsText(c.sync)}; health ${countsText(c.health)}`,
      tone,
    };
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
        : {
            kind: 'text',
            text: healthy ? 'Every app is Synced and Healthy.' : 'No cluster has problem apps.',
            tone: 'ok',
          },
      {
        kind: 'actions',
        buttons: [
          { label: 'Full status', command: 'status' },
          { label: 'Diagnose rollouts', command: 'diagnose' },
        ],
      },
    ],
  };
}

/** The Home tab: what on-call wants at a glance, from the `status` command and the rollouts in flight. */
export async function buildHomeView(ctx: CommandContext, logger: Logger): Promise<HomeView> {
  const status = await runCommand('status', ctx, logger);
  const view = renderHomeView([fleetSummaryReply(status), rolloutsInFlightReply(ctx)]);
  view.blocks.push({
    type: 'context',
    elements: [
      {
        type: 'mrkdwn',
        text: `Updated <!date^${Math.floor((ctx.services.now?.() ?? new Date()).getTime() / 1000)}^{date_short_pretty} {time}|now>. Type \`/argo help\` in a channel for every command.`,
      },
    ],
  });
  view.blocks = view.blocks.slice(0, 100);
  return view;
}
