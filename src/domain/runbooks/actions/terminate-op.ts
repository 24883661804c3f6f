import { z } from 'zod';
import { isArgoError } from '../../../infra/argocd/errors.js';
import type { Application } from '../../../infra/argocd/types.js';
import { COMPLETED_PHASES } from '../../../infra/argocd/types.js';
import { RollcallError } from '../../../core/errors.js';
import { oneLine, truncate, typedDuration, when } from '../../../core/format.js';
import type { ReplyBlock } from '../../../core/reply.js';
import { selectApps } from '../../../fleet/select.js';
import { LeaseLostError, type CheckpointEntry } from '../run-store.js';
import { parseSelectorParam } from './bulk-sync.js';
import type { ActionContext, ActionPreview, PreviewContext, RunbookAction, StepOutcome } from './types.js';

/**
 * `argocd app terminate-op APP` for one app or a selection. Argo CD's TerminateOperation needs `sync`,
 * answers "Unable to terminate operation. No operation is in progress" when nothing runs, and otherwise
 * sets operationState.phase to Terminating; the controller then stops the sync (deleting running hooks)
 * and ends it Failed "Operation terminated" (Error when cleanup failed). A terminate is idempotent, so
 * a lost answer is simply asked again; an operation that ended on its own meanwhile is said so.
 */

export const terminateInput = z.object({
  selector: z.string().min(1, 'expected an app name, a glob or a selector'),
  /** How long to follow each app until the controller has ended its operation. */
  settleMs: z.number().int().min(0).default(60_000),
});

export interface RunningOperation {
  instance: string;
  app: string;
  cluster: string;
  appNamespace?: string;
  project?: string;
  phase: string;
  startedAt: string | null;
  by: string;
  message: string | null;
}

/** The operation an app has in progress (requested, Running or Terminating), or undefined. */
export function runningOperation(
  app: Application,
): Omit<RunningOperation, 'instance' | 'cluster' | 'app' | 'appNamespace' | 'project'> | undefined {
  const st = app.status?.operationState;
  const running = st && (st.phase === 'Running' || st.phase === 'Terminating');
  if (!app.operation && !running) return undefined;
  const op = running ? st.operation : app.operation;
  const by = op?.initiatedBy?.username ?? (op?.initiatedBy?.automated ? 'auto-sync' : 'unknown');
  return running
    ? { phase: st.phase, startedAt: st.startedAt ?? null, by, message: st.message ?? null }
    : { phase: 'Requested', startedAt: null, by, message: 'not picked up by the controller yet' };
}

async function preview(ctx: PreviewContext): Promise<ActionPreview> {
  const input = terminateInput.parse(ctx.input);
  const selected = selectApps(ctx.services.fleet, parseSelectorParam(input.selector));
  if (!selected.length) throw new RollcallError('unknown_target', `no apps match "${input.selector}"`);
  const running: RunningOperation[] = [];
  const idle: string[] = [];
  for (const f of selected) {
    const op = runningOperation(f.app);
    if (op)
      running.push({
        instance: f.instance,
        app: f.app.metadata.name,
        cluster: f.cluster,
        appNamespace: f.app.metadata.namespace,
        project: f.app.spec.project,
        ...op,
      });
    else idle.push(f.app.metadata.name);
  }
  if (!running.length) {
    throw new RollcallError(
      'nothing_to_terminate',
      `No operation is in progress on ${selected.length === 1 ? selected[0].app.metadata.name : `any of the ${selected.length} apps matching "${input.selector}"`}: nothing to terminate (Argo CD would answer "Unable to terminate operation. No operation is in progress"). Nothing was changed.`,
    );
  }
  const blocks: ReplyBlock[] = [
    {
      kind: 'list',
      title: 'Operations to terminate',
      items: running.slice(0, 30).map((r) => ({
        text: `*${r.app}* (${r.cluster}): ${r.phase}${r.startedAt ? `, started ${when(r.startedAt)}` : ''} by ${r.by}`,
        detail: r.message ? truncate(oneLine(r.message), 200) : undefined,
        tone: 'warn' as const,
      })),
      total: running.length,
    },
    {
      kind: 'context',
      text: 'Argo CD stops each sync where it is (running hooks are deleted) and ends it Failed "Operation terminated": what was already applied stays applied.',
    },
  ];
  if (idle.length)
    blocks.push({
      kind: 'context',
      text: `${idle.length} matching app(s) have no operation in progress and are left alone: ${idle.slice(0, 10).join(', ')}${idle.length > 10 ? ` and ${idle.length - 10} more` : ''}.`,
    });
  return {
    targets: running.map((r) => ({ instance: r.instance, app: r.app, cluster: r.cluster })),
    summary: `Terminate the running operation of ${running.length} app${running.length === 1 ? '' : 's'}${running.length === 1 ? ` (${running[0].app}: ${running[0].phase} by ${running[0].by})` : ''}.`,
    data: { running, idle },
    blocks,
  };
}

interface TerminateCheckpoint extends CheckpointEntry {
  state: 'asked' | 'ended' | 'already-ended';
  phase?: string;
  message?: string;
}

