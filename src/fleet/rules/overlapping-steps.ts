/**
 * overlapping-steps: an app selected by more than one step. buildAppDependencyList (progressive_sync.go at
 * v3.5.1) logs "selects Application ... label twice" and keeps the first matching step in appStepMap: the
 * step number, the maxUpdate that counts it and the step that syncs it; the app still sits in the later
 * steps' lists, which getAppsToSync waits on.
 */
import { plural } from '../../core/format.js';
import type { AddFinding, AppSetContext, GeneratedApp } from './appset-context.js';
import { joinAnd, nameList } from './finding-text.js';
import type { RuleViews } from './rule.js';

function check(ctx: AppSetContext, add: AddFinding) {
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
        `${plural(apps.length, 'app')} ${apps.length === 1 ? 'is' : 'are'} selected by steps ${joinAnd(steps.map(String))}: ${nameList(apps.map((a) => a.name))}. ` +
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

export const overlappingStepsRule: RuleViews = { appSet: { check } };
