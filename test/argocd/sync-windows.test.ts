import { describe, expect, it } from 'vitest';
import type { SyncWindow } from '../../src/infra/argocd/types.js';
import {
  canSync,
  goDuration,
  nextWindowStart,
  parseGoDuration,
  projectWindowsProblem,
  windowActive,
  windowEnd,
  windowMatches,
  windowsFor,
} from '../../src/infra/argocd/sync-windows.js';

const at = (iso: string) => new Date(iso);
const deny = (w: Partial<SyncWindow> = {}): SyncWindow => ({
  kind: 'deny',
  schedule: '* * * * *',
  duration: '1h',
  applications: ['*'],
  ...w,
});
const app = (name: string, destination: { name?: string; server?: string; namespace?: string } = {}) => ({
  metadata: { name },
  spec: { destination },
});

describe('windowActive (SyncWindow.Active)', () => {
  it('holds the open interval after each tick: 03:00 + 1h is active from just after 03:00 to just before 04:00', () => {
    const w = deny({ schedule: '0 3 * * *' });
    expect(windowActive(w, at('2026-03-10T02:59:59Z'))).toBe(false);
    // robfig's Next is strictly after (now - duration): the tick itself is not yet inside.
    expect(windowActive(w, at('2026-03-10T03:00:00Z'))).toBe(false);
    expect(windowActive(w, at('2026-03-10T03:00:01Z'))).toBe(true);
    expect(windowActive(w, at('2026-03-10T03:59:59Z'))).toBe(true);
    expect(windowActive(w, at('2026-03-10T04:00:00Z'))).toBe(false);
  });

  it('every minute for an hour is always active, minute boundaries included', () => {
    for (const t of ['2026-03-10T03:00:00Z', '2026-03-10T03:00:00.001Z', '2026-07-01T23:59:59.999Z'])
      expect(windowActive(deny(), at(t)), t).toBe(true);
  });

  it('reads the schedule in the window time zone, by its offset at the time asked', () => {
    const w = deny({ schedule: '0 3 * * *', timeZone: 'Europe/Berlin' });
    // 03:00 in Berlin is 02:00Z in winter (UTC+1) and 01:00Z in summer (UTC+2).
    expect(windowActive(w, at('2026-01-15T02:30:00Z'))).toBe(true);
    expect(windowActive(w, at('2026-01-15T03:30:00Z'))).toBe(false);
    expect(windowActive(w, at('2026-07-15T01:30:00Z'))).toBe(true);
    // An unknown zone is UTC, as Argo CD falls back.
    expect(windowActive({ ...w, timeZone: 'Mars/Olympus' }, at('2026-01-15T03:30:00Z'))).toBe(true);
  });

  it('says when a yearly window ends and when it opens again', () => {
    const w = deny({ schedule: '12 3 10 3 *', duration: '2h' });
    expect(windowEnd(w, at('2026-03-10T03:30:00Z'))?.toISOString()).toBe('2026-03-10T05:12:00.000Z');
    expect(windowEnd(w, at('2026-03-10T06:00:00Z'))).toBeUndefined();
    expect(nextWindowStart(w, at('2026-03-10T06:00:00Z')).toISOString()).toBe('2027-03-10T03:12:00.000Z');
    // Ticks closer together than the duration never let go.
    expect(windowEnd(deny(), at('2026-03-10T03:30:00Z'))).toBeUndefined();
  });
});

describe('windowMatches (SyncWindows.Matches)', () => {
  const web = app('web-prod', { server: 'https://10.0.0.1:6443', namespace: 'web' });
  it('matches any one list by default, with gobwas globs whose * crosses "/"', () => {
    expect(windowMatches(deny({ applications: ['web-*'] }), web)).toBe(true);
    expect(windowMatches(deny({ applications: ['api-*'], clusters: ['https://*'] }), web)).toBe(true);
    expect(windowMatches(deny({ applications: undefined, namespaces: ['w?b'] }), web)).toBe(true);
    expect(windowMatches(deny({ applications: ['api-*'], namespaces: ['db'] }), web)).toBe(false);
  });

  it('with andOperator every list that is set must match', () => {
    const w = deny({ applications: ['web-*'], clusters: ['prod-eu1'], andOperator: true });
    expect(windowMatches(w, web)).toBe(false);
    expect(windowMatches(w, app('web-prod', { name: 'prod-eu1', namespace: 'web' }))).toBe(true);
    expect(windowMatches(w, app('api', { name: 'prod-eu1' }))).toBe(false);
  });

  it('keeps the windows of a project that apply to the app', () => {
    const windows = [deny({ applications: ['api'] }), deny({ applications: ['web-*'], description: 'x' })];
    expect(windowsFor(windows, web).map((w) => w.description)).toEqual(['x']);
  });
});

