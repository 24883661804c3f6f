import { describe, expect, it } from 'vitest';
import {
  APP_TRANSITIONS,
  nextAppState,
  type AppCheckpoint,
  type AppEvent,
  type AppState,
} from '../../src/domain/runbooks/actions/sync-progress.js';

const app = (state: AppState, extra: Partial<AppCheckpoint> = {}): AppCheckpoint => ({
  state,
  instance: 'argo',
  app: 'web',
  cluster: 'c1',
  wave: 0,
  ...extra,
});

const EVENTS: Record<AppEvent['type'], AppEvent> = {
  claim: { type: 'claim' },
  answered: { type: 'answered' },
  found: { type: 'found' },
  answerLost: { type: 'answerLost', note: 'socket hang up' },
  busy: { type: 'busy', note: 'waiting' },
  refused: { type: 'refused', reason: 'permission denied' },
  notApplied: { type: 'notApplied', windowPassed: true },
  finished: { type: 'finished', succeeded: true },
  waiting: { type: 'waiting', note: 'waiting: an operation by admin is running' },
  gone: { type: 'gone', reason: 'app no longer exists' },
  timedOut: { type: 'timedOut', reason: 'timed out' },
  acknowledge: { type: 'acknowledge' },
};

describe('per-app progress of a bulk sync', () => {
  // [from, event, to] — every allowed change; everything else is refused.
  const table: [AppState, AppEvent['type'], AppState][] = [
    ['pending', 'claim', 'posting'],
    ['pending', 'found', 'accepted'],
    ['pending', 'waiting', 'pending'],
    ['pending', 'gone', 'failed'],
    ['pending', 'timedOut', 'timeout'],
    ['posting', 'answered', 'accepted'],
    ['posting', 'found', 'accepted'],
    ['posting', 'answerLost', 'unknown'],
    ['posting', 'busy', 'pending'],
    ['posting', 'refused', 'failed'],
    ['posting', 'notApplied', 'pending'],
    ['posting', 'timedOut', 'timeout'],
    ['unknown', 'found', 'accepted'],
    ['unknown', 'notApplied', 'pending'],
    ['unknown', 'timedOut', 'timeout'],
    ['accepted', 'finished', 'done'],
    ['accepted', 'timedOut', 'timeout'],
    ['failed', 'acknowledge', 'failed'],
    ['timeout', 'acknowledge', 'timeout'],
  ];
  it.each(table)('%s --%s--> %s', (from, event, to) => {
    const t = nextAppState(app(from), EVENTS[event]);
    expect(t.ok && t.next.state).toBe(to);
  });

  it('refuses every other change (a table of 8 states × 12 events)', () => {
    const allowed = new Set(table.map(([from, event]) => `${from}/${event}`));
    for (const from of Object.keys(APP_TRANSITIONS) as AppState[])
      for (const event of Object.values(EVENTS)) {
        const t = nextAppState(app(from), event);
        expect(t.ok, `${from}/${event.type}`).toBe(allowed.has(`${from}/${event.type}`));
      }
  });

  it('never sends a sync twice: a posting or unknown app goes back to pending only after the posting window, and never blindly', () => {
    expect(nextAppState(app('posting'), { type: 'notApplied', windowPassed: false })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('posting window'),
    });
    expect(nextAppState(app('unknown'), { type: 'notApplied', windowPassed: false }).ok).toBe(false);
    // There is no "claim" from a sync that may be in flight.
    expect(nextAppState(app('posting'), { type: 'claim' }).ok).toBe(false);
    expect(nextAppState(app('unknown'), { type: 'claim' }).ok).toBe(false);
    expect(nextAppState(app('accepted'), { type: 'claim' }).ok).toBe(false);
  });

  it('records why: a refusal, a failure from the operation, and an acknowledged failure keeps its reason', () => {
    expect(nextAppState(app('posting'), { type: 'refused', reason: 'blocked by sync window' })).toMatchObject({
      ok: true,
      next: { state: 'failed', reason: 'sync refused: blocked by sync window' },
    });
    expect(nextAppState(app('accepted'), { type: 'finished', succeeded: false, reason: 'sync Failed' })).toMatchObject({
      ok: true,
      next: { state: 'failed', reason: 'sync Failed' },
    });
    expect(nextAppState(app('failed', { reason: 'x' }), { type: 'acknowledge' })).toMatchObject({
      ok: true,
      next: { state: 'failed', reason: 'x', acknowledged: true },
    });
  });

  it('drops the stored write time (the store sets it) and a claim clears a stale note', () => {
    const t = nextAppState(app('pending', { at: 5, note: 'waiting: x' }), { type: 'claim' });
    expect(t.ok && t.next).toEqual({
      state: 'posting',
      instance: 'argo',
      app: 'web',
      cluster: 'c1',
      wave: 0,
      note: undefined,
    });
  });
});
