import { z } from 'zod';
import { RollcallError } from '../../../core/errors.js';
import { code } from '../../../core/format.js';
import type { ReplyBlock } from '../../../core/reply.js';
import { suggest } from '../../../core/suggest.js';
import type { FleetApp } from '../../../fleet/model.js';
import type { ArgoApi } from '../../../infra/argocd/api.js';
import { isArgoError } from '../../../infra/argocd/errors.js';
import type { ResourceAction, ResourceRef, ResourceStatus } from '../../../infra/argocd/types.js';
import { LeaseLostError, type CheckpointEntry } from '../run-store.js';
import { postingWindowMs } from './bulk-sync/operations.js';
import type { ActionContext, ActionPreview, PreviewContext, RunbookAction, StepOutcome } from './types.js';

/**
 * One Argo CD resource action on one resource of an app (`argocd app actions run APP ACTION --kind K
 * --resource-name N`): a Deployment's restart, a CronJob's create-job, a Rollout's promote-full. Argo CD runs the
 * action's Lua on the live object and patches it (or creates what it returns) through POST …/resource/actions/v2,
 * under RBAC `applications, action/<group>/<kind>/<action>` on the app.
 *
 * Argo CD runs an action its discovery calls disabled all the same, so the preview asks its action list first and
 * refuses an action it does not offer now. Actions are not idempotent (restart writes a new timestamp, create-job a
 * new Job), so the POST is sent at most once: a `sending` mark under the attempt's lease before it, and an answer
 * lost in transit is looked for in the app's events (Argo CD records "ran action …" there) rather than sent again.
 */

export const resourceActionInput = z.object({
  app: z.string().min(1, 'expected the app whose resource the action runs on'),
  instance: z.string().optional(),
  kind: z.string().min(1, 'expected the resource kind, e.g. Deployment'),
  name: z.string().min(1, 'expected the resource name'),
  namespace: z.string().optional(),
  group: z.string().optional(),
  action: z.string().min(1, 'expected the action, e.g. restart'),
  /** The action's parameters as `name=value` pairs, comma-separated (Deployment scale: `replicas=3`). */
  params: z.string().optional(),
});
type ResourceActionInput = z.output<typeof resourceActionInput>;

const planSchema = z.object({
  instance: z.string(),
  app: z.string(),
  cluster: z.string(),
  appNamespace: z.string().optional(),
  project: z.string().optional(),
  resource: z.object({
    group: z.string().optional(),
    version: z.string(),
    kind: z.string(),
    namespace: z.string().optional(),
    name: z.string(),
  }),
  action: z.string(),
  params: z.record(z.string(), z.string()),
});
export type ResourceActionPlan = z.infer<typeof planSchema>;

const label = (r: Pick<ResourceStatus, 'kind' | 'name'>) => `${r.kind}/${r.name}`;

/** `action/apps/Deployment/restart`: the RBAC action Argo CD checks on the app. */
export const rbacAction = (r: Pick<ResourceRef, 'group' | 'kind'>, action: string) =>
  `action/${r.group ?? ''}/${r.kind}/${action}`;

function resolveApp(ctx: PreviewContext, input: ResourceActionInput): FleetApp {
  const all = ctx.services.fleet.appsNamed(input.app);
  const found = all.filter((a) => !input.instance || a.instance === input.instance);
  if (!found.length)
    throw new RollcallError(
      'unknown_target',
      `no application ${input.app}${input.instance ? ` on instance ${input.instance}` : ''}`,
      {
        suggestions: suggest(
          input.app,
          ctx.services.fleet.apps().map((a) => a.app.metadata.name),
        ),
      },
    );
  if (found.length > 1)
    throw new RollcallError(
      'ambiguous_target',
      `${input.app} exists on ${found.map((a) => a.instance).join(', ')}: add instance=`,
    );
  return found[0];
}

