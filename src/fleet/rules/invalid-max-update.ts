/**
 * invalid-max-update: maxUpdate that is neither an integer nor a "<n>%" string. It is an IntOrString that
 * UpdateApplicationSetApplicationStatusProgress scales with intstr.GetScaledValueFromIntOrPercent
 * (progressive_sync.go at v3.5.1); any other string fails to parse, the error is only logged ("invalid
 * maxUpdate value ... ignoring maxUpdate logic"), and the 0 it yields is raised to 1 like any string under 1
 * that is not "0%": the step moves one app at a time (inferred from code).
 */
import type { AddFinding, AppSetContext } from './appset-context.js';
import { maxUpdateInfo } from '../rollingsync.js';
import type { RuleViews } from './rule.js';

function check(ctx: AppSetContext, add: AddFinding) {
  ctx.steps.forEach((step, i) => {
    const maxUpdate = step.maxUpdate;
    if (maxUpdate === undefined || maxUpdate === null) return;
    if (maxUpdateInfo(maxUpdate, ctx.stepMembers[i].length).kind !== 'invalid') return;
    const n = i + 1;
    add({
      rule: 'invalid-max-update',
      severity: 'warning',
      message: `Step ${n} has maxUpdate "${maxUpdate}", which is neither an integer nor a percent like "25%": the step syncs its apps one at a time.`,
      why:
        'maxUpdate is an int-or-string: a plain integer or a string "<n>%". Any other string (even "2" in quotes) fails to parse; ' +
        'the controller logs the error and the step ends up behaving like maxUpdate 1 (inferred from the v3.5 code).',
      fix: `Write \`maxUpdate: ${/^\d+$/.test(String(maxUpdate).trim()) ? String(maxUpdate).trim() : 2}\` without quotes, or a percent such as \`maxUpdate: "25%"\`.`,
      step: n,
    });
  });
}

export const invalidMaxUpdateRule: RuleViews = { appSet: { check } };
