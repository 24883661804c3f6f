/**
 * stuck-step, as an alert: a RollingSync step whose apps sit Pending/Progressing longer than stuckAfter.
 * Argo CD has no step timeout: the ApplicationSet controller waits for every app of a step to be Healthy
 * before it moves the next step's apps to Pending, however long that takes, and says nothing. Held on
 * purpose (rollcall's pause, a sync window's "Sync operation blocked by sync window" — rollcall's freeze is
 * one — a maxUpdate 0 gate) is said as an expected stall instead. The diagnosis of a stuck step is `ruleStuckStep` in ../diagnose.ts.
 */
import type { ApplicationSet, ApplicationSetApplicationStatus } from '../../infra/argocd/types.js';
import { formatDuration } from '../../core/format.js';
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
  stuckConditions(inputs, target.instance, appSet, byStep, out);
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
  inputs: RuleInputs,
  instance: string,
  appSet: ApplicationSet,
  byStep: Map<number, StuckEntry[]>,
  out: RuleResult,
): void {
  const { now } = inputs;
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
        summary: `Step ${step} of ${name} is stuck: ${group.length} app${group.length === 1 ? '' : 's'} Pending/Progressing for ${formatDuration(now.getTime() - Date.parse(since))}${later > 0 ? `; ${later} later step${later === 1 ? '' : 's'} wait behind it` : ''}.`,
        details: group.map(
          (s) => `${s.name}: ${s.status} for ${formatDuration(now.getTime() - Date.parse(s.since))} (${s.problem})`,
        ),
        rolloutTarget: name,
      });
    }
  }
}