/** The app's resource the input names (kind in any case; namespace and group when given), as Argo CD lists it. */
export function resolveResource(
  fa: FleetApp,
  want: { kind: string; name: string; namespace?: string; group?: string },
  retry: (resource: string) => string,
): ResourceRef {
  const resources = (fa.app.status?.resources ?? []).filter((r) => !r.hook);
  const matches = resources.filter(
    (r) =>
      r.name === want.name &&
      r.kind.toLowerCase() === want.kind.toLowerCase() &&
      (want.namespace === undefined || (r.namespace ?? '') === want.namespace) &&
      (want.group === undefined || (r.group ?? '') === want.group),
  );
  const app = fa.app.metadata.name;
  if (!matches.length)
    throw new RollcallError(
      'unknown_target',
      `${app} has no resource ${want.kind}/${want.name}${want.namespace !== undefined ? ` in namespace ${want.namespace}` : ''}` +
        `${want.group !== undefined ? ` in group ${want.group || '(core)'}` : ''} (Argo CD lists ${resources.length} for it; \`app ${app}\` shows them).`,
      { suggestions: suggest(`${want.kind}/${want.name}`, resources.map(label)).map(retry) },
    );
  if (matches.length > 1)
    throw new RollcallError(
      'ambiguous_target',
      `${app} has ${matches.length} resources ${want.kind}/${want.name}: ${matches.map((r) => `${r.group || '(core)'} in ${r.namespace || '(cluster)'}`).join(', ')}. Add namespace= or group=.`,
    );
  const r = matches[0];
  return {
    ...(r.group ? { group: r.group } : {}),
    version: r.version,
    kind: r.kind,
    ...((r.namespace ?? fa.app.spec.destination?.namespace)
      ? { namespace: r.namespace ?? fa.app.spec.destination?.namespace }
      : {}),
    name: r.name,
  };
}

/** `replicas=3,force=true` into a map; refuses what is not `name=value`. */
export function parseActionParams(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (text ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const eq = part.indexOf('=');
    if (eq <= 0)
      throw new RollcallError('invalid_params', `an action parameter is name=value, got \`${part}\` (e.g. replicas=3)`);
    out[part.slice(0, eq)] = part.slice(eq + 1);
  }
  return out;
}

/**
 * The action as Argo CD offers it now, or the refusal: an action its discovery does not list for the object as it
 * is, one it lists disabled, parameters it does not take or one it needs and did not get.
 */
export function offeredAction(
  offered: readonly ResourceAction[],
  want: { action: string; params: Record<string, string> },
  where: { what: string; retry: (action: string) => string },
): ResourceAction {
  const enabled = offered.filter((a) => a.disabled !== true).map((a) => a.name);
  const listed = offered.length
    ? `It offers ${offered.map((a) => `\`${a.name}\`${a.disabled ? ' (disabled now)' : ''}`).join(', ')}.`
    : 'It has no action script for the kind, so it offers none.';
  const found = offered.find((a) => a.name === want.action);
  if (!found)
    throw new RollcallError(
      'action_not_offered',
      `Argo CD offers no action \`${want.action}\` for ${where.what}. ${listed} Nothing was sent.`,
      { suggestions: suggest(want.action, enabled).map(where.retry) },
    );
  if (found.disabled)
    throw new RollcallError(
      'action_not_offered',
      `Argo CD offers \`${want.action}\` for ${where.what} but disabled now: its discovery script says it does not apply ` +
        `to the object as it is. ${listed} Nothing was sent.`,
      { suggestions: enabled.slice(0, 3).map(where.retry) },
    );
  const takes = (found.params ?? []).map((p) => p.name);
  for (const name of Object.keys(want.params))
    if (!takes.includes(name))
      throw new RollcallError(
        'invalid_params',
        `\`${want.action}\` ${takes.length ? `takes ${takes.join(', ')}` : 'takes no parameter'}, not \`${name}\`. Nothing was sent.`,
        { suggestions: suggest(name, takes) },
      );
  const missing = takes.filter((t) => want.params[t] === undefined);
  if (missing.length)
    throw new RollcallError(
      'invalid_params',
      `\`${want.action}\` needs ${missing.map((m) => `${m}=…`).join(', ')} (Argo CD's script fails without it). Nothing was sent.`,
    );
  return found;
}

