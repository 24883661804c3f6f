/**
 * degraded-after-healthy: an app of a finished step that is Degraded or Missing now. An applicationStatus
 * entry leaves Healthy only when the app's revisions or generated spec change (progressive_sync.go
 * UpdateApplicationSetApplicationStatus at v3.5.1: `revisionsChanged || specChanged` is the only way back
 * to Waiting); health is read only on the way to Healthy. So a canary that degrades after its step
 * completed does not halt the rollout: getAppsToSync keeps releasing later steps.
 */
import { byText, plural } from '../../core/format.js';
import { appNamed, type AddFinding, type AppSetContext } from './appset-context.js';
import { NAMES_SHOWN, appDetail } from './finding-text.js';
import type { RuleViews } from './rule.js';

function check(ctx: AppSetContext, add: AddFinding) {
  const sick: { name: string; step: number; health: string }[] = [];
  for (const e of ctx.statusEntries) {
    const step = Number(e.step);
    if (e.status !== 'Healthy' || !Number.isInteger(step) || step < 1) continue;
    const health = appNamed(ctx, e.application)?.status?.health?.status;
    if (health === 'Degraded' || health === 'Missing') sick.push({ name: e.application, step, health });
  }
  if (sick.length === 0) return;
  sick.sort((a, b) => a.step - b.step || byText(a.name, b.name));
  const first = sick[0];
  const moving = ctx.currentStep !== null && ctx.currentStep > first.step;
  const details = sick
    .slice(0, NAMES_SHOWN)
    .map((s) => `${s.name} (step ${s.step}) ${s.health}: ${appDetail(appNamed(ctx, s.name))}`);
  add({
    rule: 'degraded-after-healthy',
    severity: moving ? 'critical' : 'warning',
    message:
      `${plural(sick.length, 'app')} that RollingSync already counts as Healthy ${sick.length === 1 ? 'is' : 'are'} ${sick.length === 1 ? first.health : 'Degraded or Missing'} now: ` +
      `${details.join('; ')}${sick.length > NAMES_SHOWN ? `; +${sick.length - NAMES_SHOWN} more` : ''}.` +
      (moving ? ` The rollout has moved on to step ${ctx.currentStep} regardless.` : ''),
    why:
      'Once an applicationStatus entry is Healthy it stays Healthy until the next revision or spec change: RollingSync does not watch health after a step completes, ' +
      'so an earlier-step app (a canary) that degrades later does not halt the rollout.',
    fix: `Hold the rollout before more apps get the change: \`/argo pause ${ctx.name}\`. Then fix or roll back ${first.name} (\`/argo app ${first.name}\` shows its operation and resources) and resume.`,
    step: first.step,
    apps: sick.map((s) => s.name),
  });
}

export const degradedAfterHealthyRule: RuleViews = { appSet: { check } };
