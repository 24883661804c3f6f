import { createHash } from 'node:crypto';
import type {
  Application,
  ApplicationSet,
  ApplicationSetCondition,
  ApplicationSetStatus,
  ApplicationSyncRequest,
  Cluster,
  HealthStatusCode,
  Operation,
  ResourceResult,
  ResourceStatus,
  SyncOperation,
  SyncStatusCode,
} from '../argocd/types.js';
import { normalizeServer, ownerAppSet } from '../argocd/objects.js';
import {
  ROLLING_SYNC_INITIATOR,
  advanceRollout,
  automatedEnabled,
  isRollingSync,
  isRollingSyncType,
  rollingSyncOperation,
  rolloutAppState,
} from '../fleet/rollingsync.js';
import { ManualClock, ScaledClock, parseGoDuration, rfc3339, type SimClock } from './clock.js';
import {
  FaultBook,
  applyFailedMessage,
  clusterUnreachableMessage,
  comparisonErrorMessage,
  crashLoopMessage,
  defaultSyncFailure,
  type SimFaults,
} from './faults.js';
import type { ScenarioBehaviour, ScenarioContext } from './scenarios/behaviour.js';
import type { InstanceStore, SimState, StoreChange } from './store.js';

export type { SimClock } from './clock.js';

/** Annotations a fixture can set to tune one app or appset in the simulator. */
export const SIM_ANNOTATIONS = {
  /** Go duration or milliseconds: how long this app's sync runs. */
  syncDuration: 'sim.rollcall.io/sync-duration',
  /** Go duration or milliseconds: how long this app stays Progressing after a sync. */
  healthSettle: 'sim.rollcall.io/health-settle',
  /** On an app: every sync fails with this message (as faults.failApp). */
  failSync: 'sim.rollcall.io/fail-sync',
  /** `true` on an app: its workload crash-loops after a sync (as faults.crashLoop). */
  crashLoop: 'sim.rollcall.io/crash-loop',
  /** `disabled` on an ApplicationSet: behave as if the appset controller ran without --enable-progressive-syncs. */
  progressiveSyncs: 'sim.rollcall.io/progressive-syncs',
  /**
   * On an ApplicationSet: JSON `[{"name", "labels"?, "error"}]`, Applications its generators produce that
   * fail validation (so are never created): they still count in the RollingSync step lists.
   */
  generatedInvalid: 'sim.rollcall.io/generated-invalid',
} as const;

export type SimErrorCode = 'not_found' | 'failed_precondition' | 'invalid_argument';
const GRPC_CODES: Record<SimErrorCode, number> = { invalid_argument: 3, not_found: 5, failed_precondition: 9 };

/** An error the REST layer maps to Argo CD's `{error, code, message}` body (code = gRPC code). */
export class SimError extends Error {
  readonly grpcCode: number;
  constructor(
    readonly code: SimErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'SimError';
    this.grpcCode = GRPC_CODES[code];
  }
}

export interface SimControllerOptions {
  /** Simulated seconds per real second. @defaultValue 1 */
  speed?: number;
  /** No progress at all: the fixture is served as-is. */
  frozen?: boolean;
  /** Time moves only through advance(): for tests. */
  manual?: boolean;
  /** Simulated start time. @defaultValue now */
  startAt?: Date;
  behaviour?: ScenarioBehaviour;
  /** How long a sync attempt runs, simulated. @defaultValue 5000 */
  syncDurationMs?: number;
  /** How long an app stays Progressing after a sync. @defaultValue 5000 */
  healthSettleMs?: number;
  /** advance() runs one controller pass per this much simulated time. @defaultValue 1000 */
  stepMs?: number;
  /** The appset controller's --enable-progressive-syncs. @defaultValue true */
  progressiveSyncs?: boolean;
}

/** What the controller still has to do for one app. Times are simulated epoch ms. */
interface AppWork {
  instance: string;
  name: string;
  /** Top-level `operation` written, not yet picked up. */
  requestedAt?: number;
  attemptEndsAt?: number;
  retryAt?: number;
  terminating?: boolean;
  /** Running, held by a deny sync window (automated operations only). */
  blocked?: boolean;
  healthAt?: number;
  healthTo?: 'Healthy' | 'Degraded';
}

const RUNNING_MESSAGE = 'one or more tasks are running';
const SUCCEEDED_MESSAGE = 'successfully synced (all tasks run)';
const WORKLOAD_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'Rollout']);
const APPSET_RESOURCES_CAP = 5000;

/**
 * The fake Argo CD's application controller and applicationset controller: picks up requested
 * operations, runs syncs to completion (with retries, termination and faults), settles health,
 * auto-syncs apps that ask for it, and advances RollingSync ApplicationSets with the same pure
 * state machine the bot reads them with (src/fleet/rollingsync.ts). Each pass touches only apps
 * with work pending and appsets whose apps changed, so it stays cheap on 10,000 apps.
 */
export class SimController {
  readonly clock: SimClock;
  readonly faults: SimFaults;
  private readonly book = new FaultBook();
  private readonly opts: Required<Omit<SimControllerOptions, 'behaviour' | 'startAt'>>;
  private readonly behaviour?: ScenarioBehaviour;
  private readonly work = new Map<string, AppWork>();
  private readonly autoSyncCandidates = new Map<string, { instance: string; name: string }>();
  private readonly dirtyAppSets = new Map<string, { instance: string; name: string }>();
  /** instance → appset → app names (from ownerReferences). */
  private readonly owned = new Map<string, Map<string, Set<string>>>();
  private readonly attached = new Set<string>();
  private readonly listeners: {
    store: InstanceStore;
    app: (c: StoreChange<Application>) => void;
    appSet: (c: StoreChange<ApplicationSet>) => void;
  }[] = [];
  private timer?: NodeJS.Timeout;
  private writingAppSet = false;
  /** Appsets this controller has driven as RollingSync (to notice them leaving it). */
  private readonly rollingSeen = new Set<string>();
  private started = false;
  /**
   * Whether a deny sync window covers the app now. The REST layer refuses manual syncs itself
   * ("cannot sync: blocked by sync window"); automated operations (autosync, RollingSync) are held
   * Running by the app controller instead (argocd-facts A6), which is what this hook drives.
   */
  syncWindowDenies?: (instance: string, app: Application) => boolean;

