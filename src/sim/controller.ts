import type {
  Application,
  ApplicationSet,
  ApplicationSyncRequest,
  Cluster,
  SyncOperation,
} from '../infra/argocd/types.js';
import { ownerAppSet } from '../infra/argocd/objects.js';
import { SIM_ANNOTATIONS } from './annotations.js';
import {
  WORKLOAD_KINDS,
  appOnCluster,
  autoSyncEnabled,
  findCluster,
  operationInProgress,
  serverOf,
  setHealth,
  sha1,
  targetRevision,
  workloadOf,
  workloadProgressingMessage,
} from './app-model.js';
import { AppSetController } from './appset-controller.js';
import { ManualClock, ScaledClock, rfc3339, type SimClock } from './clock.js';
import {
  FaultBook,
  clusterUnreachableMessage,
  comparisonErrorMessage,
  defaultSyncFailure,
  type SimFaults,
} from './faults.js';
import type { ScenarioBehaviour, ScenarioContext } from './scenarios/behaviour.js';
import { SimError } from './sim-error.js';
import type { InstanceStore, SimState, StoreChange } from './store.js';
import { rollbackOperation, syncRequestOperation, type RollbackRequest } from './sync-requests.js';
import { SyncRunner } from './sync-runner.js';
import { syncWindowVerdict } from './projects.js';
import { WorkQueue, workKey } from './work.js';

export type { SimClock } from './clock.js';
export { SIM_ANNOTATIONS } from './annotations.js';
export { operationInProgress, sha1 } from './app-model.js';
export { appSetHealth, type InvalidGeneratedApp } from './appset-status.js';
export { SimError, type SimErrorCode } from './sim-error.js';

export interface SimControllerOptions {
  /**
   * How many times faster than real time simulated durations pass (syncs, health settling, retries,
   * Rollout pauses); timestamps stay the time of day. @defaultValue 1
   */
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

/**
 * The fake Argo CD's application controller and applicationset controller: picks up requested
 * operations and hands them to the operation runner (sync-runner.ts), auto-syncs apps that ask for
 * it, applies faults, and reconciles ApplicationSets (appset-controller.ts) whose apps changed. Each
 * pass touches only apps with work pending and appsets whose apps changed, so it stays cheap on
 * 10,000 apps.
 */
export class SimController {
  readonly clock: SimClock;
  readonly faults: SimFaults;
  private readonly book = new FaultBook();
  private readonly opts: Required<Omit<SimControllerOptions, 'behaviour' | 'startAt'>>;
  private readonly behaviour?: ScenarioBehaviour;
  private readonly work: WorkQueue;
  private readonly runner: SyncRunner;
  private readonly appSets: AppSetController;
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
  private started = false;
  /** Auto-syncs a sync window prevented: asked again every pass until the windows let them go. */
  private readonly heldAutoSyncs = new Map<string, { instance: string; name: string }>();
  private heldAskedAt = 0;
  /** Other controllers of the simulated clusters (Argo Rollouts), run at the end of every pass. */
  private readonly reconcilers: ((now: Date) => void)[] = [];

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
    this.work = new WorkQueue(this.clock);
    this.runner = new SyncRunner(this.state, this.work, this.book, this.opts, {
      syncWindowBlocks: (instance, app) => this.operationHeldByWindow(instance, app),
      onSyncSucceeded: (store, instance, app) => this.behaviour?.onSyncSucceeded?.(this.context(store), instance, app),
      span: (ms) => this.clock.span(ms),
    });
    this.appSets = new AppSetController(this.state, this.work, this.owned, this.opts.progressiveSyncs);
    this.faults = {
      failApp: (instance, app, message) => this.failApp(instance, app, message),
      crashLoop: (instance, app) => this.crashLoop(instance, app),
      isCrashLooping: (instance, app) => this.book.isCrashLooping(instance, app),
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
    return this.work.writeOperation(store, app, syncRequestOperation(app, request, user));
  }

  /** POST /api/v1/applications/{name}/rollback after auth (rollbackOperation says what Argo CD refuses). */
  requestRollback(instance: string, appName: string, request: RollbackRequest, user: string): Application {
    const store = this.requireInstance(instance);
    const app = this.requireApp(store, appName);
    return this.work.writeOperation(store, app, rollbackOperation(app, request, user));
  }

