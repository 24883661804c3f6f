import type { FleetView } from '../../fleet/model.js';
import type { ChartInput } from './chart.js';
import type { ChangeRecord } from './changes.js';
import { DEFAULT_STUCK_AFTER_MS } from '../../fleet/diagnose.js';
import { groupByCause } from './cause.js';
import { changeJson, withoutDeployOperations, type ChangeJson } from './groups.js';
import type { IncidentAnalysis } from './service.js';
import { timelineJson, type TimelineEntry } from './timeline.js';

export interface IncidentReport {
  markdown: string;
  /** What the chart draws: `renderIncidentChart` turns it into the PNG the Markdown links to. */
  chart: ChartInput;
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
  const deployOps = new Set(
    withoutDeployOperations(timeline.map((e) => e.change).filter((c): c is ChangeRecord => !!c)).map((c) => c.id),
  );
  const before = changes.filter(
    (c) =>
      Date.parse(c.json.at) <= impactMs && c.json.kind !== 'run' && c.json.kind !== 'health' && deployOps.has(c.id),
  );
  // The health changes after impact are what ranks the changes before it: the same ranking as `changes`.
  const byCause = (list: typeof changes) => {
    const sorted = [...list].reverse();
    return groupByCause(
      sorted.map((c) => c.json),
      new Map(sorted.map((c) => [c.json, c.runId])),
      changes.filter((c) => deployOps.has(c.id)).map((c) => c.json),
      { nowMs: window.end, stuckAfterMs: DEFAULT_STUCK_AFTER_MS },
    );
  };
  const rollcallDid = timeline.filter((e) => e.kind === 'run' || e.kind === 'step');
  const runIds = [...new Set(rollcallDid.map((e) => e.change?.runId).filter((r): r is string => !!r))];

