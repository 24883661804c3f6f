/**
 * onFailure=rollback: the apps of a failed wave that this run synced go back to what they ran before its
 * sync, through the rollback action's own code path (a `posting` mark under the lease, sent at most once,
 * a lost answer read back, audited). Which apps, and to which history entry, is decided once and kept in
 * the step's `rollbacks` checkpoint before anything is sent, so a retried attempt continues the same
 * rollbacks and never sends one twice.
 */
import { isRollcallError } from '../../../../core/errors.js';
import type { Application } from '../../../../infra/argocd/types.js';
import {
  driveRollback,
  entryBefore,
  planRollback,
  prepareRollback,
  rollbackSettled,
  rollbackTarget,
  type RollbackCheckpoint,
  type RollbackPlan,
} from '../rollback.js';
import { LeaseLostError } from '../../run-store.js';
import type { AppCheckpoint } from '../sync-progress.js';
import type { ActionContext } from '../types.js';
import { ourOperation } from './operations.js';
import { appKey } from './planner.js';

/** One app of a failed wave: the rollback it gets (state pending → … → done/failed), or why it gets none (skipped). */
export interface WaveRollbackEntry extends RollbackCheckpoint {
  plan?: RollbackPlan;
}

export interface WaveRollbackResult {
  /** Rolled back (a dry run: would be), with the history entry each went to. */
  rolledBack: { app: string; instance: string; cluster: string; to: string }[];
  /** Apps this run synced that were not rolled back, and why. */
  notRolledBack: { app: string; instance: string; cluster: string; reason: string }[];
  /** The attempt stopped (pause, abort, lost lease) before every rollback settled. */
  unfinished: boolean;
}

/** States of an app whose sync may have reached Argo CD in this run: the candidates for a rollback. */
const REACHED = ['accepted', 'done', 'failed', 'timeout'];

export function rollbacksOf(ctx: ActionContext) {
  return ctx.checkpoint<WaveRollbackEntry>('rollbacks');
}

/**
 * What a candidate gets, read off the app as Argo CD has it now: a plan to the history entry deployed
 * before this run's sync, a reason it gets none, `wait` while this run's sync is still running (Argo CD
 * refuses a rollback meanwhile), or undefined when nothing of this run ever reached it.
 */
function decide(
  s: AppCheckpoint,
  app: Application,
  runId: string,
): { plan: RollbackPlan } | { reason: string } | 'wait' | undefined {
  const ours = ourOperation(app, runId);
  if (ours === 'requested' || ours === 'running') return 'wait';
  if (!ours)
    return s.state === 'done' || s.state === 'accepted'
      ? {
          reason: `another operation ran on it after this run's sync: not rolled back; check \`app ${s.app}\``,
        }
      : undefined;
  const startedAt = app.status!.operationState!.startedAt;
  const entry = entryBefore(app, startedAt);
  if (!entry) return { reason: "its history has no deployment from before this run's sync" };
  try {
    return { plan: planRollback({ instance: s.instance, cluster: s.cluster }, app, entry) };
  } catch (error) {
    if (isRollcallError(error)) return { reason: error.message };
    throw error;
  }
}

