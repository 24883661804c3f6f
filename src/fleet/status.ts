import type { Application } from '../infra/argocd/types.js';
import { byText, oneLine, since, truncate } from '../core/format.js';
import type { FleetApp } from './model.js';
import { MIN_CHUNKED, buildNextChunk, chunked } from './chunks.js';
import { isDown, syncFailed } from './rules/index.js';

/**
 * The state of the fleet as on-call reads it: counts by sync and health, per cluster, and the apps that
 * need attention with Argo CD's own reason. `status`, `clusters`, `rollout` and the Home tab all count
 * the same way through these.
 */

export interface StatusTotals {
  apps: number;
  sync: Record<string, number>;
  health: Record<string, number>;
}

export interface ClusterStatus extends StatusTotals {
  instance: string;
  cluster: string;
}

export interface StatusProblem {
  app: string;
  instance: string;
  cluster: string;
  sync: string;
  health: string;
  reason: string;
}

/** A problem with what the blocks need besides the JSON contract. */
export interface ProblemDetail extends StatusProblem {
  since?: string;
  /** What `since` is: the health transition of a health problem, the last operation, or only the health transition of an app whose problem is its sync. */
  sinceKind?: 'health' | 'operation' | 'other';
  appSet?: string;
  namespace?: string;
}

export interface FleetSummary {
  total: StatusTotals;
  clusters: ClusterStatus[];
  problems: ProblemDetail[];
  /** instance -> appsets owning the selected apps. */
  appSets: Map<string, Set<string>>;
}

// Argo CD reports an app without status fields while it has not been reconciled yet; the
// foundation contract counts those under "Unknown".
export function syncOf(app: Application): string {
  return app.status?.sync?.status ?? 'Unknown';
}
export function healthOf(app: Application): string {
  return app.status?.health?.status ?? 'Unknown';
}

/**
 * OutOfSync/Unknown sync, down health (Degraded or Missing: app-degraded's judgement, `isDown`) or Unknown
 * health. Progressing and Suspended are not problems.
 */
export function isProblem(sync: string, health: string): boolean {
  return sync === 'OutOfSync' || sync === 'Unknown' || isDown(health) || health === 'Unknown';
}

/** How many of these health counts are down (Degraded or Missing), as app-degraded judges health. */
export function downCount(health: Record<string, number>): number {
  return Object.entries(health).reduce((n, [status, count]) => n + (isDown(status) ? count : 0), 0);
}

const MAX_REASON = 500;

/**
 * Why an app is not fine, from what Argo CD says: the failed operation's message, the resources that
 * failed to sync, unhealthy resources' messages, then conditions.
 */
export function problemReason(app: Application, now: Date = new Date()): string {
  return reasonOf(app, now).text;
}

/** The reason and whether it read the clock (a running sync says for how long): only a clock-free one is kept. */
function reasonOf(app: Application, now: Date): { text: string; timed: boolean } {
  const status = app.status;
  if (!status || (!status.sync && !status.health))
    return { text: 'Argo CD has not reported a status for this app yet (not reconciled).', timed: false };
  const parts: string[] = [];
  let timed = false;
  const op = status.operationState;
  if (op?.message && syncFailed(app)) parts.push(oneLine(op.message));
  const failed = op?.syncResult?.resources?.filter((r) => r.status === 'SyncFailed') ?? [];
  for (const r of failed.slice(0, 3))
    parts.push(`${r.kind}/${r.name}${r.message ? `: ${oneLine(r.message)}` : ' failed to sync'}`);
  if (failed.length > 3) parts.push(`${failed.length - 3} more resources failed to sync`);
  let unhealthy = 0;
  for (const r of status.resources ?? []) {
    const h = r.health;
    if (!h?.message || h.status === 'Healthy') continue;
    if (unhealthy++ < 3) parts.push(`${r.kind}/${r.name} ${h.status}: ${oneLine(h.message)}`);
  }
  if (unhealthy > 3) parts.push(`${unhealthy - 3} more unhealthy resources`);
  const conditions = [...(status.conditions ?? [])].sort(
    (a, b) => Number(/Warning$/.test(a.type)) - Number(/Warning$/.test(b.type)),
  );
  for (const c of conditions.slice(0, 3)) parts.push(`${c.type}: ${oneLine(c.message)}`);
  if (!parts.length) {
    const sync = syncOf(app);
    const health = healthOf(app);
    // A sync window holds an operation Running with its own message; say so rather than "running".
    if (op?.phase === 'Running') {
      timed = !!op.startedAt;
      parts.push(
        `sync running${op.startedAt ? ` for ${since(op.startedAt, now)}` : ''}${op.message ? `: ${oneLine(op.message)}` : ''}`,
      );
    } else if (sync === 'OutOfSync' && health === 'Healthy')
      parts.push('live state differs from the target revision; not synced yet');
    else if (health === 'Missing') parts.push('its resources do not exist in the cluster (never synced, or deleted)');
    // Argo CD 3.x leaves resource health out of List responses (B6); a Get has it.
    else if (health === 'Degraded')
      parts.push(
        `Degraded with no message in the app list; \`app ${app.metadata.name}\` shows the unhealthy resources`,
      );
    else parts.push(`sync ${sync}, health ${health}`);
  }
  return { text: truncate(parts.join('; '), MAX_REASON), timed };
}

