/**
 * Argo CD objects in the JSON shape the REST API really returns (v3.5.1), not swagger's.
 * See ../shared/reference/argocd-facts.md B6–B7: `targetRevisions` (not `targetrevisions`),
 * `maxUpdate` as a plain int or percent string, hook `force` directly under `hook`,
 * `sourcePositions` as numbers. `apiVersion`/`kind` may be absent on served objects.
 */

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid?: string; controller?: boolean }[];
  [extra: string]: unknown;
}

export type SyncStatusCode = 'Synced' | 'OutOfSync' | 'Unknown';
export type HealthStatusCode = 'Healthy' | 'Progressing' | 'Degraded' | 'Suspended' | 'Missing' | 'Unknown';
export type OperationPhase = 'Running' | 'Terminating' | 'Failed' | 'Error' | 'Succeeded';
export const COMPLETED_PHASES: readonly OperationPhase[] = ['Failed', 'Error', 'Succeeded'];

export interface ApplicationSource {
  repoURL: string;
  path?: string;
  targetRevision?: string;
  chart?: string;
  ref?: string;
  name?: string;
  helm?: Record<string, unknown>;
  kustomize?: Record<string, unknown>;
  directory?: Record<string, unknown>;
  plugin?: Record<string, unknown>;
  [extra: string]: unknown;
}

export interface ApplicationDestination {
  server?: string;
  name?: string;
  namespace?: string;
}

export interface RetryStrategy {
  limit?: number;
  refresh?: boolean;
  backoff?: { duration?: string; factor?: number; maxDuration?: string };
}

export interface SyncPolicyAutomated {
  /** v3.1+; absent (nil) means enabled. */
  enabled?: boolean;
  prune?: boolean;
  selfHeal?: boolean;
  allowEmpty?: boolean;
}

export interface SyncPolicy {
  automated?: SyncPolicyAutomated | null;
  syncOptions?: string[];
  retry?: RetryStrategy;
  managedNamespaceMetadata?: Record<string, unknown>;
  [extra: string]: unknown;
}

export interface ApplicationSpec {
  project: string;
  source?: ApplicationSource;
  sources?: ApplicationSource[];
  destination: ApplicationDestination;
  syncPolicy?: SyncPolicy;
  revisionHistoryLimit?: number;
  ignoreDifferences?: unknown[];
  info?: { name: string; value: string }[];
  [extra: string]: unknown;
}

/** `{"apply":{"force":bool}}` or `{"hook":{"force":bool}}` — hook force is inline (B4/B7). */
export interface SyncStrategy {
  apply?: { force?: boolean };
  hook?: { force?: boolean };
}

export interface SyncResourceRef {
  group?: string;
  kind: string;
  name: string;
  namespace?: string;
}

export interface SyncOperation {
  revision?: string;
  revisions?: string[];
  sourcePositions?: number[];
  prune?: boolean;
  dryRun?: boolean;
  syncStrategy?: SyncStrategy;
  resources?: SyncResourceRef[];
  syncOptions?: string[];
  /** Set by a rollback: the source of the history entry synced to, instead of the app's own. */
  source?: ApplicationSource;
  sources?: ApplicationSource[];
  [extra: string]: unknown;
}

export interface Operation {
  sync?: SyncOperation;
  initiatedBy?: { username?: string; automated?: boolean };
  info?: { name: string; value: string }[];
  retry?: RetryStrategy;
}

export interface ResourceResult {
  group: string;
  version: string;
  kind: string;
  namespace: string;
  name: string;
  status?: 'Synced' | 'SyncFailed' | 'Pruned' | 'PruneSkipped';
  message?: string;
  hookType?: string;
  hookPhase?: string;
  syncPhase?: 'PreSync' | 'Sync' | 'PostSync' | 'SyncFail';
  images?: string[];
}

export interface OperationState {
  operation: Operation;
  phase: OperationPhase;
  message?: string;
  syncResult?: {
    resources?: ResourceResult[];
    revision: string;
    revisions?: string[];
    source?: ApplicationSource;
    sources?: ApplicationSource[];
  };
  startedAt: string;
  finishedAt?: string;
  retryCount?: number;
}

export interface RevisionHistory {
  id: number;
  revision?: string;
  revisions?: string[];
  deployedAt: string;
  deployStartedAt?: string;
  source?: ApplicationSource;
  sources?: ApplicationSource[];
  initiatedBy?: { username?: string; automated?: boolean };
}

