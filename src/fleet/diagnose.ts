/**
 * Diagnosis rules for ApplicationSet RollingSync: each finding names what is wrong (step, key, apps),
 * the Argo CD v3.5 behaviour behind it (../shared/reference/argocd-facts.md A1–A8) and the fix.
 * Works on the mirror only (FleetView); it never calls Argo CD.
 */
import type {
  Application,
  ApplicationMatchExpression,
  ApplicationSet,
  ApplicationSetApplicationStatus,
  ApplicationSetRolloutStep,
  Cluster,
} from '../infra/argocd/types.js';
import type { FleetApp, FleetAppSet, FleetView } from './model.js';
import type { Finding, Severity } from './rules/finding.js';
import { SYNC_WINDOW_BLOCKED_MESSAGE } from './rules/facts.js';
import { PAUSED_BY } from './pause.js';
import { RULE_IDS, type RuleId } from '../infra/config/rule-catalog.js';
import { normalizeServer } from '../infra/argocd/objects.js';
import {
  currentStepFromStatus,
  expressionMatches,
  generatedLabels,
  isRollingSync,
  isSupportedOperator,
  matchingSteps,
  maxConcurrentFor,
  maxUpdateInfo,
  rolloutComplete,
  NO_STEP,
  reportedStep,
  rolloutSteps,
  usesClusterGenerator,
} from './rollingsync.js';
import { code, formatDuration, oneLine } from '../core/format.js';
import { expressionText } from './rollingsync.js';

export type { Finding, Severity } from './rules/finding.js';

export interface DiagnoseOptions {
  /** An app Pending/Progressing in its step for longer than this is stuck. @defaultValue 15 minutes */
  stuckAfterMs: number;
}

export const DEFAULT_STUCK_AFTER_MS = 15 * 60_000;

/** Stable rule ids, in display order within a severity: the registry's (config/rule-catalog.ts). */
export const RULES = RULE_IDS;

export type { RuleId };

/** Most severe first: the order findings are shown in. */
export const SEVERITY_RANK: Record<Severity, number> = { critical: 0, warning: 1, info: 2 };

export { SYNC_WINDOW_BLOCKED_MESSAGE };

/** How many names a message lists before "+N more". */
const NAMES_SHOWN = 3;
/** Argo CD messages (operation, health) can be whole stack traces; keep findings readable in Slack. */
const QUOTE_MAX = 180;

/** Every ApplicationSet whose strategy type is RollingSync, on every instance. Each finding carries appSet + instance. */
export function diagnoseFleet(fleet: FleetView, opts: DiagnoseOptions & { now: Date }): Finding[] {
  const findings: Finding[] = [];
  for (const target of fleet.appSets()) {
    if (target.appSet.spec?.strategy?.type !== 'RollingSync' && !stepsWithoutType(target.appSet)) continue;
    findings.push(...diagnoseAppSet(fleet, target, opts));
  }
  return sortFleetFindings(findings);
}

/** Findings for one ApplicationSet, sorted by severity then step. Empty for an appset not using RollingSync. */
export function diagnoseAppSet(
  fleet: FleetView,
  target: FleetAppSet,
  opts: DiagnoseOptions & { now: Date },
): Finding[] {
  const appSet = target.appSet;
  if (stepsWithoutType(appSet)) return [stepsWithoutTypeFinding(target)];
  if (appSet.spec?.strategy?.type !== 'RollingSync') return [];
  const ctx = buildContext(fleet, target, opts);
  const out: Finding[] = [];
  const add = (f: Omit<Finding, 'appSet' | 'instance'>) =>
    out.push({ ...f, appSet: ctx.name, instance: target.instance });

  if (!isRollingSync(appSet)) {
    ruleNoSteps(ctx, add);
    return sortFindings(out);
  }
  ruleProgressiveSyncsDisabled(ctx, add);
  ruleStepHeldByMissingApp(ctx, add);
  ruleStuckStep(ctx, add);
  ruleSyncWindowBlocking(ctx, add);
  ruleDegradedAfterHealthy(ctx, add);
  ruleLabelOnClusterNotApp(ctx, add);
  ruleUnsupportedOperator(ctx, add);
  ruleLabelOnlyOnLiveApp(ctx, add);
  ruleStepMatchesNothing(ctx, add);
  ruleAppInNoStep(ctx, add);
  ruleOverlappingSteps(ctx, add);
  ruleMaxUpdate(ctx, add);
  rulePercentCountsUnmatched(ctx, add);
  ruleAutosyncIgnored(ctx, add);
  return sortFindings(out);
}

// ---------- context ----------

interface GeneratedApp {
  name: string;
  fleetApp: FleetApp;
  /** Labels of the generated (desired) app: what steps match (A3). */
  labels: Record<string, string>;
  /** 1-based steps whose expressions select the app. */
  steps: number[];
  cluster?: Cluster;
}

