import type { Application, ApplicationSource, OperationState, RevisionHistory } from '../../infra/argocd/types.js';
import { requesterOf } from '../../infra/argocd/client.js';
import { isDown } from '../../fleet/rules/index.js';
import type { FleetEvent } from '../../fleet/events.js';
import type { FleetApp, FleetAppSet, FleetView } from '../../fleet/model.js';

/**
 * One thing that changed in the fleet, as the change log keeps it. Every record carries a
 * deterministic `id` built from what Argo CD itself says (a history entry's id and deployedAt, an
 * operation's startedAt, a health lastTransitionTime, the resourceVersion that showed a sync
 * status change): two processes that see the same change, or a process that backfills what
 * another recorded live, derive the same id, and the log keeps the first.
 */
/**
 * `alert`: an alert rollcall raised (recorded through the incident service, for detection times).
 * `created` / `deleted`: an Application appeared in or left the fleet after the mirror first loaded it.
 */
export type ChangeKind =
  | 'deploy'
  | 'health'
  | 'sync'
  | 'operation'
  | 'rollout'
  | 'instance'
  | 'run'
  | 'step'
  | 'alert'
  | 'created'
  | 'deleted';

export interface ChangeRecord {
  id: string;
  /** When it happened (Argo CD's own time where it has one), RFC3339. */
  at: string;
  kind: ChangeKind;
  instance?: string;
  app?: string;
  namespace?: string;
  appSet?: string;
  cluster?: string;
  project?: string;
  /** health / sync / rollout status before and after; operation phase in `to`. */
  from?: string;
  to?: string;
  /** What a deploy or an operation brought: a version when the source names one, else the commit. */
  revision?: string;
  previousRevision?: string;
  /** The git commit behind `revision`. */
  commit?: string;
  /** Who started it: a user, `applicationset-controller`, or `automated sync`. */
  by?: string;
  message?: string;
  /** rollcall run that did it (Argo CD operation info, or the audit entry). */
  runId?: string;
  /** For rollcall's own actions: where the request came from (`slack`, `terminal`, `schedule`, `engine`). */
  surface?: string;
  /** RollingSync step (1-based, "-1" = none). */
  step?: string;
  /** A bad transition: health to Degraded/Missing, an operation Failed/Error, an instance lost. */
  bad?: boolean;
  /** For an alert whose problem began before it fired (a stuck step): when the impact began. */
  impactAt?: string;
  text: string;
}

const BAD_PHASE = new Set(['Failed', 'Error']);
const FLOATING_REFS = new Set(['', 'HEAD', 'main', 'master', 'trunk', 'develop']);

const short = (sha: string) => (/^[0-9a-f]{40}$/i.test(sha) ? sha.slice(0, 7) : sha);

/**
 * How people name what a source deploys: an image tag the source pins (kustomize images, a Helm
 * `image.tag` parameter), else a pinned targetRevision (a tag), else the commit. "v2.14.3 → v2.15.0"
 * is what on-call reads; "3f2a1c0 → 9be04d1" is what a floating HEAD leaves us.
 */
export function revisionLabel(source: ApplicationSource | undefined, commit: string | undefined): string | undefined {
  const images = (source?.kustomize as { images?: unknown } | undefined)?.images;
  if (Array.isArray(images) && typeof images[0] === 'string') {
    const tag = /:([^:/@]+)$/.exec(images[0].split('=').pop() ?? '')?.[1];
    if (tag) return tag;
  }
  const params = (source?.helm as { parameters?: { name?: string; value?: string }[] } | undefined)?.parameters;
  const helmTag = Array.isArray(params) ? params.find((p) => p?.name === 'image.tag')?.value : undefined;
  if (helmTag) return helmTag;
  const target = source?.targetRevision ?? '';
  if (!FLOATING_REFS.has(target) && target !== commit && !/^[0-9a-f]{40}$/i.test(target)) return target;
  return commit ? short(commit) : undefined;
}

/** `applicationset-controller`, a user, or `automated sync` for Argo CD's own auto-sync (no username). */
export function initiator(by: { username?: string; automated?: boolean } | undefined): string | undefined {
  if (by?.username) return by.username;
  if (by?.automated) return 'automated sync';
  return undefined;
}

const RUN_INFO = 'rollcall-run';

function runIdOf(op: OperationState | undefined): string | undefined {
  return op?.operation?.info?.find((i) => i.name === RUN_INFO)?.value;
}

/** Who to credit with an operation: the person who asked rollcall for it, else the account Argo CD names. */
function operationBy(op: OperationState | undefined): string | undefined {
  return requesterOf(op?.operation?.info) ?? initiator(op?.operation?.initiatedBy);
}

