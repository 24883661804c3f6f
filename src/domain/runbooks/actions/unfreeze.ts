import { z } from 'zod';
import { RollcallError } from '../../../core/errors.js';
import { absoluteTime, mention, plural } from '../../../core/format.js';
import { describeFreeze } from '../../../fleet/freeze.js';
import {
  FreezeError,
  editedMessage,
  findFreezeWindow,
  freezesByRun,
  removeFreezeWindow,
  type Freeze,
  type FreezeStore,
} from '../freeze.js';
import type { ActionContext, ActionPreview, PreviewContext, RunbookAction, StepOutcome } from './types.js';

const unfreezeInput = z.object({
  /** The freeze as `frozen` lists it (`project=payments`, `auth-* cluster=prod-eu1`); empty: the only one. */
  target: z.string().optional(),
  project: z.string().optional(),
  instance: z.string().optional(),
  /** The run that froze (what the incident's button names). */
  run: z.string().optional(),
});
type UnfreezeInput = z.output<typeof unfreezeInput>;

function store(ctx: PreviewContext | ActionContext): FreezeStore {
  if (!ctx.services.freezes)
    throw new RollcallError('unavailable', 'unfreezing needs Redis, where freezes are recorded');
  return ctx.services.freezes;
}

/** The recorded freezes the input names; refuses what names none, or several freezes when it names nothing. */
export async function freezesNamed(freezeStore: FreezeStore, input: UnfreezeInput): Promise<Freeze[]> {
  const all = (await freezeStore.list()).filter((f) => !input.instance || f.instance === input.instance);
  const target = input.target?.trim();
  let found: Freeze[];
  if (input.run) found = all.filter((f) => f.runId === input.run);
  else {
    found = target ? all.filter((f) => f.target === target) : [];
    // `unfreeze project=payments` also lifts rollcall's freezes of apps inside that project.
    if (!found.length && input.project) found = all.filter((f) => f.project === input.project);
    if (!target && !input.project) found = all;
  }
  const named = input.run ?? target ?? (input.project ? `project=${input.project}` : undefined);
  if (!found.length) {
    const listed = [...new Set(all.map((f) => f.target))];
    throw new FreezeError(
      'not_frozen',
      named
        ? `${named} is not frozen by rollcall${listed.length ? ` (frozen: ${listed.join('; ')})` : ''}`
        : 'rollcall has frozen nothing',
      listed.map((t) => `unfreeze ${t}`),
    );
  }
  const runs = freezesByRun(found);
  if (!named && runs.length > 1)
    throw new FreezeError(
      'ambiguous_target',
      `rollcall holds ${runs.length} freezes: ${runs.map((r) => `\`${r[0].target}\``).join(', ')}. Say which: \`unfreeze <target>\`.`,
      runs.map((r) => `unfreeze ${r[0].target}`),
    );
  return found;
}

async function unfreezePreview(ctx: PreviewContext): Promise<ActionPreview> {
  const input = unfreezeInput.parse(ctx.input);
  const freezes = await freezesNamed(store(ctx), input);
  const lines: { text: string; detail?: string }[] = [];
  // Checked before anything is asked: a window someone edited is refused now, with nothing changed.
  for (const f of freezes) {
    const api = ctx.services.argocd.get(f.instance);
    if (!api) throw new FreezeError('unknown_target', `no Argo CD instance named ${f.instance}`);
    const found = findFreezeWindow(await api.getProject(f.project), f);
    if (found.state === 'edited')
      throw new FreezeError('conflict', editedMessage(f, f.instance, found.index, found.now));
    lines.push({
      text: `AppProject *${f.project}* on ${f.instance}: ${found.state === 'present' ? `remove the deny window "${f.window.schedule}" for ${f.window.duration}` : 'its window is already gone (removed by hand or by Argo CD admins): forget the record'}`,
      detail: `frozen by ${mention(f.by)} at ${absoluteTime(f.at)}${f.incident ? ` for ${f.incident}` : ''}`,
    });
  }
  return {
    targets: freezes.map((f) => ({ instance: f.instance, app: `appproject:${f.project}` })),
    summary: `Unfreeze ${[...new Set(freezes.map((f) => f.target))].join('; ')}: remove rollcall's window from ${plural(freezes.length, 'AppProject')}`,
    data: { freezes },
    blocks: [
      { kind: 'list', title: 'Removes exactly the windows rollcall wrote, and nothing else', items: lines },
      { kind: 'context', text: `${describeFreeze(freezes[0])}. Held syncs run once the window is gone.` },
    ],
  };
}

async function unfreezeExecute(ctx: ActionContext): Promise<StepOutcome> {
  const previewed = (
    (ctx.run.preview?.byStep?.[ctx.stepId] ?? ctx.run.preview?.data) as { freezes?: Freeze[] } | undefined
  )?.freezes;
  if (!previewed) return { status: 'failed', error: 'the run has no unfreeze preview' };
  // The windows shown in the preview, those still recorded: a retried attempt skips what it already removed.
  const recorded = new Set((await store(ctx).list()).map((f) => `${f.runId}/${f.instance}/${f.project}`));
  const freezes = previewed.filter((f) => recorded.has(`${f.runId}/${f.instance}/${f.project}`));
  const removed: string[] = [];
  const gone: string[] = [];
  for (const f of freezes) {
    const api = ctx.services.argocd.get(f.instance);
    if (!api) return { status: 'failed', error: `no Argo CD instance named ${f.instance}`, output: { removed } };
    await ctx.limiter.acquire(f.instance, ctx.signal);
    await ctx.assertLease();
    let outcome: 'changed' | 'done';
    try {
      outcome = await removeFreezeWindow(api, f);
    } catch (error) {
      if (!(error instanceof FreezeError)) throw error;
      await ctx.audit({
        kind: 'argocd.mutation',
        who: ctx.run.requester,
        target: `${f.instance}/appproject:${f.project}`,
        message: `unfreeze AppProject ${f.project}: remove rollcall's deny window`,
        params: { window: f.window, frozenBy: f.by, frozenRun: f.runId },
        result: `refused: ${error.message}`,
      });
      return { status: 'failed', error: error.message, output: { removed } };
    }
    (outcome === 'changed' ? removed : gone).push(`${f.instance}/${f.project}`);
    await ctx.audit({
      kind: 'argocd.mutation',
      who: ctx.run.requester,
      target: `${f.instance}/appproject:${f.project}`,
      message: `unfreeze AppProject ${f.project}: remove rollcall's deny window`,
      params: { window: f.window, frozenBy: f.by, frozenRun: f.runId },
      result: outcome === 'changed' ? 'ok' : 'already gone',
    });
    await store(ctx).remove(f);
  }
  const summary = [
    ...(removed.length ? [`removed rollcall's deny window from ${removed.join(', ')}`] : []),
    ...(gone.length ? [`already gone from ${gone.join(', ')}: record dropped`] : []),
    'held syncs (auto-sync, RollingSync steps) go on at their next reconcile.',
  ];
  return { status: 'succeeded', output: { removed, gone, summary } };
}

export const unfreezeAction: RunbookAction = {
  name: 'unfreeze',
  description: "Remove exactly the deny windows rollcall's freeze wrote",
  destructive: true,
  input: unfreezeInput,
  defaultTimeoutMs: 5 * 60_000,
  preview: unfreezePreview,
  execute: unfreezeExecute,
};
