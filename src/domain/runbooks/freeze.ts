import { isDeepStrictEqual } from 'node:util';
import { RollcallError } from '../../core/errors.js';
import { suggest } from '../../core/suggest.js';
import type { ArgoApi } from '../../infra/argocd/api.js';
import { isArgoError } from '../../infra/argocd/errors.js';
import {
  canonicalWindow,
  goDuration,
  windowActive,
  windowEnd,
  windowIdentity,
  windowMatches,
} from '../../infra/argocd/sync-windows.js';
import type { AppProject, SyncWindow } from '../../infra/argocd/types.js';
import type { RedisClient } from '../../infra/redis.js';
import { keyBase } from '../../infra/redis.js';
import { isFreezeWindow, type Freeze } from '../../fleet/freeze.js';
export { freezeDescription } from '../../fleet/freeze.js';
import type { FleetApp, FleetView } from '../../fleet/model.js';
import { selectApps, type AppSelector } from '../../fleet/select.js';

/**
 * Freezing deploys the way Argo CD allows (argocd-facts A6/A8; pkg/apis/application/v1alpha1 SyncWindow): a
 * deny sync window in each AppProject that covers the scope. Argo CD then writes no auto-sync operation, holds
 * RollingSync's operations Running ("Sync operation blocked by sync window") and, unless the window has
 * manualSync, refuses manual syncs ("cannot sync: blocked by sync window"). rollcall writes the window the way
 * `argocd proj windows add` does (GET the project, append, PUT it back with its resourceVersion), records it,
 * and `unfreeze` removes exactly that window, refusing when someone changed it.
 */

export type { Freeze } from '../../fleet/freeze.js';

export class FreezeError extends RollcallError {
  declare readonly code: 'unknown_target' | 'already_frozen' | 'not_frozen' | 'conflict' | 'ambiguous_target';
  constructor(code: FreezeError['code'], message: string, suggestions: string[] = []) {
    super(code, message, suggestions.length ? { suggestions } : {});
  }
}

/** Longest for= a freeze takes: its window fires once a year, and a longer one would overlap the next firing. */
export const MAX_FREEZE_MS = 30 * 86_400_000;

/** What one window covers: Argo CD's applications / clusters lists (andOperator when both narrow). */
export interface FreezeScope {
  applications?: string[];
  clusters?: string[];
  andOperator?: boolean;
}

/** One AppProject the freeze writes a window into, and the apps that window holds today. */
export interface PlannedWindow {
  instance: string;
  project: string;
  scope: FreezeScope;
  covers: string[];
}

export interface FreezePlan {
  /** The freeze as typed (chat grammar), what `frozen` shows and `unfreeze` takes. */
  target: string;
  windows: PlannedWindow[];
}

const projectOf = (a: FleetApp) => a.app.spec.project || 'default';

/** The selection in the chat grammar: `auth-* cluster=prod-eu1 -l team=auth`. */
export function selectorText(sel: AppSelector): string {
  const parts = [...(sel.patterns ?? [])];
  if (sel.cluster) parts.push(`cluster=${sel.cluster}`);
  if (sel.project) parts.push(`project=${sel.project}`);
  if (sel.appSet) parts.push(`appset=${sel.appSet}`);
  if (sel.instance) parts.push(`instance=${sel.instance}`);
  if (sel.labels) parts.push(`-l ${sel.labels.trim()}`);
  return parts.join(' ');
}

/** The destinations the apps name their cluster by (a window's `clusters` glob the name or the server). */
function destinationsOf(apps: FleetApp[]): string[] {
  return [...new Set(apps.map((a) => a.app.spec.destination?.name || a.app.spec.destination?.server || ''))]
    .filter(Boolean)
    .sort();
}

/**
 * The narrowest window scope that holds exactly the selected apps of one project today, and the apps it will
 * hold tomorrow as the selection would: names and globs become `applications`, a cluster the destinations,
 * both at once `andOperator`. Anything else (labels, an appset) becomes the exact app names, since a window
 * cannot read labels. Checked with Argo CD's own matching: a scope that would hold other apps falls back to
 * the names.
 */