/**
 * The operation that wrote a history entry: Argo CD stamps the entry's deployStartedAt with the
 * operation's startedAt. History keeps no info, so the operation is where rollcall's requester is.
 */
function operationOf(a: FleetApp, h: RevisionHistory): OperationState | undefined {
  const op = a.app.status?.operationState;
  return op && h.deployStartedAt && op.startedAt === h.deployStartedAt ? op : undefined;
}

function where(a: FleetApp): Pick<ChangeRecord, 'instance' | 'app' | 'namespace' | 'appSet' | 'cluster' | 'project'> {
  return {
    instance: a.instance,
    app: a.app.metadata.name,
    ...(a.app.metadata.namespace ? { namespace: a.app.metadata.namespace } : {}),
    ...(a.appSet ? { appSet: a.appSet } : {}),
    cluster: a.cluster,
    ...(a.app.spec?.project ? { project: a.app.spec.project } : {}),
  };
}

function appKey(a: FleetApp): string {
  return `${a.instance}/${a.app.metadata.namespace ?? ''}/${a.app.metadata.name}`;
}

/** The first unhealthy resource's message: app-level health.message is unused since Argo CD 2.x. */
function healthMessage(app: Application): string | undefined {
  return app.status?.resources?.find((r) => r.health && r.health.status !== 'Healthy' && r.health.message)?.health
    ?.message;
}

function deployRecord(a: FleetApp, history: RevisionHistory[], index: number): ChangeRecord {
  const h = history[index];
  const prev = index > 0 ? history[index - 1] : undefined;
  const commit = h.revision ?? h.revisions?.join(',');
  const revision = revisionLabel(h.source ?? h.sources?.[0], commit);
  const previousRevision = prev
    ? revisionLabel(prev.source ?? prev.sources?.[0], prev.revision ?? prev.revisions?.join(','))
    : undefined;
  const op = operationOf(a, h);
  const by = requesterOf(op?.operation?.info) ?? initiator(h.initiatedBy);
  const runId = runIdOf(op);
  const name = a.app.metadata.name;
  return {
    id: `${appKey(a)}/deploy/${h.id}/${h.deployedAt}`,
    at: h.deployedAt,
    kind: 'deploy',
    ...where(a),
    ...(revision ? { revision } : {}),
    ...(previousRevision ? { previousRevision } : {}),
    ...(commit ? { commit } : {}),
    ...(by ? { by } : {}),
    ...(runId ? { runId } : {}),
    text: `${name} deployed ${previousRevision && previousRevision !== revision ? `${previousRevision} → ` : ''}${revision ?? 'a new revision'}${by ? ` by ${by}` : ''}`,
  };
}

function healthRecord(a: FleetApp, from: string | undefined): ChangeRecord | undefined {
  const health = a.app.status?.health;
  if (!health?.status) return undefined;
  const at = health.lastTransitionTime;
  if (!at) return undefined;
  const message = isDown(health.status) ? healthMessage(a.app) : undefined;
  return {
    id: `${appKey(a)}/health/${health.status}/${at}`,
    at,
    kind: 'health',
    ...where(a),
    ...(from ? { from } : {}),
    to: health.status,
    ...(message ? { message } : {}),
    ...(isDown(health.status) ? { bad: true } : {}),
    text: `${a.app.metadata.name} ${from ? `${from} → ` : 'is '}${health.status}${message ? `: ${message}` : ''}`,
  };
}

function operationStarted(a: FleetApp, op: OperationState): ChangeRecord {
  const by = operationBy(op);
  const runId = runIdOf(op);
  const commit = op.operation?.sync?.revision ?? op.syncResult?.revision;
  const prune = op.operation?.sync?.prune ? ' with prune' : '';
  return {
    id: `${appKey(a)}/operation/${op.startedAt}/started`,
    at: op.startedAt,
    kind: 'operation',
    ...where(a),
    to: 'Running',
    ...(commit ? { commit, revision: short(commit) } : {}),
    ...(by ? { by } : {}),
    ...(runId ? { runId } : {}),
    text: `${a.app.metadata.name} sync started${prune}${by ? ` by ${by}` : ''}${runId ? ` (run ${runId})` : ''}`,
  };
}

function operationFinished(a: FleetApp, op: OperationState): ChangeRecord | undefined {
  if (!op.finishedAt || op.phase === 'Running' || op.phase === 'Terminating') return undefined;
  const by = operationBy(op);
  const runId = runIdOf(op);
  const commit = op.syncResult?.revision ?? op.operation?.sync?.revision;
  return {
    id: `${appKey(a)}/operation/${op.startedAt}/${op.phase}`,
    at: op.finishedAt,
    kind: 'operation',
    ...where(a),
    from: 'Running',
    to: op.phase,
    ...(commit ? { commit, revision: short(commit) } : {}),
    ...(by ? { by } : {}),
    ...(runId ? { runId } : {}),
    ...(op.message ? { message: op.message } : {}),
    ...(BAD_PHASE.has(op.phase) ? { bad: true } : {}),
    text: `${a.app.metadata.name} sync ${op.phase}${op.message ? `: ${op.message}` : ''}`,
  };
}

