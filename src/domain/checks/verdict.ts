import { clockTime, formatDuration, typedDuration } from '../../core/format.js';
import type { CheckConfig } from '../../infra/config/schema.js';

/** One check's judgement of one app. */
export interface CheckVerdict {
  check: string;
  instance: string;
  app: string;
  cluster: string;
  /** `inconclusive`: no judgement could be made (Prometheus failed, or no data with `noData: inconclusive`). */
  status: 'pass' | 'fail' | 'inconclusive';
  /** The deciding value (the worst series, or the worst point of a range); absent without data. */
  value?: number;
  threshold: number;
  failWhen: 'above' | 'below';
  /** The query as sent, placeholders rendered (the template when it could not be rendered). */
  query: string;
  /** Prometheus' graph of the query (over the range, when one was judged). */
  link: string;
  /** One short line: `error-rate 0.31 > 0.05 (fail above)`, `0.004 ≤ 0.05`, `no data: ...`. */
  reason: string;
  /** How many series the answer held. */
  series?: number;
  /** The answer held no number (no series, or only NaN): `status` is then the check's `noData`. */
  noData?: true;
}

/** A sample the judgement weighs: the value (NaN when the series had none), when, and which series. */
export interface Observation {
  value: number;
  at: number;
  metric: Readonly<Record<string, string>>;
}

export interface Threshold {
  threshold: number;
  failWhen: 'above' | 'below';
}

export function thresholdOf(check: CheckConfig): Threshold {
  return check.failAbove !== undefined
    ? { threshold: check.failAbove, failWhen: 'above' }
    : { threshold: check.failBelow!, failWhen: 'below' };
}

/** The value as on-call reads it: 3 significant digits below 1000, whole numbers above, the infinities as Prometheus writes them. */
export function formatValue(value: number): string {
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  if (Number.isNaN(value)) return 'NaN';
  return Math.abs(value) >= 1000 ? String(Math.round(value)) : String(Number(value.toPrecision(3)));
}

/** The value and the threshold as two numbers that read differently whenever they differ. */
function shown(value: number, threshold: number): [string, string] {
  const v = formatValue(value);
  const t = String(threshold);
  return v === formatValue(threshold) && value !== threshold ? [String(value), t] : [v, t];
}

/** What a judgement covered, for its reason: an instant's series, or a range. */
export interface Scope {
  /** Series in the answer. */
  series: number;
  /** Set when the worst point of a range query decided. */
  range?: { from: number; to: number };
}

/**
 * The verdict of a check over what Prometheus answered. NaN samples are no data (a rate over no requests
 * is 0/0); without any other sample the check's `noData` decides. Otherwise the worst sample decides: the
 * highest for `failAbove`, the lowest for `failBelow`; a value equal to the threshold passes.
 */
export function judge(
  name: string,
  check: CheckConfig,
  observations: readonly Observation[],
  scope: Scope,
): Pick<CheckVerdict, 'status' | 'value' | 'reason' | 'series' | 'noData'> {
  const { threshold, failWhen } = thresholdOf(check);
  const numbers = observations.filter((o) => !Number.isNaN(o.value));
  if (!numbers.length) {
    const what = !scope.series
      ? `the query returned no series${scope.range ? ` over ${formatDuration(scope.range.to - scope.range.from)}` : ''}`
      : `${scope.series === 1 ? 'its one series has' : `all ${scope.series} series have`} only NaN samples`;
    return {
      status: check.noData,
      reason: `no data: ${what} (noData: ${check.noData})`,
      series: scope.series,
      noData: true,
    };
  }
  const worst = numbers.reduce((w, o) =>
    failWhen === 'above' ? (o.value > w.value ? o : w) : o.value < w.value ? o : w,
  );
  const failed = failWhen === 'above' ? worst.value > threshold : worst.value < threshold;
  const [v, t] = shown(worst.value, threshold);
  const notes = [
    ...(failed ? [`fail ${failWhen}`] : []),
    ...(scope.series > 1 ? [`worst of ${scope.series} series`] : []),
    ...(scope.range
      ? [
          `worst over ${formatDuration(scope.range.to - scope.range.from)}, at ${clockTime(new Date(worst.at), { seconds: true })}`,
        ]
      : []),
  ];
  const comparison = failed
    ? `${v} ${failWhen === 'above' ? '>' : '<'} ${t}`
    : `${v} ${failWhen === 'above' ? '≤' : '≥'} ${t}`;
  return {
    status: failed ? 'fail' : 'pass',
    value: worst.value,
    reason: `${name} ${comparison}${notes.length ? ` (${notes.join('; ')})` : ''}`,
    series: scope.series,
  };
}

/** How the Prometheus UI reads a time in its URL: `YYYY-MM-DD HH:mm:ss`, UTC. */
function uiTime(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
}

/** Prometheus' graph of the query: at `at`, or over a range ending at its `to`. */
export function graphLink(base: string, query: string, when: { at?: number; range?: { from: number; to: number } }) {
  // A link goes to Slack: credentials in the configured URL stay out of it (the browser has its own).
  const ui = new URL(base);
  ui.username = '';
  ui.password = '';
  let url = `${ui.href.replace(/\/+$/, '')}/graph?g0.expr=${encodeURIComponent(query)}&g0.tab=0`;
  if (when.range) {
    // The UI takes whole seconds: the range is rounded up so the graph shows all of it.
    url += `&g0.range_input=${typedDuration(Math.max(1, Math.ceil((when.range.to - when.range.from) / 1000)) * 1000)}`;
    url += `&g0.end_input=${encodeURIComponent(uiTime(when.range.to))}`;
  } else if (when.at !== undefined) url += `&g0.moment_input=${encodeURIComponent(uiTime(when.at))}`;
  return url;
}

/** Prometheus refuses a range query of more than 11,000 points per series. */
const MAX_POINTS = 11_000;

/**
 * The step of a range query: a quarter of the window, so consecutive windows overlap and a spike anywhere in
 * the range lands in several of them; at least 1 s, and coarse enough to stay under Prometheus' point limit.
 */
export function rangeStepS(windowMs: number, from: number, to: number): number {
  const quarter = windowMs / 4 / 1000;
  const byLimit = (to - from) / 1000 / MAX_POINTS;
  return Math.max(1, Math.ceil(Math.max(quarter, byLimit)));
}
