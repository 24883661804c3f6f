import { z } from 'zod';

/**
 * What Prometheus' query API promises (https://prometheus.io/docs/prometheus/latest/querying/api/), checked
 * before anything reads it: the envelope `{"status": "success", "data": {"resultType", "result"}}`, the result
 * shape of its resultType, and every sample value a number written as a string (`"0.31"`, `"NaN"`, `"+Inf"`).
 * A body that fails is not Prometheus' answer; read anyway it would turn a broken upstream into "no data".
 */

/** One sample: the series' labels, when (epoch ms) and the value, which may be NaN or ±Infinity. */
export interface PromSample {
  metric: Record<string, string>;
  at: number;
  value: number;
}

/** An instant query's numbers: an instant vector (a sample per series) or a scalar (one sample, no labels). */
export interface InstantAnswer {
  resultType: 'vector' | 'scalar';
  samples: PromSample[];
  /** Prometheus' warnings (a partial answer from a remote read, ...), verbatim. */
  warnings: string[];
}

export interface RangeSeries {
  metric: Record<string, string>;
  points: { at: number; value: number }[];
}

/** A range query's answer: always a matrix, a series of points per series. */
export interface RangeAnswer {
  series: RangeSeries[];
  warnings: string[];
}

/** JSON whose shape is not what Prometheus promises; the client makes it a `prometheus_bad_response`. */
export class PromShapeError extends Error {
  override readonly name = 'PromShapeError';
}

/**
 * The result of a query that is valid PromQL but no number a check can judge (a range vector, a string, native
 * histograms); the client makes it a `prometheus_query_error`: the query has to change, not Prometheus.
 */
export class NotANumberError extends Error {
  override readonly name = 'NotANumberError';
}

/** How Prometheus writes a float (Go's strconv.FormatFloat), NaN and the infinities included. */
const SAMPLE_VALUE = /^(?:[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?Inf|NaN)$/;

export function sampleValue(text: string): number {
  if (text === 'NaN') return NaN;
  if (text.endsWith('Inf')) return text.startsWith('-') ? -Infinity : Infinity;
  return Number(text);
}

const valueString = z.string().regex(SAMPLE_VALUE, 'expected a number written as a string ("0.5", "NaN", "+Inf")');
const timestamp = z.number().finite();
const pair = z.tuple([timestamp, valueString]);
const labels = z.record(z.string(), z.string());

const envelope = z.object({
  status: z.literal('success'),
  data: z.object({ resultType: z.string(), result: z.unknown() }),
  warnings: z.array(z.string()).optional(),
});
const vector = z.array(z.object({ metric: labels, value: pair }));
const matrix = z.array(z.object({ metric: labels, values: z.array(pair) }));

function parse<T>(schema: z.ZodType<T>, value: unknown, at: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = [at, ...issue.path].map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
  throw new PromShapeError(`${where.replace(/^\./, '')}: ${issue.message.replace(/^Invalid input: /, '')}`);
}

function sampleOf(metric: Record<string, string>, [at, value]: [number, string]): PromSample {
  return { metric, at: Math.round(at * 1000), value: sampleValue(value) };
}

/** Native histograms are series with `histogram(s)` instead of `value(s)`: a check needs histogram_quantile(). */
function refuseHistograms(result: unknown): void {
  if (!Array.isArray(result)) return;
  if (result.some((s) => s && typeof s === 'object' && ('histogram' in s || 'histograms' in s)))
    throw new NotANumberError(
      'the query returns native histograms, not numbers: wrap it, e.g. in histogram_quantile(0.99, ...)',
    );
}

/** The `data` of a successful answer; throws PromShapeError for anything else. */
function dataOf(body: unknown): { resultType: string; result: unknown; warnings: string[] } {
  const { data, warnings } = parse(envelope, body, '');
  return { ...data, warnings: warnings ?? [] };
}

/** `/api/v1/query`: a vector or a scalar. A matrix or a string is the query's doing (NotANumberError). */
export function readInstant(body: unknown): InstantAnswer {
  const { resultType, result, warnings } = dataOf(body);
  switch (resultType) {
    case 'vector':
      refuseHistograms(result);
      return {
        resultType,
        samples: parse(vector, result, 'data.result').map((s) => sampleOf(s.metric, s.value)),
        warnings,
      };
    case 'scalar':
      return { resultType, samples: [sampleOf({}, parse(pair, result, 'data.result'))], warnings };
    case 'matrix':
      throw new NotANumberError(
        'the query returns a range vector (it ends in a [range] selector), not a number: wrap it, e.g. in rate(...) or max_over_time(...)',
      );
    case 'string':
      throw new NotANumberError('the query returns a string, not a number');
    default:
      throw new PromShapeError(`data.resultType: "${resultType}" is none of vector, scalar, matrix, string`);
  }
}

/** `/api/v1/query_range`: always a matrix, whatever the expression evaluates to. */
export function readRange(body: unknown): RangeAnswer {
  const { resultType, result, warnings } = dataOf(body);
  if (resultType !== 'matrix')
    throw new PromShapeError(`data.resultType: a range query answers a matrix, not "${resultType}"`);
  refuseHistograms(result);
  return {
    series: parse(matrix, result, 'data.result').map((s) => ({
      metric: s.metric,
      points: s.values.map((p) => {
        const { at, value } = sampleOf(s.metric, p);
        return { at, value };
      }),
    })),
    warnings,
  };
}
