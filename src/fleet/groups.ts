import type { ApplicationSet, ApplicationSetApplicationStatus } from '../infra/argocd/types.js';
import type { FleetApp } from './model.js';
import type { StatusProblem } from './status.js';
import { isRollingSync } from './rollingsync.js';
import { MIN_CHUNKED, buildNextChunk, chunked } from './chunks.js';
import { truncate } from '../core/format.js';
import { appDown, syncFailed, waitingForStep } from './rules/index.js';

/**
 * Problems grouped the way on-call reads them: one line per ApplicationSet (or per service, for apps
 * named `<service>-<cluster>` without one) and shared reason, with how many of the group's clusters
 * it hits. "auth-service · Degraded on 12/12 clusters · CrashLoopBackOff" is the answer; twelve lines
 * that differ only in a pod hash are not. Pure: status, alerts and digests share it.
 */

/**
 * What is wrong, worst first. `waiting` is an app that is merely OutOfSync because a RollingSync step
 * has not reached it yet (Waiting or Pending in its ApplicationSet's status): not a problem of its own.
 */
export type ProblemKind = 'failed' | 'degraded' | 'missing' | 'unknown' | 'outofsync' | 'waiting';

export const PROBLEM_KIND_ORDER: readonly ProblemKind[] = [
  'failed',
  'degraded',
  'missing',
  'unknown',
  'outofsync',
  'waiting',
];

/** How a kind reads after the group name: "Degraded on 12/12 clusters". */
export const PROBLEM_KIND_LABEL: Record<ProblemKind, string> = {
  failed: 'sync failed',
  degraded: 'Degraded',
  missing: 'Missing',
  unknown: 'Unknown',
  outofsync: 'OutOfSync',
  waiting: 'waiting for its RollingSync step',
};

/** One problem app as status computes it (its reason is Argo CD's message, unshortened). */
export interface ProblemRow extends StatusProblem {
  since?: string;
  appSet?: string;
}

export interface ProblemGroupApp {
  app: string;
  instance: string;
  cluster: string;
  since?: string;
}

export interface ProblemGroup {
  /** Stable identity: instance, group name, kind and short reason. */
  key: string;
  instance: string;
  /** The ApplicationSet, the service (`auth-service` of `auth-service-prod-eu-west-1`), or the app. */
  name: string;
  by: 'appset' | 'service' | 'app';
  kind: ProblemKind;
  /** The shared reason, one line, without pod hashes, UIDs or URLs. */
  reason: string;
  apps: ProblemGroupApp[];
  /** Distinct clusters among the group's problem apps. */
  clusters: number;
  /** Distinct clusters the group (appset/service) has apps on in the selection: the denominator of "12/12". */
  clustersOfGroup: number;
  /** The oldest `since` of its apps. */
  since?: string;
  /** The RollingSync step the apps wait for (kind `waiting`). */
  step?: string;
}

/** The group an app belongs to: its ApplicationSet, else the service of a `<service>-<cluster>` name, else itself. */
export function groupOf(app: { app: string; cluster: string; appSet?: string }): {
  name: string;
  by: ProblemGroup['by'];
} {
  if (app.appSet) return { name: app.appSet, by: 'appset' };
  const suffix = `-${app.cluster}`;
  if (app.app.length > suffix.length && app.app.endsWith(suffix))
    return { name: app.app.slice(0, -suffix.length), by: 'service' };
  return { name: app.app, by: 'app' };
}

/** groupOf's name of an app without an ApplicationSet, without building the `-<cluster>` suffix. */
function serviceOf(app: string, cluster: string): string {
  const cut = app.length - cluster.length - 1;
  return cut > 0 && app.charCodeAt(cut) === 45 /* - */ && app.endsWith(cluster) ? app.slice(0, cut) : app;
}

/** The app's entry in its RollingSync ApplicationSet's status, if any. */
export function rolloutEntry(
  appSet: ApplicationSet | undefined,
  app: string,
): ApplicationSetApplicationStatus | undefined {
  if (!appSet || !isRollingSync(appSet)) return undefined;
  let byApp = entriesByApp.get(appSet);
  if (!byApp) {
    byApp = new Map();
    // The first entry of a name, as a search of the list would find it.
    for (const e of appSet.status?.applicationStatus ?? []) if (!byApp.has(e.application)) byApp.set(e.application, e);
    entriesByApp.set(appSet, byApp);
  }
  return byApp.get(app);
}

// An ApplicationSet's status lists every app it generated: indexed once per object (the mirror replaces the
// object on every change, so an index never outlives the status it was built from).
const entriesByApp = new WeakMap<ApplicationSet, Map<string, ApplicationSetApplicationStatus>>();

