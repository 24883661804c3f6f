import { createRequire } from 'node:module';
import type { SyncWindow } from './types.js';

/**
 * AppProject sync windows as Argo CD v3.5 evaluates them (pkg/apis/application/v1alpha1/types.go: SyncWindow,
 * SyncWindows.Matches, Active, CanSync; Validate in app_project_types.go). Pure, so rollcall (which writes
 * windows and says what they hold) and the simulator (which enforces them) read a window the same way.
 *
 * - A window is active at `t` when its cron (robfig/cron, 5 fields, read in UTC shifted by the zone's offset
 *   at `t`) fires strictly between `t - duration` and `t`: a tick at `s` holds the open interval (s, s + duration).
 * - Matching: `applications` globs the app name, `clusters` the destination name or server, `namespaces` the
 *   destination namespace; any one matching is enough, unless `andOperator` asks for every list that is set.
 * - An active deny window blocks; manual syncs still go when every active deny window has `manualSync`.
 *   Otherwise an active allow window lets it go; with allow windows all closed only manual syncs go, and only
 *   when every closed allow window has `manualSync`.
 */

/** A schedule, duration or window Argo CD would refuse, worded as Argo CD words it. */
export class SyncWindowError extends Error {
  override readonly name = 'SyncWindowError';
}

/** cron-parser, loaded by the first window evaluated: most processes never read one. */
function cronParser(): typeof import('cron-parser') {
  return createRequire(import.meta.url)('cron-parser') as typeof import('cron-parser');
}

const GO_UNITS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** Go's time.ParseDuration (milliseconds, fractions kept), with its error wording. */
export function parseGoDuration(text: string): number {
  const invalid = () => new SyncWindowError(`time: invalid duration "${text}"`);
  let rest = text;
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    sign = rest.startsWith('-') ? -1 : 1;
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  if (!rest) throw invalid();
  let total = 0;
  while (rest) {
    const number = /^(\d*)(?:\.(\d*))?/.exec(rest)!;
    if (!number[1] && !number[2]) throw invalid();
    rest = rest.slice(number[0].length);
    const unit = /^[^\d.]*/.exec(rest)![0];
    if (!unit) throw new SyncWindowError(`time: missing unit in duration "${text}"`);
    const size = GO_UNITS[unit];
    if (size === undefined) throw new SyncWindowError(`time: unknown unit "${unit}" in duration "${text}"`);
    total += Number(`${number[1] || '0'}.${number[2] || '0'}`) * size;
    rest = rest.slice(unit.length);
  }
  return sign * total;
}

