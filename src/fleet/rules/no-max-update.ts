/**
 * no-max-update: a step without maxUpdate. UpdateApplicationSetApplicationStatusProgress (progressive_sync.go
 * at v3.5.1) limits how many of a step's apps are Pending or Progressing only when maxUpdate is set ("by
 * default allow all applications to update if maxUpdate is unset"): every app of such a step syncs at once.
 */
import { plural } from '../../core/format.js';
import type { AddFinding, AppSetContext } from './appset-context.js';
import { nameList } from './finding-text.js';
import type { RuleViews } from './rule.js';

function check(ctx: AppSetContext, add: AddFinding) {
  ctx.steps.forEach((step, i) => {
    if (step.maxUpdate !== undefined && step.maxUpdate !== null) return;
    const n = i + 1;
    const apps = ctx.stepMembers[i];
    add({
      rule: 'no-max-update',
      severity: 'info',
      message: apps.length
        ? `Step ${n} has no maxUpdate: all ${plural(apps.length, 'app')} of the step sync at once (${nameList(apps.map((a) => a.name))}).`
        : `Step ${n} has no maxUpdate: whatever apps it selects will sync all at once (it selects none now).`,
      why: "Without maxUpdate there is no limit on how many of the step's apps are Pending or Progressing together; the docs call this 100%.",
      fix: `Set maxUpdate on step ${n}, e.g. \`maxUpdate: 2\` or \`maxUpdate: "25%"\`, to limit how many apps a bad change reaches at once.`,
      step: n,
    });
  });
}

export const noMaxUpdateRule: RuleViews = { appSet: { check } };
