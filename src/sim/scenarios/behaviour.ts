import type { Application } from '../../infra/argocd/types.js';
import type { SimFaults } from '../faults.js';
import type { InstanceStore } from '../store.js';
import type { RunningRevision, TrafficChange } from '../traffic.js';

export interface ScenarioContext {
  faults: SimFaults;
  /** The instance the event happened on (for onStart: undefined). */
  store?: InstanceStore;
  now: Date;
}

/**
 * What a scenario does beyond its fixture: faults that hold from the start and consequences of
 * syncs (seed-outage: syncing auth-config fixes auth-service on the same cluster), and how a revision
 * of a service serves once it runs (canary-regression: checkout's new revision fails 30% of requests).
 */
export interface ScenarioBehaviour {
  /** Once, when the controller takes over the loaded state. */
  onStart?(ctx: ScenarioContext): void;
  /** After a non-dry-run sync of `app` succeeded (the app is already written back). */
  onSyncSucceeded?(ctx: ScenarioContext, instance: string, app: Application): void;
  /**
   * How `app` serves at the revision it runs (`running`, undefined when it never synced), where that differs
   * from healthy traffic. Asked again whenever the app changes, so a finished sync switches its behaviour.
   */
  traffic?(instance: string, app: Application, running: RunningRevision | undefined): TrafficChange | undefined;
}