/** A Go duration for whole seconds, zero units left out: `90m` → "1h30m", `45s` → "45s". */
export function goDuration(ms: number): string {
  let s = Math.round(ms / 1000);
  if (s <= 0) return '0s';
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  return `${h ? `${h}h` : ''}${m || (h && s) ? `${m}m` : ''}${s || (!h && !m) ? `${s}s` : ''}`;
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
/** robfig/cron's bounds per field: minute, hour, day of month, month, day of week (no 7 for Sunday). */
const FIELDS = [
  { max: 59, names: [] as string[] },
  { max: 23, names: [] as string[] },
  { max: 31, names: [] as string[] },
  { max: 12, names: MONTHS },
  { max: 6, names: DAYS },
];

/**
 * What robfig/cron's standard parser accepts and cron-parser would read differently or more generously:
 * exactly five fields, no descriptors, no L/W/#/H, numbers within robfig's bounds (day of week 0-6).
 */
function checkRobfigSyntax(schedule: string): void {
  const fields = schedule.trim().split(/\s+/).filter(Boolean);
  if (schedule.trim().startsWith('@')) throw new SyncWindowError(`parser does not accept descriptors: ${schedule}`);
  if (fields.length !== 5)
    throw new SyncWindowError(`expected exactly 5 fields, found ${fields.length}: [${fields.join(' ')}]`);
  fields.forEach((field, i) => {
    for (const part of field.split(',')) {
      const [range, step, extra] = part.split('/');
      if (extra !== undefined || (step !== undefined && !/^\d+$/.test(step)))
        throw new SyncWindowError(`failed to parse int from ${step ?? part}: invalid syntax`);
      if (range === '*' || range === '?') continue;
      for (const atom of range.split('-')) {
        if (FIELDS[i].names.includes(atom.toUpperCase())) continue;
        if (!/^\d+$/.test(atom))
          throw new SyncWindowError(
            `failed to parse int from ${atom}: strconv.Atoi: parsing "${atom}": invalid syntax`,
          );
        if (Number(atom) > FIELDS[i].max)
          throw new SyncWindowError(`end of range (${atom}) above maximum (${FIELDS[i].max}): ${part}`);
      }
    }
  });
}

type Schedule = (after: Date) => Date;
const schedules = new Map<string, Schedule>();

/** A parsed schedule: the first tick strictly after a time, read in UTC (robfig's Schedule.Next). */
function scheduleOf(schedule: string): Schedule {
  const known = schedules.get(schedule);
  if (known) return known;
  try {
    checkRobfigSyntax(schedule);
    cronParser().CronExpressionParser.parse(schedule, { tz: 'UTC' });
  } catch (error) {
    throw new SyncWindowError(`cannot parse schedule '${schedule}': ${(error as Error).message}`);
  }
  // One parsed expression per schedule, reset to each query time: parsing is the costly part.
  const expression = cronParser().CronExpressionParser.parse(schedule, { tz: 'UTC' });
  const next: Schedule = (after) => {
    expression.reset(after);
    return expression.next().toDate();
  };
  if (schedules.size > 1000) schedules.clear();
  schedules.set(schedule, next);
  return next;
}

function durationOf(w: SyncWindow): number {
  try {
    return parseGoDuration(w.duration);
  } catch (error) {
    throw new SyncWindowError(`cannot parse duration '${w.duration}': ${(error as Error).message}`);
  }
}

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/**
 * The zone's UTC offset (ms) at `at`. Argo CD shifts the clock by the offset the zone has now, not at the
 * tick (scheduleOffsetByTimeZone), and falls back to UTC for a zone it cannot load.
 */
function zoneOffsetMs(zone: string | undefined, at: Date): number {
  if (!zone || zone === 'UTC' || !isTimeZone(zone)) return 0;
  const name = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' })
    .formatToParts(at)
    .find((p) => p.type === 'timeZoneName')?.value;
  const m = /GMT([+-])(\d{2}):(\d{2})/.exec(name ?? '');
  if (!m) return 0;
  return (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 3_600_000 + Number(m[3]) * 60_000);
}

/**
 * Answers by schedule, duration, zone and instant: a controller pass asks the same few windows about many apps
 * at one instant, and a cron step costs about 0.2 ms.
 */
const activeAt = new Map<string, boolean>();

/** Whether the window is active at `at` (SyncWindow.Active). Throws SyncWindowError for a bad schedule or duration. */
export function windowActive(w: SyncWindow, at: Date): boolean {
  const key = `${w.schedule}\u0000${w.duration}\u0000${w.timeZone ?? ''}\u0000${at.getTime()}`;
  const known = activeAt.get(key);
  if (known !== undefined) return known;
  const next = scheduleOf(w.schedule);
  const duration = durationOf(w);
  const shifted = at.getTime() + zoneOffsetMs(w.timeZone, at);
  const active = next(new Date(shifted - duration)).getTime() < shifted;
  if (activeAt.size > 10_000) activeAt.clear();
  activeAt.set(key, active);
  return active;
}

/** The first tick of the window's schedule after `after`, as a real instant (the window opens then). */
export function nextWindowStart(w: SyncWindow, after: Date): Date {
  const offset = zoneOffsetMs(w.timeZone, after);
  return new Date(scheduleOf(w.schedule)(new Date(after.getTime() + offset)).getTime() - offset);
}

/**
 * When an active window stops holding: the end of the tick that makes it active, or of a later tick that
 * overlaps it (a window whose ticks come closer than its duration never ends). Undefined when inactive,
 * or when it does not end within `horizonMs`.
 */
export function windowEnd(w: SyncWindow, at: Date, horizonMs = 366 * 86_400_000): Date | undefined {
  if (!windowActive(w, at)) return undefined;
  const duration = durationOf(w);
  const next = scheduleOf(w.schedule);
  const offset = zoneOffsetMs(w.timeZone, at);
  let tick = next(new Date(at.getTime() + offset - duration)).getTime();
  // Ticks closer than the duration chain into one hold; a schedule that fires every minute never lets go.
  for (let i = 0; i < 1500; i++) {
    const following = next(new Date(tick)).getTime();
    if (following >= tick + duration) return new Date(tick + duration - offset);
    tick = following;
    if (tick - at.getTime() > horizonMs) return undefined;
  }
  return undefined;
}

/** gobwas/glob without separators, as Argo CD's glob.Match uses it here: `*` also crosses `/`. */
function globRegex(pattern: string): RegExp {
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\' && i + 1 < pattern.length) out += escapeRegex(pattern[++i]);
    else if (c === '*') out += '.*';
    else if (c === '?') out += '.';
    else if (c === '[') {
      const close = pattern.indexOf(']', i + 1);
      if (close < 0) return /(?!)/;
      const body = pattern.slice(i + 1, close);
      out += body.startsWith('!') ? `[^${body.slice(1)}]` : `[${body}]`;
      i = close;
    } else if (c === '{') {
      const close = pattern.indexOf('}', i + 1);
      if (close < 0) return /(?!)/;
      out += `(?:${pattern
        .slice(i + 1, close)
        .split(',')
        .map((alt) => globRegex(alt).source.slice(1, -1))
        .join('|')})`;
      i = close;
    } else out += escapeRegex(c);
  }
  return new RegExp(`^${out}$`, 's');
}

