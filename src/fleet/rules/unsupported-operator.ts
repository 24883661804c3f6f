/**
 * unsupported-operator: a step expression with an operator other than In or NotIn. labelMatchedExpression
 * (progressive_sync.go at v3.5.1) logs "invalid matchExpression operator" and returns false for any other
 * operator, so the expression rejects every app that has the key; buildAppDependencyList evaluates an
 * expression only when the key is present and rejects a missing key only for In, so apps without the key
 * pass it.
 */
import { plural } from '../../core/format.js';
import type { ApplicationMatchExpression } from '../../infra/argocd/types.js';
import { isSupportedOperator } from '../rollingsync.js';
import type { AddFinding, AppSetContext } from './appset-context.js';
import type { RuleViews } from './rule.js';

function check(ctx: AppSetContext, add: AddFinding) {
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
            ? ` (the ${plural(withoutKey, 'app')} without the label pass it, because Argo CD skips the check for a missing key)`
            : '') +
          `; step ${i + 1} now holds ${plural(held, 'app')}.`,
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

export const unsupportedOperatorRule: RuleViews = { appSet: { check } };
