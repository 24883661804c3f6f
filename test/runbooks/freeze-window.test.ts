import { describe, expect, it } from 'vitest';
import { freezeDescription, freezeUntil, freezeWindow } from '../../src/domain/runbooks/freeze.js';
import { freezeFromWindow } from '../../src/fleet/freeze.js';
import { projectWindowsProblem, windowActive, windowEnd } from '../../src/infra/argocd/sync-windows.js';

const scope = { applications: ['*'] };
const HOUR = 3_600_000;

describe('freezeWindow', () => {
  // Minute boundaries, the end of a month, of a year, a leap day: the once-a-year tick must still be "now".
  const moments = [
    '2026-03-10T03:00:00.000Z',
    '2026-03-10T03:00:00.001Z',
    '2026-03-10T03:17:42.500Z',
    '2026-03-31T23:59:59.999Z',
    '2026-12-31T23:30:00.000Z',
    '2028-02-29T12:00:30.000Z',
  ];

  it.each(moments)('at %s covers now until now + for= and not a minute past its rounded end', (iso) => {
    const now = new Date(iso);
    for (const forMs of [60_000, 2 * HOUR, 90 * 60_000 + 1, 7 * 24 * HOUR]) {
      const { window, until } = freezeWindow(scope, { now, forMs, manualBlocked: false, description: 'x' });
      expect(projectWindowsProblem([window])).toBeUndefined();
      expect(until!.getTime()).toBe(freezeUntil(now, forMs).getTime());
      expect(until!.getTime()).toBeGreaterThanOrEqual(now.getTime() + forMs);
      expect(until!.getTime() - (now.getTime() + forMs)).toBeLessThan(60_000);
      // Argo CD's own reading: active now and all the way, ended at `until`, and from a minute before now.
      for (const t of [now.getTime() - 60_000 + 1, now.getTime(), now.getTime() + forMs / 2, until!.getTime() - 1])
        expect(windowActive(window, new Date(t)), `${new Date(t).toISOString()} for ${forMs}`).toBe(true);
      expect(windowActive(window, until!)).toBe(false);
      expect(windowActive(window, new Date(until!.getTime() + 3 * HOUR))).toBe(false);
      expect(windowEnd(window, now)!.getTime()).toBe(until!.getTime());
    }
  });

  it('writes the window in Argo CD stored form: deny, UTC, manualSync unless blocked', () => {
    const now = new Date('2026-03-10T03:17:42Z');
    expect(freezeWindow(scope, { now, forMs: 2 * HOUR, manualBlocked: false, description: 'd' }).window).toEqual({
      kind: 'deny',
      schedule: '16 3 10 3 *',
      duration: '2h2m',
      applications: ['*'],
      manualSync: true,
      timeZone: 'UTC',
      description: 'd',
    });
    const blocked = freezeWindow(
      { applications: ['web-*'], clusters: ['prod-eu1'], andOperator: true },
      { now, manualBlocked: true, description: 'd' },
    );
    expect(blocked).toEqual({
      window: {
        kind: 'deny',
        schedule: '* * * * *',
        duration: '1h',
        applications: ['web-*'],
        clusters: ['prod-eu1'],
        timeZone: 'UTC',
        andOperator: true,
        description: 'd',
      },
    });
    // Until unfreeze: active whenever it is asked, and never ending.
    for (const t of ['2026-03-10T03:00:00Z', '2027-01-01T00:00:00Z'])
      expect(windowActive(blocked.window, new Date(t))).toBe(true);
    expect(windowEnd(blocked.window, now)).toBeUndefined();
  });

  it('marks the description as rollcall, with who, when, the incident, the end and the run, within 255 characters', () => {
    const base = { by: 'U123', at: '2026-03-10T03:17:42.123Z', runId: 'r-abc12', target: 'project=payments' };
    expect(freezeDescription({ ...base, incident: 'INC-4', until: '2026-03-10T05:18:00.000Z' })).toBe(
      'rollcall freeze by U123 at 2026-03-10T03:17Z for INC-4 until 2026-03-10T05:18Z (run r-abc12): project=payments',
    );
    const long = freezeDescription({ ...base, target: `${'a-very-long-app-name,'.repeat(20)}` });
    expect(long.length).toBe(255);
    expect(long.endsWith('…')).toBe(true);
    expect(long.startsWith('rollcall freeze by U123 at 2026-03-10T03:17Z (run r-abc12): ')).toBe(true);
  });

  it('reads a freeze back from its window alone, as a process without the records in Redis knows it', () => {
    const base = { by: 'U123', at: '2026-03-10T03:17:42.123Z', runId: 'r-abc12', target: 'auth-* cluster=prod-eu1' };
    const { window } = freezeWindow(
      { applications: ['auth-*'], clusters: ['prod-eu1'], andOperator: true },
      {
        now: new Date(base.at),
        forMs: 2 * 3_600_000,
        manualBlocked: true,
        description: freezeDescription({ ...base, incident: 'INC-4', until: '2026-03-10T05:18:00.000Z' }),
      },
    );
    expect(freezeFromWindow('prod', 'auth', window)).toEqual({
      runId: 'r-abc12',
      instance: 'prod',
      project: 'auth',
      window,
      target: 'auth-* cluster=prod-eu1',
      by: 'U123',
      at: '2026-03-10T03:17:00.000Z',
      until: '2026-03-10T05:18:00.000Z',
      incident: 'INC-4',
      manualBlocked: true,
    });
    expect(
      freezeFromWindow('prod', 'auth', { ...window, description: 'weekend freeze (platform team)' }),
    ).toBeUndefined();
    expect(
      freezeFromWindow('prod', 'auth', { ...window, description: 'rollcall freeze by someone, rewritten by hand' }),
    ).toBeUndefined();
  });
});