// When the problem began: for a health problem the health transition; otherwise when the last
// operation finished (Argo CD records no "went OutOfSync" time, so that is the nearest thing).
function problemSince(app: Application, health: string): { since?: string; sinceKind?: ProblemDetail['sinceKind'] } {
  const h = app.status?.health?.lastTransitionTime;
  const op = app.status?.operationState;
  const opTime = op?.finishedAt ?? op?.startedAt;
  if (isDown(health) && h) return { since: h, sinceKind: 'health' };
  if (opTime) return { since: opTime, sinceKind: 'operation' };
  return h ? { since: h, sinceKind: 'other' } : {};
}

/** What an Application object alone says about a problem app: everything here reads no clock and no other object. */
interface ProblemJudgement {
  sync: string;
  health: string;
  /** The (sync, health) pair's number in `pairs`, for counting in arrays rather than by name. */
  pair: number;
  /** The reason, unless it reads the clock. */
  reason?: string;
  since?: string;
  sinceKind?: ProblemDetail['sinceKind'];
  /** `since` in ms, for ordering; +Infinity without one. */
  sinceMs: number;
}

// The mirror replaces an app's Application object on every change (it never edits one in place), so a
// judgement keyed by the object is dropped with it and can never describe an older state of the app. An app
// that is fine is only its pair's number: most of a fleet, kept in no object of its own.
const judgements = new WeakMap<Application, ProblemJudgement | number>();

// Every (sync, health) pair seen, numbered: a handful (Argo CD has five health and three sync states).
const pairs: { sync: string; health: string }[] = [];
const pairNumbers = new Map<string, Map<string, number>>();
function pairOf(sync: string, health: string): number {
  let byHealth = pairNumbers.get(sync);
  if (!byHealth) pairNumbers.set(sync, (byHealth = new Map()));
  let n = byHealth.get(health);
  if (n === undefined) {
    n = pairs.length;
    pairs.push({ sync, health });
    byHealth.set(health, n);
  }
  return n;
}

function judge(app: Application): ProblemJudgement | number {
  const known = judgements.get(app);
  if (known !== undefined) return known;
  const sync = syncOf(app);
  const health = healthOf(app);
  const pair = pairOf(sync, health);
  if (!isProblem(sync, health)) {
    judgements.set(app, pair);
    return pair;
  }
  const j: ProblemJudgement = { sync, health, pair, sinceMs: Number.POSITIVE_INFINITY };
  const reason = reasonOf(app, new Date());
  if (!reason.timed) j.reason = reason.text;
  const started = problemSince(app, health);
  if (started.since) {
    j.since = started.since;
    j.sinceKind = started.sinceKind;
    j.sinceMs = Date.parse(started.since);
  }
  judgements.set(app, j);
  return j;
}

/** Apps counted by (sync, health) pair number, and the pairs in the order they first came. */
interface PairCounts {
  apps: number;
  counts: number[];
  order: number[];
}

