import { EventEmitter } from 'node:events';
import type { Application, ApplicationSet, Cluster, WatchEventType } from '../argocd/types.js';

/**
 * The simulator's in-memory state for one Argo CD instance. Every change bumps a
 * per-instance resourceVersion (like etcd's) and emits a change event that the SSE streams
 * forward; the controller (clock-driven behaviour) and the REST layer both write through here.
 */
export interface StoreChange<T> {
  type: WatchEventType;
  object: T;
  resourceVersion: number;
}

export class InstanceStore {
  readonly events = new EventEmitter();
  private version = 0;
  readonly apps = new Map<string, Application>();
  readonly appSets = new Map<string, ApplicationSet>();
  readonly clusters = new Map<string, Cluster>();
  /** Recent changes kept for resume-by-resourceVersion. */
  private readonly appLog: StoreChange<Application>[] = [];
  private readonly appSetLog: StoreChange<ApplicationSet>[] = [];
  private static readonly LOG_LIMIT = 50_000;

  constructor(
    readonly name: string,
    readonly token: string,
  ) {
    this.events.setMaxListeners(0);
  }

  get resourceVersion(): number {
    return this.version;
  }

  private nextVersion(): number {
    return ++this.version;
  }

  /** Inserts or replaces an app; stamps metadata.resourceVersion. */
  putApp(app: Application): Application {
    const type: WatchEventType = this.apps.has(app.metadata.name) ? 'MODIFIED' : 'ADDED';
    const rv = this.nextVersion();
    app.metadata.resourceVersion = String(rv);
    this.apps.set(app.metadata.name, app);
    const change = { type, object: app, resourceVersion: rv };
    this.pushLog(this.appLog, change);
    this.events.emit('app', change);
    return app;
  }

  deleteApp(name: string): boolean {
    const app = this.apps.get(name);
    if (!app) return false;
    this.apps.delete(name);
    const rv = this.nextVersion();
    const change = { type: 'DELETED' as const, object: app, resourceVersion: rv };
    this.pushLog(this.appLog, change);
    this.events.emit('app', change);
    return true;
  }

  putAppSet(appSet: ApplicationSet): ApplicationSet {
    const type: WatchEventType = this.appSets.has(appSet.metadata.name) ? 'MODIFIED' : 'ADDED';
    const rv = this.nextVersion();
    appSet.metadata.resourceVersion = String(rv);
    this.appSets.set(appSet.metadata.name, appSet);
    const change = { type, object: appSet, resourceVersion: rv };
    this.pushLog(this.appSetLog, change);
    this.events.emit('appset', change);
    return appSet;
  }

  deleteAppSet(name: string): boolean {
    const appSet = this.appSets.get(name);
    if (!appSet) return false;
    this.appSets.delete(name);
    const rv = this.nextVersion();
    const change = { type: 'DELETED' as const, object: appSet, resourceVersion: rv };
    this.pushLog(this.appSetLog, change);
    this.events.emit('appset', change);
    return true;
  }

  putCluster(cluster: Cluster): void {
    this.clusters.set(cluster.server, cluster);
  }

  /** Changes after `resourceVersion`, or undefined when that version is older than the log keeps. */
  appChangesSince(resourceVersion: number): StoreChange<Application>[] | undefined {
    return changesSince(this.appLog, resourceVersion);
  }

  appSetChangesSince(resourceVersion: number): StoreChange<ApplicationSet>[] | undefined {
    return changesSince(this.appSetLog, resourceVersion);
  }

  private pushLog<T>(log: StoreChange<T>[], change: StoreChange<T>) {
    log.push(change);
    if (log.length > InstanceStore.LOG_LIMIT) log.splice(0, log.length - InstanceStore.LOG_LIMIT);
  }
}

function changesSince<T>(log: StoreChange<T>[], resourceVersion: number): StoreChange<T>[] | undefined {
  if (log.length && log[0].resourceVersion > resourceVersion + 1) return undefined;
  let lo = 0;
  let hi = log.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (log[mid].resourceVersion <= resourceVersion) lo = mid + 1;
    else hi = mid;
  }
  return log.slice(lo);
}

/** A mutating call the simulator received (GET /_sim/operations). */
export interface SimOperation {
  at: string;
  instance: string;
  method: string;
  path: string;
  app?: string;
  body: unknown;
  /** HTTP status the simulator answered with. */
  status?: number;
  /** Kubernetes API calls: instance is "kube" and this names the cluster. */
  cluster?: string;
}

export class SimState {
  readonly instances = new Map<string, InstanceStore>();
  readonly operations: SimOperation[] = [];

  instance(name: string): InstanceStore | undefined {
    return this.instances.get(name);
  }

  addInstance(name: string, token: string): InstanceStore {
    const store = new InstanceStore(name, token);
    this.instances.set(name, store);
    return store;
  }

  record(op: SimOperation): void {
    this.operations.push(op);
  }
}
