import {
  canaryWeight,
  currentCanaryStep,
  isFullyPromoted,
  rolloutPhase,
  rolloutStrategy,
  type RolloutStrategy,
} from '../../../../fleet/argo-rollouts.js';
import type { Rollout } from '../../../../infra/argocd/types.js';

/**
 * What each rollcall verb asks of an Argo Rollouts `Rollout`, in the words of Argo CD's own Rollout actions
 * (`resource_customizations/argoproj.io/Rollout/actions/`): which action runs, what its script changes at once
 * on the live object (how a lost answer is told apart from a request that never arrived), and the state the
 * Argo Rollouts controller brings the Rollout to afterwards (how the run knows the verb is done).
 */

export const ROLLOUT_VERBS = ['promote', 'abort', 'retry', 'restart', 'pause', 'resume'] as const;
export type RolloutVerb = (typeof ROLLOUT_VERBS)[number];

/**
 * The Argo CD action of a verb. `promote` is what `kubectl argo rollouts promote` does to a paused Rollout and
 * what Argo CD's `resume` script does: it clears the pause, so a canary goes on to its next step and a
 * blue-green waiting for promotion switches its active service. `full=true` is `promote-full`: every step
 * skipped, the new version stable at once.
 */
export function argoActionFor(verb: RolloutVerb, full: boolean): string {
  if (verb === 'promote') return full ? 'promote-full' : 'resume';
  return verb;
}

/** The Rollout as the run compares it before and after the action: what the preview shows, and what changes. */
export interface RolloutSnapshot {
  strategy: RolloutStrategy | null;
  phase: string;
  message: string | null;
  /** The canary step index (Argo Rollouts counts from 0), and how many steps; null for a blue-green. */
  step: number | null;
  steps: number | null;
  /** The canary's share of traffic now; null for a blue-green. */
  weight: number | null;
  aborted: boolean;
  fullyPromoted: boolean;
  /** spec.paused: paused by hand (Argo CD's pause action), not by a pause step. */
  manuallyPaused: boolean;
  pauseConditions: number;
  restartAt: string | null;
  restartedAt: string | null;
}

export function snapshot(ro: Rollout): RolloutSnapshot {
  const strategy = rolloutStrategy(ro) ?? null;
  const status = ro.status ?? {};
  const steps = ro.spec?.strategy?.canary?.steps?.length ?? 0;
  const { phase, message } = rolloutPhase(ro);
  const { index } = currentCanaryStep(ro);
  return {
    strategy,
    phase,
    message: message || null,
    step: strategy === 'canary' && steps ? Math.min(index ?? 0, steps) : null,
    steps: strategy === 'canary' && steps ? steps : null,
    weight: strategy === 'canary' ? canaryWeight(ro) : null,
    aborted: Boolean(status.abort),
    fullyPromoted: Boolean(status.currentPodHash) && isFullyPromoted(status),
    manuallyPaused: ro.spec?.paused === true,
    pauseConditions: status.pauseConditions?.length ?? 0,
    restartAt: ro.spec?.restartAt ?? null,
    restartedAt: status.restartedAt ?? null,
  };
}

const stepped = (before: RolloutSnapshot, now: RolloutSnapshot) =>
  before.step !== null && now.step !== null && now.step > before.step;
const promotedNow = (before: RolloutSnapshot, now: RolloutSnapshot) =>
  !before.fullyPromoted && now.fullyPromoted && now.phase === 'Healthy';

/**
 * Whether the action's script has visibly run on the Rollout: what it changes in the object at once, before
 * the controller acts (or what the controller then made of it). A request whose answer was lost and whose
 * effect never shows did not arrive.
 */
export function tookEffect(action: string, before: RolloutSnapshot, now: RolloutSnapshot, ro: Rollout): boolean {
  switch (action) {
    case 'abort':
      return now.aborted;
    case 'retry':
      return !now.aborted;
    case 'pause':
      return now.manuallyPaused;
    case 'restart':
      return now.restartAt !== null && now.restartAt !== before.restartAt;
    case 'promote-full':
      // Argo Rollouts v0.9 has no promoteFull: the script moves the canary past its last step instead.
      return (
        ro.status?.promoteFull === true || promotedNow(before, now) || (stepped(before, now) && now.step === now.steps)
      );
    case 'resume':
      return (!now.manuallyPaused && now.pauseConditions === 0) || stepped(before, now) || promotedNow(before, now);
    default:
      return false;
  }
}