export interface ResourceStatus {
  group?: string;
  version: string;
  kind: string;
  namespace?: string;
  name: string;
  status?: SyncStatusCode;
  health?: { status: HealthStatusCode; message?: string };
  hook?: boolean;
  requiresPruning?: boolean;
  syncWave?: number;
  requiresDeletionConfirmation?: boolean;
}

export interface ApplicationCondition {
  type: string;
  message: string;
  lastTransitionTime?: string;
}

export interface ApplicationStatus {
  sync?: {
    status: SyncStatusCode;
    revision?: string;
    revisions?: string[];
    comparedTo?: { source?: ApplicationSource; sources?: ApplicationSource[]; destination: ApplicationDestination };
  };
  health?: { status: HealthStatusCode; lastTransitionTime?: string; message?: string };
  operationState?: OperationState;
  history?: RevisionHistory[];
  summary?: { externalURLs?: string[]; images?: string[]; isAppOfApps?: boolean };
  resources?: ResourceStatus[];
  conditions?: ApplicationCondition[];
  reconciledAt?: string;
  sourceType?: string;
  sourceTypes?: string[];
  controllerNamespace?: string;
  resourceHealthSource?: string;
  [extra: string]: unknown;
}

export interface Application {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: ApplicationSpec;
  status?: ApplicationStatus;
  /** A requested operation not yet picked up by the controller. */
  operation?: Operation;
}

export interface ApplicationList {
  metadata: { resourceVersion?: string };
  items: Application[] | null;
}

// ---------- ApplicationSets ----------

export interface ApplicationMatchExpression {
  key: string;
  operator: string;
  values?: string[];
}

export interface ApplicationSetRolloutStep {
  matchExpressions?: ApplicationMatchExpression[];
  /** Real JSON: a plain int (`2`) or a percent string (`"25%"`). Absent = no limit. */
  maxUpdate?: number | string;
}

export interface ApplicationSetStrategy {
  type?: 'AllAtOnce' | 'RollingSync' | string;
  deletionOrder?: 'AllAtOnce' | 'Reverse' | string;
  rollingSync?: { steps?: ApplicationSetRolloutStep[] };
}

export interface ApplicationSetSpec {
  generators: unknown[];
  template: {
    metadata: {
      name?: string;
      namespace?: string;
      labels?: Record<string, string>;
      annotations?: Record<string, string>;
      finalizers?: string[];
    };
    spec: ApplicationSpec;
  };
  strategy?: ApplicationSetStrategy;
  syncPolicy?: {
    preserveResourcesOnDeletion?: boolean;
    applicationsSync?: 'create-only' | 'create-update' | 'create-delete' | 'sync' | string;
  };
  goTemplate?: boolean;
  goTemplateOptions?: string[];
  ignoreApplicationDifferences?: unknown[];
  templatePatch?: string;
  preservedFields?: unknown;
  [extra: string]: unknown;
}

export type ProgressiveSyncStatus = 'Waiting' | 'Pending' | 'Progressing' | 'Healthy';

export interface ApplicationSetApplicationStatus {
  application: string;
  status: ProgressiveSyncStatus;
  message: string;
  /** A string, 1-based; "-1" = matched by no step. */
  step: string;
  /** Real JSON uses `targetRevisions` (swagger says `targetrevisions`). */
  targetRevisions?: string[];
  lastTransitionTime?: string;
}

export interface ApplicationSetCondition {
  type: 'ErrorOccurred' | 'ParametersGenerated' | 'ResourcesUpToDate' | 'RolloutProgressing' | string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime?: string;
}

export interface ApplicationSetStatus {
  conditions?: ApplicationSetCondition[];
  applicationStatus?: ApplicationSetApplicationStatus[];
  resources?: {
    group: string;
    version: string;
    kind: string;
    name: string;
    namespace?: string;
    status?: SyncStatusCode;
    health?: { status: HealthStatusCode; message?: string };
  }[];
  resourcesCount?: number;
  health?: { status: HealthStatusCode; message?: string };
}

export interface ApplicationSet {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: ApplicationSetSpec;
  status?: ApplicationSetStatus;
}

export interface ApplicationSetList {
  metadata: { resourceVersion?: string };
  items: ApplicationSet[] | null;
}

// ---------- Clusters ----------

export interface ConnectionState {
  status: 'Successful' | 'Failed' | 'Unknown' | string;
  message?: string;
  attemptedAt?: string;
}

export interface Cluster {
  server: string;
  name: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  project?: string;
  namespaces?: string[];
  shard?: number;
  /** Holds credentials: never log or render it. */
  config?: Record<string, unknown>;
  connectionState?: ConnectionState;
  serverVersion?: string;
  info?: {
    serverVersion?: string;
    connectionState?: ConnectionState;
    cacheInfo?: Record<string, unknown>;
    applicationsCount?: number;
    apiVersions?: string[];
  };
}