/**
 * What Argo CD still knows about an app's past: history entries (deployedAt), the last operation
 * (startedAt, finishedAt) and when health last changed. `sinceMs` bounds it (the log's retention).
 */
export function backfillChanges(a: FleetApp, sinceMs: number): ChangeRecord[] {
  const out: ChangeRecord[] = [];
  const within = (t: string | undefined) => !!t && Date.parse(t) >= sinceMs;
  const history = a.app.status?.history ?? [];
  history.forEach((h, i) => {
    if (within(h.deployedAt)) out.push(deployRecord(a, history, i));
  });
  const op = a.app.status?.operationState;
  if (op && within(op.startedAt)) out.push(operationStarted(a, op));
  if (op && within(op.finishedAt)) {
    const finished = operationFinished(a, op);
    if (finished) out.push(finished);
  }
  // A healthy app's last transition says little without what it came from; an unhealthy one is the impact.
  const health = a.app.status?.health;
  if (health && health.status !== 'Healthy' && within(health.lastTransitionTime)) {
    const record = healthRecord(a, undefined);
    if (record) out.push(record);
  }
  return out;
}

/** What the app last deployed, as people name it: its newest history entry, else what it is synced to. */
function lastRevision(a: FleetApp): { revision?: string; commit?: string } {
  const history = a.app.status?.history ?? [];
  const h = history[history.length - 1];
  const commit = h ? (h.revision ?? h.revisions?.join(',')) : a.app.status?.sync?.revision;
  const revision = revisionLabel(h ? (h.source ?? h.sources?.[0]) : a.app.spec?.source, commit);
  return { ...(revision ? { revision } : {}), ...(commit ? { commit } : {}) };
}

/**
 * Each incarnation of an app has its own uid: an ApplicationSet that deletes and recreates `web`
 * leaves "web deleted" and "web created" as two changes, never one record claimed twice.
 */
function incarnation(a: FleetApp, fallback: string): string {
  return a.app.metadata.uid ?? a.app.metadata.creationTimestamp ?? fallback;
}

function createdRecord(a: FleetApp, seenAt: string): ChangeRecord {
  const at = a.app.metadata.creationTimestamp ?? seenAt;
  return {
    id: `${appKey(a)}/created/${incarnation(a, at)}`,
    at,
    kind: 'created',
    ...where(a),
    to: 'created',
    ...(a.appSet ? { by: `ApplicationSet ${a.appSet}` } : {}),
    text: `${a.app.metadata.name} created${a.appSet ? ` by ApplicationSet ${a.appSet}` : ''}`,
  };
}

/** The app as last seen: where it ran and what it had deployed, since the Application itself is gone. */
function deletedRecord(a: FleetApp, seenAt: string): ChangeRecord {
  const at = a.app.metadata.deletionTimestamp ?? seenAt;
  const last = lastRevision(a);
  return {
    // Every watcher sees the same object go: its uid (else its last resourceVersion) is what they share.
    id: `${appKey(a)}/deleted/${a.app.metadata.uid ?? `rv${a.app.metadata.resourceVersion ?? seenAt.slice(0, 16)}`}`,
    at,
    kind: 'deleted',
    ...where(a),
    ...(a.app.status?.health?.status ? { from: a.app.status.health.status } : {}),
    to: 'deleted',
    ...last,
    text: `${a.app.metadata.name} deleted${last.revision ? ` at ${last.revision}` : ''}${a.appSet ? ` (ApplicationSet ${a.appSet})` : ''}`,
  };
}

/** The records one fleet event stands for (none for most: an unchanged status, a resync). */
export function changesOf(event: FleetEvent): ChangeRecord[] {
  switch (event.kind) {
    case 'app-added':
      return [createdRecord(event.app, event.at), ...backfillChanges(event.app, Date.parse(event.at) - 3_600_000)];
    case 'app-removed':
      return [deletedRecord(event.app, event.at)];
    case 'app-changed':
      return appChanges(event.app, event.previous, event.at);
    case 'appset-changed':
      return rolloutChanges(event.appSet, event.previous, event.at);
    case 'instance-lost':
    case 'instance-connected': {
      const lost = event.kind === 'instance-lost';
      return [
        {
          // Each process notices a loss at its own moment: the minute is what they share.
          id: `${event.instance}/instance/${lost ? 'lost' : 'connected'}/${event.at.slice(0, 16)}`,
          at: event.at,
          kind: 'instance',
          instance: event.instance,
          to: lost ? 'lost' : 'connected',
          ...(lost ? { bad: true } : {}),
          ...(lost && event.error ? { message: event.error } : {}),
          text: lost
            ? `Argo CD instance ${event.instance} lost${event.error ? `: ${event.error}` : ''}`
            : `Argo CD instance ${event.instance} connected again`,
        },
      ];
    }
    default:
      return [];
  }
}