interface Context {
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

type Add = (f: Omit<Finding, 'appSet' | 'instance'>) => void;

function buildContext(fleet: FleetView, target: FleetAppSet, opts: DiagnoseOptions & { now: Date }): Context {
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
    .sort((a, b) => byName(a.name, b.name));
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

// ---------- rules ----------

/** Steps written under spec.strategy.rollingSync while the type is not exactly `RollingSync`. */
function stepsWithoutType(appSet: ApplicationSet): boolean {
  const strategy = appSet.spec?.strategy;
  return strategy?.type !== 'RollingSync' && (strategy?.rollingSync?.steps?.length ?? 0) > 0;
}

function stepsWithoutTypeFinding(target: FleetAppSet): Finding {
  const strategy = target.appSet.spec!.strategy!;
  const type = strategy.type;
  const steps = strategy.rollingSync!.steps!.length;
  const written = type ? `type: ${type}` : 'no type';
  const nearMiss = typeof type === 'string' && type.toLowerCase() === 'rollingsync';
  return {
    rule: 'steps-without-rolling-sync-type',
    severity: 'critical',
    message:
      `ApplicationSet \`${target.appSet.metadata.name}\` lists ${count(steps, 'step')} under spec.strategy.rollingSync.steps but has ${written}: ` +
      'Argo CD ignores the steps, so there is no progressive rollout and every generated app follows the template sync policy, all at once.',
    why:
      'The ApplicationSet controller runs RollingSync only when spec.strategy.type is exactly "RollingSync" (progressive_sync.go IsRollingSyncStrategy / RollingSyncStrategyEnabled); ' +
      (nearMiss ? `the comparison is case-sensitive, so "${type}" does not count; ` : '') +
      'with the type missing or AllAtOnce the rollingSync block is never read, and no condition or event says so.',
    fix: 'Set `spec.strategy.type: RollingSync` next to the steps (and enable progressive syncs on the controller), or delete the rollingSync block so the spec says what happens.',
    appSet: target.appSet.metadata.name,
    instance: target.instance,
  };
}

/**
 * A template string rendered with one generator's parameters, as the ApplicationSet controller does
 * for the simple forms (fasttemplate `{{name}}`, Go template `{{.name}}`, `{{index .metadata.labels "x"}}`).
 * Undefined when it uses a parameter we do not have or any other template construct: we do not guess.
 */
function renderParams(template: string, param: (path: string) => string | undefined): string | undefined {
  let ok = true;
  const out = template.replace(/\{\{-?\s*(.*?)\s*-?\}\}/g, (_m, expr: string) => {
    const e = expr.trim();
    const index = /^index\s+\.([A-Za-z0-9_.]+)\s+"([^"]+)"$/.exec(e);
    const value = param(index ? `${index[1]}.${index[2]}` : e.replace(/^\./, ''));
    if (value === undefined) ok = false;
    return value ?? '';
  });
  return ok ? out : undefined;
}

/** Cluster generator parameters: name, nameNormalized, server, metadata labels and annotations. */
function clusterParam(cluster: Cluster): (path: string) => string | undefined {
  return (path) => {
    if (path === 'name') return cluster.name;
    if (path === 'nameNormalized') return cluster.name?.toLowerCase().replace(/[^a-z0-9.-]/g, '-');
    if (path === 'server') return cluster.server;
    if (path.startsWith('metadata.labels.')) return cluster.labels?.[path.slice('metadata.labels.'.length)];
    if (path.startsWith('metadata.annotations.'))
      return cluster.annotations?.[path.slice('metadata.annotations.'.length)];
    return undefined;
  };
}

/** List generator parameters: the element's keys (nested objects by dotted path), strings only. */
function elementParam(element: Record<string, unknown>): (path: string) => string | undefined {
  return (path) => {
    let value: unknown = element;
    for (const part of path.split('.'))
      value = value && typeof value === 'object' ? (value as Record<string, unknown>)[part] : undefined;
    return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
      ? String(value)
      : undefined;
  };
}

