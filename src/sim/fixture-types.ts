import type { AppProject, Application, ApplicationSet, Cluster } from '../infra/argocd/types.js';

/** DESIGN.md "Simulator": objects in the JSON shape the real APIs return. */
export interface FixtureInstance {
  name: string;
  token?: string;
  applications: Application[];
  applicationSets?: ApplicationSet[];
  clusters?: Cluster[];
  /** AppProjects; `default` is always served (Argo CD creates it), and a project an app names but the fixture lacks is served with default's permissive spec. */
  projects?: AppProject[];
  /**
   * Extra API tokens with limited RBAC (the instance `token` can do everything). Each grant is an
   * Argo CD policy line without subject and effect: "applications, sync, payments/*".
   */
  accounts?: FixtureAccount[];
}

export interface FixtureAccount {
  /** The subject Argo CD reports (`sub:`) and records in initiatedBy. */
  name: string;
  token: string;
  allow: string[];
}

export interface FixtureKube {
  cluster: string;
  /** Kubernetes objects (Secrets, Pods, Deployments, SealedSecrets, ...) as the API returns them. */
  objects: Record<string, any>[];
  /** Bearer token the simulated API server accepts (default `sim-kube-<cluster>-token`). */
  token?: string;
  /** Simulate a sealed-secrets controller on this cluster (argocd-facts C). */
  sealedSecretsController?: {
    namespace?: string;
    name?: string;
    podLabels?: Record<string, string>;
    /** --key-renew-period in ms (default 30 days; 0 = never). */
    renewPeriodMs?: number;
    /** Pod creation to Ready, in ms (default 1500). */
    startupMs?: number;
  };
}

export interface Fixture {
  instances: FixtureInstance[];
  kube?: FixtureKube[];
}
