/**
 * What every RollingSync appset rule reads, worked out once per ApplicationSet: its steps, the apps it
 * generates with the labels Argo CD matches steps against (the generated Application's, A3), which steps
 * select each app, the controller's applicationStatus entries and the step the rollout is on. Pure: the
 * mirror (FleetView) is the only input; nothing here calls Argo CD.
 */
import type {
  Application,
  ApplicationSet,
  ApplicationSetApplicationStatus,
  ApplicationSetRolloutStep,
  Cluster,
} from '../../infra/argocd/types.js';
import { normalizeServer } from '../../infra/argocd/objects.js';
import { byText } from '../../core/format.js';
import type { FleetApp, FleetAppSet, FleetView } from '../model.js';
import {
  NO_STEP,
  currentStepFromStatus,
  generatedLabels,
  isRollingSync,
  matchingSteps,
  reportedStep,
  rolloutComplete,
  rolloutSteps,
} from '../rollingsync.js';
import type { Finding } from './finding.js';

export interface DiagnoseOptions {
  /** An app Pending/Progressing in its step for longer than this is stuck. @defaultValue 15 minutes */
  stuckAfterMs: number;
}

export const DEFAULT_STUCK_AFTER_MS = 15 * 60_000;

export interface GeneratedApp {
  name: string;
  fleetApp: FleetApp;
  /** Labels of the generated (desired) app: what steps match (A3). */
  labels: Record<string, string>;
  /** 1-based steps whose expressions select the app. */
  steps: number[];
  cluster?: Cluster;
}

export interface AppSetContext {
  name: string;
  instance: string;
  appSet: ApplicationSet;
  steps: ApplicationSetRolloutStep[];
  apps: GeneratedApp[];
  appByName: Map<string, GeneratedApp>;
  /** Apps listed in each step (1-based index - 1), overlaps included, as Argo CD builds its lists. */
  stepApps: GeneratedApp[][];
  /** Apps whose step is this one (their first matching step): what maxUpdate counts and RollingSync syncs there. */
  stepMembers: GeneratedApp[][];
  unmatched: GeneratedApp[];
  statusEntries: ApplicationSetApplicationStatus[];
  entryByApp: Map<string, ApplicationSetApplicationStatus>;
  /** The step the rollout is on (RolloutProgressing message, else the first step not all Healthy); null when none. */
  currentStep: number | null;
  now: Date;
  stuckAfterMs: number;
  /** The instance's clusters (what a cluster generator iterates). */
  clusters: Cluster[];
}

/** How an appset rule reports: the finding without its appset and instance, which the caller adds. */
export type AddFinding = (f: Omit<Finding, 'appSet' | 'instance'>) => void;

/**
 * Which appsets an appset rule judges. Argo CD reads the steps only with `type: RollingSync`, a
 * `rollingSync` block and at least one step (progressive_sync.go RollingSyncStrategyEnabled):
 * `rolling-sync` is that case; `no-steps` is the type without steps, `steps-without-type` steps under
 * any other type. Every other appset has nothing for these rules.
 */
export type AppSetScope = 'rolling-sync' | 'no-steps' | 'steps-without-type';

/** Steps written under spec.strategy.rollingSync while the type is not exactly `RollingSync`. */
export function stepsWithoutType(appSet: ApplicationSet): boolean {
  const strategy = appSet.spec?.strategy;
  return strategy?.type !== 'RollingSync' && (strategy?.rollingSync?.steps?.length ?? 0) > 0;
}

/** The scope an appset falls in; undefined for an appset RollingSync has nothing to do with. */
export function appSetScope(appSet: ApplicationSet): AppSetScope | undefined {
  if (stepsWithoutType(appSet)) return 'steps-without-type';
  if (appSet.spec?.strategy?.type !== 'RollingSync') return undefined;
  return isRollingSync(appSet) ? 'rolling-sync' : 'no-steps';
}

