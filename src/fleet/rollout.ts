/**
 * The `rollout` and `plan` reports for one ApplicationSet, built from the mirror only. Argo CD's own
 * `status.applicationStatus` is the truth for each app's progressive status, step, time in state and
 * message (that is what the controller acts on); only when it is absent — the controller runs without
 * --enable-progressive-syncs — are the steps worked out by matching, with no status.
 */
import type {
  ApplicationMatchExpression,
  HealthStatusCode,
  ProgressiveSyncStatus,
  SyncStatusCode,
} from '../infra/argocd/types.js';
import { diagnoseAppSet, type DiagnoseOptions, type Finding } from './diagnose.js';
import type { FleetApp, FleetAppSet, FleetView } from './model.js';
import {
  NO_STEP,
  currentStepFromStatus,
  reportedStep,
  generatedLabels,
  maxUpdateInfo,
  progressingStep,
  rolloutComplete,
  rolloutSteps,
  stepOfLabels,
} from './rollingsync.js';

export interface RolloutStepApp {
  name: string;
  cluster: string;
  /** Progressive status as Argo CD reports it; null when the appset has no entry for the app. */
  status: ProgressiveSyncStatus | null;
  /** lastTransitionTime of that status. */
  since: string | null;
  sync: SyncStatusCode | null;
  health: HealthStatusCode | null;
  /** Argo CD's message for the status entry. */
  message: string | null;
  instance: string;
}

export interface RolloutStep {
  step: number;
  matchExpressions: ApplicationMatchExpression[];
  /** As written in the spec (int or "n%"), null when absent. */
  maxUpdate: number | string | null;
  /** 0 = manual gate, null = unlimited. */
  maxConcurrent: number | null;
  /** "2 at a time", "50% → 2 at a time", "all at once", "manual gate". */
  meaning: string;
  apps: RolloutStepApp[];
}

/** An applicationStatus entry whose Application does not exist (deleted since, or not created yet). */
export interface StaleEntry {
  name: string;
  step: string | null;
  status: ProgressiveSyncStatus | null;
  since: string | null;
}

export interface RolloutReport {
  appSet: string;
  instance: string;
  strategy: string;
  currentStep: number | null;
  complete: boolean;
  steps: RolloutStep[];
  /** Apps in no step (step "-1"): RollingSync never syncs them. */
  unmatched: RolloutStepApp[];
  /** The current step's apps that are not Healthy yet, and since when (the oldest transition among them). */
  waitingOn: { step: number; apps: string[]; since: string | null } | null;
  /**
   * The step cannot start because an Application generated for an earlier step does not exist:
   * which ones (when they can be named) and Argo CD's reason (its ErrorOccurred condition), else null.
   */
  heldBy: MissingAppHold | null;
  /** Entries of status.applicationStatus for Applications that do not exist: not counted anywhere. */
  stale: StaleEntry[];
  findings: Finding[];
}

export interface MissingAppHold {
  step: number;
  /** The missing apps, when the generator can be rendered; empty when Argo CD's status does not name them. */
  missing: string[];
  /** Argo CD's ErrorOccurred message (why the app is not created), null when it reports none. */
  reason: string | null;
}

export interface RolloutPlanStep {
  step: number;
  maxUpdate: number | string | null;
  maxConcurrent: number | null;
  meaning: string;
  /** Every app of the step, by name (the order Argo CD moves them to Pending in). */
  apps: string[];
  /** Apps of the step not Healthy yet: what RollingSync still has to get through. */
  remaining: string[];
}

export interface RolloutPlan {
  appSet: string;
  instance: string;
  currentStep: number | null;
  complete: boolean;
  steps: RolloutPlanStep[];
  /** Apps the rollout will never sync (in no step). */
  unmatched: string[];
  heldBy: MissingAppHold | null;
  findings: Finding[];
}

type ReportOptions = DiagnoseOptions & { now: Date };

interface Placed {
  app: RolloutStepApp;
  step: number;
}

const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

