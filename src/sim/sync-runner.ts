import type { Application, ResourceResult, SyncOperation } from '../infra/argocd/types.js';
import { ROLLING_SYNC_INITIATOR } from '../fleet/rollingsync.js';
import { SIM_ANNOTATIONS, durationAnnotation } from './annotations.js';
import {
  crashMessage,
  operationInProgress,
  resourceId,
  serverOf,
  setHealth,
  sourceFields,
  syncResults,
  targetRevision,
  targetRevisions,
  workloadProgressingMessage,
} from './app-model.js';
import { parseGoDuration, rfc3339 } from './clock.js';
import { applyFailedMessage, comparisonErrorMessage, type FaultBook } from './faults.js';
import type { InstanceStore, SimState } from './store.js';
import type { AppWork, WorkQueue } from './work.js';

const RUNNING_MESSAGE = 'one or more tasks are running';
const SUCCEEDED_MESSAGE = 'successfully synced (all tasks run)';
/** controller/sync.go SyncAppState, while a sync window holds a Running operation. */
const SYNC_WINDOW_BLOCKED = 'Sync operation blocked by sync window';

/** How long syncs run and health settles when an app's annotations do not say (simulated ms). */
export interface SyncTimings {
  syncDurationMs: number;
  healthSettleMs: number;
}

/** What the operation runner asks of the controller around it. */
export interface SyncRunnerHooks {
  /**
   * Whether the project's sync windows hold the app's operation now (controller/sync.go
   * syncWindowPreventsSync: manual unless initiatedBy.automated, with the operation's start for syncOverrun).
   */
  syncWindowBlocks(instance: string, app: Application): boolean;
  /** After a non-dry-run sync succeeded and the app was written back. */
  onSyncSucceeded(store: InstanceStore, instance: string, app: Application): void;
  /** How long a simulated duration lasts on the controller's clock (SimClock.span). */
  span(ms: number): number;
}

/**
 * The application controller's operation runner: starts requested operations, runs each sync
 * attempt to its end (with retries, termination, sync windows and faults), writes what a
 * successful sync changes, and settles health afterwards.
 */
export class SyncRunner {
  constructor(
    private readonly state: SimState,
    private readonly work: WorkQueue,
    private readonly book: FaultBook,
    private readonly timings: SyncTimings,
    private readonly hooks: SyncRunnerHooks,
  ) {}

  /** Moves one app's pending work on, as far as `now` allows. */
  processApp(w: AppWork, now: Date): void {
    const store = this.state.instance(w.instance);
    const app = store?.apps.get(w.name);
    if (!store || !app) {
      this.work.delete(w.instance, w.name);
      return;
    }
    const t = now.getTime();
    if (w.terminating) {
      w.terminating = false;
      this.finishTerminated(store, app, now);
    } else if (w.requestedAt !== undefined) {
      // Second-precision timestamps: a RollingSync operation starts strictly in a later second than the
      // Pending transition, or the "started after Pending" check (A6) could never see it start.
      const rollingSync = app.operation?.initiatedBy?.username === ROLLING_SYNC_INITIATOR;
      if (!app.operation) w.requestedAt = undefined;
      else if (!rollingSync || Math.floor(t / 1000) > Math.floor(w.requestedAt / 1000)) {
        w.requestedAt = undefined;
        this.startOperation(store, app, w, now);
      }
    } else if (w.blocked) {
      if (!this.hooks.syncWindowBlocks(w.instance, app)) {
        w.blocked = false;
        this.startAttempt(store, app, w, now);
      }
    } else if (w.retryAt !== undefined && t >= w.retryAt) {
      w.retryAt = undefined;
      this.startAttempt(store, app, w, now);
    } else if (w.attemptEndsAt !== undefined && t >= w.attemptEndsAt) {
      w.attemptEndsAt = undefined;
      // SyncAppState asks the windows on every reconcile of a running sync: one that opened meanwhile holds it.
      if (this.hooks.syncWindowBlocks(w.instance, app)) this.holdByWindow(store, app, w);
      else this.finishAttempt(store, app, w, now);
    }
    const current = store.apps.get(w.name)!;
    if (w.healthAt !== undefined && t >= w.healthAt && !operationInProgress(current)) {
      const to = w.healthTo ?? 'Healthy';
      w.healthAt = w.healthTo = undefined;
      const next = structuredClone(current);
      if (to === 'Degraded') setHealth(next, 'Degraded', now, crashMessage(store, next));
      else setHealth(next, 'Healthy', now);
      store.putApp(next);
    }
    if (
      w.requestedAt === undefined &&
      w.retryAt === undefined &&
      w.attemptEndsAt === undefined &&
      !w.terminating &&
      !w.blocked &&
      w.healthAt === undefined
    )
      this.work.delete(w.instance, w.name);
  }

