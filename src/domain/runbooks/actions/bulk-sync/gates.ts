/**
 * When an app of a bulk sync counts as synced, and when its wave may let the next one start, as
 * pure functions of what Argo CD shows and what the checkpoint holds. An app's gates are a list,
 * checked in order: the first that does not pass says why the app waits or fails.
 */
import type { Application } from '../../../../infra/argocd/types.js';
import { TERMINAL_APP_STATES, type AppCheckpoint } from '../sync-progress.js';
import type { BulkSyncInput, Gate } from './input.js';
import { failureReason, ourOperation } from './operations.js';

export type GateVerdict =
  { verdict: 'pass' } | { verdict: 'wait'; reason: string } | { verdict: 'fail'; reason: string };

/** One condition an app whose sync Argo CD accepted must meet before it counts as synced. */
export interface AppGate {
  name: string;
  check(app: Application | undefined, runId: string): GateVerdict;
}

const PASS: GateVerdict = { verdict: 'pass' };

/** This run's operation has completed on the app, and succeeded. */
export const operationGate: AppGate = {
  name: 'operation',
  check(app, runId) {
    const op = app ? ourOperation(app, runId) : undefined;
    if (op !== 'completed')
      return { verdict: 'wait', reason: op === 'running' ? 'sync still running' : 'sync not picked up yet' };
    return app!.status!.operationState!.phase === 'Succeeded' ? PASS : { verdict: 'fail', reason: failureReason(app!) };
  },
};

/** The app's status reached the step's `gate` param: Synced, or Synced and Healthy. */
export function statusGate(gate: Exclude<Gate, 'none'>): AppGate {
  return {
    name: gate,
    check: (app) => (app && gateReached(app, gate) ? PASS : { verdict: 'wait', reason: waitingReason(app, gate) }),
  };
}

/** A dry run changes nothing there is to wait for, and `gate=none` asks not to wait: both count an accepted sync as done. */
export function gatesFor(input: Pick<BulkSyncInput, 'gate' | 'dryRun'>): AppGate[] {
  if (input.gate === 'none' || input.dryRun) return [];
  return [operationGate, statusGate(input.gate)];
}

/** The first gate that does not pass decides; no gates, or all passed, is a pass. */
export function appVerdict(app: Application | undefined, runId: string, gates: readonly AppGate[]): GateVerdict {
  for (const gate of gates) {
    const v = gate.check(app, runId);
    if (v.verdict !== 'pass') return v;
  }
  return PASS;
}

export type WaveVerdict =
  | { verdict: 'pass' }
  | { verdict: 'wait'; open: AppCheckpoint[] }
  /** Failures not yet acted on: `reasons` reads "app (why)", one per app. */
  | { verdict: 'fail'; failed: AppCheckpoint[]; reasons: string[] };

/** A wave fails on a failure nobody has acted on yet (resuming does not fail it again), passes once every app has ended, and otherwise waits. */
export function waveVerdict(apps: readonly AppCheckpoint[]): WaveVerdict {
  const failed = apps.filter((s) => (s.state === 'failed' || s.state === 'timeout') && !s.acknowledged);
  if (failed.length) return { verdict: 'fail', failed, reasons: failed.map((s) => `${s.app} (${s.reason})`) };
  const open = apps.filter((s) => !TERMINAL_APP_STATES.includes(s.state));
  return open.length ? { verdict: 'wait', open } : { verdict: 'pass' };
}

/** Why an app still open when its wave timed out did not make it. */
export function timeoutReason(s: AppCheckpoint, app: Application | undefined, runId: string, gate: Gate): string {
  if (s.state === 'pending') return `timed out before its sync started${s.note ? ` (${s.note})` : ''}`;
  if (app && ourOperation(app, runId) === 'running')
    return `timed out: sync still running${app.status?.operationState?.message ? ` (${app.status.operationState.message})` : ''}`;
  return `timed out: ${waitingReason(app, gate)}`;
}

function gateReached(app: Application, gate: Gate): boolean {
  if (gate === 'none') return true;
  const synced = app.status?.sync?.status === 'Synced';
  if (gate === 'synced') return synced;
  return synced && app.status?.health?.status === 'Healthy';
}

function waitingReason(app: Application | undefined, gate: Gate): string {
  if (!app) return 'app not found in the fleet mirror';
  const state = app.status?.operationState;
  const bits = [`sync ${app.status?.sync?.status ?? 'Unknown'}`, `health ${app.status?.health?.status ?? 'Unknown'}`];
  if (state) bits.push(`operation ${state.phase}${state.message ? `: ${state.message}` : ''}`);
  return `did not reach the ${gate} gate (${bits.join(', ')})`;
}
