import type { FleetApp } from '../../fleet/model.js';
import { isDown } from '../../fleet/rules/index.js';
import type { Incident } from './store.js';
import type { TimelineEntry } from './timeline.js';

/**
 * The incident's clock, by these definitions:
 * - impactStart: the earliest bad transition in scope within the timeline (health to Degraded or
 *   Missing, an operation Failed or Error, an instance lost, or a RollingSync step that stopped
 *   progressing: the stuck-step alert says since when), or the human override;
 * - detected: the first rollcall alert for the scope if it came before the declaration, else the declaration;
 * - acknowledged: the first human action at or after detection (declaring, a note, a status,
 *   severity or lead change, a run started from Slack or the terminal);
 * - mitigated: the first `status mitigated`; resolved: the close.
 * TTD = detected − impactStart, TTA = acknowledged − detected, TTM = mitigated − impactStart,
 * TTR = resolved − impactStart.
 */
export interface IncidentMetrics {
  impactStart: string | null;
  detected: string | null;
  acknowledged: string | null;
  mitigated: string | null;
  resolved: string | null;
  /** Seconds. */
  ttd: number | null;
  tta: number | null;
  ttm: number | null;
  ttr: number | null;
  /** Where the order impactStart ≤ detected ≤ acknowledged ≤ mitigated ≤ resolved does not hold. */
  warnings: string[];
}

const HUMAN_SURFACES = new Set(['slack', 'terminal']);

function isBad(e: TimelineEntry): boolean {
  return !!e.change?.bad;
}

/** When an entry says impact began: a bad transition at its own time, a stuck step's alert at when the step stopped. */
function impactAt(e: TimelineEntry): string | undefined {
  if (isBad(e)) return e.at;
  return e.impactAt ?? e.change?.impactAt;
}

function earliestImpact(timeline: TimelineEntry[]): string | null {
  let best: string | null = null;
  for (const e of timeline) {
    const at = impactAt(e);
    if (at && (!best || Date.parse(at) < Date.parse(best))) best = at;
  }
  return best;
}

export function computeMetrics(incident: Incident, timeline: TimelineEntry[]): IncidentMetrics {
  const first = (pred: (e: TimelineEntry) => boolean) => timeline.find(pred)?.at ?? null;
  const impactStart = incident.impactOverride ?? earliestImpact(timeline);
  // An alert that fired after people had declared detected nothing: the declaration did.
  const alertAt = first((e) => e.kind === 'alert');
  const detected = alertAt && Date.parse(alertAt) < Date.parse(incident.declaredAt) ? alertAt : incident.declaredAt;
  const detectedMs = Date.parse(detected);
  const acknowledged = first(
    (e) =>
      Date.parse(e.at) >= detectedMs &&
      (e.source === 'human' ||
        ((e.kind === 'run' || e.kind === 'step') && HUMAN_SURFACES.has(e.change?.surface ?? '') && !!e.change?.by)),
  );
  const mitigated = first((e) => e.kind === 'status' && e.state === 'mitigated');
  const resolved = incident.closedAt ?? null;
  const secs = (a: string | null, b: string | null) =>
    a && b ? Math.round((Date.parse(b) - Date.parse(a)) / 1000) : null;
  const metrics: IncidentMetrics = {
    impactStart,
    detected,
    acknowledged,
    mitigated,
    resolved,
    ttd: secs(impactStart, detected),
    tta: secs(detected, acknowledged),
    ttm: secs(impactStart, mitigated),
    ttr: secs(impactStart, resolved),
    warnings: [],
  };
  const chain: [string, string | null][] = [
    ['impactStart', impactStart],
    ['detected', detected],
    ['acknowledged', acknowledged],
    ['mitigated', mitigated],
    ['resolved', resolved],
  ];
  const known = chain.filter((c): c is [string, string] => !!c[1]);
  for (let i = 1; i < known.length; i++) {
    const [prevName, prev] = known[i - 1];
    const [name, at] = known[i];
    if (Date.parse(at) < Date.parse(prev))
      metrics.warnings.push(
        `${name} (${at}) is before ${prevName} (${prev}): check the override or the status history`,
      );
  }
  return metrics;
}

export interface BlastRadius {
  instances: number;
  clusters: number;
  appSets: number;
  apps: number;
  /** Most apps unhealthy (Degraded or Missing) at the same time. */
  peakUnhealthy: number;
  unhealthyAppMinutes: number;
}

