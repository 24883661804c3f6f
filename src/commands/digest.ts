import { composeDigest, TOTAL_KEYS, type AttentionItem, type Digest, type TotalKey } from '../domain/alerts/digest.js';
import type { DigestConfig } from '../infra/config/schema.js';
import { absoluteTime, formatCount, formatDuration, TONE_EMOJI, when } from '../core/format.js';
import { CommandError, checkOptions, checkPositional } from './parse.js';
import { type Services, type CommandSpec } from './registry.js';
import type { ReplyBlock, ReplyItem } from '../core/reply.js';
import type { ReplyOf } from './replies.js';
import { suggest } from '../core/suggest.js';

const USAGE = 'digest [NAME]';
const APPS_SHOWN = 8;

const TOTAL_LABELS: Record<TotalKey, string> = {
  instances: 'Instances',
  appSets: 'ApplicationSets',
  apps: 'Apps',
  synced: 'Synced',
  outOfSync: 'OutOfSync',
  healthy: 'Healthy',
  progressing: 'Progressing',
  degraded: 'Degraded',
  missing: 'Missing',
  suspended: 'Suspended',
  unknown: 'Health unknown',
  activeAlerts: 'Active alerts',
};

function incidentItems(d: Digest): ReplyItem[] {
  const inc = d.incidents;
  if (!inc) return [];
  const now = new Date(d.at);
  const open = inc.open.map((i) => ({
    text: `*${i.id}* sev ${i.severity}, ${i.state}: ${i.title}`,
    tone: 'error' as const,
    detail: `open for ${formatDuration(now.getTime() - Date.parse(i.declaredAt))} · declared ${when(i.declaredAt, now)}`,
  }));
  const closed = inc.closed.map((i) => ({
    text: `*${i.id}* sev ${i.severity}, closed: ${i.title}`,
    tone: 'ok' as const,
    detail: `TTR ${typeof i.ttr === 'number' ? formatDuration(i.ttr * 1000) : 'unknown (no impact start)'} · closed ${when(i.closedAt!, now)}`,
  }));
  return [...open, ...closed];
}

function delta(n: number | undefined): string {
  if (n === undefined || n === 0) return '';
  return ` (${n > 0 ? '+' : '−'}${formatCount(Math.abs(n))})`;
}

function attentionItem(item: AttentionItem, now: Date): ReplyItem {
  const shown = item.apps.slice(0, APPS_SHOWN).join(', ');
  const more = item.apps.length > APPS_SHOWN ? ` +${item.apps.length - APPS_SHOWN} more` : '';
  return {
    text: `*${item.title}*${item.appSet ? '' : ` (${item.instance})`}`,
    tone: item.severity === 'critical' ? 'error' : item.severity === 'warning' ? 'warn' : 'info',
    detail: `${item.kind} · since ${when(item.since, now)}${shown ? ` · ${shown}${more}` : ''}`,
  };
}

