import { RollcallError } from '../../../core/errors.js';
import { mention, when } from '../../../core/format.js';
import { z } from 'zod';
import { PauseError, resumeChange, type PauseRecord } from '../rollout-pause.js';
import type { ActionContext, ActionPreview, PreviewContext, RunbookAction, StepOutcome } from './types.js';

const resumeInput = z.object({ target: z.string().min(1), instance: z.string().optional() });

async function findRecord(
  ctx: PreviewContext | ActionContext,
  target: string,
  instance?: string,
): Promise<PauseRecord> {
  if (!ctx.services.pauses) throw new RollcallError('unavailable', 'resuming needs Redis, where pauses are recorded');
  const records = (await ctx.services.pauses.find(target)).filter((r) => !instance || r.instance === instance);
  if (!records.length) {
    const all = await ctx.services.pauses.list();
    throw new RollcallError(
      'not_paused',
      `${target} is not paused by rollcall${all.length ? ` (paused: ${all.map((r) => r.target).join(', ')})` : ''}`,
    );
  }
  if (records.length > 1)
    throw new RollcallError(
      'ambiguous_target',
      `${target} is paused on ${records.map((r) => r.instance).join(', ')}: add instance=`,
    );
  return records[0];
}

async function resumePreview(ctx: PreviewContext): Promise<ActionPreview> {
  const input = resumeInput.parse(ctx.input);
  const record = await findRecord(ctx, input.target, input.instance);
  return {
    targets: record.changes.map((c) => ({
      instance: c.instance,
      app: c.kind === 'ApplicationSet' ? `appset:${c.name}` : c.name,
    })),
    summary: `Resume ${record.target} on ${record.instance} (paused by ${mention(record.by)} ${when(record.at)}): restore ${record.changes.length} value(s)`,
    data: { record },
    blocks: [
      {
        kind: 'list',
        title: 'Restores exactly what the pause replaced',
        items: record.changes.map((c) => ({
          text: `${c.kind} *${c.name}*: ${c.field} → ${c.before === null ? 'unset' : JSON.stringify(c.before)}`,
        })),
      },
    ],
  };
}

async function resumeExecute(ctx: ActionContext): Promise<StepOutcome> {
  const input = resumeInput.parse(ctx.input);
  const record = await findRecord(ctx, input.target, input.instance);
  const restored: string[] = [];
  // Parents first: restoring the child while its parent still has auto-sync off is harmless, the reverse is not.
  const ordered = [...record.changes].reverse();
  for (const change of ordered) {
    await ctx.assertLease();
    try {
      const outcome = await resumeChange(change, ctx.services.argocd);
      if (outcome === 'restored') {
        restored.push(`${change.kind} ${change.name}`);
        await ctx.audit({
          kind: 'argocd.mutation',
          who: ctx.run.requester,
          message: `resume ${change.kind} ${change.name}: ${change.field}`,
          params: { restored: change.before },
          result: 'ok',
        });
      }
    } catch (error) {
      if (error instanceof PauseError) return { status: 'failed', error: error.message, output: { restored } };
      throw error;
    }
  }
  await ctx.services.pauses!.remove(record.instance, record.target);
  const summary = restored.length
    ? [`restored ${restored.join(', ')} to the values recorded at the pause; rollcall annotations removed`]
    : ['nothing to restore: every recorded value was already back'];
  return { status: 'succeeded', output: { resumed: record.target, restored, summary } };
}

export const resumeRolloutAction: RunbookAction = {
  name: 'resume-rollout',
  description: 'Restore exactly what pause-rollout changed',
  destructive: true,
  input: resumeInput,
  defaultTimeoutMs: 5 * 60_000,
  preview: resumePreview,
  execute: resumeExecute,
};
