import { z } from 'zod';
import { isArgoError } from '../../../infra/argocd/errors.js';
import type { Application, RevisionHistory } from '../../../infra/argocd/types.js';
import { COMPLETED_PHASES } from '../../../infra/argocd/types.js';
import { historyImages } from '../../../infra/argocd/objects.js';
import { RollcallError } from '../../../core/errors.js';
import { code, when } from '../../../core/format.js';
import type { ReplyBlock } from '../../../core/reply.js';
import type { FleetApp } from '../../../fleet/model.js';
import { automatedEnabled } from '../../../fleet/rollingsync.js';
import { LeaseLostError, type Checkpoint } from '../run-store.js';
import { postingWindowMs } from './bulk-sync/operations.js';
import { nextAppState, type AppCheckpoint, type AppEvent } from './sync-progress.js';
import type { ActionContext, ActionPreview, PreviewContext, RunbookAction, StepOutcome } from './types.js';

/**
 * `argocd app rollback APP [ID]` as a runbook step. Argo CD's Rollback is "a convenience around Sync":
 * it writes a sync operation to the revision and source of history entry ID. It refuses while auto-sync
 * is on (auto-sync would put git's revision straight back), for an ID not in status.history, and while
 * another operation is pending. Without ID the CLI takes the previous entry (history[len-2]).
 *
 * The POST is sent at most once in effect, as bulk-sync sends a sync: a `posting` mark under the lease
 * first, a lost answer verified by reading the app, never re-sent unless Argo CD shows, after the window
 * in which the POST could still land, no operation at all since the mark. A rollback carries no `infos`
 * (ApplicationRollbackRequest has none), so its operation is recognised by what it is: a sync to the
 * entry's revision that appeared after the mark.
 */

export const rollbackInput = z.object({
  app: z.string().min(1, 'expected the app to roll back'),
  instance: z.string().optional(),
  /** status.history id; absent = the previous deployment, as the argocd CLI does. */
  id: z.number().int().min(0, 'a history id is 0 or more (see `app NAME`, Recent deployments)').optional(),
  prune: z.boolean().default(false),
  dryRun: z.boolean().default(false),
});

const planSchema = z.object({
  instance: z.string(),
  app: z.string(),
  cluster: z.string(),
  appNamespace: z.string().optional(),
  project: z.string().optional(),
  id: z.number(),
  revision: z.string().optional(),
  revisions: z.array(z.string()).optional(),
});
export type RollbackPlan = z.infer<typeof planSchema>;

export interface RollbackCheckpoint extends AppCheckpoint {
  /** operationState.startedAt read right before the POST (null: none): an operation since has another. */
  opBefore?: string | null;
  /** The highest status.history id before the POST. */
  historyBefore?: number;
}

const shortRev = (r: string | undefined) => (r && /^[0-9a-f]{40}$/.test(r) ? r.slice(0, 7) : (r ?? '(none)'));
const revsOf = (h: { revision?: string; revisions?: string[] }) =>
  h.revisions?.length ? h.revisions : h.revision ? [h.revision] : [];
const revText = (h: { revision?: string; revisions?: string[] }) =>
  revsOf(h)
    .map((r) => code(shortRev(r)))
    .join(', ') || '(no revision)';
const byWhom = (h: RevisionHistory) =>
  h.initiatedBy?.username ? ` by ${h.initiatedBy.username}` : h.initiatedBy?.automated ? ' by auto-sync' : '';
const sameRevs = (a: string[], b: string[]) => a.length === b.length && a.every((r, i) => r === b[i]);
const imageList = (images: string[]) =>
  images.length
    ? `${images.slice(0, 5).map(code).join(', ')}${images.length > 5 ? ` and ${images.length - 5} more` : ''}`
    : undefined;

/**
 * Images before → after: what the app runs now (status.summary.images) and what the history entry pinned
 * through its source, the only images Argo CD records per deployment.
 */
function imagesChange(app: Application, entry: RevisionHistory): { now: string[]; then: string[]; text: string } {
  const now = app.status?.summary?.images ?? [];
  const then = historyImages(entry);
  const before = imageList(now) ?? 'none reported';
  const after = imageList(then) ?? `none pinned in history #${entry.id} (the manifests at that revision name them)`;
  return { now, then, text: `${before} → ${after}` };
}

