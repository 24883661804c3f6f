import { describe, expect, it } from 'vitest';
import type { Application, OperationPhase } from '../../src/infra/argocd/types.js';
import {
  appVerdict,
  gatesFor,
  timeoutReason,
  waveVerdict,
  type AppGate,
  type GateVerdict,
} from '../../src/domain/runbooks/actions/bulk-sync/gates.js';
import { RUN_INFO_NAME } from '../../src/domain/runbooks/actions/bulk-sync/operations.js';
import type { AppCheckpoint, AppState } from '../../src/domain/runbooks/actions/sync-progress.js';

const RUN = 'run-1';
const ours = { info: [{ name: RUN_INFO_NAME, value: RUN }], initiatedBy: { username: 'alice' } };
const theirs = { info: [{ name: RUN_INFO_NAME, value: 'run-0' }], initiatedBy: { username: 'bob' } };

/** An app whose status is `sync/health`, with an operation of `op` ('ours' | 'theirs') in `phase`. */
function app(
  state: string,
  op?: { by: 'ours' | 'theirs'; phase: OperationPhase; message?: string; failed?: string },
): Application {
  const [sync, health] = state.split('/');
  return {
    metadata: { name: 'web', namespace: 'argocd' },
    spec: { project: 'default', destination: { name: 'c1' } },
    status: {
      sync: { status: sync },
      health: { status: health },
      ...(op
        ? {
            operationState: {
              operation: op.by === 'ours' ? ours : theirs,
              phase: op.phase,
              message: op.message,
              startedAt: '2026-01-01T00:00:00Z',
              ...(op.failed
                ? {
                    syncResult: {
                      revision: 'abc',
                      resources: [
                        {
                          group: 'apps',
                          version: 'v1',
                          kind: 'Deployment',
                          namespace: 'web',
                          name: op.failed,
                          status: 'SyncFailed',
                          message: 'invalid spec',
                        },
                      ],
                    },
                  }
                : {}),
            },
          }
        : {}),
    },
  } as Application;
}

describe('bulk-sync app gates', () => {
  const healthy = gatesFor({ gate: 'healthy', dryRun: false });
  const synced = gatesFor({ gate: 'synced', dryRun: false });
  const table: [string, Application | undefined, AppGate[], GateVerdict][] = [
    [
      'healthy gate: our sync succeeded and the app is Synced and Healthy',
      app('Synced/Healthy', { by: 'ours', phase: 'Succeeded' }),
      healthy,
      { verdict: 'pass' },
    ],
    [
      'healthy gate: Synced but Progressing waits, saying what it shows',
      app('Synced/Progressing', { by: 'ours', phase: 'Succeeded' }),
      healthy,
      {
        verdict: 'wait',
        reason: 'did not reach the healthy gate (sync Synced, health Progressing, operation Succeeded)',
      },
    ],
    [
      'synced gate: Synced but Progressing passes',
      app('Synced/Progressing', { by: 'ours', phase: 'Succeeded' }),
      synced,
      { verdict: 'pass' },
    ],
    [
      'our sync still running waits, whatever the status says',
      app('Synced/Healthy', { by: 'ours', phase: 'Running' }),
      healthy,
      { verdict: 'wait', reason: 'sync still running' },
    ],
    [
      'an operation of another run is not ours: waits',
      app('Synced/Healthy', { by: 'theirs', phase: 'Succeeded' }),
      healthy,
      { verdict: 'wait', reason: 'sync not picked up yet' },
    ],
    [
      'our sync failed: fails with the phase, message and failed resources',
      app('OutOfSync/Healthy', {
        by: 'ours',
        phase: 'Failed',
        message: 'one or more objects failed to apply',
        failed: 'web',
      }),
      healthy,
      { verdict: 'fail', reason: 'sync Failed: one or more objects failed to apply; Deployment/web: invalid spec' },
    ],
    ['an app gone from the mirror waits', undefined, healthy, { verdict: 'wait', reason: 'sync not picked up yet' }],
    [
      'gate=none: no gates, an accepted sync passes at once',
      app('OutOfSync/Missing'),
      gatesFor({ gate: 'none', dryRun: false }),
      { verdict: 'pass' },
    ],
    [
      'a dry run: no gates, an accepted sync passes at once',
      app('OutOfSync/Missing'),
      gatesFor({ gate: 'healthy', dryRun: true }),
      { verdict: 'pass' },
    ],
  ];
  for (const [what, a, gates, verdict] of table) {
    it(what, () => expect(appVerdict(a, RUN, gates)).toEqual(verdict));
  }

  it('checks gates in order: the first that does not pass decides', () => {
    const gates: AppGate[] = [
      { name: 'first', check: () => ({ verdict: 'pass' }) },
      { name: 'second', check: () => ({ verdict: 'wait', reason: 'baking' }) },
      { name: 'third', check: () => ({ verdict: 'fail', reason: 'error rate' }) },
    ];
    expect(appVerdict(app('Synced/Healthy'), RUN, gates)).toEqual({ verdict: 'wait', reason: 'baking' });
    expect(appVerdict(app('Synced/Healthy'), RUN, [gates[0], gates[2], gates[1]])).toEqual({
      verdict: 'fail',
      reason: 'error rate',
    });
  });
});

