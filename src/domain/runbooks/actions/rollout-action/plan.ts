import { z } from 'zod';
import { mapConcurrent } from '../../../../core/concurrency.js';
import { RollcallError } from '../../../../core/errors.js';
import { suggest } from '../../../../core/suggest.js';
import { ROLLOUT_GROUP, ROLLOUT_KIND, rolloutResources } from '../../../../fleet/argo-rollouts.js';
import type { FleetApp } from '../../../../fleet/model.js';
import { selectApps } from '../../../../fleet/select.js';
import type { ResourceRef, Rollout } from '../../../../infra/argocd/types.js';
import { assertWavesMatch, planWaves, waveApp, type PlannedApp } from '../bulk-sync/planner.js';
import { parseSelectorParam } from '../bulk-sync/selector.js';
import { resolveMaxUpdate } from '../bulk-sync/wave-spec.js';
import type { PreviewContext } from '../types.js';
import { ROLLOUT_VERBS, argoActionFor, notOfferedReason, snapshot, type RolloutSnapshot } from './verbs.js';

export const rolloutActionInput = z.object({
  selector: z.string().min(1, 'expected a selector such as storefront-*'),
  verb: z.enum(ROLLOUT_VERBS),
  /** promote only: `promote-full` (every remaining step skipped) instead of `resume` (the next step). */
  full: z.boolean().default(false),
  concurrency: z
    .number()
    .int()
    .min(1, 'concurrency must be at least 1 (how many Rollouts are acted on at once)')
    .max(500, 'concurrency is at most 500')
    .default(10),
  /** `;`-separated app-name globs or label selectors, each with an optional `@N`/`@N%`, as bulk-sync reads them. */
  waves: z.string().optional(),
  canary: z.number().int().min(0, 'canary is how many apps go first: 0 or more').default(0),
  /** How long (ms) each Rollout may take to reach the state its action leads to, once Argo CD took the action. */
  timeout: z.number().int().positive('timeout must be longer than 0, e.g. 5m').default(300_000),
  /** How often (ms) a Rollout is read while it is followed. */
  pollMs: z.number().int().min(50).max(60_000).default(1000),
});
export type RolloutActionInput = z.output<typeof rolloutActionInput>;

/** One Rollout the run acts on, with what it was when previewed. */
export interface PlannedRollout extends PlannedApp {
  project?: string;
  appNamespace?: string;
  namespace: string;
  name: string;
  version: string;
  before: RolloutSnapshot;
}

export interface SkippedRollout extends PlannedApp {
  name: string;
  reason: string;
  before?: RolloutSnapshot;
}

export interface RolloutActionWave {
  name: string;
  maxUpdate: number;
  rollouts: PlannedRollout[];
}

/** What the preview stores and the executor follows: the verb, Argo CD's action for it, waves, what is skipped. */
export interface RolloutActionPlan {
  verb: RolloutActionInput['verb'];
  action: string;
  waves: RolloutActionWave[];
  skipped: SkippedRollout[];
  /** How many apps the selector matched, Rollout or not. */
  selected: number;
}

export const rolloutKey = (r: { instance: string; app: string; namespace?: string; name: string }) =>
  `${r.instance}/${r.app}/${r.namespace ?? ''}/${r.name}`;

export const rolloutRef = (r: Pick<PlannedRollout, 'version' | 'namespace' | 'name'>): ResourceRef => ({
  group: ROLLOUT_GROUP,
  version: r.version,
  kind: ROLLOUT_KIND,
  namespace: r.namespace,
  name: r.name,
});

export const appRefOf = (r: Pick<PlannedRollout, 'app' | 'appNamespace' | 'project'>) => ({
  name: r.app,
  ...(r.appNamespace ? { appNamespace: r.appNamespace } : {}),
  ...(r.project ? { project: r.project } : {}),
});

/** Live reads in flight at once for one preview: a fleet's Rollouts without queueing on one server. */
const READS_AT_ONCE = 8;

function candidates(apps: readonly FleetApp[]): Omit<PlannedRollout, 'before'>[] {
  return apps.flatMap((fa) =>
    rolloutResources(fa.app).map((r) => ({
      instance: fa.instance,
      app: fa.app.metadata.name,
      cluster: fa.cluster,
      ...(fa.app.spec?.project ? { project: fa.app.spec.project } : {}),
      ...(fa.app.metadata.namespace ? { appNamespace: fa.app.metadata.namespace } : {}),
      namespace: r.namespace ?? fa.app.spec?.destination?.namespace ?? '',
      name: r.name,
      version: r.version,
    })),
  );
}