function resolveApp(ctx: PreviewContext, name: string, instance?: string): FleetApp {
  const found = ctx.services.fleet.appsNamed(name).filter((a) => !instance || a.instance === instance);
  if (!found.length)
    throw new RollcallError('unknown_target', `no application ${name}${instance ? ` on instance ${instance}` : ''}`);
  if (found.length > 1)
    throw new RollcallError(
      'ambiguous_target',
      `${name} exists on ${found.map((a) => a.instance).join(', ')}: add instance=`,
    );
  return found[0];
}

/** A pending or running operation, in words, or undefined. */
function operationInProgress(app: Application): string | undefined {
  if (app.operation)
    return `an operation requested by ${app.operation.initiatedBy?.username ?? (app.operation.initiatedBy?.automated ? 'auto-sync' : 'someone')} is pending`;
  const st = app.status?.operationState;
  if (st && (st.phase === 'Running' || st.phase === 'Terminating'))
    return `a sync by ${st.operation?.initiatedBy?.username ?? 'auto-sync'} is ${st.phase.toLowerCase()} (started ${when(st.startedAt)})`;
  return undefined;
}

/** The history entry a rollback goes to, as the CLI picks it; refusals carry Argo CD's reason. */
export function rollbackEntry(app: Application, id: number | undefined): RevisionHistory {
  const history = app.status?.history ?? [];
  const name = app.metadata.name;
  const listed = history
    .slice(-5)
    .reverse()
    .map((h) => `#${h.id} ${shortRev(revsOf(h)[0])}`)
    .join(', ');
  if (id === undefined) {
    if (history.length < 2) {
      throw new RollcallError(
        'unknown_history_id',
        `application '${name}' should have at least two successful deployments to roll back to the previous one${history.length ? ` (its history: ${listed})` : ''}.`,
      );
    }
    return history[history.length - 2];
  }
  const entry = history.find((h) => h.id === id);
  if (!entry)
    throw new RollcallError(
      'unknown_history_id',
      `application '${name}' does not have deployment id '${id}' in history${listed ? ` (its history, newest first: ${listed}; \`history ${name}\` shows it)` : ' (its history is empty)'}.`,
    );
  return entry;
}

/**
 * The newest history entry deployed before `at` (an operation's startedAt): what an app ran before that
 * operation. Argo CD writes an entry when a sync succeeds, with deployStartedAt = the operation's startedAt,
 * so the sync itself and anything after it are left out. Undefined when nothing was deployed before.
 */
export function entryBefore(app: Application, at: string): RevisionHistory | undefined {
  const before = Date.parse(at);
  const started = (h: RevisionHistory) => Date.parse(h.deployStartedAt ?? h.deployedAt);
  return [...(app.status?.history ?? [])].reverse().find((h) => started(h) < before);
}

/** What a rollback of `app` to `entry` sends; refused as Argo CD refuses an entry recorded without its source. */
export function planRollback(
  where: { instance: string; cluster: string },
  app: Application,
  entry: RevisionHistory,
): RollbackPlan {
  if (!entry.source && !entry.sources?.length) {
    throw new RollcallError(
      'conflict',
      `Argo CD refuses: "cannot rollback to revision deployed with Argo CD v0.11 or lower. sync to revision instead." Use \`sync ${app.metadata.name} revision=${revsOf(entry)[0] ?? 'REV'}\`.`,
    );
  }
  return {
    instance: where.instance,
    app: app.metadata.name,
    cluster: where.cluster,
    appNamespace: app.metadata.namespace,
    project: app.spec.project,
    id: entry.id,
    ...(entry.revisions?.length ? { revisions: [...entry.revisions] } : { revision: entry.revision }),
  };
}

/** `#6 (revision 2222222)`: a plan's target as the live message and the summary say it. */
export const rollbackTarget = (plan: Pick<RollbackPlan, 'id' | 'revision' | 'revisions'>) =>
  `#${plan.id} (revision ${revsOf(plan).map(shortRev).join(', ')})`;