/** Writes the entry of every candidate that has none yet; whether some still wait for their sync to end. */
async function decideAll(ctx: ActionContext, candidates: AppCheckpoint[], report: (line: string) => void) {
  const cp = rollbacksOf(ctx);
  const known = await cp.all();
  const waiting: string[] = [];
  const writes: { key: string; expected: undefined; value: WaveRollbackEntry }[] = [];
  for (const s of candidates.filter((c) => !known.has(appKey(c)))) {
    const api = ctx.services.argocd.get(s.instance);
    const base = { instance: s.instance, app: s.app, cluster: s.cluster, wave: s.wave };
    if (!api) {
      const reason = `no Argo CD client for instance ${s.instance}`;
      writes.push({ key: appKey(s), expected: undefined, value: { ...base, state: 'skipped', reason } });
      continue;
    }
    const mirrored = ctx.services.fleet.appsNamed(s.app).find((f) => f.instance === s.instance)?.app;
    let app: Application;
    try {
      // As Argo CD has it now (history, operation, auto-sync), not as the mirror last heard.
      app = await api.getApplication({
        name: s.app,
        appNamespace: mirrored?.metadata.namespace,
        project: mirrored?.spec.project,
      });
    } catch (error) {
      waiting.push(`${s.app} (reading it from Argo CD failed: ${(error as Error).message})`);
      continue;
    }
    const d = decide(s, app, ctx.run.id);
    if (d === 'wait') waiting.push(`${s.app} (this run's sync is still running)`);
    else if (d) {
      writes.push({
        key: appKey(s),
        expected: undefined,
        value:
          'plan' in d ? { ...base, state: 'pending', plan: d.plan } : { ...base, state: 'skipped', reason: d.reason },
      });
    }
  }
  await cp.transitionMany(writes);
  if (waiting.length) report(`before rolling back, waiting for: ${waiting.join(', ')}`);
  return waiting.length > 0;
}

function sleep(ctx: ActionContext, ms: number) {
  return new Promise<void>((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      ctx.signal.removeEventListener('abort', done);
      resolve();
    }
    ctx.signal.addEventListener('abort', done);
  });
}

/**
 * Rolls back the failed wave's apps this run synced, each at most once per run, and follows every rollback
 * to its end. `members` are the wave's app entries; `report` puts a line in the live message. A dry run
 * applied nothing: it says which apps it would roll back and sends nothing.
 */
export async function rollBackWave(
  ctx: ActionContext,
  members: AppCheckpoint[],
  options: { prune: boolean; dryRun: boolean },
  report: (line: string) => void,
): Promise<WaveRollbackResult> {
  const candidates = members.filter((s) => REACHED.includes(s.state));
  if (options.dryRun)
    return {
      rolledBack: candidates
        .filter((s) => s.state === 'done' || s.state === 'accepted')
        .map((s) => ({ app: s.app, instance: s.instance, cluster: s.cluster, to: 'its previous deployment' })),
      notRolledBack: [],
      unfinished: false,
    };
  while (!ctx.signal.aborted && (await decideAll(ctx, candidates, report))) await sleep(ctx, 1000);
  const cp = rollbacksOf(ctx);
  const keys = new Set(members.map(appKey));
  const entries = () =>
    cp.all().then((all) =>
      [...all]
        .filter(([k]) => keys.has(k))
        .map(([, e]) => e)
        .sort((a, b) => a.app.localeCompare(b.app) || a.instance.localeCompare(b.instance)),
    );
  const open = (await entries()).filter((e) => e.plan && !rollbackSettled(e));
  if (open.length && !ctx.signal.aborted) {
    report(
      `${options.dryRun ? 'would roll back' : 'rolling back'} ${open.map((e) => `${e.app} to ${rollbackTarget(e.plan!)}`).join(', ')}`,
    );
    await Promise.all(
      open.map(async (e) => {
        const step = await prepareRollback(ctx, options, e.plan!, ctx.services.argocd.get(e.instance)!, {
          checkpoint: cp,
          progress: report,
        });
        try {
          await driveRollback(step);
        } catch (error) {
          // Stopped while waiting its turn (a pause, an abort): the entry says where a later attempt goes on.
          if (error instanceof LeaseLostError || !ctx.signal.aborted) throw error;
        }
      }),
    );
  }
  const settled = await entries();
  const where = (e: WaveRollbackEntry) => ({ app: e.app, instance: e.instance, cluster: e.cluster });
  return {
    rolledBack: settled.filter((e) => e.state === 'done').map((e) => ({ ...where(e), to: rollbackTarget(e.plan!) })),
    notRolledBack: settled
      .filter((e) => e.state === 'skipped' || e.state === 'failed' || e.state === 'timeout')
      .map((e) => ({ ...where(e), reason: e.reason ?? e.state })),
    unfinished: ctx.signal.aborted || settled.some((e) => e.plan && !rollbackSettled(e)),
  };
}
