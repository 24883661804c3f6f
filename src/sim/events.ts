import { createHash } from 'node:crypto';
import type { Application } from '../infra/argocd/types.js';
import { ROLLING_SYNC_INITIATOR } from '../fleet/rollingsync.js';
import { DEFAULT_APP_NAMESPACE, type InstanceStore, type SimState, type StoreChange } from './store.js';

/** A Kubernetes core/v1 Event as Argo CD's events API returns it (server/events K8sEventListToAPIEventList). */
export interface SimEvent {
  metadata: { name: string; namespace: string; uid: string; resourceVersion: string; creationTimestamp: string };
  involvedObject: {
    kind: string;
    namespace?: string;
    name: string;
    uid?: string;
    apiVersion: string;
    resourceVersion?: string;
    fieldPath?: string;
  };
  reason: string;
  message: string;
  source: { component: string; host?: string };
  firstTimestamp: string;
  lastTimestamp: string;
  count: number;
  type: 'Normal' | 'Warning';
  eventTime: null;
  reportingComponent: string;
  reportingInstance: string;
}

const CONTROLLER = 'argocd-application-controller';
const SERVER = 'argocd-server';
/** Kubernetes keeps events about an hour; a bounded list per app is the simulator's version of that. */
const PER_APP_LIMIT = 100;

const COMPLETED = new Set(['Succeeded', 'Failed', 'Error']);

interface Seen {
  sync?: string;
  health?: string;
  phase?: string;
  operation: boolean;
}

const seenOf = (app: Application): Seen => ({
  sync: app.status?.sync?.status,
  health: app.status?.health?.status,
  phase: app.status?.operationState?.phase,
  operation: !!app.operation,
});

function eventUid(seed: string): string {
  const h = createHash('sha1').update(seed).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/**
 * The Events Argo CD writes about each Application (util/argo/audit_logger.go logEvent): the app
 * controller's "Updated sync status: A -> B" / "Updated health status: A -> B" (persistAppStatus),
 * "Initiated automated sync to '<rev>'" (autoSync) and "Sync operation to <rev> succeeded|failed: …"
 * (setOperationState), and the API server's "<user> initiated sync to <rev>" (Sync). Worked out from
 * each change the store sees, so every writer (REST layer, controller, scenarios) is covered.
 */
export class SimEventLog {
  private readonly byApp = new Map<string, SimEvent[]>();
  private readonly seen = new Map<string, Seen>();
  private readonly detach: (() => void)[] = [];
  private counter = 0;
  /** Who asked for the next operation on an app (the API server knows the token's subject). */
  private readonly requestedBy = new Map<string, string>();

  constructor(
    state: SimState,
    private readonly now: () => Date,
  ) {
    for (const store of state.instances.values()) {
      for (const [key, app] of store.apps) this.seen.set(`${store.name}\u0000${key}`, seenOf(app));
      const listener = (c: StoreChange<Application>) => this.onChange(store, c);
      store.events.on('app', listener);
      this.detach.push(() => store.events.off('app', listener));
    }
  }

  stop(): void {
    for (const d of this.detach) d();
  }

  /** The REST layer says which user a sync request came from, before the operation is written (undefined: done). */
  noteSyncRequest(instance: string, app: Application, user: string | undefined): void {
    if (user === undefined) this.requestedBy.delete(this.key(instance, app));
    else this.requestedBy.set(this.key(instance, app), user);
  }

  /** The API server's event for a resource action it ran (RunResourceActionV2's logAppEvent). */
  actionRan(store: InstanceStore, app: Application, user: string, action: string, resource: string): void {
    this.add(store, app, 'Normal', 'ResourceActionRan', `${user} ran action ${action} on resource ${resource}`, SERVER);
  }

  /** Events about the Application object itself, oldest first. */
  appEvents(instance: string, app: Application): SimEvent[] {
    return [...(this.byApp.get(this.key(instance, app)) ?? [])];
  }

  private key(instance: string, app: Application): string {
    return `${instance}\u0000${app.metadata.namespace ?? DEFAULT_APP_NAMESPACE}/${app.metadata.name}`;
  }

  private onChange(store: InstanceStore, change: StoreChange<Application>): void {
    const app = change.object;
    const key = this.key(store.name, app);
    if (change.type === 'DELETED') {
      this.seen.delete(key);
      this.byApp.delete(key);
      return;
    }
    const before = this.seen.get(key);
    const after = seenOf(app);
    this.seen.set(key, after);
    if (!before) return;
    if (!before.operation && after.operation && app.operation) {
      const initiator = app.operation.initiatedBy;
      const revision = app.operation.sync?.revisions?.join(', ') ?? app.operation.sync?.revision ?? '';
      const user = this.requestedBy.get(key);
      this.requestedBy.delete(key);
      if (user) this.add(store, app, 'Normal', 'OperationStarted', `${user} initiated sync to ${revision}`, SERVER);
      else if (initiator?.automated && initiator.username !== ROLLING_SYNC_INITIATOR)
        this.add(store, app, 'Normal', 'OperationStarted', `Initiated automated sync to '${revision}'`, CONTROLLER);
    }
    if (before.sync !== after.sync && after.sync)
      this.add(
        store,
        app,
        'Normal',
        'ResourceUpdated',
        `Updated sync status: ${before.sync ?? ''} -> ${after.sync}`,
        CONTROLLER,
      );
    if (before.health !== after.health && after.health)
      this.add(
        store,
        app,
        'Normal',
        'ResourceUpdated',
        `Updated health status: ${before.health ?? ''} -> ${after.health}`,
        CONTROLLER,
      );
    if (before.phase !== after.phase && after.phase && COMPLETED.has(after.phase)) {
      const state = app.status!.operationState!;
      const words = [state.operation?.sync?.resources?.length ? 'Partial sync operation' : 'Sync operation'];
      if (state.syncResult) words.push('to', state.syncResult.revision ?? '');
      const ok = after.phase === 'Succeeded';
      words.push(...(ok ? ['succeeded'] : ['failed:', state.message ?? '']));
      this.add(store, app, ok ? 'Normal' : 'Warning', 'OperationCompleted', words.join(' '), CONTROLLER);
    }
  }

  private add(
    store: InstanceStore,
    app: Application,
    type: SimEvent['type'],
    reason: string,
    message: string,
    component: string,
  ): void {
    const at = this.now();
    const stamp = at.toISOString().replace(/\.\d{3}Z$/, 'Z');
    const namespace = app.metadata.namespace ?? DEFAULT_APP_NAMESPACE;
    const key = this.key(store.name, app);
    const list = this.byApp.get(key) ?? [];
    const seq = ++this.counter;
    list.push({
      metadata: {
        name: `${app.metadata.name}.${(at.getTime() * 1_000_000 + seq).toString(16)}`,
        namespace,
        uid: eventUid(`${key}/${seq}`),
        resourceVersion: String(seq),
        creationTimestamp: stamp,
      },
      involvedObject: {
        kind: 'Application',
        namespace,
        name: app.metadata.name,
        ...(app.metadata.uid ? { uid: app.metadata.uid } : {}),
        apiVersion: 'argoproj.io/v1alpha1',
        resourceVersion: app.metadata.resourceVersion,
      },
      reason,
      message,
      source: { component },
      firstTimestamp: stamp,
      lastTimestamp: stamp,
      count: 1,
      type,
      eventTime: null,
      reportingComponent: '',
      reportingInstance: '',
    });
    if (list.length > PER_APP_LIMIT) list.splice(0, list.length - PER_APP_LIMIT);
    this.byApp.set(key, list);
  }
}
