import { mapConcurrent } from '../../../../core/concurrency.js';
import { plural } from '../../../../core/format.js';
import { LeaseLostError } from '../../run-store.js';
import { postingWindowMs } from '../bulk-sync/operations.js';
import type { ActionContext, StepOutcome } from '../types.js';
import { RolloutDriver, settled, type RolloutCheckpoint } from './drive.js';
import { rolloutActionInput, rolloutKey, type RolloutActionPlan } from './plan.js';
import { whereItStands } from './verbs.js';

/**
 * The waves of a Rollout action run, in order: each wave's Rollouts at most `maxUpdate` at a time, each sent
 * its action once and followed (drive.ts). A wave where one failed or timed out ends the run before the next
 * starts, as bulk-sync's onFailure=abort does: the next clusters keep their canary as it is.
 */

function planOf(ctx: ActionContext): RolloutActionPlan | undefined {
  return ((ctx.run.preview?.byStep?.[ctx.stepId] ?? ctx.run.preview?.data) as { plan?: RolloutActionPlan } | undefined)
    ?.plan;
}

function stopped(ctx: ActionContext): StepOutcome {
  const reason = String(ctx.signal.reason);
  if (reason === 'abort') return { status: 'aborted' };
  if (reason === 'pause') return { status: 'paused', reason: 'paused by a user' };
  if (reason === 'timeout') return { status: 'failed', error: 'the step timed out before every Rollout was followed' };
  return { status: 'interrupted' };
}

function report(ctx: ActionContext, plan: RolloutActionPlan, wave: number, entries: RolloutCheckpoint[]): void {
  const counts: Record<string, number> = {};
  for (const e of entries) counts[e.state] = (counts[e.state] ?? 0) + 1;
  if (plan.skipped.length) counts.skipped = plan.skipped.length;
  const total = plan.waves.reduce((n, w) => n + w.rollouts.length, 0);
  const done = entries.filter((e) => e.state === 'done').length;
  ctx.progress({
    headline: `${plan.action} · wave ${wave + 1}/${plan.waves.length} · ${done}/${total} Rollouts there`,
    counts,
    failing: entries
      .filter((e) => e.state === 'failed' || e.state === 'timeout')
      .map((e) => ({ app: e.app, instance: e.instance, cluster: e.cluster, reason: e.reason ?? e.state })),
    wave: { index: wave, total: plan.waves.length },
    updatedAt: new Date(ctx.now()).toISOString(),
  });
}

function summaryLines(plan: RolloutActionPlan, entries: RolloutCheckpoint[], notStarted: number): string[] {
  const done = entries.filter((e) => e.state === 'done');
  const bad = entries.filter((e) => e.state === 'failed' || e.state === 'timeout');
  return [
    ...done.map(
      (e) =>
        `${e.app} (${e.cluster}): ${plan.action} → ${e.ended ? whereItStands(e.ended) : 'done'}${e.note ? ` (${e.note})` : ''}`,
    ),
    ...bad.map((e) => `${e.app} (${e.cluster}): ${e.reason ?? e.state}`),
    ...plan.skipped.map((s) => `${s.app} (${s.cluster}): skipped, ${s.reason}`),
    ...(notStarted ? [`${plural(notStarted, 'Rollout')} of later waves not started: an earlier wave failed`] : []),
  ];
}

export async function executeRolloutAction(ctx: ActionContext): Promise<StepOutcome> {
  const input = rolloutActionInput.parse(ctx.input);
  const plan = planOf(ctx);
  if (!plan) return { status: 'failed', error: 'the run has no Rollout action plan (preview missing)' };
  const cp = ctx.checkpoint<RolloutCheckpoint>();
  const ended: RolloutCheckpoint[] = [];
  try {
    for (const [i, wave] of plan.waves.entries()) {
      if (ctx.signal.aborted) return stopped(ctx);
      const drivers: RolloutDriver[] = [];
      for (const r of wave.rollouts) {
        const api = ctx.services.argocd.get(r.instance);
        if (!api) return { status: 'failed', error: `no Argo CD client for instance ${r.instance}` };
        const windowMs = postingWindowMs(
          ctx.services.config.instances.find((c) => c.name === r.instance)?.timeout ?? 30_000,
        );
        const settings = {
          action: plan.action,
          verb: plan.verb,
          timeoutMs: input.timeout,
          pollMs: input.pollMs,
          windowMs,
        };
        const d = new RolloutDriver(ctx, cp, api, r, settings);
        await d.load(i);
        drivers.push(d);
      }
      const tick = setInterval(() => report(ctx, plan, i, [...ended, ...drivers.map((d) => d.state())]), 1000);
      try {
        await mapConcurrent(drivers, Math.max(1, wave.maxUpdate), (d) => d.drive());
      } finally {
        clearInterval(tick);
      }
      if (ctx.signal.aborted && !drivers.every((d) => settled(d.state()))) return stopped(ctx);
      ended.push(...drivers.map((d) => d.state()));
      report(ctx, plan, i, ended);
      const bad = ended.filter((e) => e.state === 'failed' || e.state === 'timeout');
      if (bad.length) {
        const notStarted = plan.waves.slice(i + 1).reduce((n, w) => n + w.rollouts.length, 0);
        const summary = summaryLines(plan, ended, notStarted);
        const reasons = bad.slice(0, 5).map((e) => `${e.app}: ${e.reason ?? e.state}`);
        return {
          status: 'failed',
          error: `${plural(bad.length, 'Rollout')} of ${ended.length} did not get there${notStarted ? `; ${notStarted} in later waves not started` : ''}. ${reasons.join('; ')}${bad.length > 5 ? ` and ${bad.length - 5} more` : ''}`,
          output: { summary, rollouts: ended.map(outputOf) },
        };
      }
    }
  } catch (error) {
    if (error instanceof LeaseLostError) return { status: 'interrupted' };
    throw error;
  }
  return {
    status: 'succeeded',
    output: { summary: summaryLines(plan, ended, 0), rollouts: ended.map(outputOf) },
  };
}

const outputOf = (e: RolloutCheckpoint) => ({
  key: rolloutKey({ instance: e.instance, app: e.app, namespace: e.namespace, name: e.name }),
  app: e.app,
  instance: e.instance,
  cluster: e.cluster,
  name: e.name,
  state: e.state,
  reason: e.reason ?? null,
  phase: e.ended?.phase ?? null,
  message: e.ended?.message ?? null,
  step: e.ended?.step ?? null,
  steps: e.ended?.steps ?? null,
});