function countPair(c: PairCounts, pair: number): void {
  c.apps++;
  // Holes read as undefined: a pair's first app puts it in the order, as a name's first app put it in the record.
  const n = c.counts[pair];
  if (n === undefined || n === 0) {
    c.counts[pair] = 1;
    c.order.push(pair);
  } else c.counts[pair] = n + 1;
}

/** Counts by name, keyed in the order each sync and health value first came. */
function totalsOf(c: PairCounts): StatusTotals {
  const t: StatusTotals = { apps: c.apps, sync: {}, health: {} };
  for (const pair of c.order) {
    const { sync, health } = pairs[pair];
    const n = c.counts[pair];
    t.sync[sync] = (t.sync[sync] ?? 0) + n;
    t.health[health] = (t.health[health] ?? 0) + n;
  }
  return t;
}

/** What a run of apps adds up to, before any clock is read. */
interface Part {
  total: PairCounts;
  /** The clusters of the run (their numbers, `clusterNumber`) and each one's counts, in the same order. */
  clusterIds: number[];
  clusterCounts: PairCounts[];
  appSets: Map<string, Set<string>>;
  /** Places of the problem apps in the list passed over. */
  problems: number[];
}

// Every (instance, cluster) seen, numbered, so a summary adds up clusters in arrays rather than in maps of maps:
// merging the counts of 50 chunks, each on hundreds of clusters, was a tenth of a 50,000-app answer. A cluster
// removed from the fleet keeps its number (a fleet has hundreds of clusters, not millions).
const clusterNames: { instance: string; cluster: string }[] = [];
const clusterNumbers = new Map<string, Map<string, number>>();

function clusterNumber(numbers: Map<string, number>, instance: string, cluster: string): number {
  const id = clusterNames.length;
  clusterNames.push({ instance, cluster });
  numbers.set(cluster, id);
  return id;
}

function partOf(apps: readonly FleetApp[]): Part {
  const part: Part = {
    total: { apps: 0, counts: [], order: [] },
    clusterIds: [],
    clusterCounts: [],
    appSets: new Map(),
    problems: [],
  };
  const byCluster = new Map<number, PairCounts>();
  let lastInstance: string | undefined;
  let numbers: Map<string, number> | undefined;
  let sets: Set<string> | undefined;
  for (let i = 0; i < apps.length; i++) {
    const fa = apps[i];
    const j = judge(fa.app);
    const pair = typeof j === 'number' ? j : j.pair;
    countPair(part.total, pair);
    // Apps come grouped by instance: the per-instance maps are looked up again only when it changes.
    if (fa.instance !== lastInstance) {
      lastInstance = fa.instance;
      numbers = clusterNumbers.get(fa.instance);
      if (!numbers) clusterNumbers.set(fa.instance, (numbers = new Map()));
      sets = part.appSets.get(fa.instance);
    }
    const id = numbers!.get(fa.cluster) ?? clusterNumber(numbers!, fa.instance, fa.cluster);
    let c = byCluster.get(id);
    if (!c) {
      byCluster.set(id, (c = { apps: 0, counts: [], order: [] }));
      part.clusterIds.push(id);
      part.clusterCounts.push(c);
    }
    countPair(c, pair);
    if (fa.appSet) {
      if (!sets) part.appSets.set(fa.instance, (sets = new Set()));
      sets.add(fa.appSet);
    }
    if (typeof j !== 'number') part.problems.push(i);
  }
  part.problems = oldestFirst(apps, part.problems);
  return part;
}

/** A problem as ordered in a summary: oldest first, problems without a time (never reconciled) last, then by name. */
interface Aged {
  since?: string;
  /** `since` in ms. */
  ms: number;
  instance: string;
  app: string;
}

// Times are compared as numbers: a summary of thousands of problems sorts on every answer, and comparing the
// timestamps as text was most of the sort. Only two without a time (+Infinity both) or with one that does not parse
// (NaN) read the text, to put the app without a time last.
function olderFirst(a: Aged, b: Aged): number {
  const d = a.ms - b.ms;
  if (d < 0 || d > 0) return d;
  if (d !== d && a.since !== b.since) {
    if (!a.since) return 1;
    if (!b.since) return -1;
  }
  return byText(a.instance, b.instance) || byText(a.app, b.app);
}