const cp = (name: string, state: AppState, extra: Partial<AppCheckpoint> = {}): AppCheckpoint => ({
  state,
  instance: 'prod',
  app: name,
  cluster: 'c1',
  wave: 0,
  ...extra,
});

describe('bulk-sync wave verdict', () => {
  const table: [string, AppCheckpoint[], string, string[]][] = [
    ['every app ended well: pass', [cp('a', 'done'), cp('b', 'skipped')], 'pass', []],
    ['an app still syncing: wait', [cp('a', 'done'), cp('b', 'accepted'), cp('c', 'pending')], 'wait', ['b', 'c']],
    [
      'a failure nobody acted on: fail, with why',
      [cp('a', 'failed', { reason: 'sync refused: denied' }), cp('b', 'accepted')],
      'fail',
      ['a (sync refused: denied)'],
    ],
    [
      'a timeout counts as a failure',
      [cp('a', 'timeout', { reason: 'timed out' }), cp('b', 'done')],
      'fail',
      ['a (timed out)'],
    ],
    [
      'a failure already acted on (paused for) does not fail the wave again',
      [cp('a', 'failed', { reason: 'x', acknowledged: true }), cp('b', 'posting')],
      'wait',
      ['b'],
    ],
    [
      'acted-on failures and the rest ended: pass',
      [cp('a', 'timeout', { reason: 'x', acknowledged: true }), cp('b', 'done')],
      'pass',
      [],
    ],
  ];
  for (const [what, apps, verdict, detail] of table) {
    it(what, () => {
      const v = waveVerdict(apps);
      expect(v.verdict).toBe(verdict);
      if (v.verdict === 'wait') expect(v.open.map((s) => s.app)).toEqual(detail);
      if (v.verdict === 'fail') expect(v.reasons).toEqual(detail);
    });
  }
});

describe('bulk-sync timeout reasons', () => {
  const table: [string, AppCheckpoint, Application | undefined, string][] = [
    [
      'pending, with what it waited on',
      cp('a', 'pending', { note: 'waiting: an operation by bob is running' }),
      app('OutOfSync/Healthy'),
      'timed out before its sync started (waiting: an operation by bob is running)',
    ],
    [
      'our sync still running',
      cp('a', 'accepted'),
      app('OutOfSync/Healthy', { by: 'ours', phase: 'Running', message: 'waiting for healthy state' }),
      'timed out: sync still running (waiting for healthy state)',
    ],
    [
      'done syncing but not at the gate',
      cp('a', 'accepted'),
      app('Synced/Degraded', { by: 'ours', phase: 'Succeeded' }),
      'timed out: did not reach the healthy gate (sync Synced, health Degraded, operation Succeeded)',
    ],
    ['gone from the mirror', cp('a', 'unknown'), undefined, 'timed out: app not found in the fleet mirror'],
  ];
  for (const [what, s, a, reason] of table) {
    it(what, () => expect(timeoutReason(s, a, RUN, 'healthy')).toBe(reason));
  }
});