async function preview(ctx: PreviewContext): Promise<ActionPreview> {
  const input = resourceActionInput.parse(ctx.input);
  const fa = resolveApp(ctx, input);
  const app = fa.app.metadata.name;
  const retryResource = (resource: string) => `action ${app} ${resource} ${input.action}`;
  const resource = resolveResource(fa, input, retryResource);
  const what = `${resource.kind}/${resource.name}`;
  const api = ctx.services.argocd.get(fa.instance);
  if (!api) throw new RollcallError('not_configured', `no Argo CD client for instance ${fa.instance}`);
  const ref = { name: app, appNamespace: fa.app.metadata.namespace, project: fa.app.spec.project };
  const params = parseActionParams(input.params);
  // What discovery offers for the live object now: Argo CD would run a disabled or stale action all the same.
  const offered = await api.listResourceActions(ref, resource);
  const action = offeredAction(
    offered,
    { action: input.action, params },
    {
      what: `${what} of ${app}`,
      retry: (a) => `action ${app} ${what} ${a}`,
    },
  );
  const plan: ResourceActionPlan = {
    instance: fa.instance,
    app,
    cluster: fa.cluster,
    ...(fa.app.metadata.namespace ? { appNamespace: fa.app.metadata.namespace } : {}),
    ...(fa.app.spec.project ? { project: fa.app.spec.project } : {}),
    resource,
    action: action.name,
    params,
  };
  const paramText = Object.entries(params)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
  const blocks: ReplyBlock[] = [
    {
      kind: 'fields',
      fields: [
        {
          label: 'Resource',
          value: `${code(what)}${resource.namespace ? ` in ${resource.namespace}` : ''}${resource.group ? ` (${resource.group}/${resource.version})` : ` (${resource.version})`}`,
        },
        { label: 'App', value: `${app} · ${fa.cluster} · ${fa.instance}` },
        {
          label: 'Action',
          value: `${code(action.name)}${action.displayName ? ` (${action.displayName})` : ''}${paramText ? ` with ${paramText}` : ''}`,
        },
        {
          label: 'Argo CD offers now',
          value: offered.map((a) => `${a.name}${a.disabled ? ' (disabled)' : ''}`).join(', '),
        },
      ],
    },
    {
      kind: 'context',
      text:
        `Argo CD runs its ${resource.kind} script for \`${action.name}\` on the live object and applies what it returns; rollcall sends it once ` +
        `and never again by itself (an action is not idempotent). Needs \`p, ROLE, applications, ${rbacAction(resource, action.name)}, ${fa.app.spec.project || 'default'}/${app}, allow\` for rollcall's Argo CD account.`,
    },
  ];
  return {
    targets: [{ instance: fa.instance, app, cluster: fa.cluster }],
    summary: `Run \`${action.name}\` on ${what} of ${app} (${fa.cluster})${paramText ? ` with ${paramText}` : ''}`,
    data: { plan, offered },
    blocks,
  };
}

// ---------- execution ----------

interface ActionCheckpoint extends CheckpointEntry {
  /** sending: marked under the lease, the POST may be on its way; sent: Argo CD answered OK; refused: it said no. */
  state: 'sending' | 'sent' | 'refused';
  /** Redis time of the mark (ms). */
  markedAt?: number;
  /** The names of the matching ResourceActionRan events before the POST: a new one is this run's. */
  eventsBefore?: string[];
  error?: string;
}

/**
 * The app's ResourceActionRan events for this action on this resource (Argo CD's "ran action restart on resource
 * apps/Deployment/web"), by event name; undefined when the events cannot be read. Names, not times: the event
 * carries Argo CD's clock, which need not agree with rollcall's.
 */
async function actionEvents(api: ArgoApi, plan: ResourceActionPlan): Promise<string[] | undefined> {
  const events = await api.resourceEvents(refOf(plan)).catch(() => undefined);
  if (!events) return undefined;
  const r = plan.resource;
  const text = `ran action ${plan.action} on resource ${r.group ?? ''}/${r.kind}/${r.name}`;
  return (events.items ?? [])
    .filter((e) => e.reason === 'ResourceActionRan' && !!e.message?.includes(text))
    .map((e) => e.metadata.name ?? '');
}

const refOf = (plan: ResourceActionPlan) => ({
  name: plan.app,
  appNamespace: plan.appNamespace,
  project: plan.project,
});

function planOf(ctx: ActionContext): ResourceActionPlan | undefined {
  const parsed = z
    .object({ plan: planSchema })
    .safeParse(ctx.run.preview?.byStep?.[ctx.stepId] ?? ctx.run.preview?.data);
  return parsed.success ? parsed.data.plan : undefined;
}

const TRANSIENT = ['unavailable', 'rate_limited', 'timeout', 'network'];