/**
 * The kind of a problem app, by the rules' judgements of it: a failed operation (sync-failed) outranks the
 * health it left behind; then down health (app-degraded: Degraded or Missing); an OutOfSync, otherwise
 * healthy app whose step the rollout has not reached (out-of-sync's `waitingForStep`) is only waiting its turn.
 */
export function problemKind(
  fa: FleetApp,
  sync: string,
  health: string,
  entry?: ApplicationSetApplicationStatus,
): ProblemKind {
  if (syncFailed(fa.app)) return 'failed';
  const down = appDown(fa.app)?.health;
  if (down === 'Degraded') return 'degraded';
  if (down === 'Missing') return 'missing';
  if (health === 'Unknown' || sync === 'Unknown') return 'unknown';
  if (waitingForStep(entry)) return 'waiting';
  return 'outofsync';
}

// kubelet's CrashLoopBackOff message names the pod (hash, namespace, UID) and the current back-off:
// all of it differs per cluster and per restart, none of it tells on-call anything the reason does not.
const CRASH_LOOP = /back-off \S+ restarting failed container(?:=\S+)?(?: pod=\S+)?/g;
const QUOTED_URL = /\s*"?\b[a-z][a-z0-9+.-]*:\/\/[^\s"]+"?/gi;
const UID = /[_(]*\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b\)?/gi;
// ReplicaSet and pod suffixes: auth-service-7d4b9c6f5d-x2x9k -> auth-service.
const POD_HASH = /\b([a-z0-9]+(?:-[a-z0-9]+)*?)-[0-9a-f]{8,10}(?:-[a-z0-9]{5})?\b/g;
const RESOURCE_PREFIX = /^([A-Z][A-Za-z]+\/[a-z0-9.-]+) (?:Degraded|Missing|Progressing|Unknown|Suspended): (.*)$/;

/**
 * The first clause of a reason, shortened for a summary line: the resource moves behind its message,
 * and pod hashes, UIDs and URLs go (they differ per cluster and are one `app X` away). `keep: 'ends'` keeps the
 * end of a long one too: an error chain's root cause ("context deadline exceeded").
 */
export function shortReason(reason: string, max = 110, keep: 'head' | 'ends' = 'head'): string {
  // Many apps share a reason word for word (the same webhook, the same missing secret): shortened once each.
  const memo = max === 110 && keep === 'head';
  const known = memo ? shortReasons.get(reason) : undefined;
  if (known !== undefined) return known;
  let first = reason.split('; ')[0].trim();
  first = first.replace(CRASH_LOOP, 'CrashLoopBackOff: back-off restarting failed container');
  first = first.replace(QUOTED_URL, '').replace(UID, '').replace(POD_HASH, '$1');
  const resource = RESOURCE_PREFIX.exec(first);
  if (resource) first = `${resource[2]} (${resource[1]})`;
  first = first
    .replace(/\s+/g, ' ')
    .replace(/\s+([:,)])/g, '$1')
    .trim();
  const short = truncate(first, max, keep);
  if (memo) shortReasons.set(reason, short);
  return short;
}

/**
 * Reasons shortened the way group lines are, kept for the groupings that use them: a reason no grouping has shown
 * since the one before last is forgotten. Most problems keep their reason from one answer to the next, so each is
 * shortened once; mid-incident at 50,000 apps, 30,000 problem apps can each have one of their own (pod hashes,
 * cluster names), and shortening them again in every answer was a third of it. Forgotten by age rather than at a
 * size limit: under steady churn, the reasons of apps long fixed made up most of a memo that forgot at 20,000.
 */
class ReasonMemo {
  private current = new Map<string, string>();
  private previous = new Map<string, string>();
  /** Past this, the memo turns over without a grouping (reasons shortened outside any, such as `rollout`'s). */
  private limit = MIN_REASONS;

  get(reason: string): string | undefined {
    const known = this.current.get(reason);
    if (known !== undefined) return known;
    const older = this.previous.get(reason);
    if (older !== undefined) {
      this.previous.delete(reason);
      this.set(reason, older);
    }
    return older;
  }

  set(reason: string, short: string): void {
    if (this.current.size >= this.limit) this.turnOver(0);
    this.current.set(reason, short);
  }

  /** A grouping of `rows` problems starts: what the one before it used stays, anything older goes. */
  turnOver(rows: number): void {
    this.previous = this.current;
    this.current = new Map();
    this.limit = Math.max(MIN_REASONS, 2 * rows);
  }

  get size(): number {
    return this.current.size + this.previous.size;
  }
}

const MIN_REASONS = 20_000;
const shortReasons = new ReasonMemo();

/** How many shortened reasons are kept (for tests). */
export function shortReasonsKept(): number {
  return shortReasons.size;
}