/** Argo CD's own refusals, checked on a live read before anything is offered (Rollback's order). */
function refusal(app: Application): RollcallError | undefined {
  const name = app.metadata.name;
  if (app.metadata.deletionTimestamp)
    return new RollcallError('conflict', `application ${name} is deleting: there is nothing to roll back.`);
  if (automatedEnabled(app.spec.syncPolicy?.automated)) {
    return new RollcallError(
      'auto_sync_enabled',
      `Argo CD refuses: "rollback cannot be initiated when auto-sync is enabled" (auto-sync would sync ${name} straight back to git). ` +
        `Turn auto-sync off first: \`pause ${name}\` does it and records it (\`resume ${name}\` restores it), then roll back. Nothing was changed.`,
    );
  }
  return undefined;
}

async function preview(ctx: PreviewContext): Promise<ActionPreview> {
  const input = rollbackInput.parse(ctx.input);
  const fa = resolveApp(ctx, input.app, input.instance);
  const api = ctx.services.argocd.get(fa.instance);
  if (!api) throw new RollcallError('not_configured', `no Argo CD client for instance ${fa.instance}`);
  // History and syncPolicy as Argo CD has them now, not as the mirror last heard.
  const app = await api.getApplication({
    name: fa.app.metadata.name,
    appNamespace: fa.app.metadata.namespace,
    project: fa.app.spec.project,
  });
  const refused = refusal(app);
  if (refused) throw refused;
  const entry = rollbackEntry(app, input.id);
  const plan = planRollback({ instance: fa.instance, cluster: fa.cluster }, app, entry);
  const busy = operationInProgress(app);
  if (busy) {
    throw new RollcallError(
      'argocd_operation_in_progress',
      `${fa.app.metadata.name}: ${busy}. Argo CD refuses a rollback meanwhile: wait for it, or \`terminate-op ${fa.app.metadata.name}\`, then roll back. Nothing was changed.`,
    );
  }
  const history = app.status?.history ?? [];
  const current = history[history.length - 1];
  const deployedNow = current
    ? `${revText(current)} (history #${current.id}, deployed ${when(current.deployedAt)}${byWhom(current)})`
    : 'nothing recorded in its history';
  const target = `${revText(entry)} (history #${entry.id}, deployed ${when(entry.deployedAt)}${byWhom(entry)})`;
  const src = entry.source ?? entry.sources?.[0];
  const images = imagesChange(app, entry);
  const blocks: ReplyBlock[] = [
    {
      kind: 'fields',
      fields: [
        { label: 'Deployed now', value: deployedNow },
        { label: input.dryRun ? 'Would roll back to' : 'Rolls back to', value: target },
        { label: `Images (now → #${entry.id})`, value: images.text },
        { label: 'Cluster', value: `${fa.cluster} · ${fa.instance}` },
        { label: 'Options', value: `prune=${input.prune} · dryRun=${input.dryRun}` },
        ...(src
          ? [
              {
                label: 'Source of that deployment',
                value: `${src.repoURL}${src.path ? ` · path ${code(src.path)}` : src.chart ? ` · chart ${code(src.chart)}` : ''} @ ${code(src.targetRevision || 'HEAD')}`,
              },
            ]
          : []),
      ],
    },
  ];
  const notes = input.dryRun
    ? [
        `dryRun=true: Argo CD runs the rollback's sync as a dry run. Nothing is applied: ${plan.app} stays at ${current ? revText(current) : 'what it runs now'}.`,
      ]
    : [
        `${plan.app} will be OutOfSync with git afterwards and stay at this revision until someone syncs it (auto-sync is off, as Argo CD requires).`,
        "Argo CD records the operation as started by rollcall's own account: a rollback request has no infos to name who asked, so rollcall's audit log records that.",
      ];
  if (current && current.id === entry.id)
    notes.unshift(`History #${entry.id} is what is deployed now: this re-syncs the same revision.`);
  if (input.prune)
    notes.push(
      input.dryRun
        ? 'prune=true: resources that the old revision does not have would be deleted.'
        : 'prune=true: resources that the old revision does not have are deleted.',
    );
  blocks.push({
    kind: 'list',
    title: 'Before confirming',
    items: notes.map((text) => ({ text, tone: 'warn' as const })),
  });
  return {
    targets: [{ instance: fa.instance, app: plan.app, cluster: fa.cluster }],
    summary: `${input.dryRun ? 'Dry run: would roll back' : 'Roll back'} ${plan.app} on ${fa.cluster} from ${current ? revText(current) : '(nothing recorded)'} to ${revText(entry)} (history #${entry.id}, deployed ${when(entry.deployedAt)})${input.prune ? ' with prune' : ''}${input.dryRun ? '; nothing is applied' : ''}.`,
    data: { plan, deployedNow: current ?? null, target: entry, images: { now: images.now, then: images.then } },
    blocks,
  };
}

