import type { Application, ApplicationSyncRequest } from '../../argocd/types.js';
import { ManualClock, ScaledClock, rfc3339, type SimClock } from '../clock.js';
import type { SimState } from '../store.js';

/**
 * What the REST layer needs from the simulator's controller (CONTRACTS.md section I). The real
 * implementation is SimController in src/sim/controller.ts; FallbackController below only keeps
 * the HTTP side usable while that module is absent (it writes operations but never runs them).
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
  faults: SimFaultsPort;
}

export interface ControllerOptions {
  speed?: number;
  frozen?: boolean;
  manual?: boolean;
  behaviour?: unknown;
  syncDurationMs?: number;
  healthSettleMs?: number;
}

export class FallbackController implements SimControllerPort {
  readonly clock: SimClock;
  readonly faults: SimFaultsPort = { failApp() {}, crashLoop() {}, clear() {}, clusterDown() {} };

  constructor(
    private readonly state: SimState,
    opts: ControllerOptions = {},
  ) {
    this.clock = opts.manual ? new ManualClock() : new ScaledClock(opts.speed ?? 1, opts.frozen ?? false);
  }

  start(): void {}
  stop(): void {}
  advance(ms: number): void {
    this.clock.advance(ms);
  }

  requestSync(instance: string, appName: string, request: ApplicationSyncRequest, user: string): Application {
    const store = this.state.instance(instance)!;
    const app = structuredClone(store.apps.get(appName)!);
    const operation = {
      sync: {
        revision: request.revision,
        prune: request.prune,
        dryRun: request.dryRun,
        syncStrategy: request.strategy,
        resources: request.resources,
        syncOptions: request.syncOptions?.items,
      },
      initiatedBy: { username: user },
      info: request.infos,
      retry: request.retryStrategy,
    };
    app.operation = operation;
    app.status = { ...app.status, operationState: { operation, phase: 'Running', message: 'one or more tasks are running', startedAt: rfc3339(this.clock.now()) } };
    return store.putApp(app);
  }

  requestTerminate(instance: string, appName: string): void {
    const store = this.state.instance(instance)!;
    const app = structuredClone(store.apps.get(appName)!);
    if (app.status?.operationState) app.status.operationState.phase = 'Terminating';
    store.putApp(app);
  }
}