function appChanges(a: FleetApp, prev: FleetApp, seenAt: string): ChangeRecord[] {
  const out: ChangeRecord[] = [];
  const cur = a.app.status;
  const before = prev.app.status;
  const name = a.app.metadata.name;

  const prevHistoryIds = new Set((before?.history ?? []).map((h) => `${h.id}/${h.deployedAt}`));
  const history = cur?.history ?? [];
  history.forEach((h, i) => {
    if (!prevHistoryIds.has(`${h.id}/${h.deployedAt}`)) out.push(deployRecord(a, history, i));
  });

  const op = cur?.operationState;
  const prevOp = before?.operationState;
  if (op && op.startedAt !== prevOp?.startedAt) out.push(operationStarted(a, op));
  if (
    op &&
    op.finishedAt &&
    (op.startedAt !== prevOp?.startedAt || op.finishedAt !== prevOp?.finishedAt || op.phase !== prevOp?.phase)
  ) {
    const finished = operationFinished(a, op);
    if (finished) out.push(finished);
  }

  const health = cur?.health?.status;
  if (health && health !== before?.health?.status) {
    const record = healthRecord(a, before?.health?.status);
    if (record) out.push(record);
    else {
      out.push({
        id: `${appKey(a)}/health/${health}/rv${a.app.metadata.resourceVersion ?? seenAt}`,
        at: seenAt,
        kind: 'health',
        ...where(a),
        ...(before?.health?.status ? { from: before.health.status } : {}),
        to: health,
        ...(isDown(health) ? { bad: true } : {}),
        text: `${name} ${before?.health?.status ?? '?'} → ${health}`,
      });
    }
  }

  const sync = cur?.sync?.status;
  if (sync && before?.sync?.status && sync !== before.sync.status) {
    const commit = cur?.sync?.revision;
    out.push({
      // Argo CD keeps no time for a sync status change; the resourceVersion that showed it is shared by every watcher.
      id: `${appKey(a)}/sync/${sync}/rv${a.app.metadata.resourceVersion ?? seenAt}`,
      at: seenAt,
      kind: 'sync',
      ...where(a),
      from: before.sync.status,
      to: sync,
      ...(commit ? { commit, revision: short(commit) } : {}),
      text: `${name} ${before.sync.status} → ${sync}`,
    });
  }
  return out;
}

function rolloutChanges(cur: FleetAppSet, prev: FleetAppSet, seenAt: string): ChangeRecord[] {
  const before = new Map((prev.appSet.status?.applicationStatus ?? []).map((e) => [e.application, e]));
  const out: ChangeRecord[] = [];
  const appSet = cur.appSet.metadata.name;
  for (const e of cur.appSet.status?.applicationStatus ?? []) {
    const was = before.get(e.application);
    if (was && was.status === e.status && was.step === e.step) continue;
    const at = e.lastTransitionTime ?? seenAt;
    out.push({
      id: `${cur.instance}/${appSet}/rollout/${e.application}/${e.status}/${e.step}/${e.lastTransitionTime ?? `rv${cur.appSet.metadata.resourceVersion ?? seenAt}`}`,
      at,
      kind: 'rollout',
      instance: cur.instance,
      app: e.application,
      appSet,
      ...(was ? { from: was.status } : {}),
      to: e.status,
      step: e.step,
      ...(e.message ? { message: e.message } : {}),
      text: `${appSet} step ${e.step === '-1' ? '(none)' : e.step}: ${e.application} ${was ? `${was.status} → ` : ''}${e.status}`,
    });
  }
  return out;
}

/** Where a change happened: as recorded, else (records made before the mirror knew the app) as the mirror knows it now. */
export function placeOf(r: ChangeRecord, fleet: FleetView): { cluster?: string; appSet?: string } {
  if (!r.app || !r.instance || (r.cluster && r.appSet)) return { cluster: r.cluster, appSet: r.appSet };
  const known = fleet.appsNamed(r.app).find((a) => a.instance === r.instance);
  return { cluster: r.cluster ?? known?.cluster, appSet: r.appSet ?? known?.appSet };
}
