/**
 * app-in-no-step: a generated app no step selects. getAppStep gives it step -1 (progressive_sync.go at
 * v3.5.1), its entry stays Waiting, and neither getAppsToSync nor SyncDesiredApplications ever starts a
 * sync for it: only a sync by hand changes it. It never holds a step either.
 */
import { plural } from '../../core/format.js';
import type { AddFinding, AppSetContext, GeneratedApp } from './appset-context.js';
import { nameList, unique } from './finding-text.js';
import type { RuleViews } from './rule.js';

function check(ctx: AppSetContext, add: AddFinding) {
  const names = new Set(ctx.unmatched.map((a) => a.name));
  // The controller's own verdict counts too (e.g. an app our mirror has not seen yet).
  for (const e of ctx.statusEntries) if (e.step === '-1' && e.status !== 'Healthy') names.add(e.application);
  if (names.size === 0) return;
  const list = [...names].sort();
  const outOfSync = ctx.apps
    .filter((a) => names.has(a.name) && a.fleetApp.app.status?.sync?.status === 'OutOfSync')
    .map((a) => a.name);
  add({
    rule: 'app-in-no-step',
    severity: 'warning',
    message:
      `${plural(list.length, 'app')} ${list.length === 1 ? 'is' : 'are'} matched by no step: ${nameList(list)}. RollingSync never syncs ${list.length === 1 ? 'it' : 'them'}` +
      (outOfSync.length
        ? `; ${outOfSyncPhrase(outOfSync.length, list.length)} OutOfSync now and wait${outOfSync.length === 1 ? 's' : ''} for a hand sync.`
        : '.'),
    why:
      'An app that no step selects gets step "-1" in status.applicationStatus and stays Waiting: RollingSync never starts a sync for it, ' +
      'and it never blocks a step either. It changes only when someone syncs it by hand.',
    fix:
      `Add a step, or widen a step's matchExpressions, so it selects ${list.length === 1 ? 'this app' : 'these apps'}` +
      `${labelHint(ctx.unmatched)}; until then sync by hand: \`/argo sync ${list[0]}\`.`,
    apps: list,
  });
}

function labelHint(apps: GeneratedApp[]): string {
  const pairs = unique(apps.flatMap((a) => Object.entries(a.labels).map(([k, v]) => `${k}=${v}`)));
  return pairs.length
    ? ` (their labels: ${pairs.slice(0, 5).join(', ')}${pairs.length > 5 ? ', ...' : ''})`
    : ' (they carry no labels)';
}

function outOfSyncPhrase(outOfSync: number, total: number): string {
  if (outOfSync === total) return total === 1 ? 'it is' : 'all of them are';
  return `${outOfSync} of them ${outOfSync === 1 ? 'is' : 'are'}`;
}

export const appInNoStepRule: RuleViews = { appSet: { check } };
