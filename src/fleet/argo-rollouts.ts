import type { Application, Rollout, RolloutCanaryStep, RolloutSpec, RolloutStatus } from '../infra/argocd/types.js';

/**
 * What an Argo Rollouts `Rollout` says about its own progress, read the way Argo Rollouts reads it
 * (argoproj/argo-rollouts `utils/rollout/rolloututil.go`, `utils/replicaset/canary.go`, and the
 * `kubectl argo rollouts get` info in `pkg/kubectl-argo-rollouts/info/rollout_info.go`). Pure functions over the
 * object, so the simulator's Rollouts controller writes the status the commands read.
 */

export const ROLLOUT_GROUP = 'argoproj.io';
export const ROLLOUT_KIND = 'Rollout';

export type RolloutStrategy = 'canary' | 'blue-green';

/** An app's resources include an Argo Rollouts Rollout (its status.resources, which the mirror holds). */
export function rolloutResources(app: Application): { namespace?: string; name: string; version: string }[] {
  return (app.status?.resources ?? [])
    .filter((r) => r.kind === ROLLOUT_KIND && r.group === ROLLOUT_GROUP)
    .map((r) => ({ ...(r.namespace ? { namespace: r.namespace } : {}), name: r.name, version: r.version }));
}

export function hasRollouts(app: Application): boolean {
  return rolloutResources(app).length > 0;
}

export function rolloutStrategy(ro: Pick<Rollout, 'spec'>): RolloutStrategy | undefined {
  if (ro.spec?.strategy?.canary) return 'canary';
  if (ro.spec?.strategy?.blueGreen) return 'blue-green';
  return undefined;
}

/** IsFullyPromoted: the stable ReplicaSet is the one of the current pod template. */
export function isFullyPromoted(status: RolloutStatus | undefined): boolean {
  return (status?.stableRS ?? '') === (status?.currentPodHash ?? '');
}

/** GetCurrentCanaryStep: the step at status.currentStepIndex (0 when unset); none past the last one. */
export function currentCanaryStep(ro: Pick<Rollout, 'spec' | 'status'>): { step?: RolloutCanaryStep; index?: number } {
  const steps = ro.spec?.strategy?.canary?.steps ?? [];
  if (!ro.spec?.strategy?.canary || !steps.length) return {};
  const index = ro.status?.currentStepIndex ?? 0;
  return index >= steps.length ? { index } : { step: steps[index], index };
}

/** GetCurrentSetWeight: 0 when aborted, 100 past the last step, else the last setWeight at or before the step. */
export function currentSetWeight(ro: Pick<Rollout, 'spec' | 'status'>): number {
  if (ro.status?.abort) return 0;
  const { step, index } = currentCanaryStep(ro);
  if (!step || index === undefined) return 100;
  const steps = ro.spec.strategy!.canary!.steps!;
  for (let i = index; i >= 0; i--) if (typeof steps[i].setWeight === 'number') return steps[i].setWeight!;
  return 0;
}

/**
 * The traffic the canary gets now, as `kubectl argo rollouts get` reports it (ActualWeight): 100 past the last
 * step; with traffic routing the weight the controller set (status.canary.weights), else the step's setWeight.
 * A basic canary's weight is its share of available pods, which the Rollout object alone does not carry: its
 * setWeight stands in.
 */
export function canaryWeight(ro: Pick<Rollout, 'spec' | 'status'>): number {
  const { step } = currentCanaryStep(ro);
  if (!step) return 100;
  if (!(ro.status?.availableReplicas ?? 0)) return 0;
  const weights = ro.status?.canary?.weights;
  if (ro.spec.strategy?.canary?.trafficRouting && weights) return weights.canary.weight;
  return currentSetWeight(ro);
}

/** CanaryStepString: "setWeight: 20", "pause", "pause: 5m". */
export function canaryStepText(step: RolloutCanaryStep): string {
  if (typeof step.setWeight === 'number') return `setWeight: ${step.setWeight}`;
  if (step.pause) return step.pause.duration !== undefined ? `pause: ${String(step.pause.duration)}` : 'pause';
  const other = Object.keys(step)[0];
  return other ?? 'invalid';
}

