import type { FleetView } from '../../fleet/model.js';
import { selectApps } from '../../fleet/select.js';
import { placeOf, type ChangeRecord } from './changes.js';
import type { Incident, IncidentEntry } from './store.js';

export type TimelineKind =
  | 'deploy'
  | 'health'
  | 'sync'
  | 'operation'
  | 'rollout'
  | 'created'
  | 'deleted'
  | 'run'
  | 'step'
  | 'note'
  | 'status'
  | 'alert'
  | 'declared'
  | 'closed';
export const TIMELINE_KINDS: readonly TimelineKind[] = [
  'deploy',
  'health',
  'sync',
  'operation',
  'rollout',
  'created',
  'deleted',
  'run',
  'step',
  'note',
  'status',
  'alert',
  'declared',
  'closed',
];

export interface TimelineEntry {
  id: string;
  at: string;
  kind: TimelineKind;
  /** `argocd` (the fleet), `rollcall` (runs, steps, suggestions), `human`, `alert`. */
  source: 'argocd' | 'rollcall' | 'human' | 'alert';
  text: string;
  instance?: string;
  app?: string;
  appSet?: string;
  cluster?: string;
  by?: string;
  /** Internal: the change behind it (health from/to, bad transitions, run id, surface). */
  change?: ChangeRecord;
  state?: string;
  /** Internal: an alert's problem began here, before the alert (a stuck step's apps stopped progressing). */
  impactAt?: string;
}

/** The JSON of a timeline entry (`--json`): exactly these fields. */
export function timelineJson(e: TimelineEntry): Record<string, unknown> {
  return {
    at: e.at,
    kind: e.kind,
    source: e.source,
    text: e.text,
    ...(e.instance ? { instance: e.instance } : {}),
    ...(e.app ? { app: e.app } : {}),
    ...(e.appSet ? { appSet: e.appSet } : {}),
    ...(e.cluster ? { cluster: e.cluster } : {}),
    ...(e.by ? { by: e.by } : {}),
  };
}

/** The window an incident's timeline covers: the look-back before declaring, to close (or now). */
export function incidentWindow(incident: Incident, nowMs: number): { start: number; end: number } {
  const declared = Date.parse(incident.declaredAt);
  return { start: declared - incident.lookbackMs, end: incident.closedAt ? Date.parse(incident.closedAt) : nowMs };
}

export const appKey = (instance: string | undefined, app: string | undefined) => `${instance ?? ''}/${app ?? ''}`;

/**
 * Which changes belong to an incident: apps its scope matched when declared, plus apps it matches
 * now (a cluster added meanwhile); every change when it has no scope. rollcall's runs come with
 * the apps they touched: a run is in scope when one of its syncs or operations is.
 */
export function scopeFilter(incident: Incident, fleet: FleetView): (records: ChangeRecord[]) => ChangeRecord[] {
  if (!incident.scopeSelector) return (records) => records;
  const keys = new Set(incident.scopeApps);
  try {
    for (const a of selectApps(fleet, incident.scopeSelector)) keys.add(appKey(a.instance, a.app.metadata.name));
  } catch {
    // A name in the scope no longer exists: what it matched at declaration still counts.
  }
  const declared = Date.parse(incident.declaredAt);
  return (records) => {
    const scoped = changesOfApps(records, keys);
    // Once declared, whatever rollcall is asked to do is part of the response, whatever it touches
    // (the fix is often elsewhere: auth-config synced to heal auth-service).
    const ids = new Set(scoped.map((r) => r.id));
    const response = records.filter(
      (r) => (r.kind === 'run' || r.kind === 'step') && Date.parse(r.at) >= declared && !ids.has(r.id),
    );
    return [...scoped, ...response];
  };
}

/**
 * The changes of these apps (`instance/name`), their instances' losses, and the runs that touched
 * them: a run's own entries (start, confirm, end) carry no app, its syncs and operations do.
 */
export function changesOfApps(records: ChangeRecord[], keys: ReadonlySet<string>): ChangeRecord[] {
  const instances = new Set([...keys].map((k) => k.slice(0, k.indexOf('/'))));
  const runs = new Set<string>();
  const direct = records.filter((r) => {
    const hit = r.app
      ? keys.has(appKey(r.instance, r.app))
      : r.kind === 'instance'
        ? instances.has(r.instance ?? '')
        : false;
    if (hit && r.runId) runs.add(r.runId);
    return hit;
  });
  const byRun = records.filter(
    (r) => !r.app && r.runId && runs.has(r.runId) && (r.kind === 'run' || r.kind === 'step'),
  );
  return [...direct, ...byRun];
}

/** Apps in scope now (for the suggestion and the chart's steady apps). */
export function scopedApps(incident: Incident, fleet: FleetView) {
  if (!incident.scopeSelector) return [...fleet.apps()];
  const keys = new Set(incident.scopeApps);
  let now: ReturnType<typeof selectApps> = [];
  try {
    now = selectApps(fleet, incident.scopeSelector);
  } catch {
    now = [];
  }
  const seen = new Set(now.map((a) => appKey(a.instance, a.app.metadata.name)));
  return [
    ...now,
    ...fleet
      .apps()
      .filter(
        (a) => keys.has(appKey(a.instance, a.app.metadata.name)) && !seen.has(appKey(a.instance, a.app.metadata.name)),
      ),
  ];
}

function changeEntry(r: ChangeRecord, fleet: FleetView): TimelineEntry {
  const kind: TimelineKind = r.kind === 'instance' ? 'health' : r.kind;
  const source: TimelineEntry['source'] =
    r.kind === 'run' || r.kind === 'step' ? 'rollcall' : r.kind === 'alert' ? 'alert' : 'argocd';
  const { cluster, appSet } = placeOf(r, fleet);
  return {
    id: r.id,
    at: r.at,
    kind,
    source,
    text: r.text,
    ...(r.instance ? { instance: r.instance } : {}),
    ...(r.app ? { app: r.app } : {}),
    ...(appSet ? { appSet } : {}),
    ...(cluster ? { cluster } : {}),
    ...(r.by ? { by: r.by } : {}),
    change: r,
  };
}

function ownEntry(e: IncidentEntry): TimelineEntry {
  return {
    id: e.id,
    at: e.at,
    kind: e.kind,
    source: e.source,
    text: e.text,
    ...(e.by ? { by: e.by } : {}),
    ...(e.state ? { state: e.state } : {}),
    ...(e.impactAt ? { impactAt: e.impactAt } : {}),
  };
}

/** One timeline from the incident's own entries and the scoped changes, oldest first; each change once. */
export function mergeTimeline(
  incident: Incident,
  fleet: FleetView,
  changes: ChangeRecord[],
  own: IncidentEntry[],
): TimelineEntry[] {
  const unique = new Map<string, ChangeRecord>();
  for (const r of changes) if (!unique.has(r.id)) unique.set(r.id, r);
  const scoped = scopeFilter(incident, fleet)([...unique.values()]);
  const entries = [...scoped.map((r) => changeEntry(r, fleet)), ...own.map(ownEntry)];
  return entries.sort((a, b) => Date.parse(a.at) - Date.parse(b.at) || order(a) - order(b));
}

// At the same instant: the declaration before what followed it.
function order(e: TimelineEntry): number {
  return e.kind === 'declared' ? 0 : e.kind === 'closed' ? 2 : 1;
}
