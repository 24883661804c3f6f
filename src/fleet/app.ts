import type { Application, ApplicationSet, Cluster } from '../infra/argocd/types.js';

/** An Application tagged with where it lives. */
export interface FleetApp {
  instance: string;
  /** The Argo CD cluster name (destination.name, else resolved from the server URL, else the URL). */
  cluster: string;
  /** Owning ApplicationSet (ownerReferences), if generated. */
  appSet?: string;
  app: Application;
}

export interface FleetAppSet {
  instance: string;
  appSet: ApplicationSet;
}

export interface FleetCluster {
  instance: string;
  cluster: Cluster;
}