describe('canSync (SyncWindows.CanSync)', () => {
  const now = at('2026-03-10T03:30:00Z');
  const auto = { manual: false, at: now };
  const manual = { manual: true, at: now };

  it('an active deny window blocks automated syncs, and manual ones unless every active deny window allows them', () => {
    expect(canSync([deny({ manualSync: true })], auto)).toBe(false);
    expect(canSync([deny({ manualSync: true })], manual)).toBe(true);
    expect(canSync([deny({ manualSync: true }), deny({ schedule: '*/5 * * * *' })], manual)).toBe(false);
    expect(canSync([deny({ schedule: '0 22 * * *' })], auto)).toBe(true);
  });

  it('with allow windows all closed only manual syncs go, and only when they allow it', () => {
    const closed = { kind: 'allow' as const, schedule: '0 22 * * *', duration: '1h', applications: ['*'] };
    expect(canSync([closed], auto)).toBe(false);
    expect(canSync([closed], manual)).toBe(false);
    expect(canSync([{ ...closed, manualSync: true }], manual)).toBe(true);
    expect(canSync([closed, { ...closed, schedule: '0 3 * * *' }], auto)).toBe(true);
  });

  it('lets an operation that started before a deny window run on only with syncOverrun', () => {
    const late = deny({ schedule: '15 3 * * *' });
    const started = { ...auto, operationStartedAt: at('2026-03-10T03:10:00Z') };
    expect(canSync([late], started)).toBe(false);
    expect(canSync([{ ...late, syncOverrun: true }], started)).toBe(true);
  });

  it('a window it cannot read blocks, with Argo CD wording', () => {
    expect(() => canSync([deny({ duration: '1d' })], auto)).toThrow(
      `invalid sync windows: cannot parse duration '1d': time: unknown unit "d" in duration "1d"`,
    );
  });
});

describe('Go durations', () => {
  it('reads them as time.ParseDuration does, and writes whole seconds it reads back', () => {
    expect(parseGoDuration('1h30m')).toBe(5_400_000);
    expect(parseGoDuration('1.5h')).toBe(5_400_000);
    expect(parseGoDuration('250ms')).toBe(250);
    expect(parseGoDuration('0')).toBe(0);
    expect(() => parseGoDuration('10')).toThrow('time: missing unit in duration "10"');
    expect(() => parseGoDuration('')).toThrow('time: invalid duration ""');
    expect(goDuration(5_400_000)).toBe('1h30m');
    expect(goDuration(3_600_000 + 27_000)).toBe('1h0m27s');
    expect(goDuration(45_000)).toBe('45s');
    expect(goDuration(7_200_000)).toBe('2h');
  });
});

describe('projectWindowsProblem (ValidateProject)', () => {
  it('refuses a window without applications, clusters or namespaces', () => {
    expect(projectWindowsProblem([deny({ applications: [] })])).toEqual({
      code: 'OutOfRange',
      message: "window 'deny':'* * * * *':'1h' requires one of application, cluster or namespace",
    });
  });
  it('refuses two windows Argo CD hashes alike (description and manualSync do not count)', () => {
    expect(projectWindowsProblem([deny(), deny({ description: 'other', manualSync: true })])?.code).toBe(
      'AlreadyExists',
    );
    expect(projectWindowsProblem([deny(), deny({ timeZone: 'UTC' })])?.code).toBe('AlreadyExists');
  });
  it('refuses schedules robfig/cron refuses', () => {
    for (const schedule of ['0 3 * * 7', '0 0 0 * * *', '0 0 L * *', '@daily', '0 3 * * 1#2'])
      expect(projectWindowsProblem([deny({ schedule })])?.message, schedule).toMatch(
        new RegExp(`^cannot parse schedule '${schedule.replace(/[*#]/g, '\\$&')}'`),
      );
    expect(projectWindowsProblem([deny({ schedule: '30 2 * JAN-MAR MON-FRI' })])).toBeUndefined();
  });
});
