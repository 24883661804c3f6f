/**
 * manual-gate: a step with maxUpdate 0 or "0%". UpdateApplicationSetApplicationStatusProgress (progressive_sync.go
 * at v3.5.1) moves a Waiting app to Pending only while the step's Pending/Progressing count is below
 * maxUpdate, and raises a percent to 1 only when it is not "0%": with 0 no app of the step is ever moved to
 * Pending, so RollingSync syncs none of them. rollcall's pause works the same way and says so.
 */
import { plural } from '../../core/format.js';
import { PAUSED_BY } from '../pause.js';
import { maxConcurrentFor, maxUpdateInfo } from '../rollingsync.js';
import type { AddFinding, AppSetContext } from './appset-context.js';
import { nameList } from './finding-text.js';
import type { RuleViews } from './rule.js';

function check(ctx: AppSetContext, add: AddFinding) {
  ctx.steps.forEach((step, i) => {
    const n = i + 1;
    const apps = ctx.stepMembers[i];
    const maxUpdate = step.maxUpdate;
    if (maxUpdate === undefined || maxUpdate === null) return;
    if (maxUpdateInfo(maxUpdate, apps.length).kind === 'invalid') return;
    if (maxConcurrentFor(maxUpdate, apps.length) !== 0) return;
    const waitingHere = ctx.currentStep === n;
    const notHealthy = apps.filter((a) => ctx.entryByApp.get(a.name)?.status !== 'Healthy').map((a) => a.name);
    // rollcall's pause-rollout sets maxUpdate 0 and annotates the appset (rollcall.io/paused-by): a hold, not a gate.
    const pausedBy = ctx.appSet.metadata.annotations?.[PAUSED_BY];
    if (pausedBy) {
      add({
        rule: 'manual-gate',
        severity: 'info',
        message: `Step ${n} is held by rollcall's pause (maxUpdate 0, paused by ${pausedBy}): none of its ${plural(apps.length, 'app')} leaves Waiting until the rollout is resumed.`,
        why: 'rollcall pauses a RollingSync rollout by setting maxUpdate 0 on the steps not yet complete (Argo CD has no pause): RollingSync then moves no app of those steps to Pending.',
        fix: `\`/argo resume ${ctx.name}\` puts back the maxUpdate values recorded at the pause.`,
        step: n,
        apps: waitingHere ? notHealthy : apps.map((a) => a.name),
      });
      return;
    }
    add({
      rule: 'manual-gate',
      severity: waitingHere ? 'warning' : 'info',
      message:
        `Step ${n} is a manual gate (maxUpdate: ${JSON.stringify(maxUpdate)}): RollingSync never syncs its ${plural(apps.length, 'app')} by itself.` +
        (waitingHere
          ? ` The rollout is waiting here now on ${plural(notHealthy.length, 'app')} not yet Healthy: ${nameList(notHealthy)}.`
          : ''),
      why:
        'With maxUpdate 0 or "0%" no app of the step is ever moved to Pending, so none is synced automatically. ' +
        'The rollout continues only when each app of the step has been synced by hand and is Synced and Healthy; later steps wait until then.',
      fix:
        `To pass the gate, sync the step's apps by hand (\`/argo sync ${notHealthy[0] ?? apps[0]?.name ?? '<app>'}\` ...), ` +
        `or raise maxUpdate on step ${n} in the ApplicationSet to let RollingSync continue.`,
      step: n,
      apps: waitingHere ? notHealthy : apps.map((a) => a.name),
    });
  });
}

export const manualGateRule: RuleViews = { appSet: { check } };
