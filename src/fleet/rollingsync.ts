/**
 * Argo CD v3.5 ApplicationSet RollingSync semantics, as pure functions shared by the bot and the
 * simulator (argocd-facts A2–A8). Every rule here mirrors
 * `applicationset/progressivesync/progressive_sync.go` (buildAppDependencyList, labelMatchedExpression,
 * UpdateApplicationSetApplicationStatus, getAppsToSync, UpdateApplicationSetApplicationStatusProgress,
 * getProgressingCondition, syncApplication). Where Argo CD behaves surprisingly the comment says so:
 * the bot must report what Argo CD *does*, not what a reader of the docs would expect.
 */
import type {
  Application,
  ApplicationMatchExpression,
  ApplicationSet,
  ApplicationSetApplicationStatus,
  ApplicationSetCondition,
  ApplicationSetRolloutStep,
  HealthStatusCode,
  Operation,
  OperationPhase,
  ProgressiveSyncStatus,
  SyncPolicyAutomated,
  SyncStatusCode,
} from '../infra/argocd/types.js';

export const SUPPORTED_OPERATORS = ['In', 'NotIn'] as const;

/** The step number Argo CD writes for an app no step selects. */
export const NO_STEP = -1;

// ---------- strategy ----------

/** `type: RollingSync` with a `rollingSync` block, steps or not (Argo CD's IsRollingSyncStrategy). */
export function isRollingSyncType(appSet: ApplicationSet): boolean {
  const strategy = appSet.spec?.strategy;
  return strategy?.type === 'RollingSync' && strategy.rollingSync != null;
}

/** RollingSync only runs with `type: RollingSync`, `rollingSync` set and at least one step (A2). */
export function isRollingSync(appSet: ApplicationSet): boolean {
  return isRollingSyncType(appSet) && (appSet.spec.strategy?.rollingSync?.steps?.length ?? 0) > 0;
}

export function rolloutSteps(appSet: ApplicationSet): ApplicationSetRolloutStep[] {
  return isRollingSync(appSet) ? (appSet.spec.strategy?.rollingSync?.steps ?? []) : [];
}

// ---------- matching (A3) ----------

export function isSupportedOperator(operator: string): boolean {
  return (SUPPORTED_OPERATORS as readonly string[]).includes(operator);
}

/**
 * One matchExpression against the generated app's labels, exactly as Argo CD evaluates it:
 * - key present: `In` matches when the value is listed, `NotIn` when it is not; any other operator
 *   never matches (Argo CD logs an error and the step does not select the app).
 * - key missing: `In` does not match; everything else *does*, because Argo CD only rejects a missing
 *   key for `In`. So `NotIn [x]` selects apps without the key — and, (inferred from code) an
 *   unsupported operator such as `Exists` on a missing key is skipped rather than rejected, which makes
 *   `Exists` behave inverted and `DoesNotExist` behave correctly by accident.
 */
export function expressionMatches(
  labels: Record<string, string> | undefined,
  expr: ApplicationMatchExpression,
): boolean {
  if (!labels || !Object.prototype.hasOwnProperty.call(labels, expr.key)) return expr.operator !== 'In';
  const value = labels[expr.key];
  if (!isSupportedOperator(expr.operator)) return false;
  const listed = (expr.values ?? []).includes(value);
  return expr.operator === 'In' ? listed : !listed;
}

/** Expressions are ANDed; a step without matchExpressions selects every app. */
export function stepMatches(labels: Record<string, string> | undefined, step: ApplicationSetRolloutStep): boolean {
  return (step.matchExpressions ?? []).every((expr) => expressionMatches(labels, expr));
}

/** Every step that selects these labels, 1-based. More than one means overlapping steps. */
export function matchingSteps(
  labels: Record<string, string> | undefined,
  steps: ApplicationSetRolloutStep[],
): number[] {
  const matched: number[] = [];
  steps.forEach((step, i) => {
    if (stepMatches(labels, step)) matched.push(i + 1);
  });
  return matched;
}

