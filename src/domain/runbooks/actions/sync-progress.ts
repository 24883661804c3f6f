/**
 * The progress of one app in a bulk sync, as a pure state machine: events in, the next checkpoint
 * entry or a refusal out. bulk-sync writes every change as a compare-and-set from the state it
 * read, so two executors (a stalled worker and its replacement) can never overwrite each other's
 * transitions, and the table below is the only place that says which change is allowed.
 *
 * The one rule it exists for: a sync that may have reached Argo CD is never sent again. `posting`
 * is written (durably, under the attempt's lease) before the POST; from `posting` or `unknown` the
 * way back to `pending` is only `notApplied`, which needs proof: Argo CD shows no operation of this
 * run after the window in which that POST could still have arrived.
 */
import type { CheckpointEntry } from '../run-store.js';

export type AppState = 'pending' | 'posting' | 'unknown' | 'accepted' | 'done' | 'failed' | 'timeout' | 'skipped';

export interface AppCheckpoint extends CheckpointEntry {
  state: AppState;
  instance: string;
  app: string;
  cluster: string;
  wave: number;
  reason?: string;
  note?: string;
  /** Redis time (ms) of the write that marked the app `posting`: a POST of that attempt can only have left within the posting window after it. */
  postingAt?: number;
  /** A failure already acted on (paused for); resuming does not pause for it again. */
  acknowledged?: boolean;
}

export type AppEvent =
  /** About to send the POST: the mark that makes a lost answer recoverable. */
  | { type: 'claim' }
  /** Argo CD answered the POST with the operation. */
  | { type: 'answered' }
  /** Argo CD shows this run's operation on the app (found in the mirror or by a GET). */
  | { type: 'found' }
  /** The POST failed in a way that may have been applied (answer lost, 5xx, timeout). */
  | { type: 'answerLost'; note: string }
  /** Argo CD refused the POST before applying it because another operation runs. */
  | { type: 'busy'; note: string }
  /** Argo CD refused the POST for good (RBAC, validation, sync window). */
  | { type: 'refused'; reason: string }
  /** A GET after the posting window shows no operation of this run: the POST never took. */
  | { type: 'notApplied'; windowPassed: boolean }
  /** Our operation completed (phase and gate read off the app). */
  | { type: 'finished'; succeeded: boolean; reason?: string }
  | { type: 'waiting'; note: string }
  | { type: 'gone'; reason: string }
  | { type: 'timedOut'; reason: string }
  | { type: 'acknowledge' };

export type AppTransition = { ok: true; next: AppCheckpoint } | { ok: false; reason: string };

/** Which events each state accepts. Anything else is refused. */
export const APP_TRANSITIONS: Record<AppState, readonly AppEvent['type'][]> = {
  pending: ['claim', 'found', 'waiting', 'gone', 'timedOut'],
  posting: ['answered', 'found', 'answerLost', 'busy', 'refused', 'notApplied', 'timedOut'],
  unknown: ['found', 'notApplied', 'timedOut'],
  accepted: ['finished', 'timedOut'],
  done: [],
  failed: ['acknowledge'],
  timeout: ['acknowledge'],
  skipped: [],
};

export const TERMINAL_APP_STATES: readonly AppState[] = ['done', 'failed', 'timeout', 'skipped'];
/** A sync of these may be running or may have reached Argo CD: they hold a concurrency slot. */
export const IN_FLIGHT_APP_STATES: readonly AppState[] = ['posting', 'unknown', 'accepted'];

export function nextAppState(s: AppCheckpoint, e: AppEvent): AppTransition {
  if (!APP_TRANSITIONS[s.state].includes(e.type))
    return { ok: false, reason: `${s.app}: ${e.type} is not allowed from ${s.state}` };
  const base = { ...s };
  delete base.at;
  switch (e.type) {
    case 'claim':
      return { ok: true, next: { ...base, state: 'posting', note: undefined } };
    case 'answered':
    case 'found':
      return { ok: true, next: { ...base, state: 'accepted', note: undefined } };
    case 'answerLost':
      return { ok: true, next: { ...base, state: 'unknown', note: e.note } };
    case 'busy':
      return { ok: true, next: { ...base, state: 'pending', postingAt: undefined, note: e.note } };
    case 'refused':
      return { ok: true, next: { ...base, state: 'failed', reason: `sync refused: ${e.reason}` } };
    case 'notApplied':
      if (!e.windowPassed)
        return {
          ok: false,
          reason: `${s.app}: a POST may still arrive; not applied can only be concluded after the posting window`,
        };
      return {
        ok: true,
        next: {
          ...base,
          state: 'pending',
          postingAt: undefined,
          note: 'the earlier sync request never took; sending it',
        },
      };
    case 'finished':
      return {
        ok: true,
        next: e.succeeded ? { ...base, state: 'done' } : { ...base, state: 'failed', reason: e.reason },
      };
    case 'waiting':
      return { ok: true, next: { ...base, note: e.note } };
    case 'gone':
      return { ok: true, next: { ...base, state: 'failed', reason: e.reason } };
    case 'timedOut':
      return { ok: true, next: { ...base, state: 'timeout', reason: e.reason } };
    case 'acknowledge':
      return { ok: true, next: { ...base, acknowledged: true } };
  }
}