/** Whether the controller has brought the Rollout where the action leads. */
export function reached(action: string, before: RolloutSnapshot, now: RolloutSnapshot): boolean {
  switch (action) {
    case 'abort':
      return now.aborted && now.phase === 'Degraded';
    case 'retry':
      return !now.aborted && now.phase !== 'Degraded';
    case 'pause':
      return now.manuallyPaused && now.phase === 'Paused';
    case 'restart':
      return now.restartAt !== null && now.restartAt !== before.restartAt && now.restartedAt === now.restartAt;
    case 'promote-full':
      return now.fullyPromoted && now.phase === 'Healthy';
    case 'resume':
      return (
        stepped(before, now) ||
        promotedNow(before, now) ||
        // A Rollout paused by hand, not at a pause step: resumed once the controller no longer calls it Paused.
        (before.manuallyPaused && before.pauseConditions === 0 && !now.manuallyPaused && now.phase !== 'Paused')
      );
    default:
      return false;
  }
}

/** What the run waits for after sending the action, as the preview and the progress say it. */
export function expectedText(action: string, strategy: RolloutStrategy | null): string {
  switch (action) {
    case 'abort':
      return 'Degraded (aborted: all traffic back to stable)';
    case 'retry':
      return 'no longer aborted: the steps start over';
    case 'pause':
      return 'Paused (manually)';
    case 'restart':
      return 'pods restarted (status.restartedAt set)';
    case 'promote-full':
      return 'Healthy, fully promoted';
    case 'resume':
      return strategy === 'blue-green' ? 'promoted: Healthy on the new version' : 'the next step, or Healthy';
    default:
      return action;
  }
}

/**
 * Why Argo CD does not offer the action now, in the terms of its discovery script: which field of the
 * Rollout disables it, and what would help instead.
 */
export function notOfferedReason(verb: RolloutVerb, action: string, s: RolloutSnapshot): string {
  const prefix = `Argo CD offers \`${action}\` disabled now`;
  switch (action) {
    case 'resume':
      return verb === 'promote'
        ? `${prefix}: not paused, nothing to promote${s.fullyPromoted ? ' (fully promoted)' : ' (`promote … full=true` skips the remaining steps)'}`
        : `${prefix}: not paused`;
    case 'abort':
      return `${prefix}: ${s.fullyPromoted ? 'fully promoted, nothing to abort' : 'already aborted'}`;
    case 'retry':
      return `${prefix}: ${s.fullyPromoted ? 'fully promoted' : 'not aborted, nothing to retry'}`;
    case 'pause':
      return `${prefix}: ${s.fullyPromoted ? 'fully promoted' : s.aborted ? 'aborted' : 'already paused'}`;
    case 'promote-full':
      // discovery.lua: a status.observedGeneration that is no number, or ahead of metadata.generation, is an
      // Argo Rollouts v0.9 Rollout, which promotes only a canary fully.
      return `${prefix}: ${s.fullyPromoted ? 'already fully promoted' : 'a blue-green of Argo Rollouts v0.9 (status.observedGeneration is a hash) cannot be promoted fully'}`;
    default:
      return prefix;
  }
}

/** "canary · Paused at step 1/4 · 20%": where a Rollout stands, for the preview and the summary. */
export function whereItStands(s: RolloutSnapshot): string {
  const parts = [s.strategy ?? 'no strategy'];
  parts.push(`${s.phase}${s.step !== null ? ` at step ${s.step}/${s.steps}` : ''}`);
  if (s.weight !== null && !s.fullyPromoted) parts.push(`${s.weight}% of traffic`);
  if (s.aborted) parts.push('aborted');
  if (s.message && s.phase !== 'Healthy') parts.push(s.message);
  return parts.join(' · ');
}
