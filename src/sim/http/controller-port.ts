import type { Application, ApplicationSyncRequest } from '../../infra/argocd/types.js';
import type { SimClock } from '../clock.js';

/**
 * What the REST layer needs from the simulator's controller, implemented
 * by SimController in src/sim/controller.ts. Routes depend on this narrow port only.
 */
export interface SimFaultsPort {
  failApp(instance: string, app: string, message?: string): void;
  crashLoop(instance: string, app: string): void;
  clear(instance: string, app: string): void;
  clusterDown(instance: string, cluster: string, down: boolean): void;
}

export interface SimControllerPort {
  readonly clock: SimClock;
  start(): void;
  stop(): void;
  advance(ms: number): void;
  requestSync(instance: string, appName: string, request: ApplicationSyncRequest, user: string): Application;
  requestTerminate(instance: string, appName: string): void;
  requestRollback(
    instance: string,
    appName: string,
    request: { id: number; prune?: boolean; dryRun?: boolean },
    user: string,
  ): Application;
  faults: SimFaultsPort;
}
