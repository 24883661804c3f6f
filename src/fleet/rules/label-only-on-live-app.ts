/**
 * label-only-on-live-app: a step matches a key some apps carry only on the live Application. Steps are
 * matched against the generated apps the controller renders from spec.template (PerformProgressiveSyncs
 * passes desiredApplications to buildAppDependencyList at v3.5.1), so a label added to a live app by hand
 * (or kept through preservedFields) never counts.
 */
import { plural } from '../../core/format.js';
import type { AddFinding, AppSetContext } from './appset-context.js';
import { nameList, unique } from './finding-text.js';
import type { RuleViews } from './rule.js';

function check(ctx: AppSetContext, add: AddFinding) {
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
          `Step ${i + 1} matches on \`${expr.key}\`, which ${plural(affected.length, 'app')} carry only on the live Application, not from the template ` +
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

export const labelOnlyOnLiveAppRule: RuleViews = { appSet: { check } };
