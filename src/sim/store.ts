import { EventEmitter } from 'node:events';
import type { AppProject, Application, ApplicationSet, Cluster, WatchEventType } from '../infra/argocd/types.js';

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

/** The namespace an Application lives in when its metadata names none: Argo CD's own (control plane). */
export const DEFAULT_APP_NAMESPACE = 'argocd';

/**
 * Applications by `namespace/name` (apps in any namespace may share a name), looked up by that key
 * or by bare name, as Argo CD's API does without `appNamespace`: the control-plane namespace first,
 * else the only app of that name.
 */
export class AppTable extends Map<string, Application> {
  private readonly byName = new Map<string, Set<string>>();

  static keyOf(app: Application): string {
    return `${app.metadata.namespace ?? DEFAULT_APP_NAMESPACE}/${app.metadata.name}`;
  }

  private resolve(nameOrKey: string): string | undefined {
    if (super.has(nameOrKey)) return nameOrKey;
    const keys = this.byName.get(nameOrKey);
    if (!keys?.size) return undefined;
    const control = `${DEFAULT_APP_NAMESPACE}/${nameOrKey}`;
    return keys.has(control) ? control : [...keys].sort()[0];
  }

  override set(key: string, app: Application): this {
    super.set(key, app);
    const name = app.metadata.name;
    let keys = this.byName.get(name);
    if (!keys) this.byName.set(name, (keys = new Set()));
    keys.add(key);
    return this;
  }

  override get(nameOrKey: string): Application | undefined {
    const key = this.resolve(nameOrKey);
    return key === undefined ? undefined : super.get(key);
  }

  /**
   * How the controller and faults address an app: its bare name, unless another namespace has an app
   * of the same name; then `namespace/name`, so work on one never lands on the other.
   */
  refOf(app: Application): string {
    return (this.byName.get(app.metadata.name)?.size ?? 0) > 1 ? AppTable.keyOf(app) : app.metadata.name;
  }

  override has(nameOrKey: string): boolean {
    return this.resolve(nameOrKey) !== undefined;
  }

  override delete(nameOrKey: string): boolean {
    const key = this.resolve(nameOrKey);
    if (key === undefined) return false;
    const app = super.get(key)!;
    this.byName.get(app.metadata.name)?.delete(key);
    return super.delete(key);
  }
}

export class InstanceStore {
  readonly events = new EventEmitter();
  private version = 0;
  readonly apps = new AppTable();
  readonly appSets = new Map<string, ApplicationSet>();
  readonly clusters = new Map<string, Cluster>();
  readonly projects = new Map<string, AppProject>();
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
    const key = AppTable.keyOf(app);
    const type: WatchEventType = this.apps.has(key) ? 'MODIFIED' : 'ADDED';
    const rv = this.nextVersion();
    app.metadata.resourceVersion = String(rv);
    this.apps.set(key, app);
    const change = { type, object: app, resourceVersion: rv };
    this.pushLog(this.appLog, change);
    this.events.emit('app', change);
    return app;
  }

  /** `name` alone, or `namespace/name` for an app outside the control-plane namespace. */
  deleteApp(name: string): boolean {
    const app = this.apps.get(name);
    if (!app) return false;
    this.apps.delete(AppTable.keyOf(app));
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

  /** Inserts or replaces a project; stamps metadata.resourceVersion (optimistic concurrency on update). */
  putProject(project: AppProject): AppProject {
    project.metadata.resourceVersion = String(this.nextVersion());
    this.projects.set(project.metadata.name, project);
    return project;
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
