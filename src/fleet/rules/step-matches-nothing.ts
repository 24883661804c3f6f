/**
 * step-matches-nothing: a step that selects no generated app. A step without apps counts as complete
 * (progressive_sync.go updateApplicationSetApplicationStatusConditions: "Step has no applications, so it is
 * completed", and getAppsToSync finds nothing to wait for at v3.5.1), so the rollout moves straight past it
 * and the apps it was meant to hold roll out in another step, or in none.
 */
import { plural } from '../../core/format.js';
import type { ApplicationMatchExpression, ApplicationSetRolloutStep } from '../../infra/argocd/types.js';
import { expressionMatches, expressionText, isSupportedOperator } from '../rollingsync.js';
import { templateSetsLabel, type AddFinding, type AppSetContext } from './appset-context.js';
import { unique } from './finding-text.js';
import type { RuleViews } from './rule.js';

function check(ctx: AppSetContext, add: AddFinding) {
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
        `Step ${i + 1} (${stepText(step)}) selects none of the ${plural(ctx.apps.length, 'generated app')}` +
        (reasons.length ? `: ${reasons.join('; ')}.` : '.'),
      why:
        'Steps match the labels of the generated Applications. A step with no apps counts as complete, so the rollout moves straight past it ' +
        'and the apps it was meant to hold are rolled out by another step, or by none.',
      fix: "Make the step's matchExpressions match labels the generated apps actually carry (see spec.template.metadata.labels), or remove the step.",
      step: i + 1,
    });
  });
}

function expressionReason(ctx: AppSetContext, expr: ApplicationMatchExpression): string | undefined {
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

function stepText(step: ApplicationSetRolloutStep): string {
  const exprs = step.matchExpressions ?? [];
  return exprs.length ? exprs.map(expressionText).join(' and ') : 'no matchExpressions';
}

export const stepMatchesNothingRule: RuleViews = { appSet: { check } };
