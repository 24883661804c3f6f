import type { HealthStatusCode } from '../../infra/argocd/types.js';
import { LuaError, field, getn, ipairs, isNil, lessThan, luaEquals, tonumber, truthy, type LuaValue } from './lua.js';

/**
 * The health Argo CD v3.5.1 gives an Argo Rollouts Rollout: its built-in
 * `resource_customizations/argoproj.io/Rollout/health.lua`, ported line by line (line numbers in the errors are
 * the script's), wrapped the way gitops-engine's GetResourceHealth and util/lua's ExecuteHealthLua wrap it.
 */

export interface ResourceHealth {
  status: HealthStatusCode;
  message?: string;
}

const VALID: ReadonlySet<string> = new Set(['Healthy', 'Progressing', 'Degraded', 'Suspended', 'Missing', 'Unknown']);

/**
 * An object being deleted is "Pending deletion" before any script runs; a script error is Unknown with the
 * error as its message; a status the script made up is Unknown "Lua returned an invalid health status".
 */
export function rolloutHealth(obj: Record<string, unknown>): ResourceHealth {
  const metadata = obj.metadata as { deletionTimestamp?: string } | undefined;
  if (metadata?.deletionTimestamp) return { status: 'Progressing', message: 'Pending deletion' };
  let hs: { status: LuaValue; message?: LuaValue };
  try {
    hs = healthLua(obj);
  } catch (error) {
    if (error instanceof LuaError) return { status: 'Unknown', message: error.message };
    throw error;
  }
  if (typeof hs.status !== 'string' || !VALID.has(hs.status))
    return { status: 'Unknown', message: 'Lua returned an invalid health status' };
  return isNil(hs.message)
    ? { status: hs.status as HealthStatusCode }
    : { status: hs.status as HealthStatusCode, message: String(hs.message) };
}

const number = (v: LuaValue, otherwise: number): LuaValue => (isNil(v) ? otherwise : v);

/** Lines 57-67: a numeric observedGeneration (v0.10+) must equal metadata.generation; a hash (v0.9) always passes. */
function isGenerationObserved(obj: LuaValue): boolean {
  const status = field(obj, 'status', 58);
  if (isNil(status)) return false;
  const observed = tonumber(field(status, 'observedGeneration', 61));
  const generation = field(field(obj, 'metadata', 62), 'generation', 62);
  if (observed === undefined || lessThan(generation, observed, 62)) return true;
  return luaEquals(observed, field(field(obj, 'metadata', 66), 'generation', 66));
}

/** Lines 71-79: a Rollout with a workloadRef (v1.1+) must have observed the workload's generation. */
function isWorkloadGenerationObserved(obj: LuaValue): boolean {
  const metadata = field(obj, 'metadata', 72);
  if (isNil(field(field(obj, 'spec', 72), 'workloadRef', 72)) || isNil(field(metadata, 'annotations', 72))) return true;
  const workloadGen = tonumber(
    field(field(metadata, 'annotations', 76), 'rollout.argoproj.io/workload-generation', 76),
  );
  const observedWorkloadGen = tonumber(field(field(obj, 'status', 77), 'workloadObservedGeneration', 77));
  return luaEquals(workloadGen, observedWorkloadGen);
}

/** Lines 40-52. */
function checkPaused(obj: LuaValue): { status: string; message: string } | undefined {
  const hs = { status: 'Suspended', message: 'Rollout is paused' };
  const pauseConditions = field(field(obj, 'status', 44), 'pauseConditions', 44);
  if (!isNil(pauseConditions) && getn(pauseConditions, 44) > 0) return hs;
  const paused = field(field(obj, 'spec', 48), 'paused', 48);
  if (!isNil(paused) && truthy(paused)) return hs;
  return undefined;
}