const storedSchema = z.object({
  running: z.array(
    z.object({
      instance: z.string(),
      app: z.string(),
      cluster: z.string(),
      appNamespace: z.string().optional(),
      project: z.string().optional(),
      phase: z.string(),
      by: z.string(),
      startedAt: z.string().nullable(),
    }),
  ),
});

async function execute(ctx: ActionContext): Promise<StepOutcome> {
  const input = terminateInput.parse(ctx.input);
  const parsed = storedSchema.safeParse(ctx.run.preview?.byStep?.[ctx.stepId] ?? ctx.run.preview?.data);
  if (!parsed.success) return { status: 'failed', error: 'the run has no terminate plan (preview missing)' };
  const cp = ctx.checkpoint<TerminateCheckpoint>();
  const summary: string[] = [];
  const failed: string[] = [];
  const report = (
    done: number,
    total: number,
    failing: { app: string; instance: string; cluster: string; reason: string }[] = [],
  ) =>
    ctx.progress({
      headline: `${done}/${total} terminated`,
      counts: {},
      failing,
      updatedAt: new Date(ctx.now()).toISOString(),
    });
  try {
    const list = parsed.data.running;
    for (const [i, r] of list.entries()) {
      if (ctx.signal.aborted)
        return { status: String(ctx.signal.reason) === 'abort' ? 'aborted' : 'interrupted', output: { summary } };
      const key = `${r.instance}/${r.app}`;
      const api = ctx.services.argocd.get(r.instance);
      if (!api) {
        failed.push(`${r.app}: no Argo CD client for instance ${r.instance}`);
        continue;
      }
      const ref = { name: r.app, appNamespace: r.appNamespace, project: r.project };
      let entry = await cp.get(key);
      if (!entry) {
        await ctx.limiter.acquire(r.instance, ctx.signal);
        await ctx.assertLease();
        try {
          await api.terminateOperation(ref);
          entry = { state: 'asked' };
          await ctx.audit({
            kind: 'argocd.mutation',
            who: ctx.run.requester,
            target: key,
            message: `terminate the running operation of ${r.app} (${r.phase} by ${r.by})`,
            result: 'ok',
          });
        } catch (error) {
          if (isArgoError(error, 'no_operation')) {
            // Ended on its own since the preview, or by this run's terminate before a crashed attempt noted it: say how it ended.
            const last = await api.getApplication(ref).catch(() => undefined);
            entry = {
              state: 'already-ended',
              phase: last?.status?.operationState?.phase,
              message: last?.status?.operationState?.message,
            };
          } else {
            const message = (error as Error).message;
            failed.push(`${r.app}: ${message}`);
            await ctx.audit({
              kind: 'argocd.mutation',
              who: ctx.run.requester,
              target: key,
              message: `terminate the running operation of ${r.app}`,
              result: `error: ${isArgoError(error) ? error.kind : 'unknown'}`,
              params: { error: message },
            });
            continue;
          }
        }
        await cp.set(key, entry);
      }
      if (entry.state === 'asked') {
        // Terminating ends when the controller has cleaned up: followed for a while, then said as it is.
        const until = ctx.now() + input.settleMs;
        let app: Application | undefined;
        for (;;) {
          try {
            app = await api.getApplication(ref);
          } catch {
            app = undefined;
          }
          const st = app?.status?.operationState;
          if (st && COMPLETED_PHASES.includes(st.phase) && !app?.operation) {
            entry = { state: 'ended', phase: st.phase, message: st.message };
            await cp.set(key, entry);
            break;
          }
          if (ctx.now() > until || ctx.signal.aborted) break;
          report(i, list.length);
          await new Promise((res) => setTimeout(res, 500));
        }
      }
      if (entry.state === 'already-ended')
        summary.push(
          `${r.app}: no operation was running when the terminate arrived${entry.phase ? `; the last one ended ${entry.phase}${entry.message ? ` "${entry.message}"` : ''}` : ''}`,
        );
      else if (entry.state === 'ended')
        summary.push(
          `${r.app}: ${r.phase === 'Requested' ? 'requested sync' : 'sync'} by ${r.by} terminated: ${entry.phase}${entry.message ? ` "${entry.message}"` : ''}`,
        );
      else
        summary.push(
          `${r.app}: terminating (Argo CD is still cleaning up after ${typedDuration(input.settleMs)}; \`app ${r.app}\` shows when it ends)`,
        );
      report(i + 1, list.length);
    }
  } catch (error) {
    if (error instanceof LeaseLostError) return { status: 'interrupted', output: { summary } };
    throw error;
  }
  if (failed.length)
    return {
      status: 'failed',
      error: `${failed.length} terminate(s) failed: ${failed.slice(0, 5).join('; ')}`,
      output: { summary },
    };
  return { status: 'succeeded', output: { summary } };
}

export const terminateOpAction: RunbookAction = {
  name: 'terminate-op',
  description:
    'Terminate the running operation of apps (argocd app terminate-op), then follow each until Argo CD has ended it',
  destructive: true,
  pausable: false,
  input: terminateInput,
  defaultTimeoutMs: 10 * 60_000,
  preview,
  execute,
};