  const lines: string[] = [];
  lines.push(`# ${incident.id}: ${incident.title}`, '');
  lines.push(
    `Severity ${incident.severity} · ${incident.state}${incident.lead ? ` · lead ${incident.lead}` : ''} · declared ${fmtTime(incident.declaredAt)} by ${incident.declaredBy}${incident.scope ? ` · scope \`${incident.scope}\`` : ' · scope: the whole fleet'}`,
    '',
  );
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
  const beforeGroups = byCause(before);
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
    lines.push(
      `- Run ${runId}: ${md(started?.text ?? '')}${synced.length ? `; synced ${synced.length} app${synced.length === 1 ? '' : 's'}` : ''}${ended ? `; ${md(ended.text)}` : ''}`,
    );
    lines.push(`  - Health after: ${healthFollowed(timeline, synced, started ? Date.parse(started.at) : 0)}`);
  }
  lines.push('');
  lines.push('## Key timeline', '');
  const key = keyTimeline(timeline);
  for (const e of key) lines.push(`- ${fmtTime(e.at).slice(11)} — ${md(e.text)}`);
  lines.push('');
  lines.push('## Contributing factors', '', '_To be written by the responders._', '');
  lines.push('## Follow-ups', '', '_To be written by the responders._', '');
  const stamp = (iso: string) => iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, '');
  if (incident.scopeSelector) {
    lines.push('## Appendix: full timeline', '', '| time (UTC) | kind | source | what |', '|---|---|---|---|');
    for (const e of timeline) lines.push(`| ${stamp(e.at)} | ${e.kind} | ${e.source} | ${md(e.text)} |`);
  } else {
    // Without a scope the timeline is the whole fleet's: one row per app would bury the story.
    const rows = condenseTimeline(timeline);
    lines.push(
      '## Appendix: timeline, grouped',
      '',
      `_The incident has no scope, so this is the whole fleet: ${timeline.length} entries in ${rows.length} rows, the same change of one ApplicationSet grouped. \`incident timeline ${incident.id} --json\` has every entry._`,
      '',
      '| time (UTC) | kind | source | what |',
      '|---|---|---|---|',
    );
    for (const r of rows)
      lines.push(
        `| ${r.from === r.to ? stamp(r.from) : `${stamp(r.from)} – ${stamp(r.to).slice(11)}`} | ${r.kind} | ${r.source} | ${md(r.text)} |`,
      );
  }
  lines.push('');

  return {
    markdown: lines.join('\n'),
    chart: {
      title: `${incident.id}: ${incident.title}`,
      start: window.start,
      end: window.end,
      tracks: analysis.tracks,
      metrics,
    },
    data: {
      id: incident.id,
      incident: incidentJson(incident),
      metrics,
      blastRadius,
      impacted,
      timeline: timeline.map(timelineJson),
      changes: changes.filter((c) => c.json.kind !== 'health').map((c) => c.json),
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

/** Fleet changes of one kind, owner and outcome this close together are one row of a condensed timeline. */
const CONDENSE_GAP_MS = 15 * 60_000;

export interface CondensedRow {
  from: string;
  to: string;
  kind: TimelineEntry['kind'];
  source: TimelineEntry['source'];
  text: string;
  count: number;
}

/**
 * The timeline with each fleet change grouped by kind, ApplicationSet (else app) and what happened
 * ("Healthy → Degraded"), within 15 minutes of the previous one: "auth-service: Healthy → Degraded
 * ×12 on 12 clusters". People, alerts and rollcall's runs stay one row each. Oldest first.
 */
export function condenseTimeline(timeline: TimelineEntry[]): CondensedRow[] {
  interface Building extends CondensedRow {
    lastMs: number;
    subject: string;
    what: string;
    /** The first change's message (a health row keeps one example). */
    message?: string;
    clusters: Set<string>;
  }
  const rows: Building[] = [];
  const open = new Map<string, Building>();
  for (const e of timeline) {
    const at = Date.parse(e.at);
    const fleetChange = !!e.change && e.source === 'argocd' && !!e.app;
    const subject = e.appSet ?? e.app ?? '';
    // A health change names its pod in the message: the transition is what the apps share. Other
    // changes lead with the app's own name; what follows it is what happened.
    const c = e.change;
    const what =
      fleetChange && e.kind === 'health' && c?.to
        ? `${c.from ? `${c.from} → ` : 'is '}${c.to}`
        : fleetChange && e.app && e.text.startsWith(e.app)
          ? e.text.slice(e.app.length).trim()
          : e.text;
    const key = `${e.kind}|${subject}|${what}`;
    const existing = fleetChange ? open.get(key) : undefined;
    if (existing && at - existing.lastMs <= CONDENSE_GAP_MS) {
      existing.count++;
      existing.to = e.at;
      existing.lastMs = at;
      if (e.cluster) existing.clusters.add(e.cluster);
      continue;
    }
    const row: Building = {
      from: e.at,
      to: e.at,
      kind: e.kind,
      source: e.source,
      text: e.text,
      count: 1,
      lastMs: at,
      subject,
      what,
      message: c?.message,
      clusters: new Set(e.cluster ? [e.cluster] : []),
    };
    if (fleetChange) open.set(key, row);
    rows.push(row);
  }
  return rows.map(({ from, to, kind, source, text, count, subject, what, message, clusters }) => {
    if (count === 1) return { from, to, kind, source, text, count };
    const where =
      clusters.size > 1 ? ` on ${clusters.size} clusters` : clusters.size === 1 ? ` on ${[...clusters][0]}` : '';
    const example = kind === 'health' && message ? ` (first: ${message})` : '';
    return { from, to, kind, source, text: `${subject}: ${what} ×${count}${where}${example}`, count };
  });
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
  for (const [group, e] of lastGood)
    if (seenBad.has(group)) out.push({ ...e, text: `${e.text} (last of ${group} healthy again)` });
  return out.sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
}

function healthFollowed(timeline: TimelineEntry[], synced: string[], fromMs: number): string {
  const healed = new Set(
    timeline
      .filter((e) => e.kind === 'health' && e.change?.to === 'Healthy' && Date.parse(e.at) >= fromMs)
      .map((e) => e.appSet ?? e.app),
  );
  const stillBad = timeline.filter((e) => e.kind === 'health' && e.change?.bad && Date.parse(e.at) >= fromMs);
  const healedCount = timeline.filter(
    (e) => e.kind === 'health' && e.change?.to === 'Healthy' && Date.parse(e.at) >= fromMs,
  ).length;
  if (!synced.length) return 'no app synced';
  if (!healedCount && !stillBad.length) return 'no health change followed';
  return `${healedCount} app${healedCount === 1 ? '' : 's'} turned Healthy afterwards${healed.size ? ` (${[...healed].filter(Boolean).slice(0, 5).join(', ')})` : ''}${stillBad.length ? `; ${stillBad.length} went unhealthy` : ''}`;
}