/** Who the blast radius names: the apps behind the counts. */
export interface Impacted {
  instances: string[];
  clusters: string[];
  appSets: string[];
  apps: string[];
}

interface AppTrack {
  instance: string;
  app: string;
  cluster?: string;
  appSet?: string;
  /** Health at the window's start. */
  initial: string;
  transitions: { at: number; to: string }[];
  failedOperation: boolean;
}

/**
 * Each scoped app's health over the window, from the health changes in the timeline: before its
 * first change an app was in that change's `from` state (Healthy when a backfilled record only
 * says "is Degraded since"); an app without changes kept the health it has now.
 */
export function healthTracks(timeline: TimelineEntry[], apps: readonly FleetApp[], windowStart: number): AppTrack[] {
  const tracks = new Map<string, AppTrack>();
  const keyOf = (instance: string, app: string) => `${instance}/${app}`;
  for (const e of timeline) {
    const c = e.change;
    if (!c?.app || !c.instance || (c.kind !== 'health' && c.kind !== 'operation')) continue;
    const key = keyOf(c.instance, c.app);
    let t = tracks.get(key);
    if (!t) {
      t = {
        instance: c.instance,
        app: c.app,
        cluster: e.cluster,
        appSet: e.appSet,
        initial: '',
        transitions: [],
        failedOperation: false,
      };
      tracks.set(key, t);
    }
    if (c.kind === 'operation') {
      if (c.bad) t.failedOperation = true;
      continue;
    }
    if (!t.initial) t.initial = c.from ?? 'Healthy';
    t.transitions.push({ at: Math.max(windowStart, Date.parse(c.at)), to: c.to ?? 'Unknown' });
  }
  for (const a of apps) {
    const key = keyOf(a.instance, a.app.metadata.name);
    const t = tracks.get(key);
    if (t) {
      t.cluster ??= a.cluster;
      t.appSet ??= a.appSet;
      if (!t.initial) t.initial = a.app.status?.health?.status ?? 'Unknown';
      continue;
    }
    tracks.set(key, {
      instance: a.instance,
      app: a.app.metadata.name,
      cluster: a.cluster,
      appSet: a.appSet,
      initial: a.app.status?.health?.status ?? 'Unknown',
      transitions: [],
      failedOperation: false,
    });
  }
  for (const t of tracks.values()) {
    if (!t.initial) t.initial = 'Unknown';
    t.transitions.sort((x, y) => x.at - y.at);
  }
  return [...tracks.values()];
}

export function stateAt(track: AppTrack, t: number): string {
  let state = track.initial;
  for (const tr of track.transitions) {
    if (tr.at > t) break;
    state = tr.to;
  }
  return state;
}

export function blastRadius(
  tracks: AppTrack[],
  start: number,
  end: number,
): { radius: BlastRadius; impacted: Impacted } {
  const hit = tracks.filter(
    (t) => t.failedOperation || isDown(t.initial) || t.transitions.some((tr) => isDown(tr.to) && tr.at <= end),
  );
  const points: { at: number; delta: number }[] = [];
  let unhealthyMs = 0;
  for (const t of hit) {
    let state = t.initial;
    let since = start;
    const segments = [...t.transitions.filter((tr) => tr.at <= end), { at: end, to: '' }];
    for (const tr of segments) {
      const from = Math.max(start, since);
      const to = Math.min(end, tr.at);
      if (isDown(state) && to > from) {
        unhealthyMs += to - from;
        points.push({ at: from, delta: 1 }, { at: to, delta: -1 });
      }
      state = tr.to;
      since = tr.at;
    }
  }
  points.sort((a, b) => a.at - b.at || a.delta - b.delta);
  let current = 0;
  let peak = 0;
  for (const p of points) {
    current += p.delta;
    peak = Math.max(peak, current);
  }
  const uniq = (xs: (string | undefined)[]) => [...new Set(xs.filter((x): x is string => !!x))].sort();
  const impacted: Impacted = {
    instances: uniq(hit.map((t) => t.instance)),
    clusters: uniq(hit.map((t) => t.cluster)),
    appSets: uniq(hit.map((t) => t.appSet)),
    apps: uniq(hit.map((t) => t.app)),
  };
  return {
    radius: {
      instances: impacted.instances.length,
      clusters: impacted.clusters.length,
      appSets: impacted.appSets.length,
      apps: impacted.apps.length,
      peakUnhealthy: peak,
      unhealthyAppMinutes: Math.round((unhealthyMs / 60_000) * 10) / 10,
    },
    impacted,
  };
}