function placeApps(
  fleet: FleetView,
  target: FleetAppSet,
): { placed: Placed[]; stale: StaleEntry[]; stepCount: number } {
  const appSet = target.appSet;
  const steps = rolloutSteps(appSet);
  const entries = appSet.status?.applicationStatus ?? [];
  const entryByApp = new Map(entries.map((e) => [e.application, e]));
  const live = new Map<string, FleetApp>(
    fleet.appsOf(target.instance, appSet.metadata.name).map((a) => [a.app.metadata.name, a]),
  );
  const names = new Set<string>([...live.keys(), ...entryByApp.keys()]);
  // Cluster labels by Argo CD cluster name: a cluster generator renders the template from them.
  const clusterLabels = new Map(
    fleet
      .clusters()
      .filter((c) => c.instance === target.instance)
      .map((c) => [c.cluster.name || c.cluster.server, c.cluster.labels ?? {}]),
  );
  const placed: Placed[] = [];
  const stale: StaleEntry[] = [];
  for (const name of names) {
    const fleetApp = live.get(name);
    const entry = entryByApp.get(name);
    // Argo CD rebuilds its step lists from the Applications it generates, so an entry whose app is
    // gone counts for nothing. (With no live app at all we cannot tell stale from unseen: keep them.)
    if (!fleetApp && entry && live.size > 0) {
      stale.push({
        name,
        step: entry.step ?? null,
        status: entry.status ?? null,
        since: entry.lastTransitionTime ?? null,
      });
      continue;
    }
    const step =
      reportedStep(entry, steps.length) ??
      (fleetApp
        ? stepOfLabels(generatedLabels(appSet, fleetApp.app, clusterLabels.get(fleetApp.cluster)), steps)
        : NO_STEP);
    placed.push({
      step,
      app: {
        name,
        // An entry without a live app: the mirror has not seen it (yet), or it is being deleted.
        cluster: fleetApp?.cluster ?? 'unknown',
        status: entry?.status ?? null,
        since: entry?.lastTransitionTime ?? null,
        sync: fleetApp?.app.status?.sync?.status ?? null,
        health: fleetApp?.app.status?.health?.status ?? null,
        // An entry whose Application the mirror does not have: deleted since, or not created yet. Say so
        // instead of showing Argo CD's last message for an app that is not there.
        message:
          !fleetApp && entry
            ? `no Application ${name} on ${target.instance} (stale entry: deleted, or not created yet); Argo CD's last message: ${entry.message ?? 'none'}`
            : (entry?.message ?? null),
        instance: target.instance,
      },
    });
  }
  placed.sort((a, b) => byName(a.app, b.app));
  stale.sort(byName);
  return { placed, stale, stepCount: steps.length };
}

/** What a maxUpdate means for on-call. */
export function maxUpdateMeaning(maxUpdate: number | string | null | undefined, stepTotal: number): string {
  const info = maxUpdateInfo(maxUpdate, stepTotal);
  const count = info.maxConcurrent;
  const base = count === null ? 'all at once' : count === 0 ? 'manual gate' : `${count} at a time`;
  if (info.kind === 'percent' && count !== null && count > 0) return `${info.percent}% → ${base}`;
  if (info.kind === 'percent' && count === 0) return `${info.percent}% → manual gate`;
  if (info.kind === 'invalid') return `invalid maxUpdate ${JSON.stringify(maxUpdate)} → ${base}`;
  return base;
}

function buildSteps(target: FleetAppSet, placed: Placed[]): { steps: RolloutStep[]; unmatched: RolloutStepApp[] } {
  const specSteps = rolloutSteps(target.appSet);
  // Argo CD sizes a percent against the step's status entries, and apps in no step land at index 0
  // (Go's zero value), so they count toward step 1 (inferred from code, argocd-facts A4).
  const totals = specSteps.map(
    (_, i) => placed.filter((p) => p.step === i + 1 || (i === 0 && p.step === NO_STEP)).length,
  );
  const steps = specSteps.map((spec, i): RolloutStep => {
    const maxUpdate = spec.maxUpdate ?? null;
    return {
      step: i + 1,
      matchExpressions: spec.matchExpressions ?? [],
      maxUpdate,
      maxConcurrent: maxUpdateInfo(maxUpdate, totals[i]).maxConcurrent,
      meaning: maxUpdateMeaning(maxUpdate, totals[i]),
      apps: placed.filter((p) => p.step === i + 1).map((p) => p.app),
    };
  });
  return { steps, unmatched: placed.filter((p) => p.step === NO_STEP).map((p) => p.app) };
}