  constructor(
    readonly state: SimState,
    opts: SimControllerOptions = {},
  ) {
    this.opts = {
      speed: opts.speed ?? 1,
      frozen: opts.frozen ?? false,
      manual: opts.manual ?? false,
      syncDurationMs: opts.syncDurationMs ?? 5000,
      healthSettleMs: opts.healthSettleMs ?? 5000,
      stepMs: opts.stepMs ?? 1000,
      progressiveSyncs: opts.progressiveSyncs ?? true,
    };
    this.behaviour = opts.behaviour;
    const start = opts.startAt?.getTime() ?? Date.now();
    this.clock = this.opts.manual ? new ManualClock(start) : new ScaledClock(this.opts.speed, this.opts.frozen, start);
    this.faults = {
      failApp: (instance, app, message) => this.failApp(instance, app, message),
      crashLoop: (instance, app) => this.crashLoop(instance, app),
      clear: (instance, app) => this.clearFaults(instance, app),
      clusterDown: (instance, cluster, down, message) => this.setClusterDown(instance, cluster, down, message),
      list: () => this.book.list(),
    };
    this.attachAll();
    this.behaviour?.onStart?.(this.context());
  }

  /** Runs passes on a timer scaled by speed (not in manual or frozen mode). */
  start(): void {
    if (this.started || this.opts.manual || this.opts.frozen) return;
    this.started = true;
    // Short ticks keep added latency per sync small (benchmarks compare against ideal times); a pass with
    // nothing due costs next to nothing. At high speed a pass covers more simulated time.
    const tickMs = Math.max(20, Math.min(50, this.opts.stepMs / this.opts.speed));
    this.timer = setInterval(() => this.pass(), tickMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.started = false;
    for (const l of this.listeners) {
      l.store.events.off('app', l.app);
      l.store.events.off('appset', l.appSet);
    }
    this.listeners.length = 0;
    this.attached.clear();
  }

  /** Moves simulated time forward by `ms`, one controller pass per step (deterministic in manual mode). */
  advance(ms: number): void {
    if (this.opts.frozen) return;
    let left = ms;
    while (left > 0) {
      const step = Math.min(this.opts.stepMs, left);
      this.clock.advance(step);
      left -= step;
      this.pass();
    }
  }

  /** Runs until `predicate` holds or `maxMs` of simulated time passed; returns whether it held. */
  advanceUntil(predicate: () => boolean, maxMs: number): boolean {
    let spent = 0;
    while (!predicate()) {
      if (spent >= maxMs) return false;
      this.advance(this.opts.stepMs);
      spent += this.opts.stepMs;
    }
    return true;
  }

  // ---------- API used by the REST layer ----------

  /**
   * POST /api/v1/applications/{name}/sync after auth: writes the top-level `operation` as Argo CD's
   * API server does (revision resolved to a commit) and returns the app. The controller starts it on
   * a later pass.
   */
  requestSync(instance: string, appName: string, request: ApplicationSyncRequest, user: string): Application {
    const store = this.requireInstance(instance);
    const app = this.requireApp(store, appName);
    if (app.metadata.deletionTimestamp) throw new SimError('failed_precondition', 'application is deleting');
    if (operationInProgress(app)) throw new SimError('failed_precondition', 'another operation is already in progress');
    if (request.sourcePositions?.length && request.sourcePositions.length !== (request.revisions?.length ?? 0))
      throw new SimError('invalid_argument', 'the number of revisions must match the number of source positions');
    const sync: SyncOperation = {};
    const multi = app.spec.sources?.length ? app.spec.sources : undefined;
    if (multi) {
      const revisions = targetRevisions(app);
      for (const [i, pos] of (request.sourcePositions ?? []).entries())
        revisions[pos - 1] = resolveRevision(multi[pos - 1]?.repoURL ?? '', request.revisions![i]);
      sync.revisions = revisions;
      if (request.sourcePositions?.length) sync.sourcePositions = request.sourcePositions;
    } else {
      sync.revision =
        request.revision && !isSameRef(app, request.revision)
          ? resolveRevision(app.spec.source?.repoURL ?? '', request.revision)
          : targetRevision(app);
    }
    if (request.prune) sync.prune = true;
    if (request.dryRun) sync.dryRun = true;
    // Go decodes into {apply|hook: {force}}: anything else (swagger's syncStrategyApply nesting) is dropped.
    if (request.strategy) sync.syncStrategy = syncStrategyOf(request.strategy);
    if (request.resources?.length) sync.resources = structuredClone(request.resources);
    if (request.syncOptions?.items?.length) sync.syncOptions = [...request.syncOptions.items];
    const operation: Operation = {
      sync,
      initiatedBy: { username: user },
      ...(request.infos?.length ? { info: structuredClone(request.infos) } : {}),
      retry: structuredClone(request.retryStrategy ?? {}),
    };
    return this.writeOperation(store, app, operation);
  }

  /**
   * POST /api/v1/applications/{name}/rollback after auth, as Argo CD's Rollback does it: refused while
   * auto-sync is on, for an id not in status.history, and while an operation is pending; otherwise a
   * sync operation to that entry's revision and source (with the app's syncOptions and an apply
   * strategy), initiated by the token's user, with the last operationState cleared (SetAppOperation).
   */
  requestRollback(instance: string, appName: string, request: { id: number; prune?: boolean; dryRun?: boolean }, user: string): Application {
    const store = this.requireInstance(instance);
    const app = this.requireApp(store, appName);
    if (app.metadata.deletionTimestamp) throw new SimError('failed_precondition', 'application is deleting');
    if (automatedEnabled(app.spec.syncPolicy?.automated))
      throw new SimError('failed_precondition', 'rollback cannot be initiated when auto-sync is enabled');
    const entry = app.status?.history?.find((h) => h.id === request.id);
    if (!entry) throw new SimError('invalid_argument', `application ${qualifiedName(app)} does not have deployment with id ${request.id}`);
    if (!entry.source && !entry.sources?.length)
      throw new SimError('failed_precondition', 'cannot rollback to revision deployed with Argo CD v0.11 or lower. sync to revision instead.');
    if (app.operation) throw new SimError('failed_precondition', 'another operation is already in progress');
    const sync: SyncOperation = {
      ...(entry.revisions?.length ? { revisions: [...entry.revisions] } : { revision: entry.revision }),
      ...(request.dryRun ? { dryRun: true } : {}),
      ...(request.prune ? { prune: true } : {}),
      ...(app.spec.syncPolicy?.syncOptions?.length ? { syncOptions: [...app.spec.syncPolicy.syncOptions] } : {}),
      syncStrategy: { apply: {} },
      ...(entry.sources?.length ? { sources: structuredClone(entry.sources) } : { source: structuredClone(entry.source) }),
    };
    return this.writeOperation(store, app, { sync, initiatedBy: { username: user } });
  }

  /** DELETE /api/v1/applications/{name}/operation: phase Terminating now, Failed "Operation terminated" on the next pass. */
  requestTerminate(instance: string, appName: string): void {
    const store = this.requireInstance(instance);
    const app = this.requireApp(store, appName);
    const work = this.work.get(workKey(instance, appName));
    const phase = app.status?.operationState?.phase;
    const notStarted = !!app.operation && work?.requestedAt !== undefined;
    if (!app.operation || (!notStarted && phase !== 'Running' && phase !== 'Terminating'))
      throw new SimError('invalid_argument', 'Unable to terminate operation. No operation is in progress');
    const now = this.clock.now();
    const next = structuredClone(app);
    const status = (next.status ??= {});
    if (notStarted) {
      status.operationState = {
        operation: structuredClone(next.operation!),
        phase: 'Terminating',
        startedAt: rfc3339(now),
      };
    } else {
      status.operationState!.phase = 'Terminating';
    }
    const w = this.workFor(instance, appName);
    w.requestedAt = w.attemptEndsAt = w.retryAt = undefined;
    w.blocked = false;
    w.terminating = true;
    store.putApp(next);
  }

  /** A commit lands for these apps: they go OutOfSync at `revision` (what RollingSync reacts to). */
  newCommit(instance: string, appNames: string[], revision?: string): string {
    const store = this.requireInstance(instance);
    const rev = revision ?? sha1(`commit:${instance}:${appNames.join(',')}:${this.clock.now().getTime()}`);
    for (const name of appNames) {
      const next = structuredClone(this.requireApp(store, name));
      const status = (next.status ??= {});
      const sync = (status.sync ??= { status: 'OutOfSync' });
      sync.status = 'OutOfSync';
      if (next.spec.sources?.length) sync.revisions = next.spec.sources.map(() => rev);
      else sync.revision = rev;
      const workload = status.resources?.find((r) => WORKLOAD_KINDS.has(r.kind)) ?? status.resources?.[0];
      if (workload) workload.status = 'OutOfSync';
      status.reconciledAt = rfc3339(this.clock.now());
      store.putApp(next);
    }
    return rev;
  }

  /** Overrides the sync duration of one app (simulated ms). */
  setSyncDuration(instance: string, appName: string, ms: number): void {
    const store = this.requireInstance(instance);
    const next = structuredClone(this.requireApp(store, appName));
    next.metadata.annotations = { ...next.metadata.annotations, [SIM_ANNOTATIONS.syncDuration]: `${ms}ms` };
    store.putApp(next);
  }

  // ---------- Faults ----------

  private failApp(instance: string, appName: string, message?: string): void {
    const store = this.requireInstance(instance);
    const app = this.requireApp(store, appName);
    this.book.setFailing(instance, appName, message ?? defaultSyncFailure(workloadOf(app)?.name ?? appName));
  }

  private crashLoop(instance: string, appName: string): void {
    this.requireApp(this.requireInstance(instance), appName);
    this.book.setCrashLoop(instance, appName);
  }

  private clearFaults(instance: string, appName: string): void {
    const store = this.requireInstance(instance);
    const app = this.requireApp(store, appName);
    this.book.clearApp(instance, appName);
    // Pods stop crashing once the cause is gone: the workload rolls, then reports Healthy.
    if (app.status?.health?.status === 'Degraded' && !this.book.clusterDownFor(instance, serverOf(store, app))) {
      const now = this.clock.now();
      const next = structuredClone(app);
      setHealth(next, 'Progressing', now, workloadProgressingMessage(next));
      const w = this.workFor(instance, appName);
      w.healthAt = now.getTime() + this.healthSettleMs(next);
      w.healthTo = 'Healthy';
      store.putApp(next);
    }
  }

  private setClusterDown(instance: string, clusterRef: string, down: boolean, message?: string): void {
    const store = this.requireInstance(instance);
    const cluster = findCluster(store, clusterRef);
    if (!cluster) {
      const known = [...store.clusters.values()].map((c) => c.name).join(', ');
      throw new SimError(
        'not_found',
        `cluster "${clusterRef}" not found on instance ${instance} (known: ${known || 'none'})`,
      );
    }
    const now = this.clock.now();
    const next: Cluster = structuredClone(cluster);
    const apps = [...store.apps.values()].filter((a) => appOnCluster(a, cluster));
    if (down) {
      const connection = message ?? clusterUnreachableMessage(cluster.server);
      const state = { status: 'Failed', message: connection, attemptedAt: rfc3339(now) };
      next.connectionState = state;
      next.info = { ...next.info, connectionState: state };
      store.putCluster(next);
      const saved = this.book.markDown(instance, cluster, connection);
      const condition = {
        type: 'ComparisonError',
        message: comparisonErrorMessage(cluster.server, connection),
        lastTransitionTime: rfc3339(now),
      };
      for (const app of apps) {
        const a = structuredClone(app);
        const status = (a.status ??= {});
        if (!saved.has(a.metadata.name))
          saved.set(a.metadata.name, {
            sync: structuredClone(status.sync),
            health: structuredClone(status.health),
            conditions: structuredClone(status.conditions),
          });
        status.sync = { ...status.sync, status: 'Unknown' };
        status.health = { status: 'Unknown', lastTransitionTime: rfc3339(now) };
        status.conditions = [...(status.conditions ?? []).filter((c) => c.type !== 'ComparisonError'), condition];
        status.reconciledAt = rfc3339(now);
        store.putApp(a);
      }
    } else {
      const state = { status: 'Successful', message: '', attemptedAt: rfc3339(now) };
      next.connectionState = state;
      next.info = { ...next.info, connectionState: state };
      store.putCluster(next);
      const saved = this.book.markUp(instance, cluster);
      if (!saved) return;
      for (const app of apps) {
        const before = saved.get(app.metadata.name);
        if (!before) continue;
        const a = structuredClone(app);
        const status = (a.status ??= {});
        status.sync = before.sync;
        status.health = before.health;
        if (before.conditions?.length) status.conditions = before.conditions;
        else delete status.conditions;
        status.reconciledAt = rfc3339(now);
        store.putApp(a);
      }
    }
  }

  // ---------- The pass ----------

  /** One reconcile pass at the clock's current time. */
  pass(): void {
    if (this.opts.frozen) return;
    this.attachAll();
    const now = this.clock.now();
    for (const w of [...this.work.values()]) this.processApp(w, now);
    for (const [k, c] of [...this.autoSyncCandidates]) {
      this.autoSyncCandidates.delete(k);
      this.maybeAutoSync(c.instance, c.name);
    }
    for (const [k, s] of [...this.dirtyAppSets]) {
      this.dirtyAppSets.delete(k);
      this.reconcileAppSet(s.instance, s.name, now);
    }
  }

  private processApp(w: AppWork, now: Date): void {
    const store = this.state.instance(w.instance);
    const app = store?.apps.get(w.name);
    if (!store || !app) {
      this.work.delete(workKey(w.instance, w.name));
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
      if (!this.syncWindowDenies?.(w.instance, app)) {
        w.blocked = false;
        this.startAttempt(store, app, w, now);
      }
    } else if (w.retryAt !== undefined && t >= w.retryAt) {
      w.retryAt = undefined;
      this.startAttempt(store, app, w, now);
    } else if (w.attemptEndsAt !== undefined && t >= w.attemptEndsAt) {
      w.attemptEndsAt = undefined;
      this.finishAttempt(store, app, w, now);
    }
    const current = store.apps.get(w.name)!;
    if (w.healthAt !== undefined && t >= w.healthAt && !operationInProgress(current)) {
      const to = w.healthTo ?? 'Healthy';
      w.healthAt = w.healthTo = undefined;
      const next = structuredClone(current);
      if (to === 'Degraded') setHealth(next, 'Degraded', now, this.crashMessage(store, next));
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
      this.work.delete(workKey(w.instance, w.name));
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
    if (next.operation!.initiatedBy?.automated && this.syncWindowDenies?.(w.instance, next)) {
      status.operationState.message = 'Sync operation blocked by sync window';
      w.blocked = true;
    } else {
      w.attemptEndsAt = now.getTime() + this.syncDurationMs(next);
    }
    store.putApp(next);
  }

  private startAttempt(store: InstanceStore, app: Application, w: AppWork, now: Date): void {
    const state = app.status?.operationState;
    if (!state || state.phase !== 'Running') return;
    const next = structuredClone(app);
    next.status!.operationState!.message = RUNNING_MESSAGE;
    w.attemptEndsAt = now.getTime() + this.syncDurationMs(next);
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
        const delay = backoffMs(op.operation.retry?.backoff, attempt);
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
    if (!sync.dryRun) this.behaviour?.onSyncSucceeded?.(this.context(store), w.instance, store.apps.get(w.name)!);
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
    const syncedSource = sync.sources?.length ? { sources: structuredClone(sync.sources) } : sync.source ? { source: structuredClone(sync.source) } : sourceFields(app);
    if (recordHistory) history.push({
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
    w.healthAt = now.getTime() + this.healthSettleMs(app);
    w.healthTo = this.book.isCrashLooping(w.instance, w.name) ? 'Degraded' : 'Healthy';
  }

  private crashMessage(store: InstanceStore, app: Application): string {
    const workload = workloadOf(app);
    const container = workload?.name ?? app.metadata.name;
    const ns = workload?.namespace ?? app.spec.destination.namespace ?? 'default';
    const h = sha1(`${store.name}/${app.metadata.name}/${app.status?.history?.length ?? 0}`);
    return crashLoopMessage(container, `${container}-${h.slice(0, 10)}-${h.slice(10, 15)}`, ns, uuidFrom(h));
  }

  // ---------- Autosync (plain apps with automated enabled) ----------

  private maybeAutoSync(instance: string, name: string): void {
    const store = this.state.instance(instance);
    const app = store?.apps.get(name);
    if (!store || !app || !autoSyncEnabled(app) || app.status?.sync?.status !== 'OutOfSync' || operationInProgress(app))
      return;
    if (app.metadata.deletionTimestamp || this.book.clusterDownFor(instance, serverOf(store, app))) return;
    // RollingSync owns its apps' syncs even before this controller got round to disabling their autosync.
    const owner = ownerAppSet(app);
    const ownerSet = owner ? store.appSets.get(owner) : undefined;
    if (ownerSet && this.drivesRollingSync(ownerSet)) return;
    const target = targetRevision(app);
    // Argo CD never auto-syncs the same revision twice: a failed attempt waits for a new commit or a human.
    if (app.status?.operationState?.syncResult?.revision === target) return;
    const policy = app.spec.syncPolicy!;
    const sync: SyncOperation = { revision: target };
    if (policy.automated?.prune) sync.prune = true;
    if (policy.syncOptions?.length) sync.syncOptions = [...policy.syncOptions];
    this.writeOperation(store, app, {
      sync,
      initiatedBy: { automated: true },
      retry: structuredClone(policy.retry ?? {}),
    });
  }

  // ---------- ApplicationSets ----------

  private reconcileAppSet(instance: string, name: string, now: Date): void {
    const store = this.state.instance(instance);
    const appSet = store?.appSets.get(name);
    if (!store || !appSet) return;
    const apps = [...(this.owned.get(instance)?.get(name) ?? [])]
      .map((n) => store.apps.get(n))
      .filter((a): a is Application => !!a)
      .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
    const status: ApplicationSetStatus = structuredClone(appSet.status ?? {});
    const progressive = this.progressiveSyncsOn(appSet);
    const rolling = isRollingSync(appSet);
    const rollingType = isRollingSyncType(appSet);
    let toSync: string[] = [];
    const invalid = invalidGenerated(appSet);
    status.conditions = validationConditions(status.conditions ?? [], invalid, now);
    if (!status.conditions.length) delete status.conditions;

    if (progressive && rollingType && !rolling) {
      // RollingSync without steps: PerformProgressiveSyncs still runs, writes no entries (the progress
      // pass keeps none without steps) and, with no step to wait on, reports the rollout complete.
      const advance = advanceRollout(appSet, [], now);
      delete status.applicationStatus;
      status.conditions = advance.conditions;
    } else if (progressive && rolling) {
      // RollingSync owns syncing: the appset controller keeps autosync off on what it generates (A5, v3.3+).
      for (const app of apps) {
        const automated = app.spec.syncPolicy?.automated;
        if (automated && automated.enabled !== false) {
          const next = structuredClone(app);
          next.spec.syncPolicy!.automated = { ...automated, enabled: false };
          store.putApp(next);
        }
      }
      const states = apps.map((a) => rolloutAppState(appSet, store.apps.get(a.metadata.name) ?? a));
      // The step lists come from every generated app, including those that failed validation and so
      // were never created: they hold later steps (getAppsToSync).
      const generated = [...states.map((a) => ({ name: a.name, labels: a.labels })), ...invalid.map((i) => ({ name: i.name, labels: i.labels ?? {} }))];
      const advance = advanceRollout({ ...appSet, status: { ...appSet.status, conditions: status.conditions } }, states, now, generated);
      status.applicationStatus = advance.applicationStatus;
      status.conditions = advance.conditions;
      // Argo CD re-asserts the operation on every Pending app of a released step until it starts.
      toSync = advance.pendingSync;
    } else {
      // The controller deletes progressive-sync entries when the feature is off or the strategy left RollingSync (A1).
      if (status.applicationStatus) delete status.applicationStatus;
      // Leaving RollingSync writes the template's automated policy back: autosync is on again and every
      // OutOfSync app syncs at once (A5: this is not a pause). Only on a change seen while running, so a
      // fixture is served as captured.
      if (this.rollingSeen.delete(workKey(instance, name))) this.restoreTemplateAutomated(store, appSet, apps);
    }
    if (progressive && rolling) this.rollingSeen.add(workKey(instance, name));
    // setApplicationSetStatusCondition evaluates RolloutProgressing on every write for an appset that is
    // not RollingSync, with no condition of that type to set: it is removed. (With the progressive-syncs
    // flag off but the strategy still RollingSync it is not evaluated, so it stays as it was.)
    if (!rollingType && status.conditions?.some((c) => c.type === 'RolloutProgressing')) {
      status.conditions = status.conditions.filter((c) => c.type !== 'RolloutProgressing');
      if (!status.conditions.length) delete status.conditions;
    }
    // SetConditions keeps them sorted by type.
    status.conditions?.sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0));

    if (rolling || appSet.status?.resources) {
      const resources = apps.map((a) => ({
        group: 'argoproj.io',
        version: 'v1alpha1',
        kind: 'Application',
        name: a.metadata.name,
        namespace: a.metadata.namespace ?? 'argocd',
        status: a.status?.sync?.status ?? ('Unknown' as SyncStatusCode),
        health: { status: a.status?.health?.status ?? ('Unknown' as HealthStatusCode) },
      }));
      status.resources = resources.slice(0, APPSET_RESOURCES_CAP);
      status.resourcesCount = resources.length;
    }
    if (rollingType || invalid.length || appSet.status?.health) status.health = appSetHealth(status);

    if (JSON.stringify(status) !== JSON.stringify(appSet.status ?? {})) {
      const next = structuredClone(appSet);
      next.status = status;
      this.writingAppSet = true;
      try {
        store.putAppSet(next);
      } finally {
        this.writingAppSet = false;
      }
    }

    // create-only / create-delete: the controller never updates existing apps, and RollingSync writes its
    // operation through that update path, so nothing new starts (A8 b).
    const policy = appSet.spec.syncPolicy?.applicationsSync;
    if (policy === 'create-only' || policy === 'create-delete') return;
    const current = store.appSets.get(name)!;
    const pendingSince = new Map(
      (current.status?.applicationStatus ?? []).map((e) => [e.application, e.lastTransitionTime]),
    );
    for (const appName of toSync) {
      const app = store.apps.get(appName);
      if (!app || operationInProgress(app)) continue;
      const started = Date.parse(app.status?.operationState?.startedAt ?? '');
      if (started > Date.parse(pendingSince.get(appName) ?? '')) continue;
      this.writeOperation(store, app, rollingSyncOperation(current));
    }
  }

  private progressiveSyncsOn(appSet: ApplicationSet): boolean {
    return this.opts.progressiveSyncs && appSet.metadata.annotations?.[SIM_ANNOTATIONS.progressiveSyncs] !== 'disabled';
  }

  private drivesRollingSync(appSet: ApplicationSet): boolean {
    return this.progressiveSyncsOn(appSet) && isRollingSync(appSet);
  }

  private restoreTemplateAutomated(store: InstanceStore, appSet: ApplicationSet, apps: Application[]): void {
    const template = appSet.spec.template?.spec?.syncPolicy?.automated;
    if (!automatedEnabled(template)) return;
    for (const app of apps) {
      const current = store.apps.get(app.metadata.name) ?? app;
      if (automatedEnabled(current.spec.syncPolicy?.automated)) continue;
      const next = structuredClone(current);
      next.spec.syncPolicy = { ...next.spec.syncPolicy, automated: structuredClone(template) };
      store.putApp(next);
    }
  }

  // ---------- Plumbing ----------

  /**
   * Argo CD's SetAppOperation, behind sync, rollback and auto-sync alike: the operation is written and the
   * last operationState cleared in one update, so until the controller starts it the app shows a requested
   * operation and no state at all.
   */
  private writeOperation(store: InstanceStore, app: Application, operation: Operation): Application {
    const next = structuredClone(app);
    next.operation = operation;
    if (next.status) delete next.status.operationState;
    const w = this.workFor(store.name, store.apps.refOf(app));
    w.requestedAt = this.clock.now().getTime();
    w.terminating = false;
    return store.putApp(next);
  }

  private workFor(instance: string, name: string): AppWork {
    const k = workKey(instance, name);
    let w = this.work.get(k);
    if (!w) this.work.set(k, (w = { instance, name }));
    return w;
  }

  private attachAll(): void {
    for (const store of this.state.instances.values()) {
      if (this.attached.has(store.name)) continue;
      this.attached.add(store.name);
      const owned = new Map<string, Set<string>>();
      this.owned.set(store.name, owned);
      for (const app of store.apps.values()) {
        const owner = ownerAppSet(app);
        if (owner) addOwned(owned, owner, app.metadata.name);
        const failSync = app.metadata.annotations?.[SIM_ANNOTATIONS.failSync];
        if (failSync) this.book.setFailing(store.name, app.metadata.name, failSync);
        if (app.metadata.annotations?.[SIM_ANNOTATIONS.crashLoop] === 'true')
          this.book.setCrashLoop(store.name, app.metadata.name);
        // A request already in the fixture is picked up like any other.
        if (app.operation && !operationInProgress({ ...app, operation: undefined }))
          this.workFor(store.name, store.apps.refOf(app)).requestedAt = this.clock.now().getTime();
      }
      for (const appSet of store.appSets.values())
        this.dirtyAppSets.set(workKey(store.name, appSet.metadata.name), {
          instance: store.name,
          name: appSet.metadata.name,
        });
      const onApp = (c: StoreChange<Application>) => this.onAppChange(store, c);
      const onAppSet = (c: StoreChange<ApplicationSet>) => {
        if (this.writingAppSet || c.type === 'DELETED') return;
        this.dirtyAppSets.set(workKey(store.name, c.object.metadata.name), {
          instance: store.name,
          name: c.object.metadata.name,
        });
      };
      store.events.on('app', onApp);
      store.events.on('appset', onAppSet);
      this.listeners.push({ store, app: onApp, appSet: onAppSet });
    }
  }

  private onAppChange(store: InstanceStore, change: StoreChange<Application>): void {
    const app = change.object;
    const name = store.apps.refOf(app);
    const owned = this.owned.get(store.name)!;
    const owner = ownerAppSet(app);
    if (change.type === 'DELETED') {
      if (owner) owned.get(owner)?.delete(name);
      this.work.delete(workKey(store.name, name));
    } else {
      if (owner) addOwned(owned, owner, name);
      if (
        app.operation &&
        !this.work.get(workKey(store.name, name))?.requestedAt &&
        app.status?.operationState?.phase !== 'Running' &&
        app.status?.operationState?.phase !== 'Terminating'
      )
        this.workFor(store.name, name).requestedAt = this.clock.now().getTime();
      // Only changes made while the simulator runs trigger autosync: a fixture's OutOfSync automated app is
      // served as captured (its earlier attempt is part of the snapshot).
      if (autoSyncEnabled(app) && app.status?.sync?.status === 'OutOfSync' && !app.operation)
        this.autoSyncCandidates.set(workKey(store.name, name), { instance: store.name, name });
    }
    if (owner) this.dirtyAppSets.set(workKey(store.name, owner), { instance: store.name, name: owner });
  }

  private context(store?: InstanceStore): ScenarioContext {
    return { controller: this, faults: this.faults, store, now: this.clock.now() };
  }

  private requireInstance(instance: string): InstanceStore {
    const store = this.state.instance(instance);
    if (!store)
      throw new SimError(
        'not_found',
        `no Argo CD instance "${instance}" in this simulator (known: ${[...this.state.instances.keys()].join(', ')})`,
      );
    return store;
  }

  private requireApp(store: InstanceStore, name: string): Application {
    const app = store.apps.get(name);
    // Argo CD's own wording for a missing app.
    if (!app) throw new SimError('not_found', `applications.argoproj.io "${name}" not found`);
    return app;
  }

  private syncDurationMs(app: Application): number {
    return durationAnnotation(app, SIM_ANNOTATIONS.syncDuration) ?? this.opts.syncDurationMs;
  }

  private healthSettleMs(app: Application): number {
    return durationAnnotation(app, SIM_ANNOTATIONS.healthSettle) ?? this.opts.healthSettleMs;
  }
}

// ---------- Helpers ----------

function workKey(instance: string, name: string): string {
  return `${instance}\u0000${name}`;
}

function addOwned(owned: Map<string, Set<string>>, owner: string, name: string): void {
  let set = owned.get(owner);
  if (!set) owned.set(owner, (set = new Set()));
  set.add(name);
}

/** Top-level operation present, or the last one still Running/Terminating. */
export function operationInProgress(app: Application): boolean {
  const phase = app.status?.operationState?.phase;
  return !!app.operation || phase === 'Running' || phase === 'Terminating';
}

function autoSyncEnabled(app: Application): boolean {
  return automatedEnabled(app.spec.syncPolicy?.automated);
}

function durationAnnotation(app: Application, key: string): number | undefined {
  const v = app.metadata.annotations?.[key];
  if (!v) return undefined;
  return /^\d+$/.test(v) ? Number(v) : parseGoDuration(v);
}

export function sha1(text: string): string {
  return createHash('sha1').update(text).digest('hex');
}

function uuidFrom(hex: string): string {
  const h = (hex + sha1(hex)).slice(0, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** The commit the app's target resolves to now (status.sync.revision), else a stable fake commit. */
function targetRevision(app: Application): string {
  return (
    app.status?.sync?.revision ??
    resolveRevision(app.spec.source?.repoURL ?? '', app.spec.source?.targetRevision ?? 'HEAD')
  );
}

function targetRevisions(app: Application): string[] {
  const sources = app.spec.sources ?? [];
  return app.status?.sync?.revisions?.length
    ? [...app.status.sync.revisions]
    : sources.map((s) => resolveRevision(s.repoURL, s.targetRevision ?? 'HEAD'));
}

function isSameRef(app: Application, revision: string): boolean {
  return revision === (app.spec.source?.targetRevision ?? 'HEAD') || revision === app.status?.sync?.revision;
}

/** What the repo server would resolve a branch/tag to: a commit SHA (kept if already one). */
function resolveRevision(repoURL: string, revision: string): string {
  return /^[0-9a-f]{40}$/.test(revision) ? revision : sha1(`${repoURL}@${revision}`);
}

function sourceFields(app: Application): {
  source?: Application['spec']['source'];
  sources?: Application['spec']['sources'];
} {
  if (app.spec.sources?.length) return { sources: structuredClone(app.spec.sources) };
  return app.spec.source ? { source: structuredClone(app.spec.source) } : {};
}

function serverOf(store: InstanceStore, app: Application): string | undefined {
  const dest = app.spec.destination;
  if (dest.server) return dest.server;
  if (dest.name) for (const c of store.clusters.values()) if (c.name === dest.name) return c.server;
  return undefined;
}

function findCluster(store: InstanceStore, ref: string): Cluster | undefined {
  const normalized = normalizeServer(ref);
  for (const c of store.clusters.values()) if (c.name === ref || normalizeServer(c.server) === normalized) return c;
  return undefined;
}

function appOnCluster(app: Application, cluster: Cluster): boolean {
  const dest = app.spec.destination;
  if (dest.name) return dest.name === cluster.name;
  return !!dest.server && normalizeServer(dest.server) === normalizeServer(cluster.server);
}

function workloadOf(app: Application): ResourceStatus | undefined {
  return app.status?.resources?.find((r) => WORKLOAD_KINDS.has(r.kind));
}

function resourceId(r: { group?: string; kind: string; namespace?: string; name: string }): string {
  return `${r.group ?? ''}/${r.kind}/${r.namespace ?? ''}/${r.name}`;
}

function inScope(r: ResourceStatus, sync: SyncOperation): boolean {
  if (!sync.resources?.length) return true;
  return sync.resources.some(
    (s) =>
      (s.group ?? '') === (r.group ?? '') &&
      s.kind === r.kind &&
      s.name === r.name &&
      (!s.namespace || s.namespace === (r.namespace ?? '')),
  );
}

/** gitops-engine's per-resource results, e.g. "deployment.apps/auth-service configured". */
function syncResults(app: Application, sync: SyncOperation, opts: { failing?: string }): ResourceResult[] {
  const resources = (app.status?.resources ?? []).filter((r) => inScope(r, sync));
  const dry = sync.dryRun ? ' (dry run)' : '';
  const pruneAllowed = (sync.prune ?? false) && !sync.syncOptions?.includes('Prune=false');
  const failingId = opts.failing
    ? resourceId(
        resources.find((r) => WORKLOAD_KINDS.has(r.kind) && !r.requiresPruning) ??
          resources.find((r) => !r.requiresPruning) ??
          resources[0] ?? { kind: '', name: '' },
      )
    : undefined;
  const out: ResourceResult[] = [];
  for (const r of resources) {
    const base = { group: r.group ?? '', version: r.version, kind: r.kind, namespace: r.namespace ?? '', name: r.name };
    const ref = `${r.kind.toLowerCase()}${r.group ? `.${r.group}` : ''}/${r.name}`;
    if (r.requiresPruning) {
      if (pruneAllowed)
        out.push({ ...base, status: 'Pruned', message: `pruned${dry}`, hookPhase: 'Running', syncPhase: 'Sync' });
      else
        out.push({
          ...base,
          status: 'PruneSkipped',
          message: 'ignored (requires pruning)',
          hookPhase: 'Running',
          syncPhase: 'Sync',
        });
    } else if (failingId && resourceId(r) === failingId) {
      out.push({ ...base, status: 'SyncFailed', message: opts.failing, hookPhase: 'Failed', syncPhase: 'Sync' });
    } else {
      out.push({
        ...base,
        status: 'Synced',
        message: `${ref} ${r.status === 'Synced' ? 'unchanged' : 'configured'}${dry}`,
        hookPhase: 'Running',
        syncPhase: 'Sync',
      });
    }
  }
  return out;
}

function setHealth(app: Application, health: HealthStatusCode, now: Date, workloadMessage?: string): void {
  const status = (app.status ??= {});
  if (status.health?.status !== health) status.health = { status: health, lastTransitionTime: rfc3339(now) };
  for (const r of status.resources ?? []) {
    if (!WORKLOAD_KINDS.has(r.kind)) continue;
    r.health =
      workloadMessage && health !== 'Healthy' ? { status: health, message: workloadMessage } : { status: health };
  }
}

function workloadProgressingMessage(app: Application): string | undefined {
  const w = workloadOf(app);
  return w ? `Waiting for rollout to finish: 0 of 1 updated replicas are available...` : undefined;
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

/**
 * v3.4+ appset health (ApplicationSetStatus.CalculateHealth, applicationset_types.go): ErrorOccurred=True
 * → Degraded with its message; RolloutProgressing=True → Progressing with its message;
 * ResourcesUpToDate=True → Healthy with its message; otherwise Unknown, with Argo CD's own wording.
 */
export function appSetHealth(status: ApplicationSetStatus): { status: HealthStatusCode; message: string } {
  const conditions = status.conditions ?? [];
  if (!conditions.length) return { status: 'Unknown', message: 'No status conditions found for ApplicationSet' };
  const isTrue = (type: string) => conditions.find((c) => c.type === type && c.status === 'True');
  const error = isTrue('ErrorOccurred');
  if (error) return { status: 'Degraded', message: error.message ?? '' };
  const rollout = isTrue('RolloutProgressing');
  if (rollout) return { status: 'Progressing', message: rollout.message ?? '' };
  const upToDate = isTrue('ResourcesUpToDate');
  if (upToDate) return { status: 'Healthy', message: upToDate.message ?? '' };
  return { status: 'Unknown', message: 'Waiting for health status to be determined' };
}

/** A generated Application that failed validation, as a fixture declares it (SIM_ANNOTATIONS.generatedInvalid). */
export interface InvalidGeneratedApp {
  name: string;
  /** Its generated labels (what the steps match). */
  labels?: Record<string, string>;
  /** The validation error, in validateGeneratedApplications' words. */
  error: string;
}

function invalidGenerated(appSet: ApplicationSet): InvalidGeneratedApp[] {
  const raw = appSet.metadata.annotations?.[SIM_ANNOTATIONS.generatedInvalid];
  if (!raw) return [];
  try {
    const parsed = JSON.parse(raw) as unknown;
    if (!Array.isArray(parsed)) return [];
    return parsed
      .filter((e): e is InvalidGeneratedApp => !!e && typeof e.name === 'string' && typeof e.error === 'string')
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  } catch {
    return [];
  }
}

const UP_TO_DATE_MESSAGE = 'All applications have been generated successfully';

/**
 * The conditions Reconcile writes about validation: with invalid apps, ErrorOccurred=True reason
 * ApplicationValidationError whose message is the last app's error (by name) plus "(and N more)", and
 * ResourcesUpToDate=False reason ErrorOccurred; once none is invalid again, ResourcesUpToDate=True and
 * ErrorOccurred=False (setApplicationSetStatusCondition's dependent condition). Untouched otherwise, so
 * a fixture's conditions are served as captured.
 */
function validationConditions(conditions: ApplicationSetCondition[], invalid: InvalidGeneratedApp[], now: Date): ApplicationSetCondition[] {
  const stamp = rfc3339(now);
  const set = (list: ApplicationSetCondition[], c: ApplicationSetCondition) => {
    const i = list.findIndex((x) => x.type === c.type);
    const same = i >= 0 && list[i].status === c.status && list[i].reason === c.reason && list[i].message === c.message;
    if (same) return list;
    const next = { ...c, lastTransitionTime: stamp };
    return i >= 0 ? list.map((x, j) => (j === i ? next : x)) : [...list, next];
  };
  let out = conditions;
  if (invalid.length) {
    const last = invalid[invalid.length - 1].error;
    const message = invalid.length > 1 ? `${last} (and ${invalid.length - 1} more)` : last;
    out = set(out, { type: 'ErrorOccurred', status: 'True', reason: 'ApplicationValidationError', message });
    out = set(out, { type: 'ResourcesUpToDate', status: 'False', reason: 'ErrorOccurred', message });
    out = set(out, { type: 'ParametersGenerated', status: 'True', reason: 'ParametersGenerated', message: 'Successfully generated parameters for all Applications' });
  } else if (out.some((c) => c.type === 'ErrorOccurred' && c.status === 'True' && c.reason === 'ApplicationValidationError')) {
    out = set(out, { type: 'ResourcesUpToDate', status: 'True', reason: 'ApplicationSetUpToDate', message: UP_TO_DATE_MESSAGE });
    out = set(out, { type: 'ErrorOccurred', status: 'False', reason: 'ApplicationSetUpToDate', message: UP_TO_DATE_MESSAGE });
  }
  return out;
}

/** The sync strategy as Argo CD's JSON decoding keeps it: `{apply: {force}}` or `{hook: {force}}`, unknown fields dropped (B4, B7). */
function syncStrategyOf(strategy: unknown): NonNullable<Operation['sync']>['syncStrategy'] {
  const out: Record<string, { force?: boolean }> = {};
  for (const kind of ['apply', 'hook'] as const) {
    const value = (strategy as Record<string, unknown> | undefined)?.[kind];
    if (value && typeof value === 'object') {
      const force = (value as { force?: unknown }).force;
      out[kind] = typeof force === 'boolean' ? { force } : {};
    }
  }
  return out as NonNullable<Operation['sync']>['syncStrategy'];
}

/** Argo CD's Application.QualifiedName: the bare name in the control-plane namespace, `ns/name` elsewhere. */
function qualifiedName(app: Application): string {
  const ns = app.metadata.namespace;
  return !ns || ns === 'argocd' ? app.metadata.name : `${ns}/${app.metadata.name}`;
}
