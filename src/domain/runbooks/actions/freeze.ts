import { z } from 'zod';
import { RollcallError } from '../../../core/errors.js';
import { absoluteTime, plural, typedDuration } from '../../../core/format.js';
import type { ReplyBlock } from '../../../core/reply.js';
import { freezeActive } from '../../../fleet/freeze.js';
import {
  FreezeError,
  MAX_FREEZE_MS,
  addFreezeWindow,
  freezeDescription,
  freezeUntil,
  freezeWindow,
  planFreeze,
  type Freeze,
  type FreezePlan,
  type FreezeStore,
} from '../freeze.js';
import { parseSelectorParam } from './bulk-sync.js';
import type { ActionContext, ActionPreview, PreviewContext, RunbookAction, StepOutcome } from './types.js';

const freezeInput = z.object({
  /** An app selection (selector param text); empty with `project` alone freezes the whole project. */
  target: z.string().optional(),
  project: z.string().optional(),
  instance: z.string().optional(),
  forMs: z
    .number()
    .int()
    .min(60_000, 'for= is at least 1m')
    .max(MAX_FREEZE_MS, `for= is at most ${typedDuration(MAX_FREEZE_MS)}: the window recurs yearly`)
    .optional(),
  manual: z.enum(['allow', 'block']).default('allow'),
  incident: z.string().optional(),
});
type FreezeInput = z.output<typeof freezeInput>;

function store(ctx: PreviewContext | ActionContext): FreezeStore {
  if (!ctx.services.freezes)
    throw new RollcallError('unavailable', 'freezing needs Redis to record what it writes, and this process has none');
  return ctx.services.freezes;
}

async function plan(ctx: PreviewContext | ActionContext, input: FreezeInput): Promise<FreezePlan> {
  if (!input.target?.trim() && !input.project)
    throw new FreezeError(
      'unknown_target',
      'freeze what? a selector (`freeze auth-*`) or a project (`freeze project=payments`)',
    );
  return planFreeze(ctx.services.fleet, ctx.services.argocd, {
    selector: input.target?.trim() ? parseSelectorParam(input.target) : undefined,
    project: input.project,
    instance: input.instance,
  });
}

/** A second freeze of what rollcall already holds would be a window Argo CD refuses as a duplicate, or noise. */
async function refuseRefreeze(ctx: PreviewContext, p: FreezePlan, now: Date): Promise<void> {
  const held = (await store(ctx).list()).filter(
    (f) => f.target === p.target && p.windows.some((w) => w.instance === f.instance) && freezeActive(f, now),
  );
  if (held.length)
    throw new FreezeError(
      'already_frozen',
      `${p.target} is already frozen by ${held[0].by} since ${absoluteTime(held[0].at)}${held[0].until ? ` until ${absoluteTime(held[0].until)}` : ''}: \`unfreeze ${p.target}\` first.`,
    );
}

