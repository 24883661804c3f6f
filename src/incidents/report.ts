import type { FleetView } from '../fleet/model.js';
import { renderIncidentChart } from './chart.js';
import type { ChangeRecord } from './changes.js';
import { changeJson, groupChanges, withoutDeployOperations, type ChangeJson } from './groups.js';
import type { IncidentAnalysis } from './service.js';
import { timelineJson, type TimelineEntry } from './timeline.js';

export interface IncidentReport {
  markdown: string;
  png: Buffer;
  /** `--json` data: metrics, blastRadius, timeline, changes (files are added by whoever writes them). */
  data: Record<string, unknown>;
}

const KEY_KINDS = new Set(['declared', 'closed', 'note', 'status', 'alert', 'run']);

function fmtTime(iso: string | null): string {
  return iso ? `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC` : '—';
}

function fmtSeconds(s: number | null): string {
  if (s === null) return '—';
  const sign = s < 0 ? '-' : '';
  let v = Math.abs(s);
  const h = Math.floor(v / 3600);
  v -= h * 3600;
  const m = Math.floor(v / 60);
  const sec = v - m * 60;
  return `${sign}${h ? `${h}h ` : ''}${h || m ? `${m}m ` : ''}${sec}s`;
}

const md = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/**
 * The post-incident report: what the timeline, the metrics and the fleet's own history say, with
 * the chart, and empty headings for what only people can write (contributing factors, follow-ups).
 */