export function buildContext(
  fleet: FleetView,
  target: FleetAppSet,
  opts: DiagnoseOptions & { now: Date },
): AppSetContext {
  const appSet = target.appSet;
  const steps = isRollingSync(appSet) ? rolloutSteps(appSet) : [];
  const clusters = fleet
    .clusters()
    .filter((c) => c.instance === target.instance)
    .map((c) => c.cluster);
  const clusterByName = new Map<string, Cluster>();
  for (const c of clusters) {
    if (c.server) clusterByName.set(normalizeServer(c.server), c);
    if (c.name) clusterByName.set(c.name, c);
  }
  const statusEntries = appSet.status?.applicationStatus ?? [];
  const entryByApp = new Map(statusEntries.map((e) => [e.application, e]));
  const apps: GeneratedApp[] = fleet
    .appsOf(target.instance, appSet.metadata.name)
    .map((fleetApp) => {
      const cluster = clusterOf(fleetApp, clusterByName);
      const labels = generatedLabels(appSet, fleetApp.app, cluster?.labels);
      return {
        name: fleetApp.app.metadata.name,
        fleetApp,
        labels,
        steps: labelsCertain(appSet, labels)
          ? matchingSteps(labels, steps)
          : stepsOf(matchingSteps(labels, steps), entryByApp.get(fleetApp.app.metadata.name), steps.length),
        cluster,
      };
    })
    .sort((a, b) => byText(a.name, b.name));
  const stepApps: GeneratedApp[][] = steps.map(() => []);
  const stepMembers: GeneratedApp[][] = steps.map(() => []);
  for (const a of apps) {
    for (const n of a.steps) stepApps[n - 1].push(a);
    if (a.steps.length) stepMembers[a.steps[0] - 1].push(a);
  }
  return {
    name: appSet.metadata.name,
    instance: target.instance,
    appSet,
    steps,
    apps,
    appByName: new Map(apps.map((a) => [a.name, a])),
    stepApps,
    stepMembers,
    unmatched: apps.filter((a) => a.steps.length === 0),
    statusEntries,
    entryByApp,
    currentStep: currentStepOf(appSet, statusEntries),
    now: opts.now,
    stuckAfterMs: opts.stuckAfterMs > 0 ? opts.stuckAfterMs : DEFAULT_STUCK_AFTER_MS,
    clusters,
  };
}

/**
 * Whether the generated labels are known for sure: every label the template sets was resolved (a
 * templated value is read back from the live app) and no templatePatch can add others.
 */
function labelsCertain(appSet: ApplicationSet, labels: Record<string, string>): boolean {
  const patch = appSet.spec?.templatePatch;
  if (typeof patch === 'string' && patch.trim() !== '') return false;
  return Object.keys(appSet.spec?.template?.metadata?.labels ?? {}).every((key) => key in labels);
}

/**
 * The steps that select an app whose generated labels we could not fully work out. The controller's
 * entry is then the verdict (it matched the labels it rendered): its step comes first, `-1` means
 * none, and label matching fills in only the later overlapping steps.
 */
function stepsOf(byLabels: number[], entry: ApplicationSetApplicationStatus | undefined, stepCount: number): number[] {
  const reported = reportedStep(entry, stepCount);
  if (reported === undefined) return byLabels;
  if (reported === NO_STEP) return [];
  return [reported, ...byLabels.filter((n) => n > reported)];
}

function clusterOf(app: FleetApp, clusterByName: Map<string, Cluster>): Cluster | undefined {
  const dest = app.app.spec?.destination ?? {};
  return clusterByName.get(app.cluster) ?? (dest.server ? clusterByName.get(normalizeServer(dest.server)) : undefined);
}

function currentStepOf(appSet: ApplicationSet, entries: ApplicationSetApplicationStatus[]): number | null {
  const fromCondition = currentStepFromStatus(appSet);
  if (fromCondition !== null) return fromCondition;
  if (rolloutComplete(appSet)) return null;
  // No RolloutProgressing condition yet: Argo CD's current step is the first step whose apps are not all Healthy.
  let first: number | null = null;
  for (const e of entries) {
    const step = Number(e.step);
    if (!Number.isInteger(step) || step < 1 || e.status === 'Healthy') continue;
    if (first === null || step < first) first = step;
  }
  return first;
}

export function appNamed(ctx: AppSetContext, name: string): Application | undefined {
  return ctx.appByName.get(name)?.fleetApp.app;
}

/** Whether the template (or its templatePatch) renders the label `key` onto the generated apps. */
export function templateSetsLabel(appSet: ApplicationSet, key: string): boolean {
  if (key in (appSet.spec?.template?.metadata?.labels ?? {})) return true;
  const patch = appSet.spec?.templatePatch;
  return typeof patch === 'string' && patch.includes(key);
}

/** Generated apps that the controller should have status entries for, when it has none at all. */
export function appsWithoutEntries(ctx: AppSetContext): string[] {
  if (ctx.statusEntries.length > 0) return [];
  const resourceNames = (ctx.appSet.status?.resources ?? []).filter((r) => r.kind === 'Application').map((r) => r.name);
  return ctx.apps.length > 0 ? ctx.apps.map((a) => a.name) : resourceNames;
}

/** The appset has generated apps but no applicationStatus: the controller runs without progressive syncs. */
export function progressiveSyncsLookDisabled(ctx: AppSetContext): boolean {
  return appsWithoutEntries(ctx).length > 0;
}