function previewBlocks(p: FreezePlan, input: FreezeInput, until: Date | undefined): ReplyBlock[] {
  const blocks: ReplyBlock[] = [
    {
      kind: 'list',
      title: 'A deny sync window in each AppProject, recorded for unfreeze',
      items: p.windows.map((w) => ({
        text: `AppProject *${w.project}* on ${w.instance}: ${w.scope.applications ? `applications \`${w.scope.applications.join(',')}\`` : ''}${w.scope.applications && w.scope.clusters ? ' and ' : ''}${w.scope.clusters ? `clusters \`${w.scope.clusters.join(',')}\`` : ''}`,
        detail: `holds ${plural(w.covers.length, 'app')} now${w.covers.length ? `: ${w.covers.slice(0, 8).join(', ')}${w.covers.length > 8 ? ` and ${w.covers.length - 8} more` : ''}` : ''}`,
      })),
    },
    {
      kind: 'context',
      text: `${until ? `Until ${absoluteTime(until.toISOString())} (for=${typedDuration(input.forMs!)}): Argo CD lifts it when the window ends, and rollcall's workers then remove the window (Argo CD would fire it again a year on).` : 'Until `unfreeze`.'} Auto-sync writes no operation and RollingSync steps hold ("Sync operation blocked by sync window").`,
    },
  ];
  if (input.manual === 'block')
    blocks.push({
      kind: 'text',
      tone: 'error',
      text:
        ':warning: *manual=block: manual syncs are refused too* — Argo CD answers "cannot sync: blocked by sync window" to every sync of these apps, ' +
        "rollcall's own sync, rollback and restore runs included, until the freeze is lifted.",
    });
  else
    blocks.push({
      kind: 'context',
      text: "Manual syncs still go (manualSync: true), so rollcall's own sync and rollback runs can ship a fix.",
    });
  if (input.incident)
    blocks.push({ kind: 'context', text: `Recorded for ${input.incident}: closing it asks whether to unfreeze.` });
  return blocks;
}

async function freezePreview(ctx: PreviewContext): Promise<ActionPreview> {
  const input = freezeInput.parse(ctx.input);
  store(ctx);
  const now = ctx.services.now?.() ?? new Date();
  const p = await plan(ctx, input);
  await refuseRefreeze(ctx, p, now);
  // The window is written at execution, from that moment; this one only shows the end it would have now.
  const until = input.forMs === undefined ? undefined : freezeUntil(now, input.forMs);
  const apps = p.windows.reduce((n, w) => n + w.covers.length, 0);
  return {
    targets: p.windows.map((w) => ({ instance: w.instance, app: `appproject:${w.project}` })),
    summary: `Freeze ${p.target}: a deny window in ${plural(p.windows.length, 'AppProject')} holding ${plural(apps, 'app')}${input.forMs ? ` for ${typedDuration(input.forMs)}` : ''}${input.manual === 'block' ? ' — MANUAL SYNCS BLOCKED TOO' : ''}`,
    data: { plan: p, manual: input.manual, ...(input.forMs ? { forMs: input.forMs } : {}) },
    blocks: previewBlocks(p, input, until),
  };
}

/** The freezes this run writes, built once and saved before any change: a retried attempt finds the same windows. */
async function freezesOfRun(ctx: ActionContext, input: FreezeInput, p: FreezePlan): Promise<Freeze[]> {
  const known = await store(ctx).ofRun(ctx.run.id);
  if (known.length) return known;
  const now = ctx.services.now?.() ?? new Date(ctx.now());
  const freezes: Freeze[] = [];
  for (const w of p.windows) {
    const at = now.toISOString();
    const base = {
      runId: ctx.run.id,
      instance: w.instance,
      project: w.project,
      target: p.target,
      by: ctx.run.requester,
      at,
      ...(input.incident ? { incident: input.incident } : {}),
      manualBlocked: input.manual === 'block',
    };
    const until = input.forMs === undefined ? undefined : freezeUntil(now, input.forMs);
    const description = freezeDescription({ ...base, ...(until ? { until: until.toISOString() } : {}) });
    const built = freezeWindow(w.scope, {
      now,
      forMs: input.forMs,
      manualBlocked: base.manualBlocked,
      description,
    });
    freezes.push({ ...base, window: built.window, ...(built.until ? { until: built.until.toISOString() } : {}) });
  }
  for (const f of freezes) await store(ctx).save(f);
  return freezes;
}

async function freezeExecute(ctx: ActionContext): Promise<StepOutcome> {
  const input = freezeInput.parse(ctx.input);
  const p = ((ctx.run.preview?.byStep?.[ctx.stepId] ?? ctx.run.preview?.data) as { plan?: FreezePlan } | undefined)
    ?.plan;
  if (!p) return { status: 'failed', error: 'the run has no freeze plan (preview missing)' };
  const freezes = await freezesOfRun(ctx, input, p);
  const written: string[] = [];
  for (const [i, f] of freezes.entries()) {
    const key = `window:${i}`;
    if ((await ctx.checkpoint().get(key))?.state === 'applied') {
      written.push(`${f.instance}/${f.project}`);
      continue;
    }
    const api = ctx.services.argocd.get(f.instance);
    if (!api) return { status: 'failed', error: `no Argo CD instance named ${f.instance}` };
    await ctx.limiter.acquire(f.instance, ctx.signal);
    await ctx.assertLease();
    try {
      await addFreezeWindow(api, f);
    } catch (error) {
      // What was not written is not frozen: its record goes, so `frozen` never lists it.
      for (const rest of freezes.slice(i)) await store(ctx).remove(rest);
      const message = error instanceof Error ? error.message : String(error);
      await ctx.audit({
        kind: 'argocd.mutation',
        who: ctx.run.requester,
        target: `${f.instance}/appproject:${f.project}`,
        message: `freeze AppProject ${f.project}: add deny window`,
        params: { window: f.window },
        result: `failed: ${message}`,
      });
      const done = written.length
        ? ` Frozen already: ${written.join(', ')} (\`unfreeze ${p.target}\` lifts them).`
        : '';
      return { status: 'failed', error: `${message}${done}`, output: { frozen: written } };
    }
    await ctx.checkpoint().set(key, { state: 'applied' });
    written.push(`${f.instance}/${f.project}`);
    await ctx.audit({
      kind: 'argocd.mutation',
      who: ctx.run.requester,
      target: `${f.instance}/appproject:${f.project}`,
      message: `freeze AppProject ${f.project}: add deny window`,
      params: { window: f.window, ...(f.incident ? { incident: f.incident } : {}) },
      result: 'ok',
    });
  }
  const until = freezes[0]?.until;
  const summary = [
    ...freezes.map(
      (f) => `AppProject ${f.project} on ${f.instance}: deny window "${f.window.schedule}" for ${f.window.duration}`,
    ),
    `${until ? `lifts itself at ${absoluteTime(until)}` : 'holds until `unfreeze`'}; ${input.manual === 'block' ? 'manual syncs are refused too' : 'manual syncs still go'}. \`unfreeze ${p.target}\` removes exactly these windows.`,
  ];
  return { status: 'succeeded', output: { frozen: written, target: p.target, ...(until ? { until } : {}), summary } };
}

export const freezeAction: RunbookAction = {
  name: 'freeze',
  description: 'Add a deny sync window to each AppProject covering the scope, recording it for unfreeze',
  destructive: true,
  input: freezeInput,
  defaultTimeoutMs: 5 * 60_000,
  preview: freezePreview,
  execute: freezeExecute,
};
