/**
 * The data of command replies that other modules name too (replies.ts maps each command to its data):
 * defined apart from the commands that build them, so the map and the commands import them one way.
 */

/** The JSON of one alert in `alerts --json`. */
export interface AlertJson {
  id: string;
  rule: string;
  state: 'firing' | 'acked' | 'snoozed' | 'resolved';
  instance: string;
  appSet?: string;
  step?: number;
  revision?: string;
  apps: string[];
  since: string;
  updatedAt: string;
  /** The condition is gone since then: the alert resolves at `resolvesAt` unless it comes back. */
  clearedAt?: string;
  resolvesAt?: string;
}

export interface AppSourceInfo {
  repoURL: string;
  path: string | null;
  chart: string | null;
  targetRevision: string;
}

export interface AppOperationInfo {
  phase: string;
  /** The user who started it, or "automated" (auto-sync, RollingSync). */
  initiatedBy: string;
  automated: boolean;
  startedAt: string | null;
  finishedAt: string | null;
  durationMs: number | null;
  message: string | null;
  retryCount: number;
}

export interface AppDetail {
  name: string;
  instance: string;
  cluster: string;
  namespace: string | null;
  project: string;
  appSet: string | null;
  sync: string;
  health: string;
  revision: string | null;
  revisions: string[];
  source: AppSourceInfo | null;
  sources: AppSourceInfo[];
  /** A sync requested and not yet picked up by the controller (top-level `operation`). */
  operationRequested: boolean;
  operation: AppOperationInfo | null;
  failedResources: {
    group: string;
    kind: string;
    namespace: string;
    name: string;
    message: string | null;
    syncPhase: string | null;
  }[];
  unhealthyResources: {
    group: string;
    kind: string;
    namespace: string;
    name: string;
    health: string;
    message: string | null;
  }[];
  history: {
    id: number;
    revision: string | null;
    revisions: string[];
    deployedAt: string;
    deployStartedAt: string | null;
    initiatedBy: string | null;
  }[];
  conditions: { type: string; message: string; lastTransitionTime: string | null }[];
  images: string[];
  url: string | null;
  /** true when read with a live Get (resource health included), false when from the mirror's list copy. */
  live: boolean;
}

export interface ClusterRow {
  instance: string;
  name: string;
  server: string | null;
  /** Successful | Failed | Unknown as Argo CD reports it; "NotRegistered" for a destination Argo CD has no cluster for. */
  connection: string;
  message: string | null;
  serverVersion: string | null;
  apps: number;
  problems: number;
}

export interface HistoryEntry {
  id: number;
  revision: string | null;
  revisions: string[];
  deployedAt: string;
  deployStartedAt: string | null;
  /** deployStartedAt -> deployedAt. */
  durationMs: number | null;
  initiatedBy: string | null;
  automated: boolean;
  /** Images pinned by the source then (kustomize images, helm image parameters): what changed when git did not. */
  images: string[];
  author: string | null;
  message: string | null;
  tags: string[];
}

export type RefreshType = 'normal' | 'hard';

export interface Refreshed {
  app: string;
  instance: string;
  cluster: string;
  ok: boolean;
  reconciledBefore: string | null;
  reconciledAt: string | null;
  sync: string;
  health: string;
  error?: string;
  /** Why the audit log could not record it. */
  unrecorded?: string;
}

/** A configured metric check as `checks --json` lists it. */
export interface CheckListing {
  name: string;
  query: string;
  failWhen: 'above' | 'below';
  threshold: number;
  /** Milliseconds. */
  window: number;
  noData: 'fail' | 'pass' | 'inconclusive';
  description: string | null;
}

/** One Argo Rollouts Rollout of an app, as `rollouts` and `app` read it live from Argo CD (GET …/resource). */
export interface RolloutRow {
  app: string;
  instance: string;
  cluster: string;
  namespace: string;
  name: string;
  strategy: 'canary' | 'blue-green' | null;
  /** Healthy, Progressing, Paused or Degraded, as `kubectl argo rollouts get` shows it. */
  phase: string;
  message: string | null;
  /** A canary's status.currentStepIndex ("step 1 of 4" is index 1 of 4 steps); null without steps. */
  step: number | null;
  steps: number | null;
  /** The canary's share of traffic now, in percent (100 past the last step); null for blue-green. */
  weight: number | null;
  /** The weight the current step sets; it differs from `weight` while the canary's pods are not available. */
  setWeight: number | null;
  /** A pause condition's reason (CanaryPauseStep, BlueGreenPause, ...), or "manually paused" (spec.paused). */
  pausedReason: string | null;
  aborted: boolean;
  /** The stable ReplicaSet is the current pod template's: nothing left to roll. */
  fullyPromoted: boolean;
  /** Since when it is in its state: the pause's start, else the Progressing condition's last transition. */
  since: string | null;
  /** Argo Rollouts' revision of the current pod template (`rollout.argoproj.io/revision`). */
  revision: string | null;
  /** The current (canary or preview) pod template's images. */
  images: string[];
}

/** A Rollout the mirror lists whose live object could not be read, and why. */
export interface UnreadRollout {
  app: string;
  instance: string;
  cluster: string;
  name: string;
  error: string;
}