// ---------- execution ----------

function planOf(ctx: ActionContext): RollbackPlan | undefined {
  const parsed = z
    .object({ plan: planSchema })
    .safeParse(ctx.run.preview?.byStep?.[ctx.stepId] ?? ctx.run.preview?.data);
  return parsed.success ? parsed.data.plan : undefined;
}

type Seen = 'ours' | 'other' | 'none';

/**
 * What the app shows since the `posting` mark: a sync to the plan's revision that appeared after it
 * (requested, running, done, or recorded in history) is the rollback; any other new operation means
 * the app cannot tell whether ours took; nothing new means it did not (yet).
 */
type OperationLike =
  { sync?: { revision?: string; revisions?: string[] }; initiatedBy?: { automated?: boolean } } | undefined;

/** A sync to the plan's revisions that no automation started: what a rollback's operation looks like. */
function isRollbackTo(op: OperationLike, plan: Pick<RollbackPlan, 'revision' | 'revisions'>): boolean {
  return !!op?.sync && !op.initiatedBy?.automated && sameRevs(revsOf(op.sync), revsOf(plan));
}

/**
 * After Argo CD accepted the rollback: its operation's end, or undefined while it is requested or running.
 * The last operation before ours is told apart by its startedAt, and, when both started within the same
 * second (startedAt has seconds only), by being a sync to the rollback's revisions.
 */
export function acceptedRollbackEnd(
  app: Application,
  plan: Pick<RollbackPlan, 'revision' | 'revisions'>,
  opBefore: string | null | undefined,
): { phase: string; message?: string } | undefined {
  const st = app.status?.operationState;
  if (app.operation || !st) return undefined;
  const ours = st.startedAt !== (opBefore ?? undefined) || isRollbackTo(st.operation, plan);
  return ours && COMPLETED_PHASES.includes(st.phase)
    ? { phase: st.phase, ...(st.message ? { message: st.message } : {}) }
    : undefined;
}

export function rollbackSeen(
  app: Application,
  plan: Pick<RollbackPlan, 'revision' | 'revisions'>,
  mark: { opBefore?: string | null; historyBefore?: number },
): Seen {
  const want = revsOf(plan);
  if (app.operation) return isRollbackTo(app.operation, plan) ? 'ours' : 'other';
  const st = app.status?.operationState;
  const newOp = st && st.startedAt !== (mark.opBefore ?? undefined);
  if (newOp && isRollbackTo(st.operation, plan)) return 'ours';
  const newHistory = (app.status?.history ?? []).filter((h) => h.id > (mark.historyBefore ?? -1));
  if (newHistory.some((h) => sameRevs(revsOf(h), want))) return 'ours';
  return newOp || newHistory.length ? 'other' : 'none';
}

/** What a rollback is sent with. */
export interface RollbackOptions {
  prune: boolean;
  dryRun: boolean;
}

/** What one attempt's loop shares with the functions that send and follow the rollback. */
export interface RollbackStep {
  ctx: ActionContext;
  input: RollbackOptions;
  plan: RollbackPlan;
  api: NonNullable<ReturnType<ActionContext['services']['argocd']['get']>>;
  ref: { name: string; appNamespace?: string; project?: string };
  key: string;
  target: string;
  windowMs: number;
  auditParams: Record<string, unknown>;
  /** What the live message says while the request is sent, and what the audit records: a dry run says it would. */
  doing: string;
  auditMessage: string;
  /** The checkpoint entry as this attempt last saw it. */
  state(): RollbackCheckpoint;
  apply(event: AppEvent, extra?: Partial<RollbackCheckpoint>): Promise<boolean>;
  progress(headline: string): void;
  sleep(ms: number): Promise<void>;
}

