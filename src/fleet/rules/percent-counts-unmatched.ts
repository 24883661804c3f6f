/**
 * percent-counts-unmatched: step 1's percent maxUpdate is scaled against more apps than step 1 has.
 * UpdateApplicationSetApplicationStatusProgress (progressive_sync.go at v3.5.1) counts every entry under
 * `appStepMap[app]`, and an app in no step is absent from that map, so Go's zero value puts it in step
 * index 0: a percent on step 1 scales against step 1's apps plus the unmatched ones (inferred from code).
 */
import { plural } from '../../core/format.js';
import { maxConcurrentFor, maxUpdateInfo } from '../rollingsync.js';
import type { AddFinding, AppSetContext } from './appset-context.js';
import type { RuleViews } from './rule.js';

function check(ctx: AppSetContext, add: AddFinding) {
  const first = ctx.steps[0];
  const maxUpdate = first?.maxUpdate;
  if (maxUpdateInfo(maxUpdate, 0).kind !== 'percent' || ctx.unmatched.length === 0) return;
  const own = ctx.stepMembers[0].length;
  const total = own + ctx.unmatched.length;
  const intended = maxConcurrentFor(maxUpdate, own);
  const actual = maxConcurrentFor(maxUpdate, total);
  if (intended === actual) return;
  add({
    rule: 'percent-counts-unmatched',
    severity: 'info',
    message:
      `Step 1's maxUpdate "${maxUpdate}" is computed against its ${plural(own, 'app')} plus the ${plural(ctx.unmatched.length, 'app')} in no step (${total}): ` +
      `${actual} at a time instead of ${intended}.`,
    why: 'When Argo CD counts the apps per step, apps matched by no step fall into step 1 (inferred from the v3.5 code), so a percent maxUpdate on step 1 scales against them too.',
    fix: 'Put the unmatched apps into a step of their own, or give step 1 an integer maxUpdate.',
    step: 1,
    apps: ctx.unmatched.map((a) => a.name),
  });
}

export const percentCountsUnmatchedRule: RuleViews = { appSet: { check } };
