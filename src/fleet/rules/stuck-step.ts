/**
 * stuck-step, as an alert: a RollingSync step whose apps sit Pending/Progressing longer than stuckAfter.
 * Argo CD has no step timeout: the ApplicationSet controller waits for every app of a step to be Healthy
 * before it moves the next step's apps to Pending, however long that takes, and says nothing. Held on
 * purpose (rollcall's pause, a sync window's "Sync operation blocked by sync window" — rollcall's freeze is
 * one — a maxUpdate 0 gate) is said as an expected stall instead.
 *
 * The fact, from progressive_sync.go UpdateApplicationSetApplicationStatus at v3.5.1: Pending moves to
 * Progressing once an operation started after the Pending transition, whatever its result ("It is not the
 * appset's job to retry failed syncs"), and Progressing moves to Healthy only when the app is Healthy and
 * Synced; getAppsToSync releases the next step only when every app of this one is Healthy. Nothing times out.
 */
import type { ApplicationSet, ApplicationSetApplicationStatus } from '../../infra/argocd/types.js';
import { absoluteTime, byText, formatDuration, plural } from '../../core/format.js';
import type { FleetApp, FleetAppSet } from '../model.js';
import { describeFreeze, freezeHolding } from '../freeze.js';
import { isRollingSync, maxConcurrentFor, rolloutSteps } from '../rollingsync.js';
import {
  SYNC_WINDOW_BLOCKED_MESSAGE,
  appProblem,
  byName,
  groupBy,
  groupKey,
  heldBySyncWindow,
  pausedBy,
  revisionOf,
  type RuleInputs,
  type RuleResult,
  type RuleSettings,
} from './facts.js';
import { appNamed, type AddFinding, type AppSetContext } from './appset-context.js';
import { NAMES_SHOWN, appDetail, nameList } from './finding-text.js';
import type { RuleViews } from './rule.js';

interface StuckEntry {
  name: string;
  status: string;
  since: string;
  revision?: string;
  problem: string;
}

export function stuckStepAlerts(inputs: RuleInputs, settings: RuleSettings): RuleResult {
  const out: RuleResult = { conditions: [], expected: [] };
  for (const target of inputs.fleet.appSets()) {
    if (!isRollingSync(target.appSet) || !target.appSet.status?.applicationStatus?.length) continue;
    stuckStepsOf(inputs, target, settings, out);
  }
  return out;
}

function stuckStepsOf(inputs: RuleInputs, target: FleetAppSet, settings: RuleSettings, out: RuleResult): void {
  const { fleet, now } = inputs;
  const appSet = target.appSet;
  const entries = appSet.status?.applicationStatus ?? [];
  const name = appSet.metadata.name;
  const live = new Map(fleet.appsOf(target.instance, name).map((a) => [a.app.metadata.name, a]));
  const byStep = new Map<number, StuckEntry[]>();
  const windowHeld = new Map<number, string[]>();
  for (const e of entries) {
    if (e.status !== 'Pending' && e.status !== 'Progressing') continue;
    const app = live.get(e.application);
    // A stale entry (no such Application) is the missing-app hold diagnose reports, not a stuck sync.
    if (!app) continue;
    const step = Number(e.step);
    if (heldBySyncWindow(app.app)) {
      windowHeld.set(step, [...(windowHeld.get(step) ?? []), e.application]);
      continue;
    }
    const entry = stuckEntry(e, app, now, settings);
    if (entry) byStep.set(step, [...(byStep.get(step) ?? []), entry]);
  }
  for (const [step, apps] of windowHeld) {
    const freeze = apps
      .map((a) => freezeHolding(inputs.freezes, target.instance, live.get(a)!.app, now))
      .find((f) => f !== undefined);
    out.expected.push({
      reason: 'sync-window',
      instance: target.instance,
      appSet: name,
      step,
      apps: apps.sort(byName),
      message: freeze
        ? `Step ${step} of ${name}: ${apps.length} app(s) held by ${describeFreeze(freeze)}; the rollout continues when it is lifted (\`unfreeze ${freeze.target}\`).`
        : `Step ${step} of ${name}: ${apps.length} app(s) held by a sync window ("${SYNC_WINDOW_BLOCKED_MESSAGE}"); the rollout continues when the window opens.`,
    });
  }
  const paused = pausedBy(appSet);
  if (paused) {
    const apps = [...byStep.values()].flat().map((s) => s.name);
    out.expected.push({
      reason: 'paused',
      instance: target.instance,
      appSet: name,
      apps: apps.sort(byName),
      message: `${name} is paused by ${paused.by}${paused.at ? ` since ${paused.at}` : ''}: its steps wait on purpose (\`resume ${name}\`).`,
    });
    return;
  }
  manualGates(target.instance, appSet, entries, out);
  stuckConditions(target.instance, appSet, byStep, settings, out);
}