  private startOperation(store: InstanceStore, app: Application, w: AppWork, now: Date): void {
    const next = structuredClone(app);
    const status = (next.status ??= {});
    status.operationState = {
      operation: structuredClone(next.operation!),
      phase: 'Running',
      message: RUNNING_MESSAGE,
      startedAt: rfc3339(now),
    };
    status.reconciledAt = rfc3339(now);
    // A pending health settle from an earlier sync is superseded by this one.
    w.healthAt = w.healthTo = undefined;
    if (this.hooks.syncWindowBlocks(w.instance, next)) {
      status.operationState.message = SYNC_WINDOW_BLOCKED;
      w.blocked = true;
    } else {
      w.attemptEndsAt = now.getTime() + this.hooks.span(this.syncDurationMs(next));
    }
    store.putApp(next);
  }

  /** The operation stays Running with the controller's message until the windows let it go on. */
  private holdByWindow(store: InstanceStore, app: Application, w: AppWork): void {
    const state = app.status?.operationState;
    if (!state || state.phase !== 'Running') return;
    const next = structuredClone(app);
    next.status!.operationState!.message = SYNC_WINDOW_BLOCKED;
    w.blocked = true;
    store.putApp(next);
  }

  private startAttempt(store: InstanceStore, app: Application, w: AppWork, now: Date): void {
    const state = app.status?.operationState;
    if (!state || state.phase !== 'Running') return;
    if (this.hooks.syncWindowBlocks(w.instance, app)) return this.holdByWindow(store, app, w);
    const next = structuredClone(app);
    next.status!.operationState!.message = RUNNING_MESSAGE;
    w.attemptEndsAt = now.getTime() + this.hooks.span(this.syncDurationMs(next));
    store.putApp(next);
  }

  private finishTerminated(store: InstanceStore, app: Application, now: Date): void {
    const state = app.status?.operationState;
    if (!state || state.phase !== 'Terminating') return;
    const next = structuredClone(app);
    const s = next.status!.operationState!;
    s.phase = 'Failed';
    s.message = 'Operation terminated';
    s.finishedAt = rfc3339(now);
    delete next.operation;
    store.putApp(next);
  }

  private finishAttempt(store: InstanceStore, app: Application, w: AppWork, now: Date): void {
    const state = app.status?.operationState;
    if (!state || state.phase !== 'Running') return;
    const next = structuredClone(app);
    const status = next.status!;
    const op = status.operationState!;
    const sync = op.operation.sync ?? {};
    const server = serverOf(store, next);
    const downMessage = this.book.clusterDownFor(w.instance, server);
    const faultMessage = this.book.failure(w.instance, w.name);
    const revision = sync.revision ?? targetRevision(next);

    let failure: { phase: 'Failed' | 'Error'; message: string; results?: ResourceResult[] } | undefined;
    if (downMessage) {
      const condition = status.conditions?.find((c) => c.type === 'ComparisonError');
      failure = {
        phase: 'Error',
        message: `ComparisonError: ${condition?.message ?? comparisonErrorMessage(server ?? '', downMessage)}`,
      };
    } else if (faultMessage) {
      const results = syncResults(next, sync, { failing: faultMessage });
      failure = { phase: 'Failed', message: applyFailedMessage([faultMessage]), results };
    }

    if (failure) {
      op.syncResult = { resources: failure.results ?? [], revision, ...sourceFields(next) };
      const retries = op.retryCount ?? 0;
      const limit = op.operation.retry?.limit ?? 0;
      if (limit < 0 || retries < limit) {
        const attempt = retries + 1;
        const delay = this.hooks.span(backoffMs(op.operation.retry?.backoff, attempt));
        op.retryCount = attempt;
        op.message = `Retrying attempt #${attempt} at ${kitchen(new Date(now.getTime() + delay))}: ${failure.message}`;
        w.retryAt = now.getTime() + delay;
        store.putApp(next);
        return;
      }
      op.phase = failure.phase;
      op.message = retries > 0 ? `${failure.message} (retried ${retries} times).` : failure.message;
      op.finishedAt = rfc3339(now);
      delete next.operation;
      store.putApp(next);
      return;
    }

    const results = syncResults(next, sync, {});
    op.phase = 'Succeeded';
    op.message = SUCCEEDED_MESSAGE;
    op.finishedAt = rfc3339(now);
    op.syncResult = { resources: results, revision, ...sourceFields(next) };
    if (sync.revisions) op.syncResult.revisions = [...sync.revisions];
    delete next.operation;
    if (!sync.dryRun) this.applySync(store, next, sync, results, w, now);
    store.putApp(next);
    if (!sync.dryRun) this.hooks.onSyncSucceeded(store, w.instance, store.apps.get(w.name)!);
  }

