import type { FleetView } from '../../fleet/model.js';
import { placeOf, type ChangeRecord } from './changes.js';

/** The kinds `changes` lists: what was done to the fleet, and the health changes that followed. */
export type ListedChangeKind = 'deploy' | 'sync' | 'operation' | 'rollout' | 'run' | 'created' | 'deleted' | 'health';

/** The JSON of one change in `changes` and in the report. */
export interface ChangeJson {
  at: string;
  kind: ListedChangeKind;
  instance: string | null;
  app: string | null;
  appSet?: string;
  cluster: string | null;
  revision?: string;
  previousRevision?: string;
  by?: string;
  /** The state before and after: health, sync or rollout status; an operation's phase in `to`. */
  from?: string;
  to?: string;
  /** A bad transition: health to Degraded/Missing, an operation Failed/Error. */
  bad?: boolean;
  text: string;
}

export function listedKind(r: ChangeRecord): ListedChangeKind | undefined {
  switch (r.kind) {
    case 'deploy':
    case 'sync':
    case 'operation':
    case 'rollout':
    case 'run':
    case 'created':
    case 'deleted':
    case 'health':
      return r.kind;
    case 'step':
      return 'run';
    default:
      return undefined;
  }
}

/**
 * A deploy is the history entry of a sync operation that succeeded: listing its start and success
 * again says the same thing three times. Failed operations and syncs that deployed nothing stay.
 */
export function withoutDeployOperations<T extends ChangeRecord>(records: T[]): T[] {
  const deployed = new Set(records.filter((r) => r.kind === 'deploy').map((r) => `${r.instance}/${r.app}/${r.commit}`));
  return records.filter(
    (r) =>
      !(
        r.kind === 'operation' &&
        (r.to === 'Succeeded' || r.to === 'Running') &&
        deployed.has(`${r.instance}/${r.app}/${r.commit}`)
      ),
  );
}

export function changeJson(r: ChangeRecord, fleet: FleetView): ChangeJson | undefined {
  const kind = listedKind(r);
  if (!kind) return undefined;
  const { cluster, appSet } = placeOf(r, fleet);
  return {
    at: r.at,
    kind,
    instance: r.instance ?? null,
    app: r.app ?? null,
    ...(appSet ? { appSet } : {}),
    cluster: cluster ?? null,
    ...(r.revision ? { revision: r.revision } : {}),
    ...(r.previousRevision ? { previousRevision: r.previousRevision } : {}),
    ...(r.by ? { by: r.by } : {}),
    ...(r.from ? { from: r.from } : {}),
    ...(r.to ? { to: r.to } : {}),
    ...(r.bad ? { bad: true } : {}),
    text: r.text,
  };
}

export interface ChangeGroup {
  kind: ListedChangeKind;
  /** ApplicationSet, else the app, else the run. */
  subject: string;
  text: string;
  count: number;
  clusters: string[];
  apps: string[];
  from: string;
  to: string;
  revision?: string;
  previousRevision?: string;
  by?: string;
  runId?: string;
  /**
   * How it ended: a run's status (absent while it runs), else the state its changes reached (an
   * operation's phase, a health or sync status). `bad` when that is Degraded, Missing, Failed or Error.
   */
  outcome?: string;
  bad?: boolean;
  /** A run's: the runbook it ran and the apps it synced. */
  runbook?: string;
  synced?: number;
  /** Apps that went Degraded or Missing, or stayed Progressing, with this as their last change before (cause.ts). */
  troubleAfter?: number;
}

/** Changes of one kind and subject this close together are one story ("on 12 clusters, 14:02–14:03"). */
const GROUP_GAP_MS = 15 * 60_000;

const hhmm = (iso: string) => iso.slice(11, 16);

/**
 * Groups changes the way on-call reads them: the same deploy of one ApplicationSet across its
 * clusters is one line; a rollcall run with its syncs is one line. Input and output newest first.
 */