/** Distinct clusters a group (instance, name) has apps on: the denominator of "Degraded on 12/12 clusters". */
export type ClustersOfGroup = (instance: string, name: string) => number | undefined;

/** Per instance, per group name, the clusters of a run of apps. */
function groupClusters(apps: readonly FleetApp[]): Map<string, Map<string, Set<string>>> {
  const out = new Map<string, Map<string, Set<string>>>();
  for (const fa of apps) {
    let names = out.get(fa.instance);
    if (!names) out.set(fa.instance, (names = new Map()));
    const name = fa.appSet || serviceOf(fa.app.metadata.name, fa.cluster);
    let clusters = names.get(name);
    if (!clusters) names.set(name, (clusters = new Set()));
    clusters.add(fa.cluster);
  }
  return out;
}

/**
 * The cluster counts of the named groups among `scope`. A large scope (the whole fleet of a plain `status`) is
 * read per chunk, kept while its apps stay the same (src/fleet/chunks.ts); a smaller one in one pass that
 * allocates nothing for apps of other groups.
 */
export function clustersOfGroups(
  scope: Iterable<FleetApp>,
  groups: Iterable<{ instance: string; name: string }>,
  version?: number,
): ClustersOfGroup {
  const wanted = new Map<string, Map<string, Set<string>>>();
  for (const g of groups) {
    let names = wanted.get(g.instance);
    if (!names) wanted.set(g.instance, (names = new Map()));
    if (!names.has(g.name)) names.set(g.name, new Set());
  }
  if (Array.isArray(scope) && scope.length >= MIN_CHUNKED) return clustersFromChunks(scope, wanted, version);
  for (const fa of scope) {
    const names = wanted.get(fa.instance);
    if (!names) continue;
    const clusters = names.get(fa.appSet || serviceOf(fa.app.metadata.name, fa.cluster));
    clusters?.add(fa.cluster);
  }
  return (instance, name) => wanted.get(instance)?.get(name)?.size;
}

/**
 * Reads, as clustersOfGroups would, the group clusters of the next chunk of the fleet's own list (`apps`) that
 * changed since they were read; false when no chunk changed.
 */
export function groupClustersOfNextChunk(apps: readonly FleetApp[]): boolean {
  return apps.length >= MIN_CHUNKED && buildNextChunk(apps, groupClusters) !== undefined;
}

/**
 * `clustersOfGroups` over the kept chunks of a large list. A chunk names few groups and the fleet lists apps by
 * name, so a group's apps mostly lie in one chunk: each chunk's own groups are looked up among the wanted ones,
 * and a group found in one chunk only is counted by that chunk's set, never copied. Mid-incident at 50,000 apps,
 * copying every wanted group's clusters into a set of its own was a tenth of the answer.
 */
function clustersFromChunks(
  scope: readonly FleetApp[],
  wanted: ReadonlyMap<string, ReadonlyMap<string, unknown>>,
  version: number | undefined,
): ClustersOfGroup {
  // instance -> name -> the only chunk's set, until a second chunk has the group: then a set of their union.
  const found = new Map<string, Map<string, { clusters: ReadonlySet<string>; own: boolean }>>();
  for (const { value: chunk } of chunked(scope, groupClusters, version)) {
    for (const [instance, names] of chunk) {
      const want = wanted.get(instance);
      if (!want) continue;
      let into = found.get(instance);
      for (const [name, clusters] of names) {
        if (!want.has(name)) continue;
        if (!into) found.set(instance, (into = new Map()));
        const seen = into.get(name);
        if (!seen) into.set(name, { clusters, own: false });
        else {
          const union = seen.own ? (seen.clusters as Set<string>) : new Set(seen.clusters);
          for (const c of clusters) union.add(c);
          into.set(name, { clusters: union, own: true });
        }
      }
    }
  }
  return (instance, name) =>
    wanted.get(instance)?.has(name) ? (found.get(instance)?.get(name)?.clusters.size ?? 0) : undefined;
}

/**
 * Groups problem rows by (instance, group, kind, short reason) — the shortened first clause is the
 * shared reason on purpose: three syncs refused by three different admission webhooks are one line,
 * "failed calling webhook", and `app X` has each one's full message — worst kind first, then the widest,
 * then the oldest. `scope` is every selected app, for the per-group cluster denominators (`version`: the fleet's,
 * when `scope` is the fleet's own list); `kindOf`
 * classifies a row (status passes one that reads RollingSync entries).
 */