/** Lines 1-19; also yields the status and updated replica counts the canary branch reads (globals in Lua). */
function checkReplicasStatus(obj: LuaValue): {
  hs?: { status: string; message: string };
  statusReplicas: LuaValue;
  updatedReplicas: LuaValue;
} {
  const desired = number(field(field(obj, 'spec', 3), 'replicas', 3), 1);
  const status = field(obj, 'status', 4);
  const statusReplicas = number(field(status, 'replicas', 4), 0);
  const updatedReplicas = number(field(status, 'updatedReplicas', 5), 0);
  const available = number(field(status, 'availableReplicas', 6), 0);
  if (lessThan(updatedReplicas, desired, 8))
    return {
      hs: { status: 'Progressing', message: 'Waiting for roll out to finish: More replicas need to be updated' },
      statusReplicas,
      updatedReplicas,
    };
  if (lessThan(available, updatedReplicas, 13))
    return {
      hs: {
        status: 'Progressing',
        message: 'Waiting for roll out to finish: updated replicas are still becoming available',
      },
      statusReplicas,
      updatedReplicas,
    };
  return { statusReplicas, updatedReplicas };
}

/** Lines 23-31: status.stableRS, else the pre-v0.8 status.canary.stableRS (which may be nil), else "". */
function getStableRS(obj: LuaValue): LuaValue {
  const status = field(obj, 'status', 24);
  const stable = field(status, 'stableRS', 24);
  if (!isNil(stable)) return stable;
  const canary = field(status, 'canary', 27);
  if (!isNil(canary)) return field(canary, 'stableRS', 28);
  return '';
}

/** Lines 81-165: the script's body. */
function healthLua(obj: LuaValue): { status: LuaValue; message?: LuaValue } {
  if (!isGenerationObserved(obj) || !isWorkloadGenerationObserved(obj))
    return { status: 'Progressing', message: 'Waiting for rollout spec update to be observed' };
  const status = field(obj, 'status', 89);
  const phase = field(status, 'phase', 89);
  // Argo Rollouts v1.0+ records its own phase and message, which Argo CD surfaces as they are.
  if (!isNil(phase)) return { status: phase === 'Paused' ? 'Suspended' : phase, message: field(status, 'message', 96) };
  for (const condition of ipairs(field(status, 'conditions', 100), 100)) {
    const type = field(condition, 'type', 101);
    const reason = field(condition, 'reason', 106);
    if (
      type === 'InvalidSpec' ||
      (type === 'Progressing' && (reason === 'RolloutAborted' || reason === 'ProgressDeadlineExceeded'))
    )
      return { status: 'Degraded', message: field(condition, 'message', 103) };
  }
  const paused = checkPaused(obj);
  if (paused) return paused;
  const currentPodHash = field(field(obj, 'status', 123), 'currentPodHash', 123);
  if (isNil(currentPodHash))
    return { status: 'Progressing', message: 'Waiting for rollout to finish: status has not been reconciled.' };
  const replicas = checkReplicasStatus(obj);
  if (replicas.hs) return replicas.hs;
  const stableRS = getStableRS(obj);
  const strategy = field(field(obj, 'spec', 137), 'strategy', 137);
  if (!isNil(field(strategy, 'blueGreen', 137))) {
    const blueGreen = field(status, 'blueGreen', 138);
    if (isNil(blueGreen) || !luaEquals(field(blueGreen, 'activeSelector', 138), currentPodHash))
      return { status: 'Progressing', message: 'active service cutover pending' };
    if (!luaEquals(stableRS, '') && !luaEquals(stableRS, currentPodHash))
      return { status: 'Progressing', message: 'waiting for analysis to complete' };
  } else if (!isNil(field(strategy, 'canary', 150))) {
    if (lessThan(replicas.updatedReplicas, replicas.statusReplicas, 151))
      return { status: 'Progressing', message: 'Waiting for roll out to finish: old replicas are pending termination' };
    if (luaEquals(stableRS, '') || !luaEquals(stableRS, currentPodHash))
      return { status: 'Progressing', message: 'Waiting for rollout to finish steps' };
  }
  return { status: 'Healthy', message: '' };
}
