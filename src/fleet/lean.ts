import type { Application, ApplicationSource, ResourceResult, RevisionHistory } from '../infra/argocd/types.js';

/** Written by `kubectl apply`: the whole applied manifest again, as text. */
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * The Application as the mirror holds it: the object Argo CD sent, less what no reader of the fleet uses
 * and what repeats the rest, so 10,000s of apps fit a bot's memory. Dropped:
 * - `metadata.managedFields` and the last-applied annotation: server-side bookkeeping, often the largest
 *   part of an object;
 * - `status.sync.comparedTo`: the spec's source and destination again, as last compared;
 * - `status.operationState.syncResult.source(s)`: the source the sync used, again (its revision stays);
 * - the sync result's entries for resources that synced plainly: every reader of `syncResult.resources`
 *   (`app`, `status`'s reasons, the findings, bulk-sync's failure reason) looks only for the ones that failed,
 *   were pruned or skipped, or whose hook failed; an app of 200 resources keeps 200 "configured" lines otherwise.
 * Everything else stays as sent, down to each entry of status.resources and status.history, which `app`,
 * `status`, `rollout`, the rules and the incident timeline read. A command that needs the object whole reads
 * it live from Argo CD. The object given is left as it is (a caller may still hold it); what changes is copied.
 *
 * The strings that repeat across apps (revisions, repositories, paths, servers, images, resource kinds and
 * names) are then shared (`sharedStrings`): Argo CD sends each app's copy of the same 40-character revision
 * apart, and a fleet that deployed one commit holds it once instead of four times per app.
 */
export function leanApp(app: Application): Application {
  if (leaned.has(app)) return app;
  const lean = withoutUnread(app);
  shareStrings(lean);
  leaned.add(lean);
  return lean;
}

/**
 * What leanApp made: a list is made lean item by item as it arrives (the client's `each`), and the mirror leans
 * every app it takes in again, which costs nothing for these.
 */
const leaned = new WeakSet<Application>();

function withoutUnread(app: Application): Application {
  const { metadata, status } = app;
  const annotations = metadata.annotations;
  const dropAnnotation = annotations !== undefined && LAST_APPLIED in annotations;
  const dropMeta = dropAnnotation || 'managedFields' in metadata;
  const sync = status?.sync;
  const syncResult = status?.operationState?.syncResult;
  const dropCompared = sync !== undefined && 'comparedTo' in sync;
  const dropSource = syncResult !== undefined && ('source' in syncResult || 'sources' in syncResult);
  const dropResults = syncResult?.resources?.some(plainSuccess) ?? false;
  if (!dropMeta && !dropCompared && !dropSource && !dropResults) return app;
  const lean: Application = { ...app };
  if (dropMeta) {
    const { managedFields: _managed, ...kept } = metadata;
    lean.metadata = kept;
    if (dropAnnotation) {
      const { [LAST_APPLIED]: _applied, ...rest } = annotations;
      lean.metadata.annotations = rest;
    }
  }
  if (status && (dropCompared || dropSource || dropResults)) {
    lean.status = { ...status };
    if (sync && dropCompared) {
      const { comparedTo: _compared, ...rest } = sync;
      lean.status.sync = rest;
    }
    if (syncResult && (dropSource || dropResults)) {
      const { source: _source, sources: _sources, ...rest } = syncResult;
      if (rest.resources && dropResults) rest.resources = rest.resources.filter((r) => !plainSuccess(r));
      lean.status.operationState = { ...status.operationState!, syncResult: rest };
    }
  }
  return lean;
}

/** A resource the sync applied without a word worth keeping: synced, and no hook of it failed. */
function plainSuccess(r: ResourceResult): boolean {
  return r.status === 'Synced' && r.hookPhase !== 'Failed' && r.hookPhase !== 'Error';
}

/**
 * Strings seen in the apps the mirror holds, each kept once. Bounded: when full it starts again, so a fleet
 * that deploys a new commit every minute for months does not keep every revision it ever saw; strings already
 * shared stay shared in the apps that hold them.
 */
class StringPool {
  private readonly seen = new Map<string, string>();

  constructor(private readonly max: number) {}

  share(s: string): string {
    const known = this.seen.get(s);
    if (known !== undefined) return known;
    if (this.seen.size >= this.max) this.seen.clear();
    this.seen.set(s, s);
    return s;
  }

  get size(): number {
    return this.seen.size;
  }
}

/** Ample for a 50,000-app fleet's distinct revisions, repositories, paths, servers and resource names. */
const POOL_SIZE = 200_000;
const pool = new StringPool(POOL_SIZE);

/** How many distinct strings the pool holds now (for benchmarks and tests). */
export function sharedStringCount(): number {
  return pool.size;
}

/** Shares each named field of `obj` that holds a string; a field it does not have stays absent. */
function shareFields<T extends object>(obj: T | undefined, ...keys: (keyof T & string)[]): void {
  if (!obj) return;
  const fields = obj as Record<string, unknown>;
  for (const key of keys) {
    const value = fields[key];
    if (typeof value === 'string') fields[key] = pool.share(value);
  }
}

function shareSource(source: ApplicationSource | undefined): void {
  shareFields(source, 'repoURL', 'path', 'targetRevision', 'chart');
}

function shareList(list: string[] | undefined): void {
  if (list) for (let i = 0; i < list.length; i++) list[i] = pool.share(list[i]);
}

/**
 * `other` when it holds exactly what `record` holds and nothing but strings, numbers and booleans (a source with
 * Helm parameters is not compared), so one object can stand for both.
 */
function sameRecord<T extends object>(record: T, other: T | undefined): T | undefined {
  if (!other || other === record) return other;
  const a = record as Record<string, unknown>;
  const b = other as Record<string, unknown>;
  let keys = 0;
  for (const key in a) {
    const value = a[key];
    if (value !== null && typeof value === 'object') return undefined;
    if (b[key] !== value) return undefined;
    keys++;
  }
  for (const _key in b) keys--;
  return keys === 0 ? other : undefined;
}

/**
 * Replaces, in place, the strings that repeat across apps by the pool's copy, and a history entry's source or
 * initiator by an equal one the app holds already. Each is replaced by an equal value, so nothing that reads the
 * object can tell (the mirror's readers never change what it holds).
 */
function shareStrings(app: Application): void {
  const { metadata, spec, status } = app;
  for (const owner of metadata.ownerReferences ?? []) shareFields(owner, 'name', 'uid');
  shareSource(spec.source);
  spec.sources?.forEach(shareSource);
  shareFields(spec.destination, 'server', 'namespace');
  if (!status) return;
  shareFields(status.sync, 'revision');
  shareList(status.sync?.revisions);
  let previous: RevisionHistory | undefined;
  for (const h of status.history ?? []) {
    shareFields(h, 'revision');
    shareList(h.revisions);
    shareSource(h.source);
    h.sources?.forEach(shareSource);
    // Ten deployments of one app usually name the same source and the same initiator, each as an object of its own.
    if (h.source) h.source = sameRecord(h.source, previous?.source) ?? sameRecord(h.source, spec.source) ?? h.source;
    if (h.initiatedBy) h.initiatedBy = sameRecord(h.initiatedBy, previous?.initiatedBy) ?? h.initiatedBy;
    previous = h;
  }
  const op = status.operationState;
  shareFields(op, 'message');
  shareFields(op?.operation?.sync, 'revision');
  shareFields(op?.syncResult, 'revision');
  shareList(status.summary?.images);
  for (const r of status.resources ?? []) shareFields(r, 'namespace', 'name');
}
