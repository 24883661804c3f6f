import type { Tone } from './reply.js';

/**
 * Formatting shared by the read-only commands. Text is Slack mrkdwn (the one markup of a Reply);
 * the terminal view converts it.
 */

/** "45s", "12m", "3h 5m", "2d 4h". Rounds down: on-call reads "stuck for 42m", not "42.7m". */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) ms = 0;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h}h ${m % 60}m` : `${h}h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d}d ${h % 24}h` : `${d}d`;
}

/**
 * A duration the way people type it, exact and in one canonical spelling: `10m`, `1h30m`, `1m30s`, `2d`,
 * `250ms`. `600s` and `10m` both show as `10m`; parseDuration reads every output back to the same value,
 * so a param echoed in a preview, a confirmation or a summary can be pasted into the next command.
 */
export function typedDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms <= 0) return '0s';
  let rest = Math.round(ms);
  let text = '';
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
    ['ms', 1],
  ] as const) {
    if (rest >= size) text += `${Math.floor(rest / size)}${unit}`;
    rest %= size;
  }
  return text;
}

let displayTimeZone = 'UTC';

/**
 * The time zone absolute times are shown in (config `display.timeZone`). One setting for every
 * rendering, set once when the process reads its config: replies are built far from any config.
 */
export function setDisplayTimeZone(timeZone: string): void {
  if (!isTimeZone(timeZone)) throw new RangeError(`Invalid time zone specified: ${timeZone}`);
  displayTimeZone = timeZone;
}

/**
 * Whether Intl knows this IANA zone. UTC is answered without asking: the first Intl call loads ICU's
 * zone data, which a one-shot `rollcall ask` that shows no absolute time would pay for nothing.
 */
export function isTimeZone(timeZone: string): boolean {
  if (timeZone === 'UTC') return true;
  try {
    new Intl.DateTimeFormat('en-GB', { timeZone });
    return true;
  } catch {
    return false;
  }
}

/** "14:05:09" (or "14:05"): the time of day in the display time zone, for lines read beside others of the same day. */
export function clockTime(at: Date, opts: { seconds?: boolean } = {}): string {
  const seconds = opts.seconds ?? true;
  return dateFormat('en-GB', {
    timeZone: displayTimeZone,
    hour: '2-digit',
    minute: '2-digit',
    ...(seconds ? { second: '2-digit' } : {}),
    hourCycle: 'h23',
  }).format(at);
}

/**
 * How far the display time zone is ahead of UTC at `at` (ms): a chart drawn on a UTC time scale reads as local
 * time when its instants are shifted by it.
 */
export function displayZoneOffsetMs(at: Date): number {
  if (displayTimeZone === 'UTC') return 0;
  const name = new Intl.DateTimeFormat('en-US', { timeZone: displayTimeZone, timeZoneName: 'longOffset' })
    .formatToParts(at)
    .find((p) => p.type === 'timeZoneName')?.value;
  const m = /GMT([+-])(\d{2}):(\d{2})/.exec(name ?? '');
  return m ? (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 3_600_000 + Number(m[3]) * 60_000) : 0;
}

/** The display time zone's name, for a list that shows times of day only. */
export function displayZone(): string {
  return displayTimeZone;
}

/** "3 Dec, 14:19 UTC" in the display time zone; the ISO text itself when it does not parse. */
export function absoluteTime(iso: string, timeZone = displayTimeZone): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  return dateFormat('en-GB', {
    timeZone,
    day: 'numeric',
    month: 'short',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
    timeZoneName: 'short',
  }).format(t);
}

// Making a formatter costs far more than using one (tens of microseconds), and an alert sweep over a fleet
// mid-incident formats a time per app: each formatter is made once.
const dateFormats = new Map<string, Intl.DateTimeFormat>();

function dateFormat(locale: string, options: Intl.DateTimeFormatOptions): Intl.DateTimeFormat {
  const key = `${locale} ${JSON.stringify(options)}`;
  let format = dateFormats.get(key);
  if (!format) dateFormats.set(key, (format = new Intl.DateTimeFormat(locale, options)));
  return format;
}

/**
 * The one way a point in time is shown: relative first ("2h 5m ago"), the absolute time behind it
 * ("2h 5m ago (3 Dec, 14:19 UTC)"), so on-call reads the age and can still line it up with a graph.
 */
export function when(iso: string | null | undefined, now: Date = new Date()): string {
  if (!iso) return 'unknown time';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const d = now.getTime() - t;
  const relative = d >= 0 ? `${formatDuration(d)} ago` : `in ${formatDuration(-d)}`;
  return `${relative} (${absoluteTime(iso)})`;
}

/** Milliseconds from an RFC3339 time to now; undefined when the time is absent or unparsable. */
export function elapsedMs(iso: string | null | undefined, now: Date): number | undefined {
  if (!iso) return undefined;
  const t = Date.parse(iso);
  return Number.isNaN(t) ? undefined : Math.max(0, now.getTime() - t);
}

/** "42m" since the time, or undefined. */
export function since(iso: string | null | undefined, now: Date): string | undefined {
  const ms = elapsedMs(iso, now);
  return ms === undefined ? undefined : formatDuration(ms);
}

/** 12,345: whole numbers grouped by hand, as toLocaleString('en-US') would (whose first call loads ICU). */
export function formatCount(n: number): string {
  return Number.isSafeInteger(n) ? String(n).replace(/\B(?=(\d{3})+$)/g, ',') : n.toLocaleString('en-US');
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${formatCount(n)} ${n === 1 ? one : many}`;
}