  /** DELETE /api/v1/applications/{name}/operation: phase Terminating now, Failed "Operation terminated" on the next pass. */
  requestTerminate(instance: string, appName: string): void {
    const store = this.requireInstance(instance);
    const app = this.requireApp(store, appName);
    const work = this.work.get(instance, appName);
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
    const w = this.work.for(instance, appName);
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
      const w = this.work.for(instance, appName);
      w.healthAt = now.getTime() + this.clock.span(this.runner.healthSettleMs(next));
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

  /** Runs `reconcile` at the end of every pass, on the same clock (an Argo Rollouts controller, say). */
  addReconciler(reconcile: (now: Date) => void): void {
    this.reconcilers.push(reconcile);
  }

  // ---------- The pass ----------

  /** One reconcile pass at the clock's current time. */
  pass(): void {
    if (this.opts.frozen) return;
    this.attachAll();
    const now = this.clock.now();
    for (const w of this.work.entries()) this.runner.processApp(w, now);
    // Held auto-syncs wait for the next refresh: asked again once a simulated second, not on every tick.
    const askHeld = now.getTime() - this.heldAskedAt >= 1000;
    if (askHeld) this.heldAskedAt = now.getTime();
    for (const [k, c] of [...(askHeld ? this.heldAutoSyncs : []), ...this.autoSyncCandidates]) {
      this.autoSyncCandidates.delete(k);
      this.heldAutoSyncs.delete(k);
      this.maybeAutoSync(c.instance, c.name);
    }
    for (const [k, s] of [...this.dirtyAppSets]) {
      this.dirtyAppSets.delete(k);
      this.appSets.reconcile(s.instance, s.name, now);
    }
    for (const reconcile of this.reconcilers) reconcile(now);
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
    if (ownerSet && this.appSets.drivesRollingSync(ownerSet)) return;
    // processAppRefreshQueueItem asks CanSync(isManual=false) before autoSync: a window that holds it writes no
    // operation ("Sync prevented by sync window" in the log) and the app stays OutOfSync until a later refresh.
    if (!syncWindowVerdict(store, app, { manual: false, at: this.clock.now() }).allowed) {
      this.heldAutoSyncs.set(workKey(instance, name), { instance, name });
      return;
    }
    const target = targetRevision(app);
    // Argo CD never auto-syncs the same revision twice: a failed attempt waits for a new commit or a human.
    if (app.status?.operationState?.syncResult?.revision === target) return;
    const policy = app.spec.syncPolicy!;
    const sync: SyncOperation = { revision: target };
    if (policy.automated?.prune) sync.prune = true;
    if (policy.syncOptions?.length) sync.syncOptions = [...policy.syncOptions];
    this.work.writeOperation(store, app, {
      sync,
      initiatedBy: { automated: true },
      retry: structuredClone(policy.retry ?? {}),
    });
  }

  /** syncWindowPreventsSync: manual unless the operation says automated; its start time counts for syncOverrun. */
  private operationHeldByWindow(instance: string, app: Application): boolean {
    const store = this.state.instance(instance);
    if (!store) return false;
    const state = app.status?.operationState;
    const operation = state?.operation ?? app.operation;
    const startedAt = state?.startedAt ? new Date(state.startedAt) : undefined;
    return !syncWindowVerdict(store, app, {
      manual: !operation?.initiatedBy?.automated,
      at: this.clock.now(),
      ...(startedAt ? { operationStartedAt: startedAt } : {}),
    }).allowed;
  }

  // ---------- Plumbing ----------

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
          this.work.for(store.name, store.apps.refOf(app)).requestedAt = this.clock.now().getTime();
      }
      for (const appSet of store.appSets.values())
        this.dirtyAppSets.set(workKey(store.name, appSet.metadata.name), {
          instance: store.name,
          name: appSet.metadata.name,
        });
      const onApp = (c: StoreChange<Application>) => this.onAppChange(store, c);
      const onAppSet = (c: StoreChange<ApplicationSet>) => {
        if (this.appSets.writing || c.type === 'DELETED') return;
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
      this.work.delete(store.name, name);
    } else {
      if (owner) addOwned(owned, owner, name);
      if (
        app.operation &&
        !this.work.get(store.name, name)?.requestedAt &&
        app.status?.operationState?.phase !== 'Running' &&
        app.status?.operationState?.phase !== 'Terminating'
      )
        this.work.for(store.name, name).requestedAt = this.clock.now().getTime();
      // Only changes made while the simulator runs trigger autosync: a fixture's OutOfSync automated app is
      // served as captured (its earlier attempt is part of the snapshot).
      if (autoSyncEnabled(app) && app.status?.sync?.status === 'OutOfSync' && !app.operation)
        this.autoSyncCandidates.set(workKey(store.name, name), { instance: store.name, name });
    }
    if (owner) this.dirtyAppSets.set(workKey(store.name, owner), { instance: store.name, name: owner });
  }

  private context(store?: InstanceStore): ScenarioContext {
    return { faults: this.faults, store, now: this.clock.now() };
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
}

function addOwned(owned: Map<string, Set<string>>, owner: string, name: string): void {
  let set = owned.get(owner);
  if (!set) owned.set(owner, (set = new Set()));
  set.add(name);
}