/**
 * The POST, at most once: the rate limiter, the `posting` mark with what the app showed before it,
 * a check that this process was not frozen since the mark, then the request. Whether it was sent.
 */
async function sendRollback(step: RollbackStep, app: Application): Promise<boolean> {
  const { ctx, input, plan, api, ref, key, windowMs, auditParams, doing, auditMessage, apply, progress } = step;
  await ctx.limiter.acquire(plan.instance, ctx.signal);
  const before = performance.now();
  const history = app.status?.history ?? [];
  const claimed = await apply(
    { type: 'claim' },
    {
      opBefore: app.status?.operationState?.startedAt ?? null,
      historyBefore: history.length ? Math.max(...history.map((h) => h.id)) : -1,
    },
  );
  if (!claimed) return false;
  // A process frozen since its mark must not send late: the window that proves "never took" has started.
  if (ctx.signal.aborted || performance.now() - before > windowMs / 2) return false;
  progress(doing);
  try {
    await api.rollback(ref, { id: plan.id, prune: input.prune, dryRun: input.dryRun });
    await apply({ type: 'answered' });
    await ctx.audit({
      kind: 'argocd.mutation',
      who: ctx.run.requester,
      target: key,
      message: auditMessage,
      params: auditParams,
      result: 'accepted',
    });
  } catch (error) {
    const e = isArgoError(error) ? error : undefined;
    const message = e?.argoMessage ?? (error as Error).message;
    if (!e || e.maybeApplied || ['unavailable', 'rate_limited', 'timeout', 'network'].includes(e.kind)) {
      // It may have reached Argo CD: read back, never re-sent blindly.
      await apply({ type: 'answerLost', note: message });
    } else {
      await apply({ type: 'refused', reason: e.message }, { reason: `rollback refused: ${e.message}` });
    }
    await ctx.audit({
      kind: 'argocd.mutation',
      who: ctx.run.requester,
      target: key,
      message: auditMessage,
      params: auditParams,
      result: `error: ${e?.kind ?? 'unknown'}`,
    });
  }
  return true;
}

/** A `posting` or `unknown` rollback: found, undecidable, or (after the posting window) never taken. */
async function followUncertain(step: RollbackStep, app: Application): Promise<'notApplied' | undefined> {
  const { ctx, plan, windowMs, apply, progress, sleep } = step;
  const s = step.state();
  const seen = rollbackSeen(app, plan, s);
  if (seen === 'ours') await apply({ type: 'found' });
  else if (seen === 'other') {
    await apply(
      s.state === 'posting'
        ? { type: 'refused', reason: 'unknown outcome' }
        : { type: 'timedOut', reason: 'unknown outcome' },
      {
        reason: `could not tell whether the rollback reached Argo CD: another operation ran on ${plan.app} since it was sent. It was not sent again; check \`app ${plan.app}\` before rolling back again.`,
      },
    );
  } else if ((await ctx.redisNow()) > (s.at ?? 0) + windowMs) {
    // The window in which the POST could still land has passed and Argo CD shows nothing new: it never took.
    await apply({ type: 'notApplied', windowPassed: true });
    return 'notApplied';
  } else {
    progress(`waiting to see whether Argo CD took the rollback of ${plan.app} (its answer was lost)`);
    await sleep(1000);
  }
  return undefined;
}

/** The checkpoint entry for this app, made `pending` on the first attempt. */
async function initialEntry(
  cp: Checkpoint<RollbackCheckpoint>,
  key: string,
  plan: RollbackPlan,
): Promise<RollbackCheckpoint> {
  const s = await cp.get(key);
  if (s) return s;
  await cp.transition(key, undefined, {
    state: 'pending',
    instance: plan.instance,
    app: plan.app,
    cluster: plan.cluster,
    wave: 0,
  });
  return (await cp.get(key))!;
}

/**
 * What one attempt works with: the plan's words, the checkpoint entry and the helpers that move it. The
 * entry is `checkpoint`'s `instance/app` (made pending if absent), so a step that rolls back many apps
 * keeps them apart from its own entries; `progress` says what is happening (default: the step's headline).
 */