function scopeFor(sel: AppSelector, selected: FleetApp[], inProject: FleetApp[]): FreezeScope {
  const names = selected.map((a) => a.app.metadata.name).sort();
  const byShape = !sel.labels && !sel.appSet && (sel.patterns?.length || sel.cluster);
  let scope: FreezeScope = { applications: names };
  if (byShape) {
    scope = {};
    if (sel.patterns?.length) scope.applications = [...sel.patterns];
    if (sel.cluster) scope.clusters = destinationsOf(selected);
    if (scope.applications && scope.clusters) scope.andOperator = true;
  }
  const held = inProject.filter((a) => windowMatches(denyOf(scope), a.app)).map((a) => a.app.metadata.name);
  return isDeepStrictEqual(held.sort(), names) ? scope : { applications: names };
}

function denyOf(scope: FreezeScope): SyncWindow {
  return { kind: 'deny', schedule: '* * * * *', duration: '1h', ...scope };
}

/**
 * What freezing `selector` (or a whole project, `project` alone) writes: one window per AppProject of the
 * selected apps, per instance. A whole project is frozen on every instance that has it, apps or not.
 */
export async function planFreeze(
  fleet: FleetView,
  argocd: ReadonlyMap<string, ArgoApi>,
  input: { selector?: AppSelector; project?: string; instance?: string },
): Promise<FreezePlan> {
  const sel: AppSelector = { ...input.selector };
  const wholeProject = !!input.project && !Object.values(sel).some((v) => v !== undefined && v.length !== 0);
  if (wholeProject) return planProject(fleet, argocd, input.project!, input.instance);
  if (input.project) sel.project = input.project;
  if (input.instance) sel.instance = input.instance;
  const selected = selectApps(fleet, sel);
  if (!selected.length)
    throw new FreezeError('unknown_target', `no app matches \`${selectorText(sel)}\`: nothing to freeze`);
  const groups = new Map<string, FleetApp[]>();
  for (const a of selected) {
    const key = `${a.instance}\u0000${projectOf(a)}`;
    groups.set(key, [...(groups.get(key) ?? []), a]);
  }
  const windows: PlannedWindow[] = [];
  for (const apps of groups.values()) {
    const { instance } = apps[0];
    const project = projectOf(apps[0]);
    const inProject = fleet.apps().filter((a) => a.instance === instance && projectOf(a) === project);
    windows.push({
      instance,
      project,
      scope: scopeFor(sel, apps, inProject),
      covers: apps.map((a) => a.app.metadata.name).sort(),
    });
  }
  windows.sort((a, b) => `${a.instance}/${a.project}`.localeCompare(`${b.instance}/${b.project}`));
  return { target: selectorText(sel), windows };
}

async function planProject(
  fleet: FleetView,
  argocd: ReadonlyMap<string, ArgoApi>,
  project: string,
  instance?: string,
): Promise<FreezePlan> {
  const instances = instance ? [instance] : [...argocd.keys()];
  if (instance && !argocd.has(instance))
    throw new FreezeError('unknown_target', `no Argo CD instance named ${instance}`, suggest(instance, argocd.keys()));
  const windows: PlannedWindow[] = [];
  for (const name of instances) {
    try {
      await argocd.get(name)!.getProject(project);
    } catch (error) {
      if (isArgoError(error, 'not_found')) continue;
      throw error;
    }
    const covers = fleet
      .apps()
      .filter((a) => a.instance === name && projectOf(a) === project)
      .map((a) => a.app.metadata.name)
      .sort();
    windows.push({ instance: name, project, scope: { applications: ['*'] }, covers });
  }
  if (!windows.length) {
    const known = new Set(fleet.apps().map(projectOf));
    throw new FreezeError(
      'unknown_target',
      `no AppProject named ${project} on ${instance ?? instances.join(', ')}`,
      suggest(project, known),
    );
  }
  return { target: `project=${project}${instance ? ` instance=${instance}` : ''}`, windows };
}

// ---------- the window ----------

const MINUTE = 60_000;

/** When a freeze of `forMs` from `now` ends: rounded up to the minute, as its window's duration is. */
export function freezeUntil(now: Date, forMs: number): Date {
  return new Date(Math.ceil((now.getTime() + forMs) / MINUTE) * MINUTE);
}