export function syncTone(sync: string | null | undefined): Tone {
  if (sync === 'Synced') return 'ok';
  if (sync === 'OutOfSync') return 'warn';
  return 'unknown';
}

export function healthTone(health: string | null | undefined): Tone {
  switch (health) {
    case 'Healthy':
      return 'ok';
    case 'Progressing':
      return 'progress';
    case 'Degraded':
    case 'Missing':
      return 'error';
    case 'Suspended':
      return 'warn';
    default:
      return 'unknown';
  }
}

export function progressiveTone(status: string | null | undefined): Tone {
  switch (status) {
    case 'Healthy':
      return 'ok';
    case 'Pending':
    case 'Progressing':
      return 'progress';
    case 'Waiting':
      return 'info';
    default:
      return 'unknown';
  }
}

const TONE_RANK: Record<Tone, number> = { error: 5, warn: 4, unknown: 3, progress: 2, info: 1, ok: 0 };

/** The worse of several tones (error > warn > unknown > progress > info > ok). */
export function worstTone(...tones: Tone[]): Tone {
  let worst: Tone = 'ok';
  for (const t of tones) if (TONE_RANK[t] > TONE_RANK[worst]) worst = t;
  return worst;
}

/** The tone of an app from its sync and health: a Degraded app is an error even when Synced. */
export function appTone(sync: string | null | undefined, health: string | null | undefined): Tone {
  return worstTone(syncTone(sync), healthTone(health));
}

/** Slack emoji names per tone; the terminal view maps them to symbols. */
export const TONE_EMOJI: Record<Tone, string> = {
  ok: ':white_check_mark:',
  warn: ':warning:',
  error: ':x:',
  progress: ':hourglass_flowing_sand:',
  unknown: ':grey_question:',
  info: ':information_source:',
};

export const SEVERITY_EMOJI: Record<string, string> = {
  critical: ':rotating_light:',
  warning: ':warning:',
  info: ':information_source:',
};

export const SEVERITY_TONE: Record<string, Tone> = { critical: 'error', warning: 'warn', info: 'info' };

/** "Synced 9,800 · OutOfSync 12" in a fixed, meaningful order; statuses with 0 are left out. */
export function countsLine(counts: Record<string, number>, order: readonly string[]): string {
  const keys = [
    ...order.filter((k) => counts[k]),
    ...Object.keys(counts)
      .filter((k) => !order.includes(k) && counts[k])
      .sort(),
  ];
  return keys.length ? keys.map((k) => `${k} ${formatCount(counts[k])}`).join(' · ') : 'none';
}

export const SYNC_ORDER = ['Synced', 'OutOfSync', 'Unknown'] as const;
export const HEALTH_ORDER = ['Healthy', 'Progressing', 'Suspended', 'Degraded', 'Missing', 'Unknown'] as const;
export const PROGRESSIVE_ORDER = ['Healthy', 'Progressing', 'Pending', 'Waiting'] as const;