/** A selection without a Rollout: the apps that have one and are named alike, and where to look instead. */
function noRollout(ctx: PreviewContext, input: RolloutActionInput, apps: readonly FleetApp[]): RollcallError {
  const withRollouts = ctx.services.fleet
    .apps()
    .filter((fa) => rolloutResources(fa.app).length)
    .map((fa) => fa.app.metadata.name);
  const word = (parseSelectorParam(input.selector).patterns?.[0] ?? input.selector).replace(/[*?[\]{}]/g, '');
  const near = suggest(word, withRollouts, 3);
  const prefixes = [...new Set(withRollouts.map((n) => n.split('-')[0]))].slice(0, 5).map((p) => `${p}-*`);
  const elsewhere =
    input.verb === 'pause' || input.verb === 'resume'
      ? ` \`${input.verb} ${input.selector}\` without kind=rollout ${input.verb === 'pause' ? 'holds' : 'resumes'} a RollingSync ApplicationSet or auto-sync instead.`
      : '';
  const what = apps.length
    ? `none of the ${apps.length} app(s) matching "${input.selector}" deploys an Argo Rollouts Rollout`
    : `no app matches "${input.selector}"`;
  return new RollcallError(
    'unknown_target',
    `Nothing to ${input.verb}: ${what}.${elsewhere}${withRollouts.length ? ` Apps with Rollouts: ${prefixes.join(', ')} (\`rollouts\` lists them).` : ' No app in the fleet has one.'}`,
    { suggestions: near.map((n) => `${input.verb} ${n}`) },
  );
}

type Looked = { rollout: PlannedRollout } | { skipped: SkippedRollout };

/** Each Rollout read live, with Argo CD's list of actions for it as it is now: offered, or skipped and why. */
async function lookAt(
  ctx: PreviewContext,
  input: RolloutActionInput,
  action: string,
  c: Omit<PlannedRollout, 'before'>,
): Promise<Looked> {
  const api = ctx.services.argocd.get(c.instance);
  if (!api) return { skipped: { ...c, reason: `no Argo CD client for instance ${c.instance}` } };
  let ro: Rollout;
  let offered: { name: string; disabled?: boolean }[];
  try {
    [ro, offered] = await Promise.all([
      api.liveResource<Rollout>(appRefOf(c), rolloutRef(c)),
      api.listResourceActions(appRefOf(c), rolloutRef(c)),
    ]);
  } catch (error) {
    return { skipped: { ...c, reason: `could not be read from Argo CD: ${(error as Error).message}` } };
  }
  const before = snapshot(ro);
  const found = offered.find((a) => a.name === action);
  if (!found)
    return {
      skipped: {
        ...c,
        before,
        reason: `Argo CD does not offer \`${action}\` for this Rollout (it offers ${offered.map((a) => a.name).join(', ') || 'nothing'})`,
      },
    };
  if (found.disabled) return { skipped: { ...c, before, reason: notOfferedReason(input.verb, action, before) } };
  return { rollout: { ...c, before } };
}

/**
 * The selection's Rollouts, each read live with the actions Argo CD offers for it now, split into those the
 * action is offered on (in waves over their apps, as bulk-sync plans its waves) and those skipped with why.
 */
export async function planRolloutAction(ctx: PreviewContext, input: RolloutActionInput): Promise<RolloutActionPlan> {
  if (input.full && input.verb !== 'promote')
    throw new RollcallError('invalid_params', `full=true is promote's (promote-full); ${input.verb} takes no full=.`);
  const apps = selectApps(ctx.services.fleet, parseSelectorParam(input.selector));
  const found = candidates(apps);
  if (!found.length) throw noRollout(ctx, input, apps);
  const withRollouts = apps.filter((fa) => rolloutResources(fa.app).length);
  assertWavesMatch(withRollouts.map(waveApp), input.waves);
  const action = argoActionFor(input.verb, input.full);
  const looked = await mapConcurrent(found, READS_AT_ONCE, (c) => lookAt(ctx, input, action, c));
  const offered = looked.flatMap((l) => ('rollout' in l ? [l.rollout] : []));
  const skipped = looked.flatMap((l) => ('skipped' in l ? [l.skipped] : []));
  if (!offered.length && skipped.every((s) => !s.before))
    throw new RollcallError(
      'argocd_unavailable',
      `Could not read any of the ${found.length} Rollout(s) of "${input.selector}" from Argo CD (${[...new Set(skipped.map((s) => s.reason))].slice(0, 3).join('; ')}).`,
    );
  const keyOfApp = (a: { instance: string; app: string }) => `${a.instance}/${a.app}`;
  const offeredApps = new Set(offered.map(keyOfApp));
  const buckets = planWaves(
    withRollouts.map(waveApp).filter((a) => offeredApps.has(keyOfApp(a))),
    input.waves,
    input.canary,
  );
  const waves = buckets.map((b) => {
    const inWave = new Set(b.apps.map(keyOfApp));
    return {
      name: b.name,
      maxUpdate: resolveMaxUpdate(b.spec?.maxUpdate, b.apps.length, input.concurrency),
      rollouts: offered.filter((r) => inWave.has(keyOfApp(r))),
    };
  });
  return { verb: input.verb, action, waves, skipped, selected: apps.length };
}
