import type { Cluster } from '../infra/argocd/types.js';
import { normalizeServer } from '../infra/argocd/objects.js';
import { TONE_EMOJI, byText, formatCount, oneLine, plural, truncate } from '../core/format.js';
import { checkOptions, checkPositional } from './parse.js';
import { type CommandContext, type ParsedCommand, type CommandSpec } from './registry.js';
import type { ReplyBlock, ReplyItem, Tone } from '../core/reply.js';
import type { ReplyOf } from './replies.js';
import { healthOf, isProblem, syncOf } from '../fleet/status.js';
import { unknownTarget } from './suggest.js';
import type { ClusterRow } from './reply-data.js';
export type { ClusterRow } from './reply-data.js';

const USAGE = 'clusters [instance=X]';
const MAX_SHOWN = 40;

function connectionOf(c: Cluster): { status: string; message: string | null } {
  // Argo CD moved connectionState under info; older servers (and some fixtures) keep it top-level.
  const state = c.info?.connectionState ?? c.connectionState;
  return { status: state?.status || 'Unknown', message: state?.message ? oneLine(state.message) : null };
}

export async function runClusters(cmd: ParsedCommand, ctx: CommandContext): Promise<ReplyOf<'clusters'>> {
  checkOptions(cmd, ['instance'], USAGE);
  checkPositional(cmd, 0, USAGE);
  const fleet = ctx.services.fleet;
  const instance = cmd.options.instance;
  if (instance && !fleet.instances().includes(instance)) throw unknownTarget(fleet, instance, 'instance');

  const rows = new Map<string, ClusterRow>();
  for (const { instance: i, cluster: c } of fleet.clusters()) {
    if (instance && i !== instance) continue;
    const name = c.name || c.server;
    const conn = connectionOf(c);
    rows.set(`${i}\u0000${name}`, {
      instance: i,
      name,
      server: c.server ? normalizeServer(c.server) : null,
      connection: conn.status,
      message: conn.message,
      serverVersion: c.info?.serverVersion || c.serverVersion || null,
      apps: 0,
      problems: 0,
    });
  }
  for (const a of fleet.apps()) {
    if (instance && a.instance !== instance) continue;
    const key = `${a.instance}\u0000${a.cluster}`;
    let row = rows.get(key);
    if (!row) {
      // The app's destination is no cluster Argo CD knows: its sync would fail, so show it.
      row = {
        instance: a.instance,
        name: a.cluster,
        server: a.app.spec?.destination?.server ?? null,
        connection: 'NotRegistered',
        message: 'no cluster with this name or server in Argo CD',
        serverVersion: null,
        apps: 0,
        problems: 0,
      };
      rows.set(key, row);
    }
    row.apps++;
    if (isProblem(syncOf(a.app), healthOf(a.app))) row.problems++;
  }
  const clusters = [...rows.values()].sort((a, b) => byText(a.instance, b.instance) || byText(a.name, b.name));

  const failed = clusters.filter((c) => c.connection === 'Failed' || c.connection === 'NotRegistered');
  const title = `Clusters${instance ? ` on ${instance}` : ''}`;
  const blocks: ReplyBlock[] = [{ kind: 'header', text: title }];
  const instances = [...new Set(clusters.map((c) => c.instance))];
  blocks.push({
    kind: 'text',
    text: failed.length
      ? `${TONE_EMOJI.error} *${plural(failed.length, 'cluster')} not connected* of ${formatCount(clusters.length)}${instances.length > 1 ? ` on ${plural(instances.length, 'instance')}` : ''}.`
      : `${TONE_EMOJI.ok} ${plural(clusters.length, 'cluster')}${instances.length > 1 ? ` on ${plural(instances.length, 'instance')}` : ''}, none reported disconnected.`,
    tone: failed.length ? 'error' : 'ok',
  });
  for (const i of instances) {
    const mine = clusters.filter((c) => c.instance === i);
    // Broken first, then the ones with problem apps: what on-call scans for.
    const rank = (c: ClusterRow) =>
      c.connection === 'Failed' || c.connection === 'NotRegistered'
        ? 0
        : c.problems
          ? 1
          : c.connection === 'Successful'
            ? 3
            : 2;
    const ordered = [...mine].sort((a, b) => rank(a) - rank(b) || b.problems - a.problems || byText(a.name, b.name));
    const items: ReplyItem[] = ordered.slice(0, MAX_SHOWN).map((c) => {
      const tone: Tone =
        rank(c) === 0 ? 'error' : c.problems ? 'warn' : c.connection === 'Successful' ? 'ok' : 'unknown';
      const version = c.serverVersion ? ` · k8s ${c.serverVersion}` : '';
      return {
        text: `*${c.name}* · ${c.connection}${version} · ${plural(c.apps, 'app')}${c.problems ? `, ${formatCount(c.problems)} with problems` : ''}`,
        tone,
        detail:
          [
            c.server && c.server !== c.name ? c.server : '',
            c.message && c.connection !== 'Successful' ? truncate(c.message, 200) : '',
          ]
            .filter(Boolean)
            .join(' — ') || undefined,
      };
    });
    blocks.push({
      kind: 'list',
      title: instances.length > 1 || !instance ? `Instance ${i}` : undefined,
      items,
      total: mine.length,
    });
  }
  blocks.push({
    kind: 'actions',
    buttons: [{ label: 'Refresh', command: `clusters${instance ? ` instance=${instance}` : ''}` }],
  });
  return { ok: true, command: 'clusters', title, data: { clusters }, blocks };
}

export const clustersCommand: CommandSpec<'clusters'> = {
  name: 'clusters',
  aliases: ['cluster'],
  summary: 'Clusters per instance: connection state, Kubernetes version, app and problem counts',
  usage: USAGE,
  help: ['Examples:', '`clusters`', '`clusters instance=argocd-eu`'].join('\n'),
  readOnly: true,
  sharedAnswer: true,
  run: runClusters,
};
