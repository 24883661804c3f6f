/**
 * steps-without-rolling-sync-type: steps under spec.strategy.rollingSync while the type is not exactly
 * `RollingSync`. The controller reads the steps only when the type is RollingSync (progressive_sync.go
 * IsRollingSyncStrategy / RollingSyncStrategyEnabled compare the string exactly at v3.5.1); with the type
 * missing, AllAtOnce or misspelt, buildAppDependencyList returns no steps and nothing says so.
 */
import { plural } from '../../core/format.js';
import type { AddFinding, AppSetContext } from './appset-context.js';
import type { RuleViews } from './rule.js';

function check(ctx: AppSetContext, add: AddFinding) {
  const strategy = ctx.appSet.spec!.strategy!;
  const type = strategy.type;
  const steps = strategy.rollingSync!.steps!.length;
  const written = type ? `type: ${type}` : 'no type';
  const nearMiss = typeof type === 'string' && type.toLowerCase() === 'rollingsync';
  add({
    rule: 'steps-without-rolling-sync-type',
    severity: 'critical',
    message:
      `ApplicationSet \`${ctx.name}\` lists ${plural(steps, 'step')} under spec.strategy.rollingSync.steps but has ${written}: ` +
      'Argo CD ignores the steps, so there is no progressive rollout and every generated app follows the template sync policy, all at once.',
    why:
      'The ApplicationSet controller runs RollingSync only when spec.strategy.type is exactly "RollingSync" (progressive_sync.go IsRollingSyncStrategy / RollingSyncStrategyEnabled); ' +
      (nearMiss ? `the comparison is case-sensitive, so "${type}" does not count; ` : '') +
      'with the type missing or AllAtOnce the rollingSync block is never read, and no condition or event says so.',
    fix: 'Set `spec.strategy.type: RollingSync` next to the steps (and enable progressive syncs on the controller), or delete the rollingSync block so the spec says what happens.',
  });
}

export const stepsWithoutRollingSyncTypeRule: RuleViews = { appSet: { scope: 'steps-without-type', check } };
