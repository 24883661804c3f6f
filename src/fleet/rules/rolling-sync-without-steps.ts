/**
 * rolling-sync-without-steps: `strategy.type: RollingSync` without steps. Argo CD applies the strategy only
 * when the type is RollingSync, rollingSync is set and steps is non-empty (progressive_sync.go
 * RollingSyncStrategyEnabled at v3.5.1); otherwise buildAppDependencyList returns no steps and the appset
 * behaves as AllAtOnce: every generated app syncs by the template's sync policy, all at once.
 */
import type { AddFinding, AppSetContext } from './appset-context.js';
import type { RuleViews } from './rule.js';

function check(ctx: AppSetContext, add: AddFinding) {
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

export const rollingSyncWithoutStepsRule: RuleViews = { appSet: { scope: 'no-steps', check } };