/** Whether a cluster generator's selector picks the cluster (matchLabels AND matchExpressions). */
function clusterSelected(
  selector:
    | {
        matchLabels?: Record<string, string>;
        matchExpressions?: { key: string; operator: string; values?: string[] }[];
      }
    | undefined,
  labels: Record<string, string>,
): boolean {
  for (const [k, v] of Object.entries(selector?.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector?.matchExpressions ?? []) {
    const has = Object.prototype.hasOwnProperty.call(labels, e.key);
    if (e.operator === 'In' && !(has && (e.values ?? []).includes(labels[e.key]))) return false;
    if (e.operator === 'NotIn' && has && (e.values ?? []).includes(labels[e.key])) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

type ClusterSelector = Parameters<typeof clusterSelected>[0];

/**
 * Apps a single cluster or list generator would generate on this instance that do not exist, by name
 * and the steps their generated labels select; undefined when the generator or the name cannot be rendered.
 */
function missingGenerated(ctx: Context): { name: string; steps: number[] }[] | undefined {
  const generators = ctx.appSet.spec?.generators ?? [];
  const nameTemplate = ctx.appSet.spec?.template?.metadata?.name;
  if (generators.length !== 1 || typeof nameTemplate !== 'string') return undefined;
  const generator = generators[0] as { clusters?: { selector?: ClusterSelector }; list?: { elements?: unknown[] } };
  let params: ((path: string) => string | undefined)[];
  if (generator.clusters)
    params = ctx.clusters
      .filter((c) => clusterSelected(generator.clusters!.selector, c.labels ?? {}))
      .map(clusterParam);
  else if (Array.isArray(generator.list?.elements))
    params = generator.list.elements
      .filter((e): e is Record<string, unknown> => !!e && typeof e === 'object')
      .map(elementParam);
  else return undefined;
  const out: { name: string; steps: number[] }[] = [];
  for (const param of params) {
    const name = renderParams(nameTemplate, param);
    if (name === undefined) return undefined;
    if (ctx.appByName.has(name)) continue;
    const labels: Record<string, string> = {};
    for (const [k, v] of Object.entries(ctx.appSet.spec?.template?.metadata?.labels ?? {})) {
      const rendered = renderParams(String(v), param);
      if (rendered !== undefined) labels[k] = rendered;
    }
    out.push({ name, steps: matchingSteps(labels, ctx.steps) });
  }
  return out.sort((a, b) => byName(a.name, b.name));
}

function ruleStepHeldByMissingApp(ctx: Context, add: Add) {
  const step = ctx.currentStep;
  if (step === null || step < 2) return;
  const members = ctx.stepMembers[step - 1] ?? [];
  const waiting = members.filter((a) => ctx.entryByApp.get(a.name)?.status === 'Waiting');
  const inFlight = members.some((a) => ['Pending', 'Progressing'].includes(ctx.entryByApp.get(a.name)?.status ?? ''));
  if (!waiting.length || inFlight) return;
  if (maxConcurrentFor(ctx.steps[step - 1].maxUpdate, members.length) === 0) return;
  const policy = ctx.appSet.spec?.syncPolicy?.applicationsSync;
  if (policy === 'create-only' || policy === 'create-delete') return;
  const earlier = ctx.stepApps.slice(0, step - 1).flat();
  if (!earlier.every((a) => ctx.entryByApp.get(a.name)?.status === 'Healthy')) return;
  const error = ctx.appSet.status?.conditions?.find((c) => c.type === 'ErrorOccurred' && c.status === 'True');
  const missing = (missingGenerated(ctx) ?? []).filter((m) => m.steps.some((n) => n < step));
  const names = missing.map((m) => m.name);
  const where = missing.length
    ? `${count(missing.length, 'Application')} the ApplicationSet generates for ${joinAnd(unique(missing.map((m) => `step ${m.steps[0]}`)))} ${missing.length === 1 ? 'does' : 'do'} not exist: ${nameList(names)}`
    : `an Application the ApplicationSet generates for an earlier step does not exist (every existing app of steps 1–${step - 1} is Healthy)`;
  const reason = error?.message
    ? ` Argo CD says why (${error.reason ?? 'ErrorOccurred'}): ${quote(error.message)}.`
    : '';
  add({
    rule: 'step-held-by-missing-app',
    severity: 'critical',
    message: `Step ${step} cannot start: its ${count(waiting.length, 'app')} stay Waiting because ${where}.${reason}`,
    why:
      'RollingSync builds its step lists from the Applications the generators produce, not from the ones that exist, and releases a step only when every app of the earlier steps exists and is Healthy (progressive_sync.go getAppsToSync). ' +
      'An app that fails validation (bad destination, unknown project, duplicate name) is never created, so it holds every later step forever; ' +
      'Argo CD keeps no applicationStatus entry for it, and RolloutProgressing names the next step as if it were running.',
    fix:
      (error?.message
        ? 'Fix what the ErrorOccurred condition names (e.g. register the destination cluster or create the project) '
        : 'Find the app in the argocd-applicationset-controller log ("validation error found during application validation") and fix it ') +
      `so the ApplicationSet can create ${names.length ? names[0] : 'it'}; or change the generator or the steps so no step expects an app that cannot exist.`,
    step,
    apps: names.length ? names : waiting.map((a) => a.name),
  });
}

function ruleNoSteps(ctx: Context, add: Add) {
  add({
    rule: 'rolling-sync-without-steps',
    severity: 'warning',
    message: `ApplicationSet \`${ctx.name}\` has strategy type RollingSync but no steps under spec.strategy.rollingSync.steps: no progressive rollout runs for it.`,
    why:
      'Argo CD applies the RollingSync strategy only when type is RollingSync, rollingSync is set and steps is non-empty. ' +
      'Otherwise the appset is handled like AllAtOnce: every generated app syncs according to the template sync policy, all at once.',
    fix: 'Add steps under spec.strategy.rollingSync.steps (each with matchExpressions and a maxUpdate), or set type: AllAtOnce so the spec says what happens.',
  });
}

/** Generated apps that the controller should have status entries for, when it has none at all. */
function appsWithoutEntries(ctx: Context): string[] {
  if (ctx.statusEntries.length > 0) return [];
  const resourceNames = (ctx.appSet.status?.resources ?? []).filter((r) => r.kind === 'Application').map((r) => r.name);
  return ctx.apps.length > 0 ? ctx.apps.map((a) => a.name) : resourceNames;
}

function progressiveSyncsLookDisabled(ctx: Context): boolean {
  return appsWithoutEntries(ctx).length > 0;
}

function ruleProgressiveSyncsDisabled(ctx: Context, add: Add) {
  const names = appsWithoutEntries(ctx);
  if (names.length === 0) return;
  add({
    rule: 'progressive-syncs-disabled',
    severity: 'critical',
    message:
      `ApplicationSet \`${ctx.name}\` uses RollingSync and has ${count(names.length, 'generated app')} (${nameList(names)}), ` +
      'but status.applicationStatus is empty: the ApplicationSet controller is not running progressive syncs.',
    why:
      'RollingSync runs only when the ApplicationSet controller has progressive syncs enabled (--enable-progressive-syncs; off by default). ' +
      "With it off the appset behaves as AllAtOnce: generated apps keep the template's sync policy, so with automated set every app syncs a change at once, in no order; " +
      'and since v3.3 the controller deletes any applicationStatus entries. ' +
      'The name --enable-progressive-rollouts found in older posts was used only by the v2.6.0 release candidates and does nothing on released versions.',
    fix:
      'Enable it: set `applicationsetcontroller.enable.progressive.syncs: "true"` in the argocd-cmd-params-cm ConfigMap and restart the argocd-applicationset-controller Deployment ' +
      '(equivalently the flag --enable-progressive-syncs or env ARGOCD_APPLICATIONSET_CONTROLLER_ENABLE_PROGRESSIVE_SYNCS=true). ' +
      'If the appset was created moments ago, wait one reconcile and check again.',
    apps: names,
  });
}

function ruleStuckStep(ctx: Context, add: Add) {
  const byStep = new Map<number, { entry: ApplicationSetApplicationStatus; sinceMs: number }[]>();
  for (const entry of ctx.statusEntries) {
    if (entry.status !== 'Pending' && entry.status !== 'Progressing') continue;
    const since =
      parseTime(entry.lastTransitionTime) ??
      parseTime(appNamed(ctx, entry.application)?.status?.operationState?.startedAt);
    if (since === undefined) continue;
    const sinceMs = ctx.now.getTime() - since;
    if (sinceMs <= ctx.stuckAfterMs) continue;
    const step = Number(entry.step);
    const list = byStep.get(step) ?? [];
    list.push({ entry, sinceMs });
    byStep.set(step, list);
  }
  for (const [step, stuck] of [...byStep].sort((a, b) => a[0] - b[0])) {
    stuck.sort((a, b) => b.sinceMs - a.sinceMs || byName(a.entry.application, b.entry.application));
    const names = stuck.map((s) => s.entry.application);
    // Each app's operation and health messages (webhook errors run to hundreds of characters) get a line of
    // their own: one sentence holding them all is unreadable at 3 a.m.
    const details = stuck
      .slice(0, NAMES_SHOWN)
      .map(
        (s) =>
          `${s.entry.application} ${s.entry.status} for ${formatDuration(s.sinceMs)}: ${appProblem(appNamed(ctx, s.entry.application))}`,
      );
    if (stuck.length > NAMES_SHOWN) details.push(`+${stuck.length - NAMES_SHOWN} more`);
    const blocked = blockedBehind(ctx, step);
    add({
      rule: 'stuck-step',
      severity: 'critical',
      message:
        `Step ${step} is stuck: ${count(stuck.length, 'app')} Pending/Progressing longer than ${formatDuration(ctx.stuckAfterMs)} (${nameList(names)}).` +
        (blocked.apps > 0 ? ` ${blocked.text} wait${blocked.steps.length === 1 ? 's' : ''} behind it.` : ''),
      details,
      why:
        'Argo CD has no step timeout in any version (the 300s progressing timeout once in the docs never existed). ' +
        'An app leaves Progressing only when it is both Healthy and Synced; a failed sync counts as Progressing, ' +
        'so the step never completes and every later step waits forever.',
      fix:
        `Fix what the operation and health messages point at, then sync the app (\`/argo sync ${names[0]}\`); ` +
        `if its operation hangs Running, terminate it (\`argocd app terminate-op ${names[0]}\`) and sync again. ` +
        `To keep later steps from starting meanwhile, pause the rollout: \`/argo pause ${ctx.name}\`.`,
      step: Number.isInteger(step) ? step : undefined,
      apps: names,
    });
  }
}

function ruleSyncWindowBlocking(ctx: Context, add: Add) {
  const byStep = new Map<number | undefined, { names: string[]; rolloutWaits: boolean; projects: Set<string> }>();
  for (const a of ctx.apps) {
    const op = a.fleetApp.app.status?.operationState;
    if (op?.phase !== 'Running' || !op.message?.includes(SYNC_WINDOW_BLOCKED_MESSAGE)) continue;
    const entry = ctx.entryByApp.get(a.name);
    const entryStep = entry ? Number(entry.step) : NaN;
    const step = Number.isInteger(entryStep) && entryStep > 0 ? entryStep : a.steps[0];
    const group = byStep.get(step) ?? { names: [], rolloutWaits: false, projects: new Set<string>() };
    group.names.push(a.name);
    group.rolloutWaits ||= entry?.status === 'Pending' || entry?.status === 'Progressing';
    group.projects.add(a.fleetApp.app.spec.project);
    byStep.set(step, group);
  }
  for (const [step, g] of byStep) {
    const projects = [...g.projects].sort();
    const where = step === undefined ? '' : ` in step ${step}`;
    add({
      rule: 'sync-window-blocking',
      severity: g.rolloutWaits ? 'critical' : 'warning',
      message:
        `${count(g.names.length, 'app')}${where} ${g.names.length === 1 ? 'has its' : 'have their'} sync held by a sync window (operation Running: "${SYNC_WINDOW_BLOCKED_MESSAGE}"): ${nameList(g.names)}.` +
        (g.rolloutWaits ? ' The rollout waits on them.' : ''),
      why:
        'RollingSync starts syncs as automated (initiatedBy.automated: true), so the application controller applies sync windows to them as to auto-sync: ' +
        'a deny window, or time outside an allow window, blocks them even when the window sets manualSync: true. ' +
        'The operation stays Running until the window lets it through.',
      fix:
        `Wait for the window to end, or change the sync windows of AppProject ${projects.map((p) => `\`${p}\``).join(', ')} ` +
        `(\`argocd proj windows list ${projects[0]}\`). If the window allows manual syncs, terminate the held operation and sync by hand: ` +
        `\`argocd app terminate-op ${g.names[0]}\`, then \`/argo sync ${g.names[0]}\`.`,
      step,
      apps: g.names,
    });
  }
}

function ruleDegradedAfterHealthy(ctx: Context, add: Add) {
  const sick: { name: string; step: number; health: string }[] = [];
  for (const e of ctx.statusEntries) {
    const step = Number(e.step);
    if (e.status !== 'Healthy' || !Number.isInteger(step) || step < 1) continue;
    const health = appNamed(ctx, e.application)?.status?.health?.status;
    if (health === 'Degraded' || health === 'Missing') sick.push({ name: e.application, step, health });
  }
  if (sick.length === 0) return;
  sick.sort((a, b) => a.step - b.step || byName(a.name, b.name));
  const first = sick[0];
  const moving = ctx.currentStep !== null && ctx.currentStep > first.step;
  const details = sick
    .slice(0, NAMES_SHOWN)
    .map((s) => `${s.name} (step ${s.step}) ${s.health}: ${appProblem(appNamed(ctx, s.name))}`);
  add({
    rule: 'degraded-after-healthy',
    severity: moving ? 'critical' : 'warning',
    message:
      `${count(sick.length, 'app')} that RollingSync already counts as Healthy ${sick.length === 1 ? 'is' : 'are'} ${sick.length === 1 ? first.health : 'Degraded or Missing'} now: ` +
      `${details.join('; ')}${sick.length > NAMES_SHOWN ? `; +${sick.length - NAMES_SHOWN} more` : ''}.` +
      (moving ? ` The rollout has moved on to step ${ctx.currentStep} regardless.` : ''),
    why:
      'Once an applicationStatus entry is Healthy it stays Healthy until the next revision or spec change: RollingSync does not watch health after a step completes, ' +
      'so an earlier-step app (a canary) that degrades later does not halt the rollout.',
    fix: `Hold the rollout before more apps get the change: \`/argo pause ${ctx.name}\`. Then fix or roll back ${first.name} (\`/argo app ${first.name}\` shows its operation and resources) and resume.`,
    step: first.step,
    apps: sick.map((s) => s.name),
  });
}

function ruleLabelOnClusterNotApp(ctx: Context, add: Add) {
  if (ctx.apps.length === 0) return;
  // One finding per key, at the first step that uses it.
  const checked = new Set<string>();
  ctx.steps.forEach((step, i) => {
    for (const expr of step.matchExpressions ?? []) {
      if (checked.has(expr.key)) continue;
      checked.add(expr.key);
      // The template already renders the key (perhaps from the cluster's labels): the fix this rule asks for is in place.
      if (templateSetsLabel(ctx.appSet, expr.key)) continue;
      // Apps that lack the key while their destination cluster carries it: the step author meant the cluster label.
      const affected = ctx.apps.filter(
        (a) => !(expr.key in a.labels) && a.cluster?.labels !== undefined && expr.key in a.cluster.labels,
      );
      if (affected.length === 0) continue;
      const clusterNames = unique(affected.map((a) => a.cluster!.name || a.cluster!.server));
      const clusterValues = unique(affected.map((a) => a.cluster!.labels![expr.key]));
      const all = affected.length === ctx.apps.length;
      add({
        rule: 'label-on-cluster-not-app',
        severity: 'critical',
        message:
          `Step ${i + 1} matches on \`${expr.key}\` (\`${expressionText(expr)}\`), a label ${clusterNames.length === 1 ? 'the destination cluster carries' : `the ${clusterNames.length} destination clusters carry`} ` +
          `(${nameList(clusterNames)}; values ${clusterValues.map((v) => `"${v}"`).join(', ')}), but ` +
          (all
            ? `none of the ${count(ctx.apps.length, 'generated app')} has it.`
            : `${affected.length} of the ${ctx.apps.length} generated apps lack it: ${nameList(affected.map((a) => a.name))}.`),
        why:
          'RollingSync steps match the labels of the generated Applications (rendered from spec.template.metadata.labels), never the labels of the Argo CD cluster. ' +
          'An app without the key never satisfies `In` (and always satisfies `NotIn`), so these apps land in the wrong step or in none.',
        fix: `Copy the cluster label into the template: under spec.template.metadata.labels add ${templateLabelFor(ctx.appSet, expr.key)}.`,
        step: i + 1,
        apps: affected.map((a) => a.name),
      });
    }
  });
}

function ruleLabelOnlyOnLiveApp(ctx: Context, add: Add) {
  // One finding per key, at the first step that uses it.
  const checked = new Set<string>();
  ctx.steps.forEach((step, i) => {
    for (const expr of step.matchExpressions ?? []) {
      if (checked.has(expr.key)) continue;
      checked.add(expr.key);
      // Same test as ignoredLiveLabels(), on the generated labels already computed (10k-app appsets stay fast).
      const affected = ctx.apps.filter((a) => {
        const live = a.fleetApp.app.metadata.labels?.[expr.key];
        return live !== undefined && a.labels[expr.key] !== live;
      });
      if (affected.length === 0) continue;
      const liveValues = unique(affected.map((a) => a.fleetApp.app.metadata.labels![expr.key]));
      add({
        rule: 'label-only-on-live-app',
        severity: 'warning',
        message:
          `Step ${i + 1} matches on \`${expr.key}\`, which ${count(affected.length, 'app')} carry only on the live Application, not from the template ` +
          `(${nameList(affected.map((a) => a.name))}; live values ${liveValues.map((v) => `"${v}"`).join(', ')}): RollingSync ignores those values.`,
        why:
          'RollingSync matches the labels of the generated Application, rendered from spec.template.metadata.labels. Labels added to a generated app by hand ' +
          '(kubectl label, the UI) or kept through preservedFields do not count for step matching (argo-cd issue #22001).',
        fix: `Put \`${expr.key}\` in spec.template.metadata.labels (fed from a generator parameter if it differs per app) instead of labelling the apps by hand.`,
        step: i + 1,
        apps: affected.map((a) => a.name),
      });
    }
  });
}

function ruleUnsupportedOperator(ctx: Context, add: Add) {
  ctx.steps.forEach((step, i) => {
    for (const expr of step.matchExpressions ?? []) {
      if (isSupportedOperator(expr.operator)) continue;
      const held = ctx.stepMembers[i].length;
      const withoutKey = ctx.apps.filter((a) => !(expr.key in a.labels)).length;
      const caseFix = (['In', 'NotIn'] as const).find((op) => op.toLowerCase() === expr.operator.toLowerCase());
      add({
        rule: 'unsupported-operator',
        severity: 'critical',
        message:
          `Step ${i + 1} uses operator "${expr.operator}" on \`${expr.key}\`: Argo CD only understands In and NotIn, so this expression never selects an app that has \`${expr.key}\`` +
          (withoutKey > 0
            ? ` (the ${count(withoutKey, 'app')} without the label pass it, because Argo CD skips the check for a missing key)`
            : '') +
          `; step ${i + 1} now holds ${count(held, 'app')}.`,
        why:
          'The RollingSync matcher knows only the operators In and NotIn, case-sensitive. For any other operator (Exists, DoesNotExist, Gt, ...) ' +
          'the ApplicationSet controller logs an error and the expression does not select an app carrying the key; an app lacking the key is only rejected by In. ' +
          'Expressions of a step are ANDed, so the step loses those apps to later steps or to no step.',
        fix: caseFix ? `Write the operator as "${caseFix}" (operators are case-sensitive).` : operatorFix(expr),
        step: i + 1,
        apps: ctx.stepMembers[i].map((a) => a.name),
      });
    }
  });
}

function ruleStepMatchesNothing(ctx: Context, add: Add) {
  if (ctx.apps.length === 0) return;
  ctx.steps.forEach((step, i) => {
    if (ctx.stepApps[i].length > 0) return;
    const reasons = (step.matchExpressions ?? [])
      .map((expr) => expressionReason(ctx, expr))
      .filter((r): r is string => r !== undefined);
    add({
      rule: 'step-matches-nothing',
      severity: 'warning',
      message:
        `Step ${i + 1} (${stepText(step)}) selects none of the ${count(ctx.apps.length, 'generated app')}` +
        (reasons.length ? `: ${reasons.join('; ')}.` : '.'),
      why:
        'Steps match the labels of the generated Applications. A step with no apps counts as complete, so the rollout moves straight past it ' +
        'and the apps it was meant to hold are rolled out by another step, or by none.',
      fix: "Make the step's matchExpressions match labels the generated apps actually carry (see spec.template.metadata.labels), or remove the step.",
      step: i + 1,
    });
  });
}

function ruleAppInNoStep(ctx: Context, add: Add) {
  const names = new Set(ctx.unmatched.map((a) => a.name));
  // The controller's own verdict counts too (e.g. an app our mirror has not seen yet).
  for (const e of ctx.statusEntries) if (e.step === '-1' && e.status !== 'Healthy') names.add(e.application);
  if (names.size === 0) return;
  const list = [...names].sort();
  const outOfSync = ctx.apps
    .filter((a) => names.has(a.name) && a.fleetApp.app.status?.sync?.status === 'OutOfSync')
    .map((a) => a.name);
  add({
    rule: 'app-in-no-step',
    severity: 'warning',
    message:
      `${count(list.length, 'app')} ${list.length === 1 ? 'is' : 'are'} matched by no step: ${nameList(list)}. RollingSync never syncs ${list.length === 1 ? 'it' : 'them'}` +
      (outOfSync.length
        ? `; ${outOfSyncPhrase(outOfSync.length, list.length)} OutOfSync now and wait${outOfSync.length === 1 ? 's' : ''} for a hand sync.`
        : '.'),
    why:
      'An app that no step selects gets step "-1" in status.applicationStatus and stays Waiting: RollingSync never starts a sync for it, ' +
      'and it never blocks a step either. It changes only when someone syncs it by hand.',
    fix:
      `Add a step, or widen a step's matchExpressions, so it selects ${list.length === 1 ? 'this app' : 'these apps'}` +
      `${labelHint(ctx.unmatched)}; until then sync by hand: \`/argo sync ${list[0]}\`.`,
    apps: list,
  });
}

function ruleOverlappingSteps(ctx: Context, add: Add) {
  const groups = new Map<string, GeneratedApp[]>();
  for (const a of ctx.apps) {
    if (a.steps.length < 2) continue;
    const key = a.steps.join(',');
    groups.set(key, [...(groups.get(key) ?? []), a]);
  }
  for (const [key, apps] of groups) {
    const steps = key.split(',').map(Number);
    const later = steps.slice(1);
    add({
      rule: 'overlapping-steps',
      severity: 'warning',
      message:
        `${count(apps.length, 'app')} ${apps.length === 1 ? 'is' : 'are'} selected by steps ${joinAnd(steps.map(String))}: ${nameList(apps.map((a) => a.name))}. ` +
        `${apps.length === 1 ? 'It rolls' : 'They roll'} out in step ${steps[0]} but ${apps.length === 1 ? 'is' : 'are'} also counted in step ${joinAnd(later.map(String))}'s list.`,
      why:
        'When several steps select an app, the ApplicationSet controller logs a warning and assigns the app to the first matching step: ' +
        "that is its step number, the step whose maxUpdate counts it, and the step that syncs it. The app still appears in the later steps' dependency lists, " +
        'so the spec says one thing and the rollout does another, and a label change silently moves the app between steps.',
      fix: `Make the steps mutually exclusive, e.g. add to step ${later[0]} a NotIn expression for the values step ${steps[0]} selects, so each app is selected by exactly one step.`,
      step: steps[0],
      apps: apps.map((a) => a.name),
    });
  }
}

function ruleMaxUpdate(ctx: Context, add: Add) {
  ctx.steps.forEach((step, i) => {
    const n = i + 1;
    const apps = ctx.stepMembers[i];
    const maxUpdate = step.maxUpdate;
    if (maxUpdate === undefined || maxUpdate === null) {
      add({
        rule: 'no-max-update',
        severity: 'info',
        message: apps.length
          ? `Step ${n} has no maxUpdate: all ${count(apps.length, 'app')} of the step sync at once (${nameList(apps.map((a) => a.name))}).`
          : `Step ${n} has no maxUpdate: whatever apps it selects will sync all at once (it selects none now).`,
        why: "Without maxUpdate there is no limit on how many of the step's apps are Pending or Progressing together; the docs call this 100%.",
        fix: `Set maxUpdate on step ${n}, e.g. \`maxUpdate: 2\` or \`maxUpdate: "25%"\`, to limit how many apps a bad change reaches at once.`,
        step: n,
      });
      return;
    }
    if (maxUpdateInfo(maxUpdate, apps.length).kind === 'invalid') {
      add({
        rule: 'invalid-max-update',
        severity: 'warning',
        message: `Step ${n} has maxUpdate "${maxUpdate}", which is neither an integer nor a percent like "25%": the step syncs its apps one at a time.`,
        why:
          'maxUpdate is an int-or-string: a plain integer or a string "<n>%". Any other string (even "2" in quotes) fails to parse; ' +
          'the controller logs the error and the step ends up behaving like maxUpdate 1 (inferred from the v3.5 code).',
        fix: `Write \`maxUpdate: ${/^\d+$/.test(String(maxUpdate).trim()) ? String(maxUpdate).trim() : 2}\` without quotes, or a percent such as \`maxUpdate: "25%"\`.`,
        step: n,
      });
      return;
    }
    if (maxConcurrentFor(maxUpdate, apps.length) !== 0) return;
    const waitingHere = ctx.currentStep === n;
    const notHealthy = apps.filter((a) => ctx.entryByApp.get(a.name)?.status !== 'Healthy').map((a) => a.name);
    // rollcall's pause-rollout sets maxUpdate 0 and annotates the appset (rollcall.io/paused-by): a hold, not a gate.
    const pausedBy = ctx.appSet.metadata.annotations?.[PAUSED_BY];
    if (pausedBy) {
      add({
        rule: 'manual-gate',
        severity: 'info',
        message: `Step ${n} is held by rollcall's pause (maxUpdate 0, paused by ${pausedBy}): none of its ${count(apps.length, 'app')} leaves Waiting until the rollout is resumed.`,
        why: 'rollcall pauses a RollingSync rollout by setting maxUpdate 0 on the steps not yet complete (Argo CD has no pause): RollingSync then moves no app of those steps to Pending.',
        fix: `\`/argo resume ${ctx.name}\` puts back the maxUpdate values recorded at the pause.`,
        step: n,
        apps: waitingHere ? notHealthy : apps.map((a) => a.name),
      });
      return;
    }
    add({
      rule: 'manual-gate',
      severity: waitingHere ? 'warning' : 'info',
      message:
        `Step ${n} is a manual gate (maxUpdate: ${JSON.stringify(maxUpdate)}): RollingSync never syncs its ${count(apps.length, 'app')} by itself.` +
        (waitingHere
          ? ` The rollout is waiting here now on ${count(notHealthy.length, 'app')} not yet Healthy: ${nameList(notHealthy)}.`
          : ''),
      why:
        'With maxUpdate 0 or "0%" no app of the step is ever moved to Pending, so none is synced automatically. ' +
        'The rollout continues only when each app of the step has been synced by hand and is Synced and Healthy; later steps wait until then.',
      fix:
        `To pass the gate, sync the step's apps by hand (\`/argo sync ${notHealthy[0] ?? apps[0]?.name ?? '<app>'}\` ...), ` +
        `or raise maxUpdate on step ${n} in the ApplicationSet to let RollingSync continue.`,
      step: n,
      apps: waitingHere ? notHealthy : apps.map((a) => a.name),
    });
  });
}

function rulePercentCountsUnmatched(ctx: Context, add: Add) {
  const first = ctx.steps[0];
  const maxUpdate = first?.maxUpdate;
  if (maxUpdateInfo(maxUpdate, 0).kind !== 'percent' || ctx.unmatched.length === 0) return;
  const own = ctx.stepMembers[0].length;
  const total = own + ctx.unmatched.length;
  const intended = maxConcurrentFor(maxUpdate, own);
  const actual = maxConcurrentFor(maxUpdate, total);
  if (intended === actual) return;
  add({
    rule: 'percent-counts-unmatched',
    severity: 'info',
    message:
      `Step 1's maxUpdate "${maxUpdate}" is computed against its ${count(own, 'app')} plus the ${count(ctx.unmatched.length, 'app')} in no step (${total}): ` +
      `${actual} at a time instead of ${intended}.`,
    why: 'When Argo CD counts the apps per step, apps matched by no step fall into step 1 (inferred from the v3.5 code), so a percent maxUpdate on step 1 scales against them too.',
    fix: 'Put the unmatched apps into a step of their own, or give step 1 an integer maxUpdate.',
    step: 1,
    apps: ctx.unmatched.map((a) => a.name),
  });
}

function ruleAutosyncIgnored(ctx: Context, add: Add) {
  // With progressive syncs off (see progressive-syncs-disabled) the template's auto-sync is fully in effect.
  if (progressiveSyncsLookDisabled(ctx)) return;
  const automated = ctx.appSet.spec?.template?.spec?.syncPolicy?.automated;
  if (!automated) return;
  const enabled = automated.enabled !== false;
  if (!enabled && !automated.selfHeal && !automated.prune) return;
  const set: string[] = [];
  if (automated.enabled !== undefined) set.push(`enabled: ${automated.enabled}`);
  if (automated.prune !== undefined) set.push(`prune: ${automated.prune}`);
  if (automated.selfHeal !== undefined) set.push(`selfHeal: ${automated.selfHeal}`);
  const pruneNote = enabled
    ? automated.prune
      ? 'prune: true is carried into the syncs RollingSync starts'
      : 'the syncs RollingSync starts do not prune'
    : 'because automated.enabled is false, even prune is not carried into RollingSync syncs';
  add({
    rule: 'autosync-ignored',
    severity: 'info',
    message:
      `The template sets syncPolicy.automated${set.length ? ` (${set.join(', ')})` : ''}, but under RollingSync the generated apps do not auto-sync` +
      `${automated.selfHeal ? ' and selfHeal has no effect' : ''}; ${pruneNote}.`,
    why:
      'RollingSync always turns autosync off on the Applications it generates (v3.3+: automated.enabled=false; v2.6–v3.2: the automated block is removed) and starts syncs itself. ' +
      "Only automated.prune carries over, and only when the template's automated policy is enabled. Toggling autosync on a generated app is reverted by the appset controller.",
    fix:
      'Nothing to repair: drop selfHeal from the template to avoid the false impression of self-healing; keep `automated.prune: true` only if RollingSync syncs should prune. ' +
      'Do not switch the strategy to AllAtOnce to "get autosync back" mid-incident: it releases every app at once.',
  });
}

// ---------- helpers ----------

function appNamed(ctx: Context, name: string): Application | undefined {
  return ctx.appByName.get(name)?.fleetApp.app;
}

/** Operation phase/message, health, the first failing resource: what on-call needs to see why an app does not progress. */
function appProblem(app: Application | undefined): string {
  if (!app) return 'not in the mirror';
  const parts: string[] = [];
  const op = app.status?.operationState;
  if (op) {
    const retried = op.retryCount ? ` after ${op.retryCount} ${op.retryCount === 1 ? 'retry' : 'retries'}` : '';
    // Argo CD's operation message wraps the failing resource's message ("one or more objects failed to apply, reason: ...");
    // the resource and its own message say the same more precisely.
    const failed = op.syncResult?.resources?.find((r) => r.status === 'SyncFailed' && r.message);
    if (failed) parts.push(`operation ${op.phase}${retried}: ${failed.kind}/${failed.name}: ${quote(failed.message!)}`);
    else parts.push(`operation ${op.phase}${retried}${op.message ? `: ${quote(op.message)}` : ''}`);
  } else if (app.operation) {
    parts.push('operation requested, not started yet');
  }
  const sync = app.status?.sync?.status;
  const health = app.status?.health?.status;
  const sick = app.status?.resources?.find((r) => r.health && r.health.status !== 'Healthy' && r.health.message);
  const state = [sync && `sync ${sync}`, health && `health ${health}`].filter(Boolean).join(', ');
  if (state) parts.push(`${state}${sick ? `: ${sick.kind}/${sick.name}: ${quote(sick.health!.message!)}` : ''}`);
  const cond = app.status?.conditions?.find((c) => /Error$/.test(c.type));
  if (cond) parts.push(`${cond.type}: ${quote(cond.message)}`);
  return parts.length ? parts.join('; ') : 'no operation or health details';
}

function blockedBehind(ctx: Context, step: number): { apps: number; steps: number[]; text: string } {
  const steps: number[] = [];
  let apps = 0;
  for (let n = step + 1; n <= ctx.steps.length; n++) {
    const inStep = ctx.apps.filter((a) => a.steps[0] === n).length;
    if (inStep === 0) continue;
    steps.push(n);
    apps += inStep;
  }
  if (apps === 0) return { apps, steps, text: '' };
  const range = steps.length === 1 ? `Step ${steps[0]}` : `Steps ${steps[0]}–${steps[steps.length - 1]}`;
  return { apps, steps, text: `${range} (${count(apps, 'app')})` };
}

function expressionReason(ctx: Context, expr: ApplicationMatchExpression): string | undefined {
  const matched = ctx.apps.filter((a) => expressionMatches(a.labels, expr)).length;
  if (matched > 0) return undefined;
  if (!isSupportedOperator(expr.operator)) return `\`${expressionText(expr)}\` uses an unsupported operator`;
  const values = unique(ctx.apps.map((a) => a.labels[expr.key]).filter((v): v is string => v !== undefined)).sort();
  if (expr.operator === 'NotIn') return `every app has ${expr.key} in [${(expr.values ?? []).join(', ')}]`;
  if (values.length === 0) {
    const onClusters = ctx.apps.some((a) => a.cluster?.labels !== undefined && expr.key in a.cluster.labels);
    if (templateSetsLabel(ctx.appSet, expr.key))
      return `the template renders \`${expr.key}\`, but no generated app carries it yet (not regenerated since the template changed?)`;
    return `no generated app has a \`${expr.key}\` label${onClusters ? ' (their clusters do: see label-on-cluster-not-app)' : ''}`;
  }
  return `no app has ${expr.key} in [${(expr.values ?? []).join(', ')}]; the apps carry ${expr.key}=${values.slice(0, 6).join(', ')}${values.length > 6 ? ', ...' : ''}`;
}

function operatorFix(expr: ApplicationMatchExpression): string {
  switch (expr.operator) {
    case 'Exists':
      return `Replace it with \`${expr.key} In [<each value the key takes>]\`.`;
    case 'DoesNotExist':
      return `Use \`${expr.key} NotIn [<every value the key takes>]\`: NotIn also matches apps that lack the key.`;
    default:
      return `Rewrite the expression with In or NotIn and an explicit list of values.`;
  }
}

function templateSetsLabel(appSet: ApplicationSet, key: string): boolean {
  if (key in (appSet.spec?.template?.metadata?.labels ?? {})) return true;
  const patch = appSet.spec?.templatePatch;
  return typeof patch === 'string' && patch.includes(key);
}

function templateLabelFor(appSet: ApplicationSet, key: string): string {
  const clusterGenerator = usesClusterGenerator(appSet);
  const value = appSet.spec?.goTemplate ? `'{{ index .metadata.labels "${key}" }}'` : `'{{metadata.labels.${key}}}'`;
  return clusterGenerator
    ? `\`${key}: ${value}\` (the cluster generator passes the cluster's labels as metadata.labels)`
    : `a \`${key}\` label with the value each app should carry (with a cluster generator: \`${key}: ${value}\`)`;
}

function labelHint(apps: GeneratedApp[]): string {
  const pairs = unique(apps.flatMap((a) => Object.entries(a.labels).map(([k, v]) => `${k}=${v}`)));
  return pairs.length
    ? ` (their labels: ${pairs.slice(0, 5).join(', ')}${pairs.length > 5 ? ', ...' : ''})`
    : ' (they carry no labels)';
}

function outOfSyncPhrase(outOfSync: number, total: number): string {
  if (outOfSync === total) return total === 1 ? 'it is' : 'all of them are';
  return `${outOfSync} of them ${outOfSync === 1 ? 'is' : 'are'}`;
}

function stepText(step: ApplicationSetRolloutStep): string {
  const exprs = step.matchExpressions ?? [];
  return exprs.length ? exprs.map(expressionText).join(' and ') : 'no matchExpressions';
}

function nameList(names: string[]): string {
  const shown = names.slice(0, NAMES_SHOWN).join(', ');
  return names.length > NAMES_SHOWN ? `${shown}, +${names.length - NAMES_SHOWN} more` : shown;
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

function joinAnd(items: string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

function unique<T>(items: T[]): T[] {
  return [...new Set(items)];
}

/** Go error chains put the root cause last ("...: dial tcp ...: connection refused"): keep head and tail. */
/**
 * Argo CD's own words, as a code span: its messages quote names themselves (`Deployment.apps "payments" is
 * invalid`), so double quotes around them would nest.
 */
function quote(text: string): string {
  const flat = oneLine(text);
  if (flat.length <= QUOTE_MAX) return code(flat);
  const tail = Math.floor(QUOTE_MAX * 0.45);
  return code(`${flat.slice(0, QUOTE_MAX - tail - 1)}…${flat.slice(flat.length - tail)}`);
}

function parseTime(text: string | undefined): number | undefined {
  if (!text) return undefined;
  const t = Date.parse(text);
  return Number.isNaN(t) ? undefined : t;
}

/** Code-point order, like Argo CD's sorted lists (and far cheaper than localeCompare on 10k names). */
function byName(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function ruleRank(rule: string): number {
  const i = (RULES as readonly string[]).indexOf(rule);
  return i === -1 ? RULES.length : i;
}

function compareWithinAppSet(a: Finding, b: Finding): number {
  return (
    SEVERITY_RANK[a.severity] - SEVERITY_RANK[b.severity] ||
    (a.step ?? 0) - (b.step ?? 0) ||
    ruleRank(a.rule) - ruleRank(b.rule)
  );
}

function sortFindings(findings: Finding[]): Finding[] {
  return findings.sort(compareWithinAppSet);
}

function sortFleetFindings(findings: Finding[]): Finding[] {
  return findings.sort(
    (a, b) =>
      SEVERITY_RANK[a.severity] - SEVERITY_RANK[b.severity] ||
      byName(a.instance ?? '', b.instance ?? '') ||
      byName(a.appSet ?? '', b.appSet ?? '') ||
      compareWithinAppSet(a, b),
  );
}