export async function prepareRollback(
  ctx: ActionContext,
  input: RollbackOptions,
  plan: RollbackPlan,
  api: RollbackStep['api'],
  where: { checkpoint?: Checkpoint<RollbackCheckpoint>; progress?: (line: string) => void } = {},
): Promise<RollbackStep> {
  const ref = { name: plan.app, appNamespace: plan.appNamespace, project: plan.project };
  const key = `${plan.instance}/${plan.app}`;
  const target = rollbackTarget(plan);
  // A dry run changes nothing: every word of it says what it would do, never that it did.
  const doing = input.dryRun
    ? `dry run: would roll back ${plan.app} to ${target}`
    : `rolling back ${plan.app} to ${target}`;
  const auditMessage = input.dryRun
    ? `dry run of a rollback of ${plan.app} to ${target} (nothing applied)`
    : `rollback ${plan.app} to ${target}`;
  const windowMs = postingWindowMs(
    ctx.services.config.instances.find((i) => i.name === plan.instance)?.timeout ?? 30_000,
  );
  const cp = where.checkpoint ?? ctx.checkpoint<RollbackCheckpoint>();
  const auditParams = {
    id: plan.id,
    revision: plan.revision ?? plan.revisions,
    prune: input.prune,
    dryRun: input.dryRun,
    attribution: "ApplicationRollbackRequest has no infos: Argo CD names only rollcall's account as initiator",
  };

  let s = await initialEntry(cp, key, plan);
  /** Compare-and-set from the state last seen; on a lost race the stored entry is taken. */
  const apply = async (event: AppEvent, extra: Partial<RollbackCheckpoint> = {}): Promise<boolean> => {
    const t = nextAppState(s, event);
    if (!t.ok) return false;
    const next: RollbackCheckpoint = { ...t.next, ...extra };
    if (await cp.transition(key, s.state, next)) {
      s = next;
      return true;
    }
    s = (await cp.get(key)) ?? s;
    return false;
  };
  const ownProgress = (headline: string) =>
    ctx.progress({
      headline,
      counts: {},
      failing:
        s.state === 'failed' || s.state === 'timeout'
          ? [{ app: plan.app, instance: plan.instance, cluster: plan.cluster, reason: s.reason ?? s.state }]
          : [],
      updatedAt: new Date(ctx.now()).toISOString(),
    });
  const progress = where.progress ?? ownProgress;
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        ctx.signal.removeEventListener('abort', done);
        resolve();
      }
      ctx.signal.addEventListener('abort', done);
    });
  return {
    ctx,
    input,
    plan,
    api,
    ref,
    key,
    target,
    windowMs,
    auditParams,
    doing,
    auditMessage,
    state: () => s,
    apply,
    progress,
    sleep,
  };
}

/** How the step ends now, if it does: the run stopped it, or the checkpoint entry is settled. */
function stepEnd(step: RollbackStep): StepOutcome | undefined {
  const { ctx, input, plan, target } = step;
  const s = step.state();
  if (ctx.signal.aborted) {
    const reason = String(ctx.signal.reason);
    if (reason === 'abort') return { status: 'aborted' };
    if (reason === 'timeout')
      return { status: 'failed', error: `timed out following the rollback of ${plan.app} (state ${s.state})` };
    if (reason === 'lease-lost' || reason === 'stale') return { status: 'interrupted' };
    return { status: 'paused', reason: reason === 'pause' ? 'paused by a user' : reason };
  }
  if (s.state === 'done') {
    const summary = [
      input.dryRun
        ? `would roll back ${plan.app} to ${target}; dry run: nothing applied`
        : `${plan.app} rolled back to ${target}; it is OutOfSync with git until the next sync`,
    ];
    return { status: 'succeeded', output: { app: plan.app, instance: plan.instance, id: plan.id, summary } };
  }
  if (s.state === 'failed' || s.state === 'timeout')
    return { status: 'failed', error: `${plan.app}: ${s.reason ?? s.state}` };
  return undefined;
}