export function buildReport(analysis: IncidentAnalysis, fleet: FleetView): IncidentReport {
  const { incident, timeline, metrics, blastRadius, impacted, window } = analysis;
  const changes = timeline
    .filter((e) => e.change)
    .map((e) => ({ json: changeJson(e.change!, fleet), runId: e.change!.runId, id: e.change!.id }))
    .filter((c): c is { json: ChangeJson; runId: string | undefined; id: string } => !!c.json);
  const impactMs = metrics.impactStart ? Date.parse(metrics.impactStart) : Number.POSITIVE_INFINITY;
  const deployOps = new Set(withoutDeployOperations(timeline.map((e) => e.change).filter((c): c is ChangeRecord => !!c)).map((c) => c.id));
  const before = changes.filter((c) => Date.parse(c.json.at) <= impactMs && c.json.kind !== 'run' && deployOps.has(c.id));
  const newestFirst = (list: typeof changes) => {
    const sorted = [...list].reverse();
    return groupChanges(
      sorted.map((c) => c.json),
      new Map(sorted.map((c) => [c.json, c.runId])),
    );
  };
  const rollcallDid = timeline.filter((e) => e.kind === 'run' || e.kind === 'step');
  const runIds = [...new Set(rollcallDid.map((e) => e.change?.runId).filter((r): r is string => !!r))];

  const lines: string[] = [];
  lines.push(`# ${incident.id}: ${incident.title}`, '');
  lines.push(`Severity ${incident.severity} · ${incident.state}${incident.lead ? ` · lead ${incident.lead}` : ''} · declared ${fmtTime(incident.declaredAt)} by ${incident.declaredBy}${incident.scope ? ` · scope \`${incident.scope}\`` : ' · scope: the whole fleet'}`, '');
  lines.push('## Summary', '', incident.summary ?? '_No summary given at close._', '');
  lines.push('## Impact', '');
  lines.push(
    `- Blast radius: ${blastRadius.apps} apps on ${blastRadius.clusters} clusters (${blastRadius.instances} Argo CD instance${blastRadius.instances === 1 ? '' : 's'}, ${blastRadius.appSets} ApplicationSet${blastRadius.appSets === 1 ? '' : 's'}) were unhealthy or failed`,
    `- Peak apps unhealthy at once: ${blastRadius.peakUnhealthy}`,
    `- Unhealthy app-minutes: ${blastRadius.unhealthyAppMinutes}`,
  );
  if (impacted.appSets.length) lines.push(`- ApplicationSets: ${impacted.appSets.join(', ')}`);
  if (impacted.clusters.length) lines.push(`- Clusters: ${impacted.clusters.join(', ')}`);
  lines.push('');
  lines.push('## Metrics', '', '| | time | since impact |', '|---|---|---|');
  lines.push(`| Impact started | ${fmtTime(metrics.impactStart)} | |`);
  lines.push(`| Detected | ${fmtTime(metrics.detected)} | TTD ${fmtSeconds(metrics.ttd)} |`);
  lines.push(`| Acknowledged | ${fmtTime(metrics.acknowledged)} | TTA ${fmtSeconds(metrics.tta)} (after detection) |`);
  lines.push(`| Mitigated | ${fmtTime(metrics.mitigated)} | TTM ${fmtSeconds(metrics.ttm)} |`);
  lines.push(`| Resolved | ${fmtTime(metrics.resolved)} | TTR ${fmtSeconds(metrics.ttr)} |`, '');
  for (const w of metrics.warnings) lines.push(`> ⚠ ${w}`, '');
  lines.push(`![apps by health over the incident](${incident.id}.png)`, '');
  lines.push('## Changes before impact', '');
  const beforeGroups = newestFirst(before);
  if (beforeGroups.length) for (const g of beforeGroups.slice(0, 30)) lines.push(`- ${md(g.text)}`);
  else lines.push('_No fleet change in scope before impact within the look-back._');
  if (beforeGroups.length > 30) lines.push(`- … and ${beforeGroups.length - 30} more groups (appendix)`);
  lines.push('');
  lines.push('## What rollcall did', '');
  if (!runIds.length) lines.push('_No rollcall run touched the scope._');
  for (const runId of runIds) {
    const entries = rollcallDid.filter((e) => e.change?.runId === runId);
    const synced = [...new Set(entries.filter((e) => e.app).map((e) => e.app!))];
    const started = entries[0];
    const ended = entries.find((e) => e.kind === 'run' && !e.app && / ended/.test(e.text));
    lines.push(`- Run ${runId}: ${md(started?.text ?? '')}${synced.length ? `; synced ${synced.length} app${synced.length === 1 ? '' : 's'}` : ''}${ended ? `; ${md(ended.text)}` : ''}`);
    lines.push(`  - Health after: ${healthFollowed(timeline, synced, started ? Date.parse(started.at) : 0)}`);
  }
  lines.push('');
  lines.push('## Key timeline', '');
  const key = keyTimeline(timeline);
  for (const e of key) lines.push(`- ${fmtTime(e.at).slice(11)} — ${md(e.text)}`);
  lines.push('');
  lines.push('## Contributing factors', '', '_To be written by the responders._', '');
  lines.push('## Follow-ups', '', '_To be written by the responders._', '');
  lines.push('## Appendix: full timeline', '', '| time (UTC) | kind | source | what |', '|---|---|---|---|');
  for (const e of timeline) lines.push(`| ${e.at.replace('T', ' ').replace(/\.\d+Z$|Z$/, '')} | ${e.kind} | ${e.source} | ${md(e.text)} |`);
  lines.push('');

  const png = renderIncidentChart({ title: `${incident.id} ${incident.title}`, start: window.start, end: window.end, tracks: analysis.tracks, metrics });
  return {
    markdown: lines.join('\n'),
    png,
    data: {
      id: incident.id,
      incident: incidentJson(incident),
      metrics,
      blastRadius,
      impacted,
      timeline: timeline.map(timelineJson),
      changes: changes.map((c) => c.json),
      changesBeforeImpact: beforeGroups,
    },
  };
}

export function incidentJson(incident: IncidentAnalysis['incident']): Record<string, unknown> {
  return {
    id: incident.id,
    title: incident.title,
    severity: incident.severity,
    state: incident.state,
    scope: incident.scope ?? null,
    lead: incident.lead ?? null,
    declaredBy: incident.declaredBy,
    declaredAt: incident.declaredAt,
    closedAt: incident.closedAt ?? null,
    summary: incident.summary ?? null,
    channel: incident.channel ?? null,
  };
}

/** The story without the noise: people, alerts, runs, and the first and last health change per group of apps. */
export function keyTimeline(timeline: TimelineEntry[]): TimelineEntry[] {
  const out: TimelineEntry[] = [];
  const seenBad = new Set<string>();
  const lastGood = new Map<string, TimelineEntry>();
  for (const e of timeline) {
    if (KEY_KINDS.has(e.kind) && !(e.kind === 'run' && e.app)) out.push(e);
    else if (e.kind === 'health' && e.change?.bad) {
      const group = e.appSet ?? e.cluster ?? e.instance ?? '';
      if (!seenBad.has(group)) {
        seenBad.add(group);
        out.push(e);
      }
    } else if (e.kind === 'health' && e.change?.to === 'Healthy') lastGood.set(e.appSet ?? e.cluster ?? '', e);
  }
  for (const [group, e] of lastGood) if (seenBad.has(group)) out.push({ ...e, text: `${e.text} (last of ${group} healthy again)` });
  return out.sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
}

function healthFollowed(timeline: TimelineEntry[], synced: string[], fromMs: number): string {
  const healed = new Set(timeline.filter((e) => e.kind === 'health' && e.change?.to === 'Healthy' && Date.parse(e.at) >= fromMs).map((e) => e.appSet ?? e.app));
  const stillBad = timeline.filter((e) => e.kind === 'health' && e.change?.bad && Date.parse(e.at) >= fromMs);
  const healedCount = timeline.filter((e) => e.kind === 'health' && e.change?.to === 'Healthy' && Date.parse(e.at) >= fromMs).length;
  if (!synced.length) return 'no app synced';
  if (!healedCount && !stillBad.length) return 'no health change followed';
  return `${healedCount} app${healedCount === 1 ? '' : 's'} turned Healthy afterwards${healed.size ? ` (${[...healed].filter(Boolean).slice(0, 5).join(', ')})` : ''}${stillBad.length ? `; ${stillBad.length} went unhealthy` : ''}`;
}