async function execute(ctx: ActionContext): Promise<StepOutcome> {
  const plan = planOf(ctx);
  if (!plan) return { status: 'failed', error: 'the run has no resource action plan (preview missing)' };
  const api = ctx.services.argocd.get(plan.instance);
  if (!api) return { status: 'failed', error: `no Argo CD client for instance ${plan.instance}` };
  const cp = ctx.checkpoint<ActionCheckpoint>();
  const what = `${plan.resource.kind}/${plan.resource.name}`;
  const target = `${plan.instance}/${plan.app}`;
  const doing = `${plan.action} on ${what} of ${plan.app}`;
  const audit = (result: string) =>
    ctx.audit({
      kind: 'argocd.mutation',
      who: ctx.run.requester,
      target,
      message: `run resource action ${doing}`,
      params: {
        resource: plan.resource,
        action: plan.action,
        ...(Object.keys(plan.params).length ? { params: plan.params } : {}),
      },
      result,
    });
  const done = (): StepOutcome => ({
    status: 'succeeded',
    output: { summary: [`Argo CD ran \`${plan.action}\` on ${what} of ${plan.app} (${plan.cluster}).`] },
  });
  try {
    let entry = await cp.get('action');
    if (entry?.state === 'sent') return done();
    if (entry?.state === 'refused') return { status: 'failed', error: entry.error ?? 'Argo CD refused the action' };
    if (entry?.state === 'sending') return settleUncertain(ctx, api, plan, entry, audit, done);
    await ctx.limiter.acquire(plan.instance, ctx.signal);
    const eventsBefore = await actionEvents(api, plan);
    entry = { state: 'sending', markedAt: await ctx.redisNow(), ...(eventsBefore ? { eventsBefore } : {}) };
    // The mark is written under the lease: an attempt that lost it stops here, before the POST.
    await cp.set('action', entry);
    await ctx.assertLease();
    ctx.progress({
      headline: `Running ${doing}`,
      counts: {},
      failing: [],
      updatedAt: new Date(ctx.now()).toISOString(),
    });
    try {
      await api.runResourceAction(refOf(plan), plan.resource, plan.action, plan.params);
    } catch (error) {
      const e = isArgoError(error) ? error : undefined;
      if (!e || e.maybeApplied || TRANSIENT.includes(e.kind)) {
        await audit(`error: ${e?.kind ?? 'unknown'} (may have reached Argo CD)`);
        return settleUncertain(ctx, api, plan, entry, audit, done);
      }
      await cp.set('action', { state: 'refused', error: e.message });
      await audit(`refused: ${e.kind}`);
      return { status: 'failed', error: e.message };
    }
    await cp.set('action', { ...entry, state: 'sent' });
    await audit('ok');
    return done();
  } catch (error) {
    if (error instanceof LeaseLostError) return { status: 'interrupted' };
    throw error;
  }
}

/**
 * A POST that may have reached Argo CD (its answer lost, or a worker gone mid-call): never sent again. Argo CD's
 * ResourceActionRan event since the mark says it ran. It is looked for until the window in which the POST could
 * still land has passed; without one then, the run fails saying it cannot tell.
 */
async function settleUncertain(
  ctx: ActionContext,
  api: ArgoApi,
  plan: ResourceActionPlan,
  entry: ActionCheckpoint,
  audit: (result: string) => Promise<void>,
  done: () => StepOutcome,
): Promise<StepOutcome> {
  const windowMs = postingWindowMs(
    ctx.services.config.instances.find((i) => i.name === plan.instance)?.timeout ?? 30_000,
  );
  // Without the events from before the POST, no event can be told to be this run's.
  // The checkpoint goes through Redis' cjson, which writes an empty list back as `{}`: no events before.
  const listed = entry.eventsBefore;
  const before = listed ? new Set(Array.isArray(listed) ? listed : []) : undefined;
  const look = async () => {
    const names = before && (await actionEvents(api, plan));
    return names ? names.some((n) => !before!.has(n)) : undefined;
  };
  let ran = await look();
  while (!ran && before && !ctx.signal.aborted && (await ctx.redisNow()) < (entry.markedAt ?? 0) + windowMs) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    ran = await look();
  }
  if (ran) {
    await ctx.checkpoint<ActionCheckpoint>().set('action', { ...entry, state: 'sent' });
    await audit('ok (found in the app events after a lost answer)');
    return done();
  }
  const error =
    `rollcall cannot tell whether Argo CD ran \`${plan.action}\` on ${plan.resource.kind}/${plan.resource.name} of ${plan.app}: ` +
    `its request may have arrived, and ${ran === false ? 'the app shows no "ran action" event since' : 'the app events could not be read'}. ` +
    `It was not sent again (an action is not idempotent): check \`app ${plan.app}\` and the resource before running it again.`;
  await ctx.checkpoint<ActionCheckpoint>().set('action', { ...entry, state: 'refused', error });
  return { status: 'failed', error };
}

export const resourceActionAction: RunbookAction = {
  name: 'resource-action',
  description:
    'Run one Argo CD resource action (restart, create-job, promote-full…) on one resource of an app, as Argo CD offers it now',
  destructive: true,
  pausable: false,
  input: resourceActionInput,
  defaultTimeoutMs: 5 * 60_000,
  preview,
  execute,
};
