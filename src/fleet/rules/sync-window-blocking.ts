/**
 * sync-window-blocking: an app whose sync operation a sync window holds. RollingSync starts its syncs as
 * automated (progressive_sync.go syncApplication: initiatedBy {username: applicationset-controller,
 * automated: true} at v3.5.1), so the application controller judges them by the window rules for
 * automated syncs: a deny window blocks them even with manualSync: true, and the operation stays Running
 * with "Sync operation blocked by sync window" (controller/sync.go, syncWindowPreventsSync).
 */
import { plural } from '../../core/format.js';
import type { AddFinding, AppSetContext } from './appset-context.js';
import { SYNC_WINDOW_BLOCKED_MESSAGE } from './facts.js';
import { nameList } from './finding-text.js';
import type { RuleViews } from './rule.js';

function check(ctx: AppSetContext, add: AddFinding) {
  const byStep = new Map<number | undefined, { names: string[]; rolloutWaits: boolean; projects: Set<string> }>();
  for (const a of ctx.apps) {
    const op = a.fleetApp.app.status?.operationState;
    if (op?.phase !== 'Running' || !op.message?.includes(SYNC_WINDOW_BLOCKED_MESSAGE)) continue;
    const entry = ctx.entryByApp.get(a.name);
    const entryStep = entry ? Number(entry.step) : NaN;
    const step = Number.isInteger(entryStep) && entryStep > 0 ? entryStep : a.steps[0];
    const group = byStep.get(step) ?? { names: [], rolloutWaits: false, projects: new Set<string>() };
    group.names.push(a.name);
    group.rolloutWaits ||= entry?.status === 'Pending' || entry?.status === 'Progressing';
    group.projects.add(a.fleetApp.app.spec.project);
    byStep.set(step, group);
  }
  for (const [step, g] of byStep) {
    const projects = [...g.projects].sort();
    const where = step === undefined ? '' : ` in step ${step}`;
    add({
      rule: 'sync-window-blocking',
      severity: g.rolloutWaits ? 'critical' : 'warning',
      message:
        `${plural(g.names.length, 'app')}${where} ${g.names.length === 1 ? 'has its' : 'have their'} sync held by a sync window (operation Running: "${SYNC_WINDOW_BLOCKED_MESSAGE}"): ${nameList(g.names)}.` +
        (g.rolloutWaits ? ' The rollout waits on them.' : ''),
      why:
        'RollingSync starts syncs as automated (initiatedBy.automated: true), so the application controller applies sync windows to them as to auto-sync: ' +
        'a deny window, or time outside an allow window, blocks them even when the window sets manualSync: true. ' +
        'The operation stays Running until the window lets it through.',
      fix:
        `Wait for the window to end, or change the sync windows of AppProject ${projects.map((p) => `\`${p}\``).join(', ')} ` +
        `(\`argocd proj windows list ${projects[0]}\`). If the window allows manual syncs, terminate the held operation and sync by hand: ` +
        `\`argocd app terminate-op ${g.names[0]}\`, then \`/argo sync ${g.names[0]}\`.`,
      step,
      apps: g.names,
    });
  }
}

export const syncWindowBlockingRule: RuleViews = { appSet: { check } };