/**
 * Cuts text to max characters (UTF-16 units, as Slack and JS count them) with an ellipsis, at a space: never
 * inside a word, a name or a URL, which cut short reads as another one. Only a text whose first word alone is
 * longer than max is cut inside it. `keep: 'ends'` keeps the head and the tail (a Go error chain ends with its
 * root cause: "...: dial tcp 10.0.0.7:443: connection refused"), joined by " … ".
 */
export function truncate(text: string, max: number, keep: 'head' | 'ends' = 'head'): string {
  if (text.length <= max) return text;
  if (keep === 'ends') {
    const tail = tailAtSpace(text, Math.floor(max * 0.45));
    const head = headAtSpace(text, max - tail.length - 3);
    if (head && tail) return `${head} … ${tail}`;
  }
  return `${headAtSpace(text, max - 1) || text.slice(0, pairSafeEnd(text, max - 1))}…`;
}

/**
 * A message said in at most max characters for a one-line summary: its parenthesised asides (name lists, values,
 * examples) go first, the last one first, and only what still does not fit is cut, at a space.
 */
export function shorten(text: string, max: number): string {
  let out = oneLine(text);
  while (out.length > max) {
    const aside = lastAside(out);
    if (!aside) break;
    out = `${out.slice(0, aside[0]).trimEnd()}${out.slice(aside[1])}`;
  }
  return truncate(out, max);
}

/** Start (with the space before it) and end of the last top-level " (...)" in text. */
function lastAside(text: string): [number, number] | undefined {
  let depth = 0;
  let end = -1;
  for (let i = text.length - 1; i >= 0; i--) {
    if (text[i] === ')') {
      if (depth++ === 0) end = i + 1;
    } else if (text[i] === '(' && depth > 0 && --depth === 0 && i > 0 && text[i - 1] === ' ') return [i - 1, end];
  }
  return undefined;
}

/** The longest start of text of at most n units that ends where a word does ('' when the first word is longer). */
function headAtSpace(text: string, n: number): string {
  if (n <= 0) return '';
  const cut = text.slice(0, pairSafeEnd(text, n));
  if (/\s/.test(text[cut.length] ?? ' ')) return cut.trimEnd();
  const space = cut.search(/\s\S*$/);
  return space > 0 ? cut.slice(0, space).trimEnd() : '';
}

/** The longest end of text of at most n units that starts where a word does ('' when the last word is longer). */
function tailAtSpace(text: string, n: number): string {
  const from = text.length - n;
  if (from <= 0) return text;
  if (/\s/.test(text[from - 1])) return text.slice(from).trimStart();
  const space = text.slice(from).search(/\s/);
  return space >= 0 ? text.slice(from + space).trimStart() : '';
}

/** `end`, or one less when it would split an emoji's surrogate pair: half a pair renders as �. */
export function pairSafeEnd(text: string, end: number): number {
  const code = text.charCodeAt(end - 1);
  return end > 0 && code >= 0xd800 && code <= 0xdbff ? end - 1 : end;
}

/** A mrkdwn link, or the label alone when there is no URL. `|` and `>` would end the label early; `<` would open markup. */
export function link(label: string, url: string | undefined): string {
  if (!url) return label;
  return `<${url}|${label.replace(/[|>]/g, ' ').replace(/</g, '‹')}>`;
}

/** `code` span; backticks inside would end it early. */
export function code(text: string): string {
  return `\`${text.replace(/`/g, "'")}\``;
}

/**
 * Text a user typed (a glob, a wave list), shown as typed: Slack has no escape for `*`, `_` or `~`, so
 * `*-eu-*` would turn bold; a code span keeps it literal (and the terminal shows it plain).
 */
export function literal(text: string): string {
  return /[*_~`<>&]/.test(text) ? code(text) : text;
}

/** Collapses whitespace and newlines of Argo CD messages (they can be multi-line kubectl output). */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** Plain code-point comparison: deterministic across locales (and what a JSON consumer's sort gives). */
export function byText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * A person in a message: Slack user ids as mentions (`<@U0123ABC>`, which Slack shows as the name and
 * the terminal as @U0123ABC); anything else (a terminal user, the scheduler) as written.
 */
export function mention(user: string): string {
  // A terminal user is whatever --as said: as text, never as markup.
  return /^[UW][A-Z0-9]{6,}$/.test(user)
    ? `<@${user}>`
    : user.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