export interface ClusterList {
  metadata?: { resourceVersion?: string };
  items: Cluster[] | null;
}

// ---------- Sync request (B4) ----------

export interface ApplicationSyncRequest {
  name: string;
  appNamespace?: string;
  project?: string;
  revision?: string;
  revisions?: string[];
  sourcePositions?: number[];
  prune?: boolean;
  dryRun?: boolean;
  strategy?: SyncStrategy;
  resources?: SyncResourceRef[];
  /** An object `{items: [...]}`, not a bare array. */
  syncOptions?: { items: string[] };
  retryStrategy?: RetryStrategy;
  infos?: { name: string; value: string }[];
}

// ---------- Watch events (B5) ----------

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface ApplicationWatchEvent {
  type: WatchEventType;
  application: Application;
}

export interface ApplicationSetWatchEvent {
  type: WatchEventType;
  applicationSet: ApplicationSet;
}

// ---------- Resource tree / managed resources ----------

export interface ResourceNode {
  group?: string;
  version: string;
  kind: string;
  namespace?: string;
  name: string;
  uid?: string;
  parentRefs?: { group?: string; kind: string; namespace?: string; name: string; uid?: string }[];
  info?: { name: string; value: string }[];
  networkingInfo?: Record<string, unknown>;
  resourceVersion?: string;
  images?: string[];
  health?: { status: HealthStatusCode; message?: string };
  createdAt?: string;
}

export interface ApplicationTree {
  nodes: ResourceNode[];
  orphanedNodes?: ResourceNode[];
  hosts?: unknown[];
  shardsCount?: number;
}

export interface ResourceDiff {
  group?: string;
  kind: string;
  namespace?: string;
  name: string;
  targetState?: string;
  liveState?: string;
  diff?: string;
  hook?: boolean;
  normalizedLiveState?: string;
  predictedLiveState?: string;
  resourceVersion?: string;
  modified?: boolean;
}

export interface ManagedResourcesResponse {
  items: ResourceDiff[] | null;
}

/** Argo CD's error body: `{error, code (gRPC code number), message, details}`. */
export interface ArgoErrorBody {
  error?: string;
  code?: number;
  message?: string;
  details?: unknown[];
}

/**
 * One entry of an AppProject's `spec.syncWindows` (v1alpha1.SyncWindow). JSON names are Go's tags: the
 * AND switch is `andOperator` (UseAndOperator in Go). `schedule` is a 5-field cron, `duration` a Go duration.
 */
export interface SyncWindow {
  kind: 'allow' | 'deny';
  schedule: string;
  duration: string;
  applications?: string[];
  namespaces?: string[];
  clusters?: string[];
  /** Manual syncs still go while the window blocks (deny) or is closed (allow). */
  manualSync?: boolean;
  /** IANA zone the schedule reads in; Argo CD stores "UTC" when none is given. */
  timeZone?: string;
  andOperator?: boolean;
  /** Free text, at most 255 characters. */
  description?: string;
  /** Deny: a sync that started before the window may run on. Allow: one started inside may run past its end. */
  syncOverrun?: boolean;
}

/** An AppProject as `GET /api/v1/projects[/{name}]` returns it (pkg/apis/application/v1alpha1 AppProject). */
export interface AppProject {
  metadata: ObjectMeta;
  spec: {
    description?: string;
    sourceRepos?: string[];
    destinations?: { server?: string; name?: string; namespace?: string }[];
    clusterResourceWhitelist?: { group: string; kind: string }[];
    syncWindows?: SyncWindow[];
    [extra: string]: unknown;
  };
  status?: Record<string, unknown>;
}

/** `GET /api/v1/applications/{name}/revisions/{revision}/metadata` (v1alpha1.RevisionMetadata). */
export interface RevisionMetadata {
  author?: string;
  date?: string;
  tags?: string[];
  message?: string;
  signatureInfo?: string;
}

/**
 * One line of `GET /api/v1/applications/{name}/logs` (application.LogEntry). The stream ends with an
 * entry whose `last` is true and whose content and podName are empty.
 */
export interface LogEntry {
  content?: string;
  timeStamp?: string;
  timeStampStr?: string;
  podName?: string;
  last?: boolean;
}