/**
 * A deny window active from a minute before `now` to `forMs` after it (rounded up to the minute), or, without
 * `forMs`, until it is removed. Argo CD holds a tick at s over the open interval (s, s + duration), so "now,
 * for D" is a once-a-year tick at the minute before now ("M H DOM MON *" in UTC) whose duration reaches past
 * now + D; the extra minute before absorbs a clock of Argo CD's that runs behind ours. "Until removed" is a
 * tick every minute lasting an hour: always active.
 */
export function freezeWindow(
  scope: FreezeScope,
  opts: { now: Date; forMs?: number; manualBlocked: boolean; description: string },
): { window: SyncWindow; until?: Date } {
  const base = {
    kind: 'deny' as const,
    ...scope,
    manualSync: !opts.manualBlocked,
    timeZone: 'UTC',
    description: opts.description,
  };
  if (opts.forMs === undefined) return { window: canonicalWindow({ ...base, schedule: '* * * * *', duration: '1h' }) };
  const now = opts.now.getTime();
  const start = new Date(Math.floor(now / MINUTE) * MINUTE - MINUTE);
  const end = freezeUntil(opts.now, opts.forMs).getTime();
  const schedule = `${start.getUTCMinutes()} ${start.getUTCHours()} ${start.getUTCDate()} ${start.getUTCMonth() + 1} *`;
  const window = canonicalWindow({ ...base, schedule, duration: goDuration(end - start.getTime()) });
  // The promise made in the preview, checked with Argo CD's own reading of the window.
  const until = windowEnd(window, opts.now);
  if (!windowActive(window, opts.now) || !until || until.getTime() < now + opts.forMs)
    throw new Error(`freeze window ${JSON.stringify(window)} does not cover now for ${opts.forMs} ms`);
  return { window, until };
}

// ---------- writing and removing ----------

const sameWindow = (a: SyncWindow, b: SyncWindow) => isDeepStrictEqual(canonicalWindow(a), canonicalWindow(b));

/** How often a project changed under rollcall (resourceVersion conflict) is read again before giving up. */
const PROJECT_ATTEMPTS = 3;

/** One conditional update of a project: read, change, PUT with the resourceVersion read; again on a conflict. */
async function changeProject(
  api: ArgoApi,
  name: string,
  change: (project: AppProject) => AppProject | 'done',
): Promise<'changed' | 'done'> {
  for (let attempt = 1; ; attempt++) {
    const project = await api.getProject(name);
    const next = change(project);
    if (next === 'done') return 'done';
    try {
      await api.updateProject(next);
      return 'changed';
    } catch (error) {
      if (!isArgoError(error, 'modified')) throw error;
      if (attempt >= PROJECT_ATTEMPTS)
        throw new FreezeError(
          'conflict',
          `AppProject ${name} on instance ${api.instance} changed under rollcall ${PROJECT_ATTEMPTS} times in a row ` +
            `(Argo CD: "the object has been modified"): nothing was written to it. Someone or something is editing it; try again once it settles.`,
        );
    }
  }
}

function describeWindow(w: SyncWindow): string {
  const scope = [
    w.applications?.length ? `applications ${w.applications.join(',')}` : '',
    w.clusters?.length ? `clusters ${w.clusters.join(',')}` : '',
    w.namespaces?.length ? `namespaces ${w.namespaces.join(',')}` : '',
  ].filter(Boolean);
  return `${w.kind} "${w.schedule}" for ${w.duration}${scope.length ? ` over ${scope.join(w.andOperator ? ' and ' : ' or ')}` : ''}${w.manualSync ? ', manual syncs allowed' : ''}`;
}

/** Adds the freeze's window; 'done' when an earlier attempt already did (its answer was lost). */
export async function addFreezeWindow(api: ArgoApi, freeze: Freeze): Promise<'changed' | 'done'> {
  return changeProject(api, freeze.project, (project) => {
    const windows = project.spec.syncWindows ?? [];
    if (windows.some((w) => sameWindow(w, freeze.window))) return 'done';
    const twin = windows.find((w) => windowIdentity(w) === windowIdentity(freeze.window));
    if (twin)
      throw new FreezeError(
        'already_frozen',
        `AppProject ${freeze.project} on instance ${api.instance} already has a window with this schedule, duration and scope ` +
          `(${twin.description ? `"${twin.description}"` : describeWindow(twin)}); Argo CD refuses a second one. \`frozen\` lists rollcall's freezes.`,
      );
    const next = structuredClone(project);
    next.spec.syncWindows = [...windows, freeze.window];
    return next;
  });
}

