import type { ArgoApi } from '../../infra/argocd/api.js';
import type { RollcallConfig } from '../../infra/config/schema.js';
import type { Notifier } from '../../core/notifier.js';
import type { FleetView } from '../../fleet/model.js';
import type { KubeClients } from '../../infra/kube/clients.js';
import type { PauseStore } from './rollout-pause.js';
import type { FreezeStore } from './freeze.js';
import type { CheckService } from '../checks/index.js';
import type { RegressionStore } from '../checks/regressions.js';

/**
 * The services of the running process that runbooks act through. Commands see the same object with
 * the runbook engine added (commands/registry.ts `Services`); runbooks never see the engine's callers.
 */
export interface RunbookServices {
  config: RollcallConfig;
  fleet: FleetView;
  /** One Argo CD API client per instance name. */
  argocd: ReadonlyMap<string, ArgoApi>;
  notifier?: Notifier;
  now?: () => Date;
  /** Direct Kubernetes access per cluster (config kube.clusters), for the sealed-secrets runbooks. */
  kube?: ReadonlyMap<string, KubeClients>;
  /** What pause-rollout changed, for resume and `/argo paused` (needs Redis). */
  pauses?: PauseStore;
  /** The deny windows freeze wrote, for unfreeze, `/argo frozen`, the rules and the digest (needs Redis). */
  freezes?: FreezeStore;
  /** The metric checks of config `checks`, judged through Prometheus; set when any check is configured. */
  checks?: CheckService;
  /** Metric checks failing on watched apps, kept in Redis for the alert rules (needs Redis). */
  regressions?: RegressionStore;
}