/**
 * The places of a run's problem apps in summary order. Kept with the run's chunk, so a summary of the whole fleet
 * sorts runs already in order, which the sort merges rather than orders anew.
 */
function oldestFirst(apps: readonly FleetApp[], places: number[]): number[] {
  const aged = places.map((i) => {
    const j = judge(apps[i].app) as ProblemJudgement;
    return { since: j.since, ms: j.sinceMs, instance: apps[i].instance, app: apps[i].app.metadata.name, i };
  });
  return aged.sort(olderFirst).map((a) => a.i);
}

function addCounts(into: PairCounts, from: PairCounts): void {
  into.apps += from.apps;
  for (const pair of from.order) {
    const n = into.counts[pair];
    if (n === undefined || n === 0) {
      into.counts[pair] = from.counts[pair];
      into.order.push(pair);
    } else into.counts[pair] = n + from.counts[pair];
  }
}

/**
 * The parts in order, as one part of all their apps (its clusters are added up by `clusterTotals`); first-come
 * orders stay those of one pass.
 */
function mergeParts(parts: readonly { from: number; value: Part }[]): Part {
  // One part is this call's own (one pass over a short or untracked list).
  if (parts.length === 1 && parts[0].from === 0) return parts[0].value;
  const all: Part = {
    total: { apps: 0, counts: [], order: [] },
    clusterIds: [],
    clusterCounts: [],
    appSets: new Map(),
    problems: [],
  };
  for (const { from, value: part } of parts) {
    addCounts(all.total, part.total);
    for (const [instance, names] of part.appSets) {
      const into = all.appSets.get(instance);
      if (!into) all.appSets.set(instance, new Set(names));
      else for (const n of names) into.add(n);
    }
    for (const i of part.problems) all.problems.push(from + i);
  }
  return all;
}

/**
 * Per-cluster totals of the parts, in order of instance then cluster. Several parts are added up in one array indexed
 * by cluster number and pair, with when each (cluster, pair) first came, for the first-come key order one pass gives.
 */
function clusterTotals(parts: readonly { value: Part }[]): ClusterStatus[] {
  if (parts.length === 1) {
    const { clusterIds, clusterCounts } = parts[0].value;
    const places = clusterIds.map((_, k) => k).sort((a, b) => byClusterName(clusterIds[a], clusterIds[b]));
    return places.map((k) => clusterStatus(clusterIds[k], clusterCounts[k]));
  }
  const width = pairs.length;
  const { counts, first, apps } = sums(clusterNames.length, width);
  const touched: number[] = [];
  let seq = 0;
  for (const { value: part } of parts) {
    const ids = part.clusterIds;
    for (let k = 0; k < ids.length; k++) {
      const id = ids[k];
      const c = part.clusterCounts[k];
      if (apps[id] === 0) touched.push(id);
      apps[id] += c.apps;
      for (const pair of c.order) {
        const cell = id * width + pair;
        if (counts[cell] === 0) first[cell] = ++seq;
        counts[cell] += c.counts[pair];
      }
    }
  }
  return touched.sort(byClusterName).map((id) => {
    const order: number[] = [];
    for (let pair = 0; pair < width; pair++) if (counts[id * width + pair] > 0) order.push(pair);
    order.sort((a, b) => first[id * width + a] - first[id * width + b]);
    const c: PairCounts = { apps: apps[id], counts: [], order };
    for (const pair of order) c.counts[pair] = counts[id * width + pair];
    return clusterStatus(id, c);
  });
}

// The arrays clusterTotals adds up in, kept between calls (it runs to its end without yielding): an array buffer
// made per answer is memory outside the heap, which made the collector run more often than the arrays it saved.
let summed = { counts: new Float64Array(0), first: new Float64Array(0), apps: new Float64Array(0) };

function sums(clusters: number, width: number): typeof summed {
  if (summed.counts.length < clusters * width || summed.apps.length < clusters) {
    const size = Math.max(clusters, 64) * 2;
    summed = {
      counts: new Float64Array(size * width),
      first: new Float64Array(size * width),
      apps: new Float64Array(size),
    };
  }
  summed.counts.fill(0, 0, clusters * width);
  summed.apps.fill(0, 0, clusters);
  return summed;
}