function newest(times: (string | null)[]): string | null {
  let best: string | null = null;
  for (const t of times) if (t && (best === null || Date.parse(t) > Date.parse(best))) best = t;
  return best;
}

function oldest(times: (string | null)[]): string | null {
  let best: string | null = null;
  for (const t of times) if (t && (best === null || Date.parse(t) < Date.parse(best))) best = t;
  return best;
}

/**
 * The step to wait on: the one Argo CD reports; with entries but no condition (an older controller, or
 * a status caught between two writes), the step the condition would name.
 */
function stepToWaitOn(target: FleetAppSet, stepCount: number, reported: number | null): number | null {
  if (reported !== null || rolloutComplete(target.appSet)) return reported;
  const entries = target.appSet.status?.applicationStatus ?? [];
  return entries.length ? progressingStep(stepCount, entries) : null;
}

export function buildRolloutReport(fleet: FleetView, target: FleetAppSet, opts: ReportOptions): RolloutReport {
  const appSet = target.appSet;
  const { placed, stale, stepCount } = placeApps(fleet, target);
  const { steps, unmatched } = buildSteps(target, placed);
  // As Argo CD reports it (RolloutProgressing), never inferred: on-call compares it with the Argo CD UI.
  const currentStep = currentStepFromStatus(appSet);
  const waitStep = stepToWaitOn(target, stepCount, currentStep);
  let waitingOn: RolloutReport['waitingOn'] = null;
  const current = waitStep !== null ? steps.find((s) => s.step === waitStep) : undefined;
  if (current) {
    const notHealthy = current.apps.filter((a) => a.status !== 'Healthy');
    // The wait began when both the step was released (the last app of the earlier steps turned Healthy)
    // and its apps entered their state; entries go Waiting at the revision change, long before their step's turn.
    const released = newest(
      steps
        .filter((s) => s.step < current.step)
        .flatMap((s) => s.apps.filter((a) => a.status === 'Healthy').map((a) => a.since)),
    );
    waitingOn = {
      step: current.step,
      apps: notHealthy.map((a) => a.name),
      since: newest([oldest(notHealthy.map((a) => a.since)), released]),
    };
  }
  const findings = diagnoseAppSet(fleet, target, opts);
  return {
    appSet: appSet.metadata.name,
    instance: target.instance,
    strategy: appSet.spec?.strategy?.type || 'AllAtOnce',
    currentStep,
    complete: rolloutComplete(appSet),
    steps,
    unmatched,
    waitingOn,
    heldBy: missingAppHold(target, findings, steps),
    stale,
    findings,
  };
}

function missingAppHold(target: FleetAppSet, findings: Finding[], steps: RolloutStep[]): MissingAppHold | null {
  const finding = findings.find((f) => f.rule === 'step-held-by-missing-app');
  if (!finding || finding.step === undefined) return null;
  const waiting = new Set(steps.find((s) => s.step === finding.step)?.apps.map((a) => a.name) ?? []);
  const error = target.appSet.status?.conditions?.find((c) => c.type === 'ErrorOccurred' && c.status === 'True');
  return {
    step: finding.step,
    missing: (finding.apps ?? []).filter((a) => !waiting.has(a)),
    reason: error?.message ?? null,
  };
}

/**
 * Whether RollingSync still has to get the app to Healthy. With an entry, anything but Healthy. Without
 * one, the first pass would mark a Synced+Healthy app Healthy straight away, so only the others remain.
 */
function remains(app: RolloutStepApp): boolean {
  if (app.status !== null) return app.status !== 'Healthy';
  return !(app.sync === 'Synced' && app.health === 'Healthy');
}

export function buildRolloutPlan(fleet: FleetView, target: FleetAppSet, opts: ReportOptions): RolloutPlan {
  const report = buildRolloutReport(fleet, target, opts);
  return {
    appSet: report.appSet,
    instance: report.instance,
    currentStep: report.currentStep,
    complete: report.complete,
    steps: report.steps.map((s) => ({
      step: s.step,
      maxUpdate: s.maxUpdate,
      maxConcurrent: s.maxConcurrent,
      meaning: s.meaning,
      apps: s.apps.map((a) => a.name),
      remaining: s.apps.filter(remains).map((a) => a.name),
    })),
    unmatched: report.unmatched.map((a) => a.name),
    heldBy: report.heldBy,
    findings: report.findings,
  };
}