/** needs attention → activity → totals; one "all clear" line when nothing needs attention. */
export function digestReply(d: Digest, commandText: string): ReplyOf<'digest'> {
  const title = `Digest${d.name ? ` ${d.name}` : ''} — ${d.at.slice(0, 16).replace('T', ' ')} UTC`;
  const blocks: ReplyBlock[] = [{ kind: 'header', text: title }];
  if (d.selector) blocks.push({ kind: 'context', text: `Apps matching \`${d.selector}\`` });
  const incidents = incidentItems(d);
  if (d.incidents && (incidents.length || d.incidents.opened.length)) {
    const opened = d.incidents.opened.length;
    blocks.push({
      kind: 'list',
      title: `Incidents: ${d.incidents.open.length} open; ${opened} opened, ${d.incidents.closed.length} closed in the period`,
      items: incidents,
    });
  }
  if (d.allClear) {
    blocks.push({ kind: 'text', text: `${TONE_EMOJI.ok} *All clear*: nothing needs attention.`, tone: 'ok' });
  } else {
    blocks.push({
      kind: 'list',
      title: 'Needs attention',
      items: d.attention.map((item) => attentionItem(item, new Date(d.at))),
    });
    const a = d.activity;
    const rollouts = a.rolloutsCompleted.length ? a.rolloutsCompleted.map((r) => r.appSet).join(', ') : 'none';
    blocks.push({
      kind: 'fields',
      fields: [
        { label: 'Syncs', value: `${formatCount(a.syncs.succeeded)} succeeded, ${formatCount(a.syncs.failed)} failed` },
        { label: 'Rollouts completed', value: rollouts },
        {
          label: 'Runbook runs',
          value: a.runbookRuns
            ? `${formatCount(a.runbookRuns.total)}${
                a.runbookRuns.total
                  ? ` (${Object.entries(a.runbookRuns.byStatus)
                      .map(([s, n]) => `${n} ${s}`)
                      .join(', ')})`
                  : ''
              }`
            : 'unknown (no Redis)',
        },
      ],
    });
    blocks.push({ kind: 'context', text: `Activity from ${absoluteTime(a.from)} to ${absoluteTime(a.to)}` });
  }
  const t = d.totals;
  const keys: TotalKey[] = d.allClear
    ? ['apps', 'synced', 'healthy', 'activeAlerts']
    : [...TOTAL_KEYS].filter((k) => k !== 'instances');
  blocks.push({
    kind: 'fields',
    fields: keys.map((k) => ({ label: TOTAL_LABELS[k], value: `${formatCount(t[k])}${delta(t.change?.[k])}` })),
  });
  blocks.push({
    kind: 'context',
    text: t.previousAt
      ? `Changes since the previous digest, ${when(t.previousAt, new Date(d.at))}.`
      : 'No previous digest to compare with.',
  });
  return {
    ok: true,
    command: 'digest',
    title,
    data: {
      name: d.name,
      at: d.at,
      selector: d.selector,
      allClear: d.allClear,
      attention: d.attention,
      activity: d.activity,
      totals: d.totals,
      incidents: d.incidents,
    },
    blocks,
    pageCommand: commandText,
  };
}

export function findDigest(services: Services, name: string): DigestConfig {
  const found = services.config.digests.find((d) => d.name === name);
  if (found) return found;
  const names = services.config.digests.map((d) => d.name);
  throw new CommandError(
    'unknown_target',
    names.length
      ? `No digest named \`${name}\` in the config (digests: ${names.join(', ')}).`
      : `No digest named \`${name}\`: the config has no \`digests:\`. \`digest\` alone covers the whole fleet.`,
    suggest(name, names),
  );
}

export const digestCommand: CommandSpec<'digest'> = {
  name: 'digest',
  summary:
    'A status digest now: what needs attention (grouped by ApplicationSet), activity in the period, totals and their change',
  usage: USAGE,
  help: [
    '`digest` — the whole fleet; `digest NAME` — a digest from the config, with its selector.',
    "Needs attention: apps Degraded or Missing > 5 min (at once right after a sync), OutOfSync (> 1 h when auto-synced), stuck and paused rollouts, rollcall's active freezes, failed syncs in the period,",
    'stale key backups, unreachable instances. The period runs from the previous digest of that name (else 24 h).',
    'Incidents: the open ones first, then those closed in the period with their TTR.',
  ].join('\n'),
  readOnly: true,
  usesRuns: 'optional',
  async run(cmd, ctx) {
    checkOptions(cmd, [], USAGE);
    checkPositional(cmd, 1, USAGE);
    const name = cmd.positional[0];
    const digest = name ? findDigest(ctx.services, name) : undefined;
    const now = ctx.services.now?.() ?? new Date();
    const d = await composeDigest(ctx.services, digest, now);
    return digestReply(d, name ? `digest ${name}` : 'digest');
  },
};