function stuckEntry(
  e: ApplicationSetApplicationStatus,
  app: FleetApp,
  now: Date,
  settings: RuleSettings,
): StuckEntry | undefined {
  const since = e.lastTransitionTime ?? app.app.status?.operationState?.startedAt;
  if (!since || now.getTime() - Date.parse(since) <= settings.afterMs) return undefined;
  return {
    name: e.application,
    status: e.status,
    since,
    revision: e.targetRevisions?.[0] ?? revisionOf(app.app),
    problem: appProblem(app.app),
  };
}

/** A manual gate (maxUpdate 0) holds its apps Waiting on purpose: they never reach Pending, so only say so. */
function manualGates(
  instance: string,
  appSet: ApplicationSet,
  entries: ApplicationSetApplicationStatus[],
  out: RuleResult,
): void {
  const name = appSet.metadata.name;
  const steps = rolloutSteps(appSet);
  for (let i = 0; i < steps.length; i++) {
    const inStep = entries.filter((e) => e.step === String(i + 1));
    if (maxConcurrentFor(steps[i].maxUpdate, inStep.length) === 0 && inStep.some((e) => e.status === 'Waiting')) {
      out.expected.push({
        reason: 'manual-gate',
        instance,
        appSet: name,
        step: i + 1,
        apps: inStep
          .filter((e) => e.status === 'Waiting')
          .map((e) => e.application)
          .sort(byName),
        message: `Step ${i + 1} of ${name} is a manual gate (maxUpdate 0): its apps wait until someone raises maxUpdate.`,
      });
    }
  }
}

function stuckConditions(
  instance: string,
  appSet: ApplicationSet,
  byStep: Map<number, StuckEntry[]>,
  settings: RuleSettings,
  out: RuleResult,
): void {
  const name = appSet.metadata.name;
  const stepCount = rolloutSteps(appSet).length;
  for (const [step, stuck] of byStep) {
    for (const [revision, group] of groupBy(stuck, (s) => s.revision ?? '')) {
      group.sort((a, b) => Date.parse(a.since) - Date.parse(b.since) || byName(a.name, b.name));
      const since = group[0].since;
      const later = stepCount - step;
      out.conditions.push({
        key: groupKey({ rule: 'stuck-step', instance, appSet: name, step, revision }),
        rule: 'stuck-step',
        severity: 'critical',
        instance,
        appSet: name,
        step,
        revision: revision || undefined,
        apps: group.map((s) => s.name).sort(byName),
        since,
        // No ages in the text: an alert keeps its summary while it lasts, and its message shows since when.
        summary: `Step ${step} of ${name} is stuck: ${plural(group.length, 'app')} Pending/Progressing longer than ${formatDuration(settings.afterMs)}${later > 0 ? `; ${plural(later, 'later step')} wait${later === 1 ? 's' : ''} behind it` : ''}.`,
        details: group.map((s) => `${s.name}: ${s.status} since ${absoluteTime(s.since)} (${s.problem})`),
        rolloutTarget: name,
      });
    }
  }
}

/** The diagnosis: each step with apps Pending/Progressing longer than stuckAfter, and what waits behind it. */
function diagnoseStuckStep(ctx: AppSetContext, add: AddFinding) {
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
    stuck.sort((a, b) => b.sinceMs - a.sinceMs || byText(a.entry.application, b.entry.application));
    const names = stuck.map((s) => s.entry.application);
    // Each app's operation and health messages (webhook errors run to hundreds of characters) get a line of
    // their own: one sentence holding them all is unreadable at 3 a.m.
    const details = stuck
      .slice(0, NAMES_SHOWN)
      .map(
        (s) =>
          `${s.entry.application} ${s.entry.status} for ${formatDuration(s.sinceMs)}: ${appDetail(appNamed(ctx, s.entry.application))}`,
      );
    if (stuck.length > NAMES_SHOWN) details.push(`+${stuck.length - NAMES_SHOWN} more`);
    const blocked = blockedBehind(ctx, step);
    add({
      rule: 'stuck-step',
      severity: 'critical',
      message:
        `Step ${step} is stuck: ${plural(stuck.length, 'app')} Pending/Progressing longer than ${formatDuration(ctx.stuckAfterMs)} (${nameList(names)}).` +
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

function blockedBehind(ctx: AppSetContext, step: number): { apps: number; steps: number[]; text: string } {
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
  return { apps, steps, text: `${range} (${plural(apps, 'app')})` };
}

function parseTime(text: string | undefined): number | undefined {
  if (!text) return undefined;
  const t = Date.parse(text);
  return Number.isNaN(t) ? undefined : t;
}

export const stuckStepRule: RuleViews = {
  alert: (inputs, settings) => stuckStepAlerts(inputs, settings),
  appSet: { check: diagnoseStuckStep },
};