/**
 * CalculateRolloutPhase: what the controller records in status.phase/message after each reconcile. Failure
 * conditions first, then a pause, a pending restart, replicas still rolling, and the strategy's own wait.
 */
export function calculateRolloutPhase(spec: RolloutSpec, status: RolloutStatus): { phase: string; message: string } {
  for (const c of status.conditions ?? []) {
    if (c.type === 'InvalidSpec') return { phase: 'Degraded', message: `InvalidSpec: ${c.message ?? ''}` };
    if (c.reason === 'RolloutAborted' || c.reason === 'ProgressDeadlineExceeded')
      return { phase: 'Degraded', message: `${c.reason}: ${c.message ?? ''}` };
  }
  if (spec.paused) return { phase: 'Paused', message: 'manually paused' };
  const pause = status.pauseConditions?.[0];
  if (pause) return { phase: 'Paused', message: pause.reason };
  if (spec.restartAt && spec.restartAt !== status.restartedAt)
    return { phase: 'Progressing', message: 'rollout is restarting' };
  const updated = status.updatedReplicas ?? 0;
  if (updated < (spec.replicas ?? 1)) return { phase: 'Progressing', message: 'more replicas need to be updated' };
  if ((status.availableReplicas ?? 0) < updated)
    return { phase: 'Progressing', message: 'updated replicas are still becoming available' };
  if (spec.strategy?.blueGreen) {
    const active = status.blueGreen?.activeSelector ?? '';
    if (!active || active !== status.currentPodHash)
      return { phase: 'Progressing', message: 'active service cutover pending' };
    if (!status.stableRS || !isFullyPromoted(status))
      return { phase: 'Progressing', message: 'waiting for post-promotion verification to complete' };
  } else if (spec.strategy?.canary) {
    if (!spec.strategy.canary.trafficRouting && (status.replicas ?? 0) > updated)
      return { phase: 'Progressing', message: 'old replicas are pending termination' };
    if (!status.stableRS || !isFullyPromoted(status))
      return { phase: 'Progressing', message: 'waiting for all steps to complete' };
  }
  return { phase: 'Healthy', message: '' };
}

/**
 * GetRolloutPhase, what clients show: the controller's phase, unless it has not yet seen the latest spec or a
 * resume (pause conditions cleared, controllerPause still set), or it predates v1.0 and records none.
 */
export function rolloutPhase(ro: Pick<Rollout, 'metadata' | 'spec' | 'status'>): { phase: string; message: string } {
  const status = ro.status ?? {};
  // A hash instead of a number is a v0.9 Rollout, which records no generation to compare.
  const observed = /^\d+$/.test(String(status.observedGeneration ?? ''))
    ? Number(status.observedGeneration)
    : undefined;
  if (observed !== undefined && observed < (ro.metadata.generation ?? 0))
    return { phase: 'Progressing', message: 'waiting for rollout spec update to be observed' };
  if (status.controllerPause && !status.pauseConditions?.length)
    return { phase: 'Progressing', message: 'waiting for rollout to unpause' };
  if (status.phase) return { phase: status.phase, message: status.message ?? '' };
  return calculateRolloutPhase(ro.spec, status);
}

/** The images of the Rollout's pod template: what its current (canary or preview) ReplicaSet runs. */
export function rolloutImages(ro: Pick<Rollout, 'spec'>): string[] {
  return (ro.spec?.template?.spec?.containers ?? []).map((c) => c.image).filter((i): i is string => !!i);
}

/** The revision Argo Rollouts numbers each new pod template with (annotation `rollout.argoproj.io/revision`). */
export function rolloutRevision(ro: Pick<Rollout, 'metadata'>): string | undefined {
  return ro.metadata.annotations?.['rollout.argoproj.io/revision'];
}