export function groupChanges(
  changes: ChangeJson[],
  runIds: Map<ChangeJson, string | undefined> = new Map(),
  troubleAfter: Map<ChangeJson, number> = new Map(),
): ChangeGroup[] {
  const groups: Building[] = [];
  const open = new Map<string, Building>();
  for (const c of changes) {
    const runId = runIds.get(c);
    const subject = c.kind === 'run' && runId ? `run ${runId}` : (c.appSet ?? c.app ?? 'rollcall');
    // A health change names its pod in the message: the transition is what the apps share.
    const detail =
      c.kind === 'deploy'
        ? `${c.previousRevision ?? ''}>${c.revision ?? ''}`
        : c.kind === 'health'
          ? `${c.from ?? ''}>${c.to ?? ''}`
          : c.kind === 'run'
            ? ''
            : `${c.text.replace(/^\S+\s/, '').replace(/\(run [^)]*\)/, '')}`;
    // A run is one story whoever each entry names: its steps and its end are rollcall's, its request a person's.
    const key = c.kind === 'run' ? `run|${subject}` : `${c.kind}|${subject}|${detail}|${c.by ?? ''}`;
    const t = Date.parse(c.at);
    const existing = open.get(key);
    const trouble = troubleAfter.get(c);
    if (existing && existing.lastMs - t <= GROUP_GAP_MS) {
      existing.count++;
      if (trouble) existing.troubleAfter = (existing.troubleAfter ?? 0) + trouble;
      existing.from = c.at;
      existing.lastMs = t;
      if (c.cluster && !existing.clusters.includes(c.cluster)) existing.clusters.push(c.cluster);
      if (c.app && !existing.apps.includes(c.app)) existing.apps.push(c.app);
      if (c.kind === 'run') readRunEntry(existing, c);
      continue;
    }
    const group: Building = {
      key,
      lastMs: t,
      kind: c.kind,
      subject,
      text: '',
      count: 1,
      clusters: c.cluster ? [c.cluster] : [],
      apps: c.app ? [c.app] : [],
      from: c.at,
      to: c.at,
      ...(c.revision ? { revision: c.revision } : {}),
      ...(c.previousRevision ? { previousRevision: c.previousRevision } : {}),
      ...(c.by ? { by: c.by } : {}),
      ...(runId ? { runId } : {}),
      ...(c.kind !== 'run' && c.to ? { outcome: c.to } : {}),
      ...(c.bad ? { bad: true } : {}),
      ...(c.kind === 'health' && c.from ? { previous: c.from } : {}),
      ...(trouble ? { troubleAfter: trouble } : {}),
      sample: c.text,
    };
    if (c.kind === 'run') readRunEntry(group, c);
    open.set(key, group);
    groups.push(group);
  }
  return groups.map(({ key: _key, lastMs: _last, sample, previous, syncedApps, syncedClusters, ...g }) => {
    const group = { ...g, ...(syncedApps ? { synced: syncedApps.size } : {}) };
    return { ...group, text: groupText(group, sample, [...(syncedClusters ?? [])], previous) };
  });
}

/** What a run's entry adds to its group, read from the audit entry's text (see auditChange). Newest first. */
function readRunEntry(group: Building, c: ChangeJson): void {
  group.by ??= c.by;
  const requested = /^run \S+ \(([^)]+)\) requested/.exec(c.text);
  if (requested) group.runbook ??= requested[1];
  const ended = /^run \S+ ended(?: by \S+)?: (\w+)/.exec(c.text);
  if (ended) group.outcome ??= ended[1];
  if (c.app && /^rollcall synced /.test(c.text)) {
    (group.syncedApps ??= new Set()).add(`${c.instance}/${c.app}`);
    if (c.cluster) (group.syncedClusters ??= new Set()).add(c.cluster);
  }
}

interface Building extends ChangeGroup {
  key: string;
  lastMs: number;
  /** The first change's text, for kinds whose line repeats it. */
  sample: string;
  /** A health group's state before its transition, when the record knew it. */
  previous?: string;
  syncedApps?: Set<string>;
  syncedClusters?: Set<string>;
}

function groupText(
  g: Omit<ChangeGroup, 'text'>,
  sample: string,
  syncedClusters: string[],
  previous: string | undefined,
): string {
  const when = hhmm(g.from) === hhmm(g.to) ? hhmm(g.from) : `${hhmm(g.from)}–${hhmm(g.to)}`;
  const on = (clusters: string[]) =>
    clusters.length > 1 ? ` on ${clusters.length} clusters` : clusters.length === 1 ? ` on ${clusters[0]}` : '';
  const where = on(g.clusters);
  const by = g.by ? `, by ${g.by}` : '';
  switch (g.kind) {
    case 'deploy':
      return `${g.subject}: ${g.previousRevision && g.previousRevision !== g.revision ? `${g.previousRevision} → ` : ''}${g.revision ?? 'new revision'}${where}, ${when}${by}${troubleText(g)}`;
    case 'health': {
      const apps = g.apps.length === 1 ? g.apps[0] : `${g.apps.length} apps`;
      const what = previous ? `${previous} → ${g.outcome}` : `went ${g.outcome}`;
      return `${g.subject}: ${apps} ${what}${where}, ${when}`;
    }
    case 'run': {
      const did = [
        g.outcome ?? '',
        g.synced
          ? `synced ${g.synced} app${g.synced === 1 ? '' : 's'}${on(syncedClusters)}`
          : g.apps.length
            ? `touched ${g.apps.length} app${g.apps.length === 1 ? '' : 's'}${where}`
            : '',
      ].filter(Boolean);
      return `${g.subject}${g.runbook ? ` (${g.runbook})` : ''}: ${did.length ? did.join(', ') : `${g.count} ${g.count === 1 ? 'entry' : 'entries'}`}, ${when}${by}${troubleText(g)}`;
    }
    default: {
      const what = sample.replace(/^\S+\s/, '').replace(/\s*\(run [^)]*\)/, '');
      // An operation's start names who started it; how it ended does not.
      const ender = g.kind === 'operation' && g.outcome !== 'Running' ? by : '';
      return `${g.subject}: ${what}${g.count > 1 ? ` ×${g.count}` : ''}${where}, ${when}${ender}${troubleText(g)}`;
    }
  }
}

function troubleText(g: Omit<ChangeGroup, 'text'>): string {
  const n = g.troubleAfter;
  return n ? ` — then ${n} app${n === 1 ? '' : 's'} went unhealthy` : '';
}