/** Where rollcall's window went: still there as written, gone, or there but changed by someone. */
export function findFreezeWindow(
  project: AppProject,
  freeze: Freeze,
): { state: 'present'; index: number } | { state: 'gone' } | { state: 'edited'; index: number; now: SyncWindow } {
  const windows = project.spec.syncWindows ?? [];
  const index = windows.findIndex((w) => sameWindow(w, freeze.window));
  if (index >= 0) return { state: 'present', index };
  const runMark = `(run ${freeze.runId})`;
  const edited = windows.findIndex(
    (w) =>
      (isFreezeWindow(w) && !!w.description?.includes(runMark)) || windowIdentity(w) === windowIdentity(freeze.window),
  );
  return edited >= 0 ? { state: 'edited', index: edited, now: windows[edited] } : { state: 'gone' };
}

export function editedMessage(freeze: Freeze, instance: string, index: number, now: SyncWindow): string {
  return (
    `rollcall's window in AppProject ${freeze.project} on instance ${instance} was changed since the freeze: it is now ${describeWindow(now)} ` +
    `(rollcall wrote ${describeWindow(freeze.window)}). rollcall removes only the window it wrote: check the change, then remove it by hand ` +
    `(\`argocd proj windows delete ${freeze.project} ${index}\`) or put it back as it was and run unfreeze again.`
  );
}

/** Removes exactly the freeze's window; 'done' when it is already gone. Refuses a window someone changed. */
export async function removeFreezeWindow(api: ArgoApi, freeze: Freeze): Promise<'changed' | 'done'> {
  return changeProject(api, freeze.project, (project) => {
    const found = findFreezeWindow(project, freeze);
    if (found.state === 'gone') return 'done';
    if (found.state === 'edited')
      throw new FreezeError('conflict', editedMessage(freeze, api.instance, found.index, found.now));
    const next = structuredClone(project);
    const rest = (next.spec.syncWindows ?? []).filter((_, i) => i !== found.index);
    // An empty list is not stored (omitempty): the project reads as it did before the freeze.
    if (rest.length) next.spec.syncWindows = rest;
    else delete next.spec.syncWindows;
    return next;
  });
}

// ---------- what is frozen ----------

/** rollcall's freezes in Redis, one hash field per window: `frozen`, `unfreeze`, the rules and the digest read them. */
export class FreezeStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  private get key() {
    return `${keyBase(this.prefix)}freezes`;
  }

  private field(f: Pick<Freeze, 'runId' | 'instance' | 'project'>): string {
    return `${f.runId}/${f.instance}/${f.project}`;
  }

  async save(freeze: Freeze): Promise<void> {
    await this.redis.hset(this.key, this.field(freeze), JSON.stringify(freeze));
  }

  async remove(freeze: Pick<Freeze, 'runId' | 'instance' | 'project'>): Promise<void> {
    await this.redis.hdel(this.key, this.field(freeze));
  }

  /** Oldest first. */
  async list(): Promise<Freeze[]> {
    const all = await this.redis.hgetall(this.key);
    return Object.values(all)
      .map((raw) => JSON.parse(raw) as Freeze)
      .sort((a, b) => a.at.localeCompare(b.at) || a.project.localeCompare(b.project));
  }

  async ofRun(runId: string): Promise<Freeze[]> {
    return (await this.list()).filter((f) => f.runId === runId);
  }

  async ofIncident(incident: string): Promise<Freeze[]> {
    return (await this.list()).filter((f) => f.incident === incident);
  }
}

/** Freezes grouped by the run that wrote them (one `freeze` command), oldest first. */
export function freezesByRun(freezes: readonly Freeze[]): Freeze[][] {
  const runs = new Map<string, Freeze[]>();
  for (const f of freezes) runs.set(f.runId, [...(runs.get(f.runId) ?? []), f]);
  return [...runs.values()];
}