/** The step Argo CD assigns: the first that matches (1-based), or -1 when none does. */
export function stepOfLabels(labels: Record<string, string> | undefined, steps: ApplicationSetRolloutStep[]): number {
  const index = steps.findIndex((step) => stepMatches(labels, step));
  return index === -1 ? NO_STEP : index + 1;
}

// ---------- maxUpdate (A4) ----------

export type MaxUpdateKind = 'unlimited' | 'count' | 'percent' | 'invalid';

export interface MaxUpdateInfo {
  kind: MaxUpdateKind;
  /** null = unlimited, 0 = manual gate, else how many of the step's apps may be Pending/Progressing at once. */
  maxConcurrent: number | null;
  /** The percent as written, for "50% → 2 at a time". */
  percent?: number;
}

const PERCENT = /^([+-]?\d+)%$/;

/**
 * maxUpdate as Argo CD applies it (intstr.GetScaledValueFromIntOrPercent with roundUp=false):
 * - absent: unlimited (null);
 * - an int: that many; 0 or negative leaves no room, i.e. a manual gate (0);
 * - "n%": n% of `stepAppCount` (the step's appset-status entries) rounded down, raised to 1 unless the
 *   string is exactly "0%" (so "00%" is raised to 1 too);
 * - any other string ("2", "abc", "1.5%"): Argo CD logs the parse error, gets 0, and the "at least 1"
 *   rule for strings raises it to 1 (inferred from code).
 */
export function maxUpdateInfo(maxUpdate: number | string | undefined | null, stepAppCount: number): MaxUpdateInfo {
  if (maxUpdate === undefined || maxUpdate === null) return { kind: 'unlimited', maxConcurrent: null };
  if (typeof maxUpdate === 'number') return { kind: 'count', maxConcurrent: Math.max(0, Math.trunc(maxUpdate)) };
  const match = PERCENT.exec(maxUpdate);
  if (!match) return { kind: 'invalid', maxConcurrent: 1 };
  const percent = Number(match[1]);
  let scaled = Math.floor((percent * stepAppCount) / 100);
  if (maxUpdate !== '0%' && scaled < 1) scaled = 1;
  return { kind: 'percent', maxConcurrent: scaled, percent };
}

/** null = unlimited (no maxUpdate), 0 = manual gate, else >= 1. Percent rounds down, min 1 except "0%". */
export function maxConcurrentFor(maxUpdate: number | string | undefined | null, stepAppCount: number): number | null {
  return maxUpdateInfo(maxUpdate, stepAppCount).maxConcurrent;
}

// ---------- what Argo CD reports (A7) ----------

export const ROLLOUT_PROGRESSING = 'RolloutProgressing';
export const REASON_MODIFIED = 'ApplicationSetModified';
export const REASON_ROLLOUT_COMPLETE = 'ApplicationSetRolloutComplete';
export const ROLLOUT_COMPLETE_MESSAGE = 'ApplicationSet Rollout has completed';
export function rolloutOfStepMessage(step: number): string {
  return `ApplicationSet is performing rollout of step ${step}`;
}

function progressingCondition(appSet: ApplicationSet): ApplicationSetCondition | undefined {
  return appSet.status?.conditions?.find((c) => c.type === ROLLOUT_PROGRESSING);
}

/** Current step as Argo CD reports it: RolloutProgressing=True "…rollout of step N" -> N; complete/absent -> null. */
export function currentStepFromStatus(appSet: ApplicationSet): number | null {
  const condition = progressingCondition(appSet);
  if (!condition || condition.status !== 'True') return null;
  const match = /rollout of step (-?\d+)/.exec(condition.message ?? '');
  return match ? Number(match[1]) : null;
}

/** RolloutProgressing=False with reason ApplicationSetRolloutComplete. */
export function rolloutComplete(appSet: ApplicationSet): boolean {
  const condition = progressingCondition(appSet);
  return condition?.status === 'False' && condition.reason === REASON_ROLLOUT_COMPLETE;
}

