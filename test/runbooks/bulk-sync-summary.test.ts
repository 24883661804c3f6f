import { describe, expect, it } from 'vitest';
import { progressOf, rollbackText, summarize } from '../../src/domain/runbooks/actions/bulk-sync/summary.js';
import type { AppCheckpoint, AppState } from '../../src/domain/runbooks/actions/sync-progress.js';

const T0 = Date.parse('2030-01-01T12:00:00Z');
const cp = (app: string, state: AppState, wave: number, reason?: string): AppCheckpoint => ({
  state,
  instance: 'prod',
  app,
  cluster: `c-${app}`,
  wave,
  ...(reason ? { reason } : {}),
});
const states = new Map(
  [cp('a', 'done', 0), cp('b', 'done', 1), cp('c', 'done', 1), cp('d', 'pending', 2)].map((s) => [s.app, s]),
);
const waves = [
  { name: 'tier=canary', apps: ['a'] },
  { name: 'tier=low', apps: ['b', 'c'] },
  { name: 'tier=high', apps: ['d'] },
];
const rollback = {
  rolledBack: [
    { app: 'b', instance: 'prod', cluster: 'c-b', to: '#1 (revision 1111111)' },
    { app: 'c', instance: 'prod', cluster: 'c-c', to: '#4 (revision 2222222)' },
  ],
  notRolledBack: [
    { app: 'x', instance: 'prod', cluster: 'c-x', reason: "its history has no deployment from before this run's sync" },
  ],
  unfinished: false,
};

describe('what a bulk sync says about its waves', () => {
  it('names the failed wave, its reason, and what went back where', () => {
    const out = summarize(states, false, {
      failures: [{ wave: 1, name: 'wave 2/3 (tier=low)', reason: 'bake 30s failed: health: b (c-b): health Degraded' }],
      rollback: { ...rollback, wave: 1 },
    });
    expect(out.summary).toEqual([
      '3 app(s) synced on 3 cluster(s), 1 not synced yet',
      'wave 2/3 (tier=low) failed: bake 30s failed: health: b (c-b): health Degraded',
      "rolled back 2 apps: b (c-b) to #1 (revision 1111111), c (c-c) to #4 (revision 2222222); not rolled back: x (c-x): its history has no deployment from before this run's sync",
    ]);
    expect(out.rolledBack).toEqual(rollback.rolledBack);
  });

  it('a dry run says it would roll back, and that nothing was applied', () => {
    expect(rollbackText({ ...rollback, notRolledBack: [] }, true)).toBe(
      'would roll back (dry run: nothing applied) 2 apps: b (c-b), c (c-c)',
    );
    expect((summarize(states, true).summary as string[])[0]).toBe(
      '3 app(s) would sync on 3 cluster(s) (dry run: nothing applied), 1 not synced yet',
    );
  });

  it("the live headline carries the bake's time left and each verifier's verdict, then the rollback", () => {
    const watch = {
      wave: 1,
      kind: 'bake' as const,
      endsAt: T0 + 25_000,
      apps: 2,
      verdicts: [
        { name: 'health', verdict: 'pass' as const, reason: '2 apps: Synced and Healthy' },
        { name: 'check error-rate', verdict: 'inconclusive' as const, reason: 'no data yet' },
      ],
    };
    const baking = progressOf({ states, waves, waveIndex: 1, dryRun: false, now: T0, watch });
    expect(baking.headline).toBe(
      'wave 2/3 (tier=low) · baking: 25s left · health: pass · check error-rate: inconclusive · 3/4 synced',
    );
    expect(baking.watch).toEqual({
      wave: 2,
      kind: 'bake',
      endsAt: '2030-01-01T12:00:25.000Z',
      apps: 2,
      verdicts: watch.verdicts,
    });
    const rolling = progressOf({
      states,
      waves,
      waveIndex: 1,
      dryRun: false,
      now: T0,
      rollbackLine: 'rolling back b to #1 (revision 1111111)',
    });
    expect(rolling.headline).toBe('wave 2/3 (tier=low) · failed, rolling back b to #1 (revision 1111111) · 3/4 synced');
  });
});
