import type {
  Application,
  ApplicationList,
  ApplicationSet,
  ApplicationSetList,
  ApplicationSetWatchEvent,
  ApplicationSyncRequest,
  ApplicationTree,
  ApplicationWatchEvent,
  ClusterList,
  KubeEventList,
  ManagedResourcesResponse,
} from './types.js';

/** Query of GET /api/v1/applications (and the stream). `fields` is the projection (B2). */
export interface ListApplicationsQuery {
  selector?: string;
  projects?: string[];
  appNamespace?: string;
  repo?: string;
  name?: string;
  resourceVersion?: string;
  fields?: string[];
}

export interface AppRef {
  name: string;
  appNamespace?: string;
  project?: string;
}

export interface RollbackOptions {
  /** The status.history entry to go back to. */
  id: number;
  prune?: boolean;
  dryRun?: boolean;
}

export interface WatchHandle {
  /** Stops the stream; no reconnect afterwards. */
  close(): void;
  /** Resolves once the initial snapshot (or the resumed stream) is flowing. */
  ready: Promise<void>;
}

export interface WatchOptions<E> {
  onEvent(event: E): void;
  /** Called on each (re)connect attempt failure; the watch keeps retrying with backoff. */
  onError?(error: Error): void;
  /** Called after a reconnect, with the resourceVersion it resumed from (if any). */
  onReconnect?(resourceVersion: string | undefined): void;
  /**
   * The server cannot resume from our resourceVersion (410 Gone). When given, the watch stops and
   * the caller relists and opens a new one; without it the watch restarts with a fresh snapshot.
   */
  onExpired?(): void;
}

/**
 * One Argo CD instance. Implemented in client.ts over axios; every call has a timeout and
 * retries (network errors, 502/503/504, 429 with Retry-After), never other 4xx.
 */
export interface ArgoApi {
  readonly instance: string;
  listApplications(query?: ListApplicationsQuery): Promise<ApplicationList>;
  getApplication(ref: AppRef, opts?: { refresh?: 'normal' | 'hard' }): Promise<Application>;
  resourceTree(ref: AppRef): Promise<ApplicationTree>;
  managedResources(ref: AppRef): Promise<ManagedResourcesResponse>;
  /**
   * Kubernetes events: of the Application itself, or with `resource` of one live resource of its tree
   * (uid, name and namespace must all match a tree node, as ListResourceEvents checks).
   */
  resourceEvents(ref: AppRef, resource?: { uid: string; name: string; namespace?: string }): Promise<KubeEventList>;
  sync(request: ApplicationSyncRequest): Promise<Application>;
  terminateOperation(ref: AppRef): Promise<void>;
  /**
   * POST .../rollback (ApplicationRollbackRequest): Argo CD writes a sync operation to the revision and
   * source of history entry `id`. It refuses while auto-sync is on, for an id not in status.history,
   * and while another operation runs. The request has no `infos`: the operation names only the token's user.
   */
  rollback(ref: AppRef, opts: RollbackOptions): Promise<Application>;
  patchApplication(ref: AppRef, patch: unknown, patchType: 'merge' | 'json'): Promise<Application>;
  listApplicationSets(query?: { selector?: string; projects?: string[]; appsetNamespace?: string }): Promise<ApplicationSetList>;
  getApplicationSet(name: string, appsetNamespace?: string): Promise<ApplicationSet>;
  upsertApplicationSet(appSet: ApplicationSet, opts?: { dryRun?: boolean }): Promise<ApplicationSet>;
  listClusters(): Promise<ClusterList>;
  watchApplications(query: ListApplicationsQuery, options: WatchOptions<ApplicationWatchEvent>): WatchHandle;
  watchApplicationSets(
    query: { selector?: string; projects?: string[]; resourceVersion?: string },
    options: WatchOptions<ApplicationSetWatchEvent>,
  ): WatchHandle;
}