// ---------- labels of the generated app (A3) ----------

const TEMPLATED = /\{\{/;

/**
 * Labels the generated app gets from the template: what RollingSync matches on (A3), not the live
 * labels. We cannot render the template, so:
 * - a template label with a static value is what the generated app carries, whatever the live app says;
 * - a templated value (`{{…}}`) takes the live app's value, since the appset controller wrote the
 *   rendered value there (if the live app lacks it, the key is left out: we cannot know it);
 * - live labels the template does not produce were added by hand (or kept by `preservedFields`):
 *   Argo CD ignores them for step matching (issue #22001), so they are dropped — unless the template
 *   itself is uncertain (a `templatePatch`, or a templated key), in which case live labels other than
 *   `preservedFields.labels` are kept as the best guess.
 */
/**
 * `{{metadata.labels.env}}`, `{{.metadata.labels.env}}`, `{{index .metadata.labels "env"}}`: a template
 * value that is exactly one label of the generator's cluster. Returns that label's key.
 */
const CLUSTER_LABEL_PARAM =
  /^\{\{-?\s*(?:index\s+\.metadata\.labels\s+"([^"]+)"|\.?metadata\.labels\.([A-Za-z0-9_./-]+))\s*-?\}\}$/;

/**
 * The step an applicationStatus entry reports (`"2"` → 2, `"-1"` → -1), when it is one the spec still
 * has; otherwise undefined (no entry, no step, a step removed since).
 */
export function reportedStep(entry: { step?: string } | undefined, stepCount: number): number | undefined {
  if (!entry || !/^-?\d+$/.test(entry.step ?? '')) return undefined;
  const step = Number(entry.step);
  return step === NO_STEP || (step >= 1 && step <= stepCount) ? step : undefined;
}

/** Whether the appset has a cluster generator (its template can read the cluster's labels). */
export function usesClusterGenerator(appSet: ApplicationSet): boolean {
  return JSON.stringify(appSet.spec?.generators ?? []).includes('"clusters"');
}

/**
 * The labels of the generated Application. A templated value is read back from the live app; when
 * the live app lacks it and the value is a cluster label of a cluster generator, it is rendered from
 * the destination cluster's labels (`clusterLabels`), as the ApplicationSet controller would.
 */
export function generatedLabels(
  appSet: ApplicationSet,
  app: { metadata: { labels?: Record<string, string> } },
  clusterLabels?: Record<string, string>,
): Record<string, string> {
  const template = appSet.spec?.template?.metadata?.labels ?? {};
  const live = app.metadata.labels ?? {};
  const out: Record<string, string> = {};
  let uncertain = typeof appSet.spec?.templatePatch === 'string' && appSet.spec.templatePatch.trim() !== '';
  for (const [key, value] of Object.entries(template)) {
    if (TEMPLATED.test(key)) {
      uncertain = true;
      continue;
    }
    if (TEMPLATED.test(String(value))) {
      if (key in live) out[key] = live[key];
      else if (clusterLabels && usesClusterGenerator(appSet)) {
        const m = CLUSTER_LABEL_PARAM.exec(String(value).trim());
        const from = m?.[1] ?? m?.[2];
        if (from && from in clusterLabels) out[key] = clusterLabels[from];
      }
    } else {
      out[key] = String(value);
    }
  }
  if (uncertain) {
    const preserved = new Set(preservedLabelKeys(appSet));
    for (const [key, value] of Object.entries(live))
      if (!(key in out) && !preserved.has(key) && !(key in template)) out[key] = value;
  }
  return out;
}

/** Labels on the live app that RollingSync does not see (hand-added or preserved), with their values. */
export function ignoredLiveLabels(
  appSet: ApplicationSet,
  app: { metadata: { labels?: Record<string, string> } },
): Record<string, string> {
  const generated = generatedLabels(appSet, app);
  const ignored: Record<string, string> = {};
  for (const [key, value] of Object.entries(app.metadata.labels ?? {}))
    if (generated[key] !== value) ignored[key] = value;
  return ignored;
}

function preservedLabelKeys(appSet: ApplicationSet): string[] {
  const preserved = appSet.spec?.preservedFields as { labels?: unknown } | undefined;
  return Array.isArray(preserved?.labels) ? preserved.labels.filter((k): k is string => typeof k === 'string') : [];
}

// ---------- the state machine (A6) ----------

/**
 * The fixed texts Argo CD v3.5 writes into `status.applicationStatus[].message`, in one place so the
 * simulator, the reports and the tests agree. (No trailing periods: that is how v3.3+ writes them.)
 */
export const ROLLOUT_MESSAGES = {
  newEntry: 'No Application status found, defaulting status to Waiting',
  revisionChanged: 'Application has pending changes, setting status to Waiting',
  specChanged: 'Application has pending changes (spec differs), setting status to Waiting',
  revisionAndSpecChanged: 'Application has pending changes (revision and spec differ), setting status to Waiting',
  syncedHealthy: 'Application resource has synced, updating status to Healthy',
  syncedNotHealthy: 'Application resource has synced, updating status to Progressing',
  pending: 'Application moved to Pending status, watching for the Application resource to start Progressing',
  syncSucceeded: 'Application resource completed a sync successfully, updating status from Pending to Progressing',
  syncCompleted: 'Application resource completed a sync, updating status from Pending to Progressing',
  syncRunning: 'Application resource became Progressing, updating status from Pending to Progressing',
  appError: 'Application resource has error and cannot sync, updating status to Progressing',
  becameHealthy: 'Application resource became Healthy, updating status from Progressing to Healthy',
} as const;

/** What the state machine needs to know about one existing Application (the generated one's labels). */
export interface RolloutAppState {
  name: string;
  /** Labels of the generated (desired) app: see generatedLabels. */
  labels: Record<string, string>;
  sync: SyncStatusCode;
  health: HealthStatusCode;
  /** status.sync.revisions, else [status.sync.revision], else []. */
  revisions: string[];
  /** status.operationState.startedAt */
  operationStartedAt?: string;
  /** status.operationState.phase: only picks the Pending → Progressing message. */
  operationPhase?: OperationPhase;
  /** A top-level operation or phase Running/Terminating. */
  operationRunning: boolean;
  /** An InvalidSpecError or UnknownError condition. */
  errorCondition: boolean;
  /** The generated spec differs from the live one (v3.4+ spec-change detection). */
  specChanged?: boolean;
  /**
   * status.reconciledAt. A Pending app moves on only once the app controller reconciled it after the
   * Pending transition; absent means "no gate" as in Argo CD (a nil reconciledAt passes).
   */
  reconciledAt?: string;
}

/** An Application the ApplicationSet generates, whether or not it exists: its name and generated labels. */
export interface GeneratedApp {
  name: string;
  labels: Record<string, string>;
}

export interface RolloutAdvance {
  /** Sorted by name, one per app. */
  applicationStatus: ApplicationSetApplicationStatus[];
  /** The appset's conditions with RolloutProgressing upserted (others kept). */
  conditions: ApplicationSetCondition[];
  /** Apps moved to Pending this pass: the controller must write a sync operation onto them. */
  toSync: string[];
  /**
   * Every app that is Pending in a released step after this pass (toSync included). Argo CD re-asserts
   * the sync operation on these on every reconcile until they move to Progressing; writing the same
   * operation again is a no-op while it is still queued or running.
   */
  pendingSync: string[];
  /** The step numbers each app was matched by (overlaps show as several). */
  stepsByApp: Record<string, number[]>;
}

function revisionsOf(app: Application): string[] {
  const sync = app.status?.sync;
  if (sync?.revisions && sync.revisions.length > 0) return [...sync.revisions];
  return sync?.revision ? [sync.revision] : [];
}

/** Build the state-machine input for a live app. `specChanged` comes from whoever can render the template. */
export function rolloutAppState(
  appSet: ApplicationSet,
  app: Application,
  opts: { specChanged?: boolean } = {},
): RolloutAppState {
  const phase = app.status?.operationState?.phase;
  return {
    name: app.metadata.name,
    labels: generatedLabels(appSet, app),
    sync: app.status?.sync?.status ?? 'Unknown',
    health: app.status?.health?.status ?? 'Unknown',
    revisions: revisionsOf(app),
    operationStartedAt: app.status?.operationState?.startedAt,
    operationPhase: phase,
    operationRunning: app.operation != null || phase === 'Running' || phase === 'Terminating',
    errorCondition: (app.status?.conditions ?? []).some(
      (c) => c.type === 'InvalidSpecError' || c.type === 'UnknownError',
    ),
    specChanged: opts.specChanged,
    reconciledAt: app.status?.reconciledAt,
  };
}

/** RFC3339 at second precision, as Kubernetes serializes metav1.Time. */
export function k8sTime(date: Date): string {
  return new Date(Math.floor(date.getTime() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

function time(value: string | undefined): number {
  if (!value) return Number.NEGATIVE_INFINITY;
  const parsed = Date.parse(value);
  return Number.isNaN(parsed) ? Number.NEGATIVE_INFINITY : parsed;
}

function sameList(a: readonly string[] | undefined, b: readonly string[]): boolean {
  const left = a ?? [];
  return left.length === b.length && left.every((v, i) => v === b[i]);
}

/**
 * One reconcile pass of the v3.5 RollingSync state machine (A6). Pure: returns what the appset
 * controller would write, and which apps it would sync. `generated` lists every app the ApplicationSet
 * generates (default: the existing ones); entries are kept only for existing apps, as Argo CD keeps them.
 */
export function advanceRollout(
  appSet: ApplicationSet,
  apps: RolloutAppState[],
  now: Date,
  generated?: GeneratedApp[],
): RolloutAdvance {
  const conditions = [...(appSet.status?.conditions ?? [])];
  const stepsByApp: Record<string, number[]> = {};
  if (!isRollingSync(appSet)) {
    // RollingSync without steps: Argo CD clears the entries and, having no step to wait on, reports done.
    const done = isRollingSyncType(appSet) ? upsertCondition(conditions, completeCondition(), now) : conditions;
    return { applicationStatus: [], conditions: done, toSync: [], pendingSync: [], stepsByApp };
  }
  const steps = rolloutSteps(appSet);
  const stamp = k8sTime(now);
  const sorted = [...apps].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

  // buildAppDependencyList: built from the *generated* apps (desiredApplications), so an app the
  // ApplicationSet generates but that does not exist (it failed validation, say) is listed in its step
  // too. An overlapping app is listed in every step it matches (and blocks each), but its step number,
  // and so its maxUpdate, is the first one.
  const desired = generated ?? sorted.map((a) => ({ name: a.name, labels: a.labels }));
  const stepLists: string[][] = steps.map(() => []);
  const stepIndex = new Map<string, number>();
  for (const app of desired) {
    const matched = matchingSteps(app.labels, steps);
    stepsByApp[app.name] = matched;
    for (const step of matched) stepLists[step - 1].push(app.name);
    if (matched.length > 0 && !stepIndex.has(app.name)) stepIndex.set(app.name, matched[0] - 1);
  }
  // migrateStatus (applicationset_controller.go) runs first on every reconcile: an entry without
  // targetRevisions gets [] and that is saved, so it then compares as an empty list.
  const priorEntries = (appSet.status?.applicationStatus ?? []).map((e) =>
    e.targetRevisions == null ? { ...e, targetRevisions: [] } : e,
  );
  const entries = evaluateApplicationStatus(priorEntries, sorted, stepIndex, now);

  // setAppSetApplicationStatus saves the list only when an entry's status, step or message changed (or
  // the count did): a change of targetRevisions or lastTransitionTime alone is not written, and the
  // rest of the pass works on the entries as they were.
  const saved = (list: ApplicationSetApplicationStatus[], before: readonly ApplicationSetApplicationStatus[]) => {
    if (list.length !== before.length) return true;
    const old = new Map(before.map((e) => [e.application, e]));
    return list.some((e) => {
      const o = old.get(e.application);
      return !o || o.status !== e.status || o.step !== e.step || o.message !== e.message;
    });
  };
  if (!saved(entries, priorEntries)) entries.splice(0, entries.length, ...priorEntries.map((e) => ({ ...e })));
  const beforeProgress = entries.map((e) => ({ ...e }));

  const released = appsToSync(entries, stepLists, new Set(sorted.map((a) => a.name)));

  // UpdateApplicationSetApplicationStatusProgress. Quirk (inferred from code): an app in no step has no
  // entry in the step map, so Go's zero value puts it at index 0 — it counts toward step 1's total (for
  // a percent maxUpdate) and, when Progressing, toward step 1's in-flight count.
  const indexOf = (name: string) => stepIndex.get(name) ?? 0;
  const total = steps.map(() => 0);
  const inFlight = steps.map(() => 0);
  for (const entry of entries) {
    total[indexOf(entry.application)]++;
    if (entry.status === 'Pending' || entry.status === 'Progressing') inFlight[indexOf(entry.application)]++;
  }
  const toSync: string[] = [];
  for (const entry of entries) {
    const index = indexOf(entry.application);
    const limit = maxConcurrentFor(steps[index].maxUpdate, total[index]);
    const room = limit === null || inFlight[index] < limit;
    if (entry.status === 'Waiting' && released.has(entry.application) && room) {
      transition(entry, 'Pending', ROLLOUT_MESSAGES.pending, stamp);
      inFlight[index]++;
      toSync.push(entry.application);
    }
  }
  const pendingSync = entries
    .filter((e) => e.status === 'Pending' && released.has(e.application))
    .map((e) => e.application);
  const written = saved(entries, beforeProgress)
    ? entries.sort((a, b) => (a.application < b.application ? -1 : a.application > b.application ? 1 : 0))
    : beforeProgress;

  return {
    applicationStatus: written,
    conditions: upsertCondition(conditions, progressingConditionFor(steps.length, written), now),
    toSync,
    pendingSync,
    stepsByApp,
  };
}

/**
 * UpdateApplicationSetApplicationStatus: every existing app's entry after one look at the app, as Argo CD
 * computes it in memory (the function's return value), in the order of `apps`. `stepIndex` is
 * buildAppDependencyList's appStepMap (0-based; an app in none gets step -1). What of it is saved is
 * setAppSetApplicationStatus's call (advanceRollout): a new targetRevisions alone, with status, step and
 * message unchanged, is not.
 */
export function evaluateApplicationStatus(
  priorEntries: readonly ApplicationSetApplicationStatus[],
  apps: readonly RolloutAppState[],
  stepIndex: ReadonlyMap<string, number>,
  now: Date,
): ApplicationSetApplicationStatus[] {
  const stamp = k8sTime(now);
  const previous = new Map(priorEntries.map((e) => [e.application, e]));
  return apps.map((app) => {
    const index = stepIndex.get(app.name);
    return evaluateEntry(previous.get(app.name), app, index === undefined ? NO_STEP : index + 1, stamp);
  });
}

/** One app's entry: a revision or spec change sends it back to Waiting, then the state machine moves it on. */
function evaluateEntry(
  found: ApplicationSetApplicationStatus | undefined,
  app: RolloutAppState,
  step: number,
  stamp: string,
): ApplicationSetApplicationStatus {
  const current: ApplicationSetApplicationStatus = found
    ? { ...found }
    : {
        application: app.name,
        status: 'Waiting',
        message: ROLLOUT_MESSAGES.newEntry,
        step: String(step),
        targetRevisions: [...app.revisions],
        lastTransitionTime: stamp,
      };
  const next: ApplicationSetApplicationStatus = { ...current, step: String(step) };
  // reflect.DeepEqual(entry.TargetRevisions, app.Status.GetRevisions()); both are non-nil here.
  const revisionsChanged = !sameList(current.targetRevisions, app.revisions);
  const specChanged = app.specChanged === true;
  if (revisionsChanged || specChanged) {
    next.targetRevisions = [...app.revisions];
    next.message =
      revisionsChanged && specChanged
        ? ROLLOUT_MESSAGES.revisionAndSpecChanged
        : revisionsChanged
          ? ROLLOUT_MESSAGES.revisionChanged
          : ROLLOUT_MESSAGES.specChanged;
    next.status = 'Waiting';
    next.lastTransitionTime = stamp;
  }
  if (next.status === 'Waiting') {
    // Already in sync (nothing to roll out): no sync is started for it.
    if (app.sync === 'Synced')
      transition(
        next,
        app.health === 'Healthy' ? 'Healthy' : 'Progressing',
        app.health === 'Healthy' ? ROLLOUT_MESSAGES.syncedHealthy : ROLLOUT_MESSAGES.syncedNotHealthy,
        stamp,
      );
  } else {
    if (current.status === 'Pending') {
      // `ReconciledAt == nil || (LastTransitionTime != nil && ReconciledAt.After(LastTransitionTime))`:
      // a reconciled app whose entry has no lastTransitionTime never moves on.
      const reconciledSince =
        app.reconciledAt === undefined ||
        (next.lastTransitionTime != null && time(app.reconciledAt) > time(next.lastTransitionTime));
      if (reconciledSince) {
        // A sync that started after the Pending transition, whatever its result (a failed sync also
        // counts: retrying is the app's job, not the appset's).
        if (app.operationStartedAt !== undefined && time(app.operationStartedAt) > time(current.lastTransitionTime)) {
          const message =
            app.operationPhase === 'Succeeded'
              ? ROLLOUT_MESSAGES.syncSucceeded
              : app.operationPhase === 'Failed' || app.operationPhase === 'Error'
                ? ROLLOUT_MESSAGES.syncCompleted
                : ROLLOUT_MESSAGES.syncRunning;
          transition(next, 'Progressing', message, stamp);
        } else if (app.errorCondition) {
          transition(next, 'Progressing', ROLLOUT_MESSAGES.appError, stamp);
        }
      }
    }
    // Healthy alone is not enough; and there is no timeout: a failed app stays Progressing forever.
    if (current.status === 'Progressing' && app.health === 'Healthy' && app.sync === 'Synced')
      transition(next, 'Healthy', ROLLOUT_MESSAGES.becameHealthy, stamp);
  }
  return next;
}

/**
 * getAppsToSync: the apps whose step is released. Steps are released in order while every app listed in
 * each earlier step exists and has a Healthy entry; a generated app that does not exist holds every later
 * step, whatever its (stale) entry says. Empty steps hold nothing up.
 */
export function appsToSync(
  entries: readonly ApplicationSetApplicationStatus[],
  stepLists: readonly (readonly string[])[],
  existing: ReadonlySet<string>,
): Set<string> {
  const byName = new Map(entries.map((e) => [e.application, e]));
  const released = new Set<string>();
  for (const list of stepLists) {
    for (const name of list) released.add(name);
    if (!list.every((name) => existing.has(name) && byName.get(name)?.status === 'Healthy')) break;
  }
  return released;
}

function transition(
  entry: ApplicationSetApplicationStatus,
  status: ProgressiveSyncStatus,
  message: string,
  stamp: string,
): void {
  entry.status = status;
  entry.message = message;
  entry.lastTransitionTime = stamp;
}

/** The first step whose entries are not all Healthy; steps without entries are complete, "-1" never counts. */
export function progressingStep(stepCount: number, entries: readonly ApplicationSetApplicationStatus[]): number | null {
  const healthyByStep = new Map<string, boolean>();
  for (const e of entries) healthyByStep.set(e.step, (healthyByStep.get(e.step) ?? true) && e.status === 'Healthy');
  for (let step = 1; step <= stepCount; step++) {
    const healthy = healthyByStep.get(String(step));
    if (healthy === false) return step;
  }
  return null;
}

function completeCondition(): ApplicationSetCondition {
  return {
    type: ROLLOUT_PROGRESSING,
    status: 'False',
    reason: REASON_ROLLOUT_COMPLETE,
    message: ROLLOUT_COMPLETE_MESSAGE,
  };
}

function progressingConditionFor(
  stepCount: number,
  entries: readonly ApplicationSetApplicationStatus[],
): ApplicationSetCondition {
  const step = progressingStep(stepCount, entries);
  return step === null
    ? completeCondition()
    : { type: ROLLOUT_PROGRESSING, status: 'True', reason: REASON_MODIFIED, message: rolloutOfStepMessage(step) };
}

/** Replace the condition of the same type in place, keeping its lastTransitionTime when nothing changed. */
export function upsertCondition(
  conditions: readonly ApplicationSetCondition[],
  condition: ApplicationSetCondition,
  now: Date,
): ApplicationSetCondition[] {
  const out = [...conditions];
  const index = out.findIndex((c) => c.type === condition.type);
  const existing = index === -1 ? undefined : out[index];
  const unchanged =
    existing &&
    existing.status === condition.status &&
    existing.reason === condition.reason &&
    existing.message === condition.message;
  const next = unchanged
    ? existing
    : { ...condition, lastTransitionTime: condition.lastTransitionTime ?? k8sTime(now) };
  if (index === -1) out.push(next);
  else out[index] = next;
  return out;
}

// ---------- the sync RollingSync starts (A5/A6) ----------

export const ROLLING_SYNC_INITIATOR = 'applicationset-controller';
export const ROLLING_SYNC_REASON = 'ApplicationSet RollingSync triggered a sync of this Application resource';
/** Since v3.1 (PR #23335), matching the app controller's auto-sync default. */
export const ROLLING_SYNC_DEFAULT_RETRY = { limit: 5 } as const;

/** A step's match expression as on-call reads it: `env In [prod, staging]`, `canary Exists`. */
export function expressionText(expr: ApplicationMatchExpression): string {
  const values = expr.values ?? [];
  return values.length ? `${expr.key} ${expr.operator} [${values.join(', ')}]` : `${expr.key} ${expr.operator}`;
}

/** An automated block counts as enabled when present and not `enabled: false` (nil means on, v3.1+). */
export function automatedEnabled(automated: SyncPolicyAutomated | null | undefined): boolean {
  return automated != null && automated.enabled !== false;
}

/**
 * The operation RollingSync writes onto a Pending app (progressive_sync.go SyncDesiredApplications →
 * syncApplication). It is built on the *generated* Application, i.e. the template's spec, not the live
 * app: `prune` is the template's automated.prune when that automated block counts as enabled, and
 * syncOptions and retry are the template's syncPolicy's (retry defaults to {limit: 5}); whatever the
 * live app's syncPolicy says (a hand edit kept by ignoreApplicationDifferences) does not reach the sync.
 */
export function rollingSyncOperation(appSet: ApplicationSet): Operation {
  const policy = appSet.spec?.template?.spec?.syncPolicy;
  const templateAutomated = policy?.automated;
  const prune = automatedEnabled(templateAutomated) && templateAutomated?.prune === true;
  const sync: NonNullable<Operation['sync']> = {};
  // Go's `prune,omitempty`: false is not written.
  if (prune) sync.prune = true;
  if (policy?.syncOptions) sync.syncOptions = [...policy.syncOptions];
  return {
    sync,
    initiatedBy: { username: ROLLING_SYNC_INITIATOR, automated: true },
    info: [{ name: 'Reason', value: ROLLING_SYNC_REASON }],
    retry: policy?.retry ? structuredClone(policy.retry) : { ...ROLLING_SYNC_DEFAULT_RETRY },
  };
}