export function groupProblems(
  rows: readonly ProblemRow[],
  scope: Iterable<FleetApp>,
  kindOf: (row: ProblemRow, index: number) => ProblemKind,
  stepOf: (row: ProblemRow, index: number) => string | undefined = () => undefined,
  version?: number,
): ProblemGroup[] {
  shortReasons.turnOver(rows.length);
  // Each group is made once, as it is returned; its oldest time is gathered beside it.
  const groups = new Map<string, { group: ProblemGroup; sinceMs: number }>();
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    const kind = kindOf(row, i);
    const r = groupingOf(row, kind, kind === 'waiting' ? stepOf(row, i) : undefined);
    let g = groups.get(r.key);
    if (!g) {
      const group: ProblemGroup = {
        key: r.key,
        instance: row.instance,
        name: r.name,
        by: r.by,
        kind,
        reason: r.reason,
        apps: [],
        clusters: 0,
        clustersOfGroup: 1,
      };
      if (r.step) group.step = r.step;
      g = { group, sinceMs: Number.POSITIVE_INFINITY };
      groups.set(r.key, g);
    }
    g.group.apps.push(r.app);
    if (row.since && (!g.group.since || r.sinceMs < g.sinceMs)) {
      g.group.since = row.since;
      g.sinceMs = r.sinceMs;
    }
  }
  const gathered = [...groups.values()];
  const clustersOfGroup = clustersOfGroups(
    scope,
    gathered.map((g) => g.group),
    version,
  );
  for (const { group } of gathered) {
    const apps = group.apps.sort((a, b) =>
      a.cluster < b.cluster ? -1 : a.cluster > b.cluster ? 1 : a.app < b.app ? -1 : a.app > b.app ? 1 : 0,
    );
    // Sorted by cluster, its distinct clusters are where the cluster changes.
    let clusters = 0;
    for (let i = 0; i < apps.length; i++) if (i === 0 || apps[i].cluster !== apps[i - 1].cluster) clusters++;
    group.clusters = clusters;
    group.clustersOfGroup = Math.max(clustersOfGroup(group.instance, group.name) ?? 1, clusters);
  }
  return gathered
    .sort((x, y) => {
      const a = x.group;
      const b = y.group;
      return (
        KIND_RANK[a.kind] - KIND_RANK[b.kind] ||
        b.apps.length - a.apps.length ||
        x.sinceMs - y.sinceMs ||
        (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) ||
        (a.reason < b.reason ? -1 : a.reason > b.reason ? 1 : 0)
      );
    })
    .map((g) => g.group);
}

/**
 * Makes what groupProblems reads of each row (its group, shortened reason and key) ahead of a grouping, so that one
 * finds them made.
 */
export function prepareGroupings(
  rows: readonly ProblemRow[],
  kindOf: (row: ProblemRow, index: number) => ProblemKind,
  stepOf: (row: ProblemRow, index: number) => string | undefined,
): void {
  for (let i = 0; i < rows.length; i++) {
    const kind = kindOf(rows[i], i);
    groupingOf(rows[i], kind, kind === 'waiting' ? stepOf(rows[i], i) : undefined);
  }
}

/** What grouping reads of a row, and the group it went to last (its key, for the kind and step it had then). */
interface RowGrouping {
  name: string;
  by: ProblemGroup['by'];
  app: ProblemGroupApp;
  /** `since` in ms. */
  sinceMs: number;
  kind: ProblemKind;
  step?: string;
  reason: string;
  key: string;
}

// Rows are never changed once made, and status keeps each problem's row while its app and RollingSync entry stay
// the same: what a row says for grouping is kept with it. Mid-incident at 50,000 apps, making it anew for every row
// of every answer (the group's name, the short reason, the key, the app's entry) was most of the grouping.
const groupings = new WeakMap<ProblemRow, RowGrouping>();

function groupingOf(row: ProblemRow, kind: ProblemKind, step: string | undefined): RowGrouping {
  const kept = groupings.get(row);
  if (kept && kept.kind === kind && kept.step === step) return kept;
  const { name, by } = kept ?? groupOf(row);
  // Waiting apps share their reason by construction: the step they wait for.
  const reason =
    kind === 'waiting'
      ? step
        ? `step ${step} has not reached them yet`
        : 'their step has not started yet'
      : shortReason(row.reason);
  const grouping: RowGrouping = {
    name,
    by,
    app: kept?.app ?? {
      app: row.app,
      instance: row.instance,
      cluster: row.cluster,
      ...(row.since ? { since: row.since } : {}),
    },
    sinceMs: kept?.sinceMs ?? (row.since ? Date.parse(row.since) : Number.POSITIVE_INFINITY),
    kind,
    ...(step ? { step } : {}),
    reason,
    key: `${row.instance}\u0000${name}\u0000${kind}\u0000${reason}`,
  };
  groupings.set(row, grouping);
  return grouping;
}

const KIND_RANK = Object.fromEntries(PROBLEM_KIND_ORDER.map((k, i) => [k, i])) as Record<ProblemKind, number>;