// Spelled out: spreading the name and the totals into one object cost more than adding up the counts.
function clusterStatus(id: number, c: PairCounts): ClusterStatus {
  const { instance, cluster } = clusterNames[id];
  const t = totalsOf(c);
  return { instance, cluster, apps: t.apps, sync: t.sync, health: t.health };
}

/** Orders cluster numbers by instance, then cluster name. */
function byClusterName(a: number, b: number): number {
  const x = clusterNames[a];
  const y = clusterNames[b];
  return byText(x.instance, y.instance) || byText(x.cluster, y.cluster);
}

// Problems keep the app they are about, for judgements that read more than a problem's fields.
const problemApps = new WeakMap<ProblemDetail, FleetApp>();

/** The app a problem of summarizeApps is about. */
export function appOfProblem(p: ProblemDetail): FleetApp | undefined {
  return problemApps.get(p);
}

/**
 * One pass over the apps: totals, per-(instance, cluster) counts, problems oldest first. Over a large list the pass
 * is made per chunk (src/fleet/chunks.ts), and only the chunks with a changed app are counted again; `version` is
 * the fleet's version() when `apps` is the fleet's own list.
 */
export function summarizeApps(apps: Iterable<FleetApp>, version?: number): FleetSummary {
  const list: readonly FleetApp[] = Array.isArray(apps) ? apps : [...apps];
  const parts = list.length >= MIN_CHUNKED ? chunked(list, partOf, version) : [{ from: 0, value: partOf(list) }];
  const part = mergeParts(parts);
  const problems: KeptProblem[] = [];
  let now: Date | undefined;
  const clock = () => (now ??= new Date());
  for (const i of part.problems) problems.push(problemOf(list[i], clock));
  const clusterList = clusterTotals(parts);
  // Each chunk's problems come in order already: the sort merges those runs.
  problems.sort(olderFirst);
  return {
    total: totalsOf(part.total),
    clusters: clusterList,
    problems: problems.map((p) => p.detail),
    // The part is this call's own (merged anew, or one pass over an untracked list): its sets are handed over.
    appSets: part.appSets,
  };
}

/**
 * Counts, as summarizeApps would, the next chunk of the fleet's own list (`apps`, at least MIN_CHUNKED long) that
 * changed since it was counted, and makes its problems' details; those details, or undefined when no chunk changed.
 * A summary of the whole fleet that follows finds that chunk counted.
 */
export function summarizeNextChunk(apps: readonly FleetApp[]): ProblemDetail[] | undefined {
  if (apps.length < MIN_CHUNKED) return undefined;
  const chunk = buildNextChunk(apps, partOf);
  if (!chunk) return undefined;
  let now: Date | undefined;
  const clock = () => (now ??= new Date());
  return chunk.value.problems.map((i) => problemOf(apps[chunk.from + i], clock).detail);
}

interface KeptProblem extends Aged {
  detail: ProblemDetail;
}

// A problem's detail reads its FleetApp alone, which the mirror replaces on every change (never editing it in
// place): kept per FleetApp, unless its reason reads the clock. Mid-incident, most of a large fleet is a problem on
// every answer, and making each detail anew was much of the answer. Readers never change a detail.
const keptProblems = new WeakMap<FleetApp, KeptProblem>();

function problemOf(fa: FleetApp, now: () => Date): KeptProblem {
  const kept = keptProblems.get(fa);
  if (kept) return kept;
  const app = fa.app;
  const j = judge(app) as ProblemJudgement;
  const detail: ProblemDetail = {
    app: app.metadata.name,
    instance: fa.instance,
    cluster: fa.cluster,
    sync: j.sync,
    health: j.health,
    reason: j.reason ?? problemReason(app, now()),
    ...(j.since ? { since: j.since, sinceKind: j.sinceKind } : {}),
    appSet: fa.appSet,
    namespace: app.metadata.namespace,
  };
  problemApps.set(detail, fa);
  const problem = { detail, since: j.since, ms: j.sinceMs, instance: fa.instance, app: detail.app };
  if (j.reason !== undefined) keptProblems.set(fa, problem);
  return problem;
}
