import { mapConcurrent } from '../core/concurrency.js';
import { code, since } from '../core/format.js';
import type { Tone } from '../core/reply.js';
import {
  ROLLOUT_GROUP,
  ROLLOUT_KIND,
  canaryWeight,
  currentSetWeight,
  isFullyPromoted,
  rolloutImages,
  rolloutPhase,
  rolloutResources,
  rolloutRevision,
  rolloutStrategy,
} from '../fleet/argo-rollouts.js';
import type { FleetApp } from '../fleet/model.js';
import type { ResourceRef, Rollout } from '../infra/argocd/types.js';
import { appRef, withinLiveBudget } from './live.js';
import type { CommandContext } from './registry.js';
import type { RolloutRow, UnreadRollout } from './reply-data.js';

/**
 * Argo Rollouts as commands read them. The mirror knows which apps have a Rollout (their status.resources) but
 * not its step or weight: those are on the live object, read from Argo CD (GET …/resource) within the live-call
 * budget, a few at a time per command.
 */

/** Live reads in flight at once for one command: enough for a fleet, few enough not to queue on one server. */
const READS_AT_ONCE = 8;

export interface RolloutTarget {
  fa: FleetApp;
  ref: ResourceRef;
}

// What an app lists of its Rollouts, kept per FleetApp: the mirror replaces an app's FleetApp on every change and
// edits none. `rollouts` reads the live objects, so a crowd asking it is answered once per asker, and each looked
// through every app's resources again: about 2 ms per asker at 10,000 apps, a tenth of a second per crowd of 50.
const targetsOf = new WeakMap<FleetApp, readonly RolloutTarget[]>();
const NO_TARGETS: readonly RolloutTarget[] = [];

/** The Rollouts of these apps, as the mirror lists them. */
export function rolloutTargets(apps: readonly FleetApp[]): RolloutTarget[] {
  const out: RolloutTarget[] = [];
  for (const fa of apps) {
    let kept = targetsOf.get(fa);
    if (!kept) {
      const targets = rolloutResources(fa.app).map((r) => ({
        fa,
        ref: {
          group: ROLLOUT_GROUP,
          version: r.version,
          kind: ROLLOUT_KIND,
          namespace: r.namespace ?? fa.app.spec?.destination?.namespace,
          name: r.name,
        },
      }));
      kept = targets.length ? targets : NO_TARGETS;
      targetsOf.set(fa, kept);
    }
    for (const t of kept) out.push(t);
  }
  return out;
}

/** Each Rollout's live object, as a row; those that could not be read, with the reason. */
export async function readRollouts(
  ctx: CommandContext,
  targets: readonly RolloutTarget[],
): Promise<{ rows: RolloutRow[]; unread: UnreadRollout[] }> {
  const results = await mapConcurrent(targets, READS_AT_ONCE, async ({ fa, ref }) => {
    const api = ctx.services.argocd?.get(fa.instance);
    const base = { app: fa.app.metadata.name, instance: fa.instance, cluster: fa.cluster, name: ref.name };
    if (!api) return { unread: { ...base, error: `no Argo CD client for instance ${fa.instance}` } };
    try {
      const ro = await withinLiveBudget(fa.instance, () => api.liveResource<Rollout>(appRef(fa), ref));
      return { row: rolloutRow(fa, ro, ref) };
    } catch (error) {
      return { unread: { ...base, error: error instanceof Error ? error.message : String(error) } };
    }
  });
  return {
    rows: results.flatMap((r) => (r.row ? [r.row] : [])),
    unread: results.flatMap((r) => (r.unread ? [r.unread] : [])),
  };
}

export function rolloutRow(fa: FleetApp, ro: Rollout, ref: ResourceRef): RolloutRow {
  const strategy = rolloutStrategy(ro) ?? null;
  const status = ro.status ?? {};
  const steps = ro.spec?.strategy?.canary?.steps?.length ?? 0;
  const { phase, message } = rolloutPhase(ro);
  const pause = status.pauseConditions?.[0];
  const progressing = status.conditions?.find((c) => c.type === 'Progressing');
  return {
    app: fa.app.metadata.name,
    instance: fa.instance,
    cluster: fa.cluster,
    namespace: ro.metadata.namespace ?? ref.namespace ?? '',
    name: ro.metadata.name,
    strategy,
    phase,
    message: message || null,
    step: strategy === 'canary' && steps ? Math.min(status.currentStepIndex ?? 0, steps) : null,
    steps: strategy === 'canary' && steps ? steps : null,
    weight: strategy === 'canary' ? canaryWeight(ro) : null,
    setWeight: strategy === 'canary' ? currentSetWeight(ro) : null,
    pausedReason: ro.spec?.paused ? 'manually paused' : (pause?.reason ?? null),
    aborted: Boolean(status.abort),
    fullyPromoted: Boolean(status.currentPodHash) && isFullyPromoted(status),
    since: pause?.startTime ?? progressing?.lastTransitionTime ?? null,
    revision: rolloutRevision(ro) ?? null,
    images: rolloutImages(ro),
  };
}

export const PHASE_TONE: Record<string, Tone> = {
  Healthy: 'ok',
  Paused: 'warn',
  Progressing: 'progress',
  Degraded: 'error',
};

/** "canary · Paused at step 1/4 · 20% of traffic · CanaryPauseStep": where the Rollout stands. */
export function rolloutState(
  row: Pick<
    RolloutRow,
    | 'strategy'
    | 'phase'
    | 'step'
    | 'steps'
    | 'weight'
    | 'setWeight'
    | 'pausedReason'
    | 'aborted'
    | 'fullyPromoted'
    | 'message'
  >,
): string {
  const parts: string[] = [row.strategy ?? 'no strategy'];
  const where = row.steps !== null ? ` at step ${row.step}/${row.steps}` : '';
  parts.push(row.fullyPromoted && row.phase === 'Healthy' ? 'Healthy, fully promoted' : `${row.phase}${where}`);
  if (row.strategy === 'canary' && row.weight !== null && !row.fullyPromoted)
    parts.push(
      row.setWeight !== null && row.setWeight !== row.weight
        ? `${row.weight}% of traffic (step sets ${row.setWeight}%)`
        : `${row.weight}% of traffic`,
    );
  if (row.aborted) parts.push('aborted');
  if (row.pausedReason) parts.push(row.pausedReason);
  else if (row.message && row.phase !== 'Healthy') parts.push(row.message);
  return parts.join(' · ');
}

/** One line of `app` for a Rollout: its name, state and how long. */
export function rolloutLine(row: RolloutRow, now: Date): string {
  const age = since(row.since, now);
  return `${code(`Rollout/${row.name}`)} · ${rolloutState(row)}${age ? ` · for ${age}` : ''}`;
}
