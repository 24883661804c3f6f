import type { Application } from '../../infra/argocd/types.js';
import type { SimFaults } from '../faults.js';
import type { InstanceStore } from '../store.js';

export interface ScenarioContext {
  faults: SimFaults;
  /** The instance the event happened on (for onStart: undefined). */
  store?: InstanceStore;
  now: Date;
}

/**
 * What a scenario does beyond its fixture: faults that hold from the start and consequences of
 * syncs (seed-outage: syncing auth-config fixes auth-service on the same cluster).
 */
export interface ScenarioBehaviour {
  /** Once, when the controller takes over the loaded state. */
  onStart?(ctx: ScenarioContext): void;
  /** After a non-dry-run sync of `app` succeeded (the app is already written back). */
  onSyncSucceeded?(ctx: ScenarioContext, instance: string, app: Application): void;
}
