import type { Application, Operation } from '../infra/argocd/types.js';
import type { SimClock } from './clock.js';
import type { InstanceStore } from './store.js';

/** What the controller still has to do for one app. Times are simulated epoch ms. */
export interface AppWork {
  instance: string;
  name: string;
  /** Top-level `operation` written, not yet picked up. */
  requestedAt?: number;
  attemptEndsAt?: number;
  retryAt?: number;
  terminating?: boolean;
  /** Running, held by the project's sync windows ("Sync operation blocked by sync window"). */
  blocked?: boolean;
  healthAt?: number;
  healthTo?: 'Healthy' | 'Degraded';
}

export function workKey(instance: string, name: string): string {
  return `${instance}\u0000${name}`;
}

/**
 * The apps with something due, and when: a pass visits only these, which keeps it cheap on 10,000
 * apps. An entry lives while any of its times is set (SyncRunner drops it once none is).
 */
export class WorkQueue {
  private readonly work = new Map<string, AppWork>();

  constructor(private readonly clock: SimClock) {}

  get(instance: string, name: string): AppWork | undefined {
    return this.work.get(workKey(instance, name));
  }

  /** The app's entry, created empty if it has none. */
  for(instance: string, name: string): AppWork {
    const k = workKey(instance, name);
    let w = this.work.get(k);
    if (!w) this.work.set(k, (w = { instance, name }));
    return w;
  }

  delete(instance: string, name: string): void {
    this.work.delete(workKey(instance, name));
  }

  /** A snapshot: a pass may add and drop entries while it walks them. */
  entries(): AppWork[] {
    return [...this.work.values()];
  }

  /**
   * Argo CD's SetAppOperation, behind sync, rollback and auto-sync alike: the operation is written and the
   * last operationState cleared in one update, so until the controller starts it (on a later pass) the app
   * shows a requested operation and no state at all.
   */
  writeOperation(store: InstanceStore, app: Application, operation: Operation): Application {
    const next = structuredClone(app);
    next.operation = operation;
    if (next.status) delete next.status.operationState;
    const w = this.for(store.name, store.apps.refOf(app));
    w.requestedAt = this.clock.now().getTime();
    w.terminating = false;
    return store.putApp(next);
  }
}
