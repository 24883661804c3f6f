/**
 * Argo CD v3.5 ApplicationSet RollingSync semantics, as pure functions shared by the bot and the
 * simulator (argocd-facts A2–A8). Every rule here mirrors
 * `applicationset/progressivesync/progressive_sync.go` (buildAppDependencyList, labelMatchedExpression,
 * UpdateApplicationSetApplicationStatus, getAppsToSync, UpdateApplicationSetApplicationStatusProgress,
 * getProgressingCondition, syncApplication). Where Argo CD behaves surprisingly the comment says so:
 * the bot must report what Argo CD *does*, not what a reader of the docs would expect.
 */
import type { ApplicationMatchExpression, ApplicationSet, ApplicationSetCondition, ApplicationSetRolloutStep } from '../argocd/types.js';

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
export function expressionMatches(labels: Record<string, string> | undefined, expr: ApplicationMatchExpression): boolean {
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
export function matchingSteps(labels: Record<string, string> | undefined, steps: ApplicationSetRolloutStep[]): number[] {
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
export function generatedLabels(appSet: ApplicationSet, app: { metadata: { labels?: Record<string, string> } }): Record<string, string> {
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
    } else {
      out[key] = String(value);
    }
  }
  if (uncertain) {
    const preserved = new Set(preservedLabelKeys(appSet));
    for (const [key, value] of Object.entries(live)) if (!(key in out) && !preserved.has(key) && !(key in template)) out[key] = value;
  }
  return out;
}

/** Labels on the live app that RollingSync does not see (hand-added or preserved), with their values. */
export function ignoredLiveLabels(appSet: ApplicationSet, app: { metadata: { labels?: Record<string, string> } }): Record<string, string> {
  const generated = generatedLabels(appSet, app);
  const ignored: Record<string, string> = {};
  for (const [key, value] of Object.entries(app.metadata.labels ?? {})) if (generated[key] !== value) ignored[key] = value;
  return ignored;
}

function preservedLabelKeys(appSet: ApplicationSet): string[] {
  const preserved = appSet.spec?.preservedFields as { labels?: unknown } | undefined;
  return Array.isArray(preserved?.labels) ? preserved.labels.filter((k): k is string => typeof k === 'string') : [];
}
