import type { Application, ApplicationSet, Cluster } from '../argocd/types.js';

/** DESIGN.md "Simulator": objects in the JSON shape the real APIs return. */
export interface FixtureInstance {
  name: string;
  token?: string;
  applications: Application[];
  applicationSets?: ApplicationSet[];
  clusters?: Cluster[];
}

export interface FixtureKube {
  cluster: string;
  /** Kubernetes objects (Secrets, Pods, Deployments, SealedSecrets, ...) as the API returns them. */
  objects: Record<string, any>[];
}

export interface Fixture {
  instances: FixtureInstance[];
  kube?: FixtureKube[];
}