/** One Kubernetes Event as `GET /api/v1/applications/{name}/events` returns it (server/events). */
export interface KubeEvent {
  metadata: ObjectMeta;
  involvedObject: {
    kind: string;
    namespace?: string;
    name: string;
    uid?: string;
    apiVersion?: string;
    resourceVersion?: string;
    fieldPath?: string;
  };
  reason?: string;
  message?: string;
  source?: { component?: string; host?: string };
  firstTimestamp?: string | null;
  lastTimestamp?: string | null;
  eventTime?: string | null;
  count?: number;
  type?: 'Normal' | 'Warning';
}

/** `GET /api/v1/applications/{name}/events` (eventsEventList in swagger). */
export interface KubeEventList {
  metadata?: { resourceVersion?: string };
  items: KubeEvent[];
}

// ---------- Resource actions (server/application/application.proto) ----------

/**
 * One resource of an app as the resource endpoints address it (ApplicationResourceRequest: `resourceName`,
 * `version` and `kind` required; `group` empty for the core group).
 */
export interface ResourceRef {
  group?: string;
  version: string;
  kind: string;
  namespace?: string;
  name: string;
}

/**
 * v1alpha1.ResourceAction as the REST layer writes it with encoding/json: `disabled` (omitempty) is left out
 * when false, so an enabled action is `{"name":"resume"}`. The order is Go map order: none.
 */
export interface ResourceAction {
  name: string;
  disabled?: boolean;
  params?: { name: string }[];
  iconClass?: string;
  displayName?: string;
}

/** GET …/resource/actions: `actions` (omitempty) is absent when the kind has none. */
export interface ResourceActionsListResponse {
  actions?: ResourceAction[];
}

/** An action parameter of POST …/resource/actions/v2 (`resourceActionParameters[]`): values are strings. */
export interface ResourceActionParameter {
  name: string;
  value: string;
}

// ---------- Argo Rollouts (argoproj.io/v1alpha1 Rollout), as a resource endpoint or the cluster returns it ----------

export interface RolloutCanaryStep {
  setWeight?: number;
  /** `{}` waits for a resume; `duration` (seconds, or a Go duration string) resumes by itself. */
  pause?: { duration?: number | string };
  [other: string]: unknown;
}

export interface RolloutSpec {
  replicas?: number;
  paused?: boolean;
  /** RFC3339: pods started before it are restarted (the `restart` action sets it). */
  restartAt?: string;
  progressDeadlineSeconds?: number;
  workloadRef?: Record<string, unknown>;
  template?: {
    metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
    spec?: { containers?: { name: string; image?: string }[]; [other: string]: unknown };
  };
  strategy?: {
    canary?: {
      steps?: RolloutCanaryStep[];
      canaryService?: string;
      stableService?: string;
      trafficRouting?: Record<string, unknown>;
      [other: string]: unknown;
    };
    blueGreen?: {
      activeService?: string;
      previewService?: string;
      autoPromotionEnabled?: boolean;
      autoPromotionSeconds?: number;
      scaleDownDelaySeconds?: number;
      [other: string]: unknown;
    };
  };
  [other: string]: unknown;
}

export interface RolloutCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastUpdateTime?: string;
  lastTransitionTime?: string;
}

/** Argo Rollouts' pause reasons: CanaryPauseStep, BlueGreenPause, InconclusiveAnalysisRun, InconclusiveExperiment. */
export interface RolloutPauseCondition {
  reason: string;
  startTime: string;
}

export interface RolloutWeightDestination {
  weight: number;
  serviceName?: string;
  podTemplateHash?: string;
}

export interface RolloutStatus {
  abort?: boolean;
  abortedAt?: string;
  pauseConditions?: RolloutPauseCondition[];
  controllerPause?: boolean;
  currentPodHash?: string;
  currentStepHash?: string;
  replicas?: number;
  updatedReplicas?: number;
  readyReplicas?: number;
  availableReplicas?: number;
  currentStepIndex?: number;
  /** A string since Argo Rollouts v0.10 ("5"); older ones wrote a hash. */
  observedGeneration?: string | number;
  conditions?: RolloutCondition[];
  canary?: { weights?: { canary: RolloutWeightDestination; stable: RolloutWeightDestination }; stableRS?: string };
  blueGreen?: { activeSelector?: string; previewSelector?: string; scaleUpPreviewCheckPoint?: boolean };
  HPAReplicas?: number;
  selector?: string;
  stableRS?: string;
  restartedAt?: string;
  promoteFull?: boolean;
  /** Healthy | Degraded | Progressing | Paused, computed by the controller since Argo Rollouts v1.0. */
  phase?: string;
  message?: string;
  workloadObservedGeneration?: string;
  [other: string]: unknown;
}

export interface Rollout {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: RolloutSpec;
  status?: RolloutStatus;
}