  /** What a successful (non-dry-run) sync changes on the app. */
  private applySync(
    store: InstanceStore,
    app: Application,
    sync: SyncOperation,
    results: ResourceResult[],
    w: AppWork,
    now: Date,
  ): void {
    const status = app.status!;
    const op = status.operationState!;
    const pruned = new Set(results.filter((r) => r.status === 'Pruned').map(resourceId));
    const synced = new Set(results.filter((r) => r.status === 'Synced').map(resourceId));
    status.resources = (status.resources ?? []).filter((r) => !pruned.has(resourceId(r)));
    for (const r of status.resources) if (synced.has(resourceId(r))) r.status = 'Synced';
    const target = status.sync?.revision ?? targetRevision(app);
    const deployed = sync.revision ?? target;
    const atTarget = app.spec.sources?.length ? true : deployed === target;
    const allSynced = status.resources.every((r) => r.status !== 'OutOfSync');
    status.sync = {
      ...status.sync,
      status: atTarget && allSynced ? 'Synced' : 'OutOfSync',
      ...(app.spec.sources?.length ? { revisions: sync.revisions ?? targetRevisions(app) } : { revision: target }),
      comparedTo: { ...sourceFields(app), destination: structuredClone(app.spec.destination) },
    };
    if (status.conditions) {
      status.conditions = status.conditions.filter((c) => c.type !== 'SyncError');
      if (!status.conditions.length) delete status.conditions;
    }
    // Argo CD records history only for a full, real sync (controller/sync.go: !DryRun && no Resources).
    const recordHistory = !sync.dryRun && !sync.resources?.length;
    const history = (status.history ??= []);
    // The source synced: a rollback's is the history entry's, not the app's current one.
    const syncedSource = sync.sources?.length
      ? { sources: structuredClone(sync.sources) }
      : sync.source
        ? { source: structuredClone(sync.source) }
        : sourceFields(app);
    if (recordHistory)
      history.push({
        id: history.length ? history[history.length - 1].id + 1 : 0,
        ...(app.spec.sources?.length ? { revisions: sync.revisions ?? targetRevisions(app) } : { revision: deployed }),
        deployedAt: rfc3339(now),
        deployStartedAt: op.startedAt,
        ...syncedSource,
        initiatedBy: structuredClone(op.operation.initiatedBy ?? {}),
      });
    const cap = app.spec.revisionHistoryLimit ?? 10;
    if (history.length > cap) history.splice(0, history.length - cap);
    status.reconciledAt = rfc3339(now);
    setHealth(app, 'Progressing', now, workloadProgressingMessage(app));
    w.healthAt = now.getTime() + this.hooks.span(this.healthSettleMs(app));
    w.healthTo = this.book.isCrashLooping(w.instance, w.name) ? 'Degraded' : 'Healthy';
  }

  healthSettleMs(app: Application): number {
    return durationAnnotation(app, SIM_ANNOTATIONS.healthSettle) ?? this.timings.healthSettleMs;
  }

  private syncDurationMs(app: Application): number {
    return durationAnnotation(app, SIM_ANNOTATIONS.syncDuration) ?? this.timings.syncDurationMs;
  }
}

function backoffMs(
  backoff: { duration?: string; factor?: number; maxDuration?: string } | undefined,
  attempt: number,
): number {
  const base = parseGoDuration(backoff?.duration) ?? 5000;
  const factor = backoff?.factor ?? 2;
  const max = parseGoDuration(backoff?.maxDuration) ?? 180_000;
  return Math.min(max, base * Math.pow(factor, attempt - 1));
}

/** Go's time.Kitchen ("3:04PM"), which Argo CD uses in retry messages. */
function kitchen(at: Date): string {
  const h = at.getUTCHours();
  const m = String(at.getUTCMinutes()).padStart(2, '0');
  return `${h % 12 === 0 ? 12 : h % 12}:${m}${h < 12 ? 'AM' : 'PM'}`;
}
