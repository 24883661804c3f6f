import { isAxiosError } from 'axios';
import type { PrometheusConfig } from '../config/schema.js';
import { BadBodyError, HttpTransport } from '../http/transport.js';
import {
  NotANumberError,
  PromShapeError,
  readInstant,
  readRange,
  type InstantAnswer,
  type RangeAnswer,
} from './answers.js';
import {
  PrometheusError,
  errorFromBadBody,
  errorFromStatus,
  errorFromTransport,
  readErrorBody,
  type PromCallContext,
} from './errors.js';

export type { InstantAnswer, PromSample, RangeAnswer, RangeSeries } from './answers.js';

/** What the metric checks ask of a Prometheus; tests and callers may stand in their own. */
export interface PrometheusQueries {
  /** `host:port` of the server, for messages. */
  readonly server: string;
  /** An instant query at `time` (epoch ms; default: Prometheus' now). */
  query(promql: string, time?: number): Promise<InstantAnswer>;
  /** A range query over [start, end] (epoch ms) with a point every `stepS` seconds. */
  queryRange(promql: string, start: number, end: number, stepS: number): Promise<RangeAnswer>;
}

export interface PrometheusClientOptions {
  /** Where this Prometheus is configured, for messages: `prometheus` or `instances[east].prometheus`. */
  configPath?: string;
}

/** `host:port`, the port spelled out even when it is the scheme's default, and never the URL's credentials. */
export function serverOf(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`;
}

/** Prometheus' `time`, `start` and `end`: Unix seconds, with the milliseconds as a fraction. */
const unixSeconds = (ms: number) => (ms / 1000).toFixed(3).replace(/\.?0+$/, '');

/**
 * One Prometheus over its HTTP API (`/api/v1/query`, `/api/v1/query_range`), with the config's bearer token or
 * basic auth, TLS settings and timeout. Every answer is checked (answers.ts); every failure is a
 * PrometheusError: `unreachable` (naming host:port), `unauthorized`, `query_error` (Prometheus' own text) or
 * `bad_response`. Nothing is retried: a caller that cannot get an answer is told so at once and decides.
 */
export class PrometheusClient implements PrometheusQueries {
  readonly server: string;
  private readonly http: HttpTransport;
  private readonly configPath: string;
  private readonly timeoutMs: number;

  constructor(cfg: PrometheusConfig, opts: PrometheusClientOptions = {}) {
    this.server = serverOf(cfg.url);
    this.configPath = opts.configPath ?? 'prometheus';
    this.timeoutMs = cfg.timeout;
    this.http = new HttpTransport({
      baseUrl: `${cfg.url.replace(/\/+$/, '')}/api/v1`,
      timeoutMs: cfg.timeout,
      headers: { Accept: 'application/json', ...authorization(cfg) },
      tls: cfg.tls,
    });
  }

  async query(promql: string, time?: number): Promise<InstantAnswer> {
    const params = { query: promql, time: time === undefined ? undefined : unixSeconds(time), ...this.serverTimeout() };
    return this.call('/query', params, readInstant);
  }

  async queryRange(promql: string, start: number, end: number, stepS: number): Promise<RangeAnswer> {
    if (!(stepS > 0) || !(end >= start))
      throw new RangeError(`queryRange needs start <= end and a step above 0 (got ${start}..${end}, ${stepS}s)`);
    const params = {
      query: promql,
      start: unixSeconds(start),
      end: unixSeconds(end),
      step: String(stepS),
      ...this.serverTimeout(),
    };
    return this.call('/query_range', params, readRange);
  }

  /** Prometheus stops evaluating when rollcall stops waiting, instead of finishing a query nobody reads. */
  private serverTimeout(): { timeout?: string } {
    return this.timeoutMs > 0 ? { timeout: `${Math.max(1, Math.floor(this.timeoutMs / 1000))}s` } : {};
  }

  private async call<T>(path: string, params: Record<string, string | undefined>, read: (body: unknown) => T) {
    const ctx: PromCallContext = {
      server: this.server,
      endpoint: `/api/v1${path}`,
      configPath: this.configPath,
      timeoutMs: this.timeoutMs,
    };
    let status: number;
    let body: unknown;
    try {
      ({ status, data: body } = await this.http.request<unknown>({ method: 'GET', path, query: params }));
    } catch (error) {
      throw failure(ctx, error);
    }
    if (body && typeof body === 'object' && (body as { status?: unknown }).status === 'error') {
      // A 2xx that still carries the error envelope: Prometheus' words decide, as for a 4xx.
      const { error } = readErrorBody(body);
      if (error) throw errorFromStatus(ctx, status, body);
    }
    try {
      return read(body);
    } catch (error) {
      if (error instanceof NotANumberError)
        throw new PrometheusError('query_error', `Prometheus at ${ctx.server}: ${error.message}`, {
          server: ctx.server,
          status,
        });
      if (error instanceof PromShapeError) throw errorFromBadBody(ctx, JSON.stringify(body), error.message);
      throw error;
    }
  }
}

function authorization(cfg: PrometheusConfig): Record<string, string> {
  if (cfg.token) return { Authorization: `Bearer ${cfg.token}` };
  if (cfg.basicAuth) {
    const pair = `${cfg.basicAuth.username}:${cfg.basicAuth.password}`;
    return { Authorization: `Basic ${Buffer.from(pair, 'utf8').toString('base64')}` };
  }
  return {};
}

/** The transport's failure as a PrometheusError: an answer by its status, otherwise what happened to the connection. */
function failure(ctx: PromCallContext, error: unknown): PrometheusError {
  if (error instanceof BadBodyError) return errorFromBadBody(ctx, error.body, 'not JSON');
  if (isAxiosError(error)) {
    if (error.response) return errorFromStatus(ctx, error.response.status, error.response.data);
    return errorFromTransport(ctx, error.code, error.message);
  }
  return errorFromTransport(ctx, undefined, error instanceof Error ? error.message : String(error));
}
