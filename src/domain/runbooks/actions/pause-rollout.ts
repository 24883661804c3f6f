import { RollcallError } from '../../../core/errors.js';
import { z } from 'zod';
import type { ReplyBlock } from '../../../core/reply.js';
import { hasRollouts } from '../../../fleet/argo-rollouts.js';
import type { FleetAppSet } from '../../../fleet/model.js';
import { selectApps } from '../../../fleet/select.js';
import {
  applyPauseChange,
  planPause,
  terminateOperations,
  verifyPause,
  type PausePlan,
  type PauseRecord,
} from '../rollout-pause.js';
import { parseSelectorParam } from './bulk-sync.js';
import type { ActionContext, ActionPreview, PreviewContext, RunbookAction, StepOutcome } from './types.js';

function resolveAppSet(ctx: PreviewContext | ActionContext, name: string, instance?: string): FleetAppSet | undefined {
  const found = ctx.services.fleet.appSetsNamed(name).filter((s) => !instance || s.instance === instance);
  if (found.length > 1)
    throw new RollcallError(
      'ambiguous_target',
      `ApplicationSet ${name} exists on ${found.map((s) => s.instance).join(', ')}: add instance=`,
    );
  return found[0];
}

function changeLine(c: PausePlan['changes'][number]): string {
  const show = (v: unknown) => (v === null ? 'unset' : JSON.stringify(v));
  return `${c.kind} *${c.name}*: ${c.field} ${show(c.before)} → ${show(c.after)}`;
}

const pauseInput = z.object({
  target: z.string().min(1),
  instance: z.string().optional(),
  terminate: z.boolean().default(false),
  /** How long to wait before re-reading the objects to check the pause held. */
  verifyAfterMs: z.number().int().min(0).default(5000),
});

async function pausePreview(ctx: PreviewContext): Promise<ActionPreview> {
  const input = pauseInput.parse(ctx.input);
  if (!ctx.services.pauses)
    throw new RollcallError('unavailable', 'pausing needs Redis to record what it changes, and this process has none');
  const appSet = resolveAppSet(ctx, input.target, input.instance);
  let plan: PausePlan;
  if (appSet) plan = planPause(ctx.services.fleet, { appSet });
  else {
    const apps = selectApps(ctx.services.fleet, {
      ...parseSelectorParam(input.target),
      ...(input.instance ? { instance: input.instance } : {}),
    });
    if (!apps.length) throw new RollcallError('unknown_target', `no ApplicationSet or app matches "${input.target}"`);
    plan = planPause(ctx.services.fleet, { apps, label: input.target });
  }
  const blocks: ReplyBlock[] = [
    {
      kind: 'list',
      title: 'Changes, each recorded for resume',
      items: plan.changes.slice(0, 30).map((c) => ({ text: changeLine(c), detail: c.reason })),
      total: plan.changes.length,
    },
  ];
  if (plan.warnings.length)
    blocks.push({
      kind: 'list',
      title: 'Heads-up',
      items: plan.warnings.map((w) => ({ text: w, tone: 'warn' as const })),
    });
  const withRollouts = plan.changes.filter(
    (c) => c.kind === 'Application' && ctx.services.fleet.appsNamed(c.name).some((fa) => hasRollouts(fa.app)),
  );
  if (withRollouts.length)
    blocks.push({
      kind: 'context',
      text: `${withRollouts.length} of these apps deploy an Argo Rollouts Rollout: this holds their auto-sync, not the canary, which goes on with its steps. \`pause ${input.target} kind=rollout\` pauses the Rollouts themselves.`,
    });
  if (plan.runningOperations.length) {
    blocks.push({
      kind: 'context',
      text: input.terminate
        ? `terminate=true: the running operations of ${plan.runningOperations.join(', ')} will be terminated.`
        : `${plan.runningOperations.length} app(s) still have a sync running (${plan.runningOperations.slice(0, 5).join(', ')}); they finish unless you add terminate=true.`,
    });
  }
  return {
    targets: plan.changes.map((c) => ({
      instance: c.instance,
      app: c.kind === 'ApplicationSet' ? `appset:${c.name}` : c.name,
    })),
    summary: `Pause ${appSet ? `the ApplicationSet ${plan.target}` : plan.target} on ${plan.instance}: ${plan.changes.length} change(s)`,
    data: { plan },
    blocks,
  };
}

async function pauseExecute(ctx: ActionContext): Promise<StepOutcome> {
  const input = pauseInput.parse(ctx.input);
  const plan = ((ctx.run.preview?.byStep?.[ctx.stepId] ?? ctx.run.preview?.data) as { plan?: PausePlan } | undefined)
    ?.plan;
  if (!plan) return { status: 'failed', error: 'the run has no pause plan (preview missing)' };
  const store = ctx.services.pauses!;
  const record: PauseRecord = {
    target: plan.target,
    instance: plan.instance,
    by: ctx.run.requester,
    at: new Date(ctx.now()).toISOString(),
    runId: ctx.run.id,
    changes: plan.changes,
  };
  // Saved before any change, so a crash mid-way still leaves resume everything it needs.
  if (!(await store.get(plan.instance, plan.target))) await store.save(record);
  const pctx = { argocd: ctx.services.argocd, by: ctx.run.requester, runId: ctx.run.id, now: new Date(record.at) };
  for (const [i, change] of plan.changes.entries()) {
    const key = `change:${i}`;
    if ((await ctx.checkpoint().get(key))?.state === 'applied') continue;
    await ctx.limiter.acquire(change.instance, ctx.signal);
    await ctx.assertLease();
    await applyPauseChange(change, pctx);
    await ctx.checkpoint().set(key, { state: 'applied' });
    await ctx.audit({
      kind: 'argocd.mutation',
      who: ctx.run.requester,
      message: `pause ${change.kind} ${change.name}: ${change.field}`,
      params: { before: change.before, after: change.after },
      result: 'ok',
    });
  }
  let terminated: string[] = [];
  if (input.terminate && plan.runningOperations.length) await ctx.assertLease();
  if (input.terminate && plan.runningOperations.length)
    terminated = await terminateOperations(plan.instance, plan.runningOperations, pctx);
  if (input.verifyAfterMs) await new Promise((r) => setTimeout(r, input.verifyAfterMs));
  const reverted = await verifyPause(plan.changes, ctx.services.argocd);
  if (reverted.length) {
    return {
      status: 'failed',
      error: `the pause did not hold: ${reverted.map((c) => `${c.kind} ${c.name} ${c.field}`).join(', ')} changed back (reverted by a controller or from git). Check what manages it.`,
    };
  }
  const summary = [
    ...plan.changes.map((c) => `${c.kind} ${c.name}: ${c.field} set to ${JSON.stringify(c.after)} (${c.reason})`),
    ...(terminated.length ? [`terminated the running operation of ${terminated.join(', ')}`] : []),
    `held: re-read after the change, nothing reverted it. \`resume ${plan.target}\` restores the recorded values.`,
  ];
  return { status: 'succeeded', output: { paused: plan.target, changes: plan.changes.length, terminated, summary } };
}

export const pauseRolloutAction: RunbookAction = {
  name: 'pause-rollout',
  description: 'Hold a rollout or auto-sync, recording every change for resume',
  destructive: true,
  input: pauseInput,
  defaultTimeoutMs: 5 * 60_000,
  preview: pausePreview,
  execute: pauseExecute,
};
