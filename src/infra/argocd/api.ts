import type { ReadList } from './answers.js';
import type {
  AppProject,
  Application,
  ApplicationSet,
  ApplicationSetWatchEvent,
  ApplicationSyncRequest,
  ApplicationTree,
  ApplicationWatchEvent,
  Cluster,
  KubeEventList,
  LogEntry,
  ManagedResourcesResponse,
  ResourceAction,
  ResourceRef,
  RevisionMetadata,
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

/**
 * Query of GET /api/v1/applications/{name}/logs (ApplicationPodLogsQuery). Pods are picked from the
 * app's resource tree: `podName`, or every pod that is (or descends from) the resource matching
 * `kind`/`group`/`resourceName`/`namespace` (an empty field matches anything). `tailLines` applies
 * per pod, as kubectl's --tail does.
 */
export interface PodLogsQuery {
  podName?: string;
  container?: string;
  namespace?: string;
  kind?: string;
  group?: string;
  resourceName?: string;
  tailLines?: number;
  sinceSeconds?: number;
  previous?: boolean;
  /** Never true here: a chat answer reads what is there and returns. */
  follow?: false;
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
  /** Stops the stream; no reconnect afterwards. What it read and had not yet handled is dropped (see drain). */
  close(): void;
  /** Handles at once what the stream has read and not yet handled (a burst is handled a slice at a time). */
  drain?(): void;
  /** Resolves once the initial snapshot (or the resumed stream) is flowing. */
  ready: Promise<void>;
}

export interface WatchOptions<E> {
  onEvent(event: E): void;
  /** Called on each (re)connect attempt failure; the watch keeps retrying with backoff. */
  onError?(error: Error): void;
  /**
   * Called after a reconnect, with the resourceVersion it resumed from (if any). `answered`: the server answered the
   * new connection; false when it is counted as followed only because it stayed open (a watch is answered with its
   * first event), which a server that hangs every request looks like too.
   */
  onReconnect?(resourceVersion: string | undefined, answered: boolean): void;
  /**
   * The server cannot resume from our resourceVersion (410 Gone). When given, the watch stops and
   * the caller relists and opens a new one; without it the watch restarts with a fresh snapshot.
   */
  onExpired?(): void;
}

export interface ListOptions<T> {
  /**
   * What the list keeps of each item, called as each arrives (before the rest of the answer is read), so the
   * items as sent are never all alive at once. A caller that must not depend on it being called applies it
   * again to the items it gets (it must then be idempotent).
   */
  each?: (item: T) => T;
  /**
   * The list's `metadata.resourceVersion`, as soon as it has arrived: Argo CD marshals a list's metadata before its
   * items, so a watch can subscribe from it while the items are still on the wire. Not called for an answer without
   * one; a list retried after a failed attempt calls it again with the new attempt's.
   */
  onResourceVersion?: (resourceVersion: string) => void;
}

/**
 * One Argo CD instance. Implemented in client.ts over node:http(s) (http.ts); every call has a timeout and
 * retries (network errors, 502/503/504, 429 with Retry-After), never other 4xx. A 2xx answer that is not
 * the JSON the endpoint promises (answers.ts) fails with `argocd_bad_response`, never reads as empty.
 */
export interface ArgoApi {
  readonly instance: string;
  listApplications(query?: ListApplicationsQuery, opts?: ListOptions<Application>): Promise<ReadList<Application>>;
  getApplication(ref: AppRef, opts?: { refresh?: 'normal' | 'hard' }): Promise<Application>;
  resourceTree(ref: AppRef): Promise<ApplicationTree>;
  managedResources(ref: AppRef): Promise<ManagedResourcesResponse>;
  /**
   * Kubernetes events: of the Application itself, or with `resource` of one live resource of its tree
   * (uid, name and namespace must all match a tree node, as ListResourceEvents checks).
   */
  resourceEvents(ref: AppRef, resource?: { uid: string; name: string; namespace?: string }): Promise<KubeEventList>;
  // Read verbs of the argocd CLI (`app history`, `app logs`).
  /**
   * Commit metadata of a revision of the app's source, from the repo server (RevisionMetadata).
   * `versionId` (a history id) reads the source as it was in that deployment; `sourceIndex` picks one
   * of a multi-source app's sources (0-based; the first by default).
   */
  revisionMetadata(
    ref: AppRef,
    revision: string,
    opts?: { versionId?: number; sourceIndex?: number },
  ): Promise<RevisionMetadata>;
  /** Container logs of the app's pods, read to the end (no follow); the closing `last` entry is dropped. */
  podLogs(ref: AppRef, query: PodLogsQuery): Promise<LogEntry[]>;
  /**
   * One resource of the app as it is live (GET …/resource): the object Argo CD's API server reads from the
   * cluster, e.g. a Rollout with its status. The resource must be in the app's tree; needs `applications, get`.
   */
  liveResource<T = Record<string, unknown>>(ref: AppRef, resource: ResourceRef): Promise<T>;
  /**
   * What Argo CD offers to run on the resource now (GET …/resource/actions): its discovery script's answer for
   * the live object, disabled ones included, in no particular order (a Go map's). Needs `applications, get`.
   */
  listResourceActions(ref: AppRef, resource: ResourceRef): Promise<ResourceAction[]>;
  /**
   * Runs a resource action (POST …/resource/actions/v2): Argo CD applies the action's script to the live object
   * and patches it. Needs `applications, action/<group>/<kind>/<action>` on the app. Argo CD runs an action
   * its discovery calls disabled all the same, so a caller that cares lists first. Not retried once it may have
   * arrived (restart and skip-current-step are not idempotent): such a failure has `maybeApplied`.
   */
  runResourceAction(ref: AppRef, resource: ResourceRef, action: string, params?: Record<string, string>): Promise<void>;
  sync(request: ApplicationSyncRequest): Promise<Application>;
  terminateOperation(ref: AppRef): Promise<void>;
  /**
   * POST .../rollback (ApplicationRollbackRequest): Argo CD writes a sync operation to the revision and
   * source of history entry `id`. It refuses while auto-sync is on, for an id not in status.history,
   * and while another operation runs. The request has no `infos`: the operation names only the token's user.
   */
  rollback(ref: AppRef, opts: RollbackOptions): Promise<Application>;
  patchApplication(ref: AppRef, patch: unknown, patchType: 'merge' | 'json'): Promise<Application>;
  listApplicationSets(
    query?: { selector?: string; projects?: string[]; appsetNamespace?: string },
    opts?: Pick<ListOptions<ApplicationSet>, 'onResourceVersion'>,
  ): Promise<ReadList<ApplicationSet>>;
  getApplicationSet(name: string, appsetNamespace?: string): Promise<ApplicationSet>;
  upsertApplicationSet(appSet: ApplicationSet, opts?: { dryRun?: boolean }): Promise<ApplicationSet>;
  listClusters(): Promise<ReadList<Cluster>>;
  listProjects(): Promise<ReadList<AppProject>>;
  getProject(name: string): Promise<AppProject>;
  /**
   * PUT /api/v1/projects/{name} with `{project}`, as `argocd proj windows add|delete` sends it: the whole
   * project as read, changed. Its metadata.resourceVersion makes the write conditional: a project changed
   * meanwhile fails with `argocd_modified` and nothing is written. Needs `projects, update, <name>`.
   */
  updateProject(project: AppProject): Promise<AppProject>;
  watchApplications(query: ListApplicationsQuery, options: WatchOptions<ApplicationWatchEvent>): WatchHandle;
  watchApplicationSets(
    query: { selector?: string; projects?: string[]; resourceVersion?: string },
    options: WatchOptions<ApplicationSetWatchEvent>,
  ): WatchHandle;
}
