/**
 * step-on-previous-revision: a step RollingSync counts as complete (its apps' applicationStatus entries are
 * Healthy) while some of those apps still run what they ran before: they are OutOfSync, and their last
 * successful sync applied another revision, or a source the generated spec no longer has.
 *
 * The facts, from applicationset/progressivesync/progressive_sync.go UpdateApplicationSetApplicationStatus at
 * v3.5.1: an entry goes to Waiting when the app's status.sync revisions differ from the entry's
 * targetRevisions or the generated spec differs from the live one; a Waiting app that reads Synced and
 * Healthy goes straight to Healthy, without a sync ("Application resource has synced, updating status to
 * Healthy"). Synced and Healthy are the application controller's last comparison: when the appset controller
 * rewrites an app (a template or generator change) and judges it in the same reconcile, it reads the status
 * from before the change. Once Healthy, the entry leaves only when the revisions or the generated spec change
 * again; OutOfSync alone moves nothing (v3.3+). getAppsToSync then releases the next step as if this one had
 * rolled out.
 *
 * An entry whose targetRevisions are not the app's revisions yet is left alone: the controller has not
 * judged that revision, and its next reconcile moves the entry to Waiting.
 */
import { isDeepStrictEqual } from 'node:util';
import type {
  Application,
  ApplicationSetApplicationStatus,
  ApplicationSource,
  RevisionHistory,
} from '../../infra/argocd/types.js';
import { absoluteTime, plural } from '../../core/format.js';
import { appNamed, type AddFinding, type AppSetContext } from './appset-context.js';
import { shortRevision } from './facts.js';
import { joinAnd, nameList } from './finding-text.js';
import type { RuleViews } from './rule.js';

/** What an app runs, though its step counts as done. */
export interface PreviousRevision {
  /** The revision its last successful sync applied. */
  runs: string;
  /** The revision git resolves its target to now (status.sync). */
  target: string;
  /** Its generated spec's source changed since that sync (an image pin, a parameter, the targetRevision). */
  specChanged: boolean;
  deployedAt: string;
}

function revisionsOf(x: { revision?: string; revisions?: string[] } | undefined): string[] {
  return x?.revisions?.length ? x.revisions : x?.revision ? [x.revision] : [];
}

function sourcesOf(x: { source?: ApplicationSource; sources?: ApplicationSource[] } | undefined): ApplicationSource[] {
  return x?.sources?.length ? x.sources : x?.source ? [x.source] : [];
}

/**
 * The rule's judgement of one app and its RollingSync entry: Healthy in a step, yet OutOfSync with its last
 * successful sync behind what it should run (another revision, or another source).
 */
export function stepOnPreviousRevision(
  app: Application,
  entry: ApplicationSetApplicationStatus | undefined,
): PreviousRevision | undefined {
  // Step -1 (no step) is never synced by RollingSync at all: app-in-no-step says so.
  if (entry?.status !== 'Healthy' || !(Number(entry.step) >= 1) || app.status?.sync?.status !== 'OutOfSync')
    return undefined;
  const target = revisionsOf(app.status.sync);
  if (!target.length || !isDeepStrictEqual(entry.targetRevisions ?? [], target)) return undefined;
  const history = app.status.history ?? [];
  const last: RevisionHistory | undefined = history[history.length - 1];
  const runs = revisionsOf(last);
  if (!last || !runs.length) return undefined;
  const revisionBehind = !isDeepStrictEqual(runs, target);
  const deployedSources = sourcesOf(last);
  const specChanged = deployedSources.length > 0 && !isDeepStrictEqual(deployedSources, sourcesOf(app.spec));
  if (!revisionBehind && !specChanged) return undefined;
  return { runs: runs.join(','), target: target.join(','), specChanged, deployedAt: last.deployedAt };
}

/** A later step has apps the rollout released (not Waiting): it moved on as if this step had rolled out. */
function releasedAfter(ctx: AppSetContext, step: number): number[] {
  const later = new Set<number>();
  for (const e of ctx.statusEntries) {
    const n = Number(e.step);
    if (Number.isInteger(n) && n > step && e.status !== 'Waiting') later.add(n);
  }
  return [...later].sort((a, b) => a - b);
}

function detail(name: string, p: PreviousRevision): string {
  const runs = shortRevision(p.runs);
  const what =
    p.runs === p.target
      ? `runs ${runs} with the source it had before the generated spec changed`
      : `runs ${runs}, git is at ${shortRevision(p.target)}${p.specChanged ? ' and its generated spec changed too' : ''}`;
  return `${name}: ${what} (last synced ${absoluteTime(p.deployedAt)})`;
}

function check(ctx: AppSetContext, add: AddFinding) {
  const byStep = new Map<number, { name: string; p: PreviousRevision }[]>();
  for (const e of ctx.statusEntries) {
    const app = appNamed(ctx, e.application);
    const p = app && stepOnPreviousRevision(app, e);
    if (!p) continue;
    const step = Number(e.step);
    byStep.set(step, [...(byStep.get(step) ?? []), { name: e.application, p }]);
  }
  for (const [step, apps] of [...byStep].sort((a, b) => a[0] - b[0])) {
    const names = apps.map((a) => a.name);
    const released = releasedAfter(ctx, step);
    const behind = apps.filter((a) => a.p.runs !== a.p.target);
    const runs = [...new Set(behind.map((a) => shortRevision(a.p.runs)))];
    const targets = [...new Set(behind.map((a) => shortRevision(a.p.target)))];
    const what =
      behind.length === apps.length
        ? `the previous revision (${runs.join(', ')}, not ${targets.join(', ')})`
        : behind.length
          ? 'the previous revision or spec'
          : `the spec ${apps.length === 1 ? 'it' : 'they'} had before the generated spec changed`;
    add({
      rule: 'step-on-previous-revision',
      severity: released.length ? 'critical' : 'warning',
      message:
        `Step ${step} counts as complete, but ${plural(apps.length, 'app')} of it still ${apps.length === 1 ? 'runs' : 'run'} ${what}: ${nameList(names)}.` +
        (released.length
          ? ` RollingSync has released ${released.length === 1 ? `step ${released[0]}` : `steps ${joinAnd(released.map(String))}`} as if it had rolled out.`
          : ''),
      details: apps.map((a) => detail(a.name, a.p)),
      why:
        "RollingSync moves a Waiting app that reads Synced and Healthy straight to Healthy, without starting a sync. That status is the application controller's last comparison: " +
        'when the ApplicationSet controller rewrites an app and judges it in the same reconcile, it reads Synced from before the change. ' +
        'The entry then stays Healthy until the revision or the generated spec changes again (OutOfSync alone moves nothing), and the next step is released.',
      fix:
        `Sync ${apps.length === 1 ? 'it' : 'them'} by hand: \`/argo sync ${names.join(' ')}\`; RollingSync will not, their entries are Healthy.` +
        (released.length
          ? ` Pause the rollout first (\`/argo pause ${ctx.name}\`) if step ${step} is a gate: the later apps did not wait for it.`
          : ''),
      step,
      apps: names,
    });
  }
}

export const stepOnPreviousRevisionRule: RuleViews = { appSet: { check } };