/** The app as Argo CD has it, or undefined after a failed read (the entry moved, or a pause before retrying). */
async function readApp(step: RollbackStep): Promise<Application | undefined> {
  const { api, ref, plan, apply, progress, sleep } = step;
  try {
    return await api.getApplication(ref);
  } catch (error) {
    if (isArgoError(error) && ['not_found', 'forbidden'].includes(error.kind) && step.state().state === 'pending') {
      await apply({ type: 'gone', reason: error.message });
      return undefined;
    }
    progress(`reading ${plan.app} from Argo CD failed (${(error as Error).message}); trying again`);
    await sleep(1000);
    return undefined;
  }
}

/**
 * A `pending` rollback: refused if the app changed since the preview, else sent, once per attempt.
 * Whether this attempt sent it now.
 */
async function startRollback(step: RollbackStep, app: Application, sent: boolean): Promise<boolean> {
  const { apply, sleep } = step;
  if (sent) {
    await sleep(500);
    return false;
  }
  const busy = operationInProgress(app);
  if (busy) {
    await apply({
      type: 'gone',
      reason: `${busy} (since the preview); rollback not sent. Wait for it or terminate it, then roll back again.`,
    });
    return false;
  }
  const refused = refusal(app);
  if (refused) {
    await apply({ type: 'gone', reason: `${refused.message} (changed since the preview)` });
    return false;
  }
  return sendRollback(step, app);
}

/** An `accepted` rollback: its sync's end settles the entry; until then the live message shows its phase. */
async function followAccepted(step: RollbackStep, app: Application): Promise<void> {
  const { plan, doing, apply, progress, sleep } = step;
  const s = step.state();
  const st = app.status?.operationState;
  const newOp = !app.operation && st && st.startedAt !== (s.opBefore ?? undefined);
  const end = acceptedRollbackEnd(app, plan, s.opBefore);
  if (end) {
    if (end.phase === 'Succeeded') await apply({ type: 'finished', succeeded: true });
    else
      await apply({
        type: 'finished',
        succeeded: false,
        reason: `the rollback's sync ended ${end.phase}${end.message ? `: ${end.message}` : ''}`,
      });
    return;
  }
  progress(`${doing}${st && newOp ? ` · ${st.phase}${st.message ? `: ${st.message}` : ''}` : ' · requested'}`);
  await sleep(1000);
}

/** The rollback's entry has ended: rolled back (done), or not (failed, timeout). */
export const rollbackSettled = (s: RollbackCheckpoint) =>
  s.state === 'done' || s.state === 'failed' || s.state === 'timeout';

/**
 * Sends the rollback at most once and follows it until its entry settles, or until the step's signal
 * stops this attempt (the entry then says where a later attempt continues). A lost lease throws LeaseLostError.
 */
export async function driveRollback(step: RollbackStep): Promise<void> {
  // This attempt sent the POST: it never sends it again, whatever the stored state says.
  let sent = false;
  while (!step.ctx.signal.aborted && !rollbackSettled(step.state())) {
    const app = await readApp(step);
    if (!app) continue;
    const state = step.state().state;
    if (state === 'pending') {
      if (await startRollback(step, app, sent)) sent = true;
    } else if (state === 'posting' || state === 'unknown') {
      if ((await followUncertain(step, app)) === 'notApplied') sent = false;
    } else if (state === 'accepted') {
      await followAccepted(step, app);
    }
  }
}

async function execute(ctx: ActionContext): Promise<StepOutcome> {
  const input = rollbackInput.parse(ctx.input);
  const plan = planOf(ctx);
  if (!plan) return { status: 'failed', error: 'the run has no rollback plan (preview missing)' };
  const api = ctx.services.argocd.get(plan.instance);
  if (!api) return { status: 'failed', error: `no Argo CD client for instance ${plan.instance}` };
  const step = await prepareRollback(ctx, input, plan, api);
  try {
    await driveRollback(step);
  } catch (error) {
    if (error instanceof LeaseLostError) return { status: 'interrupted' };
    throw error;
  }
  return stepEnd(step)!;
}

export const rollbackAction: RunbookAction = {
  name: 'rollback',
  description: 'Roll an app back to a deployment in its history (argocd app rollback), sent once, followed to the end',
  destructive: true,
  pausable: false,
  input: rollbackInput,
  defaultTimeoutMs: 15 * 60_000,
  preview,
  execute,
};