function escapeRegex(c: string): string {
  return c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

export function globMatch(pattern: string, value: string): boolean {
  return pattern === '*' || globRegex(pattern).test(value);
}

/** What Matches reads of an Application. */
export interface WindowTarget {
  metadata: { name: string };
  spec: { destination?: { name?: string; server?: string; namespace?: string } };
}

/** Whether the window applies to the app (one iteration of SyncWindows.Matches, kept as Argo CD writes it). */
export function windowMatches(window: SyncWindow, app: WindowTarget): boolean {
  const and = !!window.andOperator;
  const dst = app.spec.destination ?? {};
  let matched = false;
  let isSet = false;
  if (window.applications?.length) {
    isSet = true;
    matched = window.applications.some((a) => globMatch(a, app.metadata.name));
  }
  if (and && !matched && isSet) return false;
  if (!and && matched) return true;
  if (window.clusters?.length) {
    isSet = true;
    matched = window.clusters.some(
      (c) => (!!dst.name && globMatch(c, dst.name)) || (!!dst.server && globMatch(c, dst.server)),
    );
  }
  if (isSet && and && !matched) return false;
  if (!and && matched) return true;
  if (window.namespaces?.length) matched = window.namespaces.some((n) => globMatch(n, dst.namespace ?? ''));
  return matched;
}

/** The project's windows that apply to the app (SyncWindows.Matches). */
export function windowsFor(windows: readonly SyncWindow[] | undefined, app: WindowTarget): SyncWindow[] {
  return (windows ?? []).filter((w) => windowMatches(w, app));
}

export interface SyncAttempt {
  /** Started by a person (not auto-sync, not RollingSync). */
  manual: boolean;
  at: Date;
  /** operationState.startedAt of the running operation, for syncOverrun. */
  operationStartedAt?: Date;
}

function decide(windows: readonly SyncWindow[], manual: boolean, at: Date, startedAt?: Date): boolean {
  if (!windows.length) return true;
  const active = windows.filter((w) => windowActive(w, at));
  const denies = active.filter((w) => w.kind === 'deny');
  if (denies.length) {
    if (manual && denies.every((w) => w.manualSync)) return true;
    // syncOverrun: every active deny window lets an operation that could start before it run on.
    if (startedAt && denies.every((w) => w.syncOverrun) && decide(windows, manual, startedAt)) return true;
    return false;
  }
  if (active.some((w) => w.kind === 'allow')) return true;
  const closedAllows = windows.filter((w) => w.kind === 'allow' && !active.includes(w));
  if (closedAllows.length) {
    if (manual && closedAllows.every((w) => w.manualSync)) return true;
    if (startedAt && closedAllows.every((w) => w.syncOverrun) && decide(windows, manual, startedAt)) return true;
    return false;
  }
  return true;
}

/**
 * Whether a sync may run now under the windows that match the app (SyncWindows.CanSync). Throws
 * SyncWindowError "invalid sync windows: …" when one of them cannot be read, as Argo CD does (it then blocks).
 */
export function canSync(windows: readonly SyncWindow[], attempt: SyncAttempt): boolean {
  try {
    return decide(windows, attempt.manual, attempt.at, attempt.operationStartedAt);
  } catch (error) {
    if (error instanceof SyncWindowError) throw new SyncWindowError(`invalid sync windows: ${error.message}`);
    throw error;
  }
}

/**
 * Defaults Argo CD's SyncWindow.Validate writes into the stored window: an empty or unknown time zone
 * becomes "UTC". Returns a copy.
 */
export function normalizeWindow(w: SyncWindow): SyncWindow {
  const out = { ...w };
  if (!out.timeZone || !isTimeZone(out.timeZone)) out.timeZone = 'UTC';
  return out;
}

/**
 * The window as Argo CD stores and serves it: SyncWindow's fields in Go's order, empty and false ones left
 * out (`omitempty`), unknown ones dropped, the time zone defaulted as Validate does. Two windows are the same
 * stored window when their canonical forms are equal.
 */
export function canonicalWindow(w: SyncWindow): SyncWindow {
  const n = normalizeWindow(w);
  const out: Record<string, unknown> = {};
  const put = (key: keyof SyncWindow, value: unknown) => {
    if (value === undefined || value === null || value === false || value === '') return;
    if (Array.isArray(value) && !value.length) return;
    out[key] = Array.isArray(value) ? [...(value as unknown[])] : value;
  };
  put('kind', n.kind);
  put('schedule', n.schedule);
  put('duration', n.duration);
  put('applications', n.applications);
  put('namespaces', n.namespaces);
  put('clusters', n.clusters);
  put('manualSync', n.manualSync);
  put('timeZone', n.timeZone);
  put('andOperator', n.andOperator);
  put('description', n.description);
  put('syncOverrun', n.syncOverrun);
  return out as unknown as SyncWindow;
}

/** SyncWindow.Validate's refusal, or undefined. */
export function windowProblem(w: SyncWindow): string | undefined {
  if (w.kind !== 'allow' && w.kind !== 'deny') return `kind '${String(w.kind)}' mismatch: can only be allow or deny`;
  try {
    scheduleOf(w.schedule);
    durationOf(w);
  } catch (error) {
    return (error as Error).message;
  }
  if ((w.description ?? '').length > 255) return 'description must not exceed 255 characters';
  return undefined;
}

/** The fields HashIdentity covers: two windows equal on these are one window to Argo CD. */
export function windowIdentity(w: SyncWindow): string {
  const n = normalizeWindow(w);
  return JSON.stringify([
    n.kind,
    n.schedule,
    n.duration,
    n.applications ?? [],
    n.namespaces ?? [],
    n.clusters ?? [],
    n.timeZone,
    !!n.andOperator,
  ]);
}

/** Why AppProject.ValidateProject refuses these windows (gRPC code name and message), or undefined. */
export function projectWindowsProblem(
  windows: readonly SyncWindow[] | undefined,
): { code: 'AlreadyExists' | 'Unknown' | 'OutOfRange'; message: string } | undefined {
  const seen = new Set<string>();
  for (const w of windows ?? []) {
    if (!w) continue;
    const identity = windowIdentity(w);
    if (seen.has(identity))
      return {
        code: 'AlreadyExists',
        message: `sync window with kind '${w.kind}', schedule '${w.schedule}', and duration '${w.duration}' already exists (duplicate detected)`,
      };
    const problem = windowProblem(w);
    // Validate's errors carry no gRPC status: the gateway answers them as Unknown (HTTP 500).
    if (problem) return { code: 'Unknown', message: problem };
    if (!w.applications?.length && !w.namespaces?.length && !w.clusters?.length)
      return {
        code: 'OutOfRange',
        message: `window '${w.kind}':'${w.schedule}':'${w.duration}' requires one of application, cluster or namespace`,
      };
    seen.add(identity);
  }
  return undefined;
}
