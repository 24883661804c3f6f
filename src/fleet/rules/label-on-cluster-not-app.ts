/**
 * label-on-cluster-not-app: a step matches a key the destination clusters carry as labels while the
 * generated apps do not. Steps match the labels of the generated Application (progressive_sync.go
 * buildAppDependencyList reads `app.Labels` of the desired apps at v3.5.1), never the Argo CD cluster's
 * labels; an app without the key fails `In` and passes `NotIn`, so it lands in the wrong step or in none.
 */
import { plural } from '../../core/format.js';
import type { ApplicationSet } from '../../infra/argocd/types.js';
import { expressionText, usesClusterGenerator } from '../rollingsync.js';
import { templateSetsLabel, type AddFinding, type AppSetContext } from './appset-context.js';
import { nameList, unique } from './finding-text.js';
import type { RuleViews } from './rule.js';

function check(ctx: AppSetContext, add: AddFinding) {
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
            ? `none of the ${plural(ctx.apps.length, 'generated app')} has it.`
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

function templateLabelFor(appSet: ApplicationSet, key: string): string {
  const clusterGenerator = usesClusterGenerator(appSet);
  const value = appSet.spec?.goTemplate ? `'{{ index .metadata.labels "${key}" }}'` : `'{{metadata.labels.${key}}}'`;
  return clusterGenerator
    ? `\`${key}: ${value}\` (the cluster generator passes the cluster's labels as metadata.labels)`
    : `a \`${key}\` label with the value each app should carry (with a cluster generator: \`${key}: ${value}\`)`;
}

export const labelOnClusterNotAppRule: RuleViews = { appSet: { check } };
