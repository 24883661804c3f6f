import { typedDuration } from '../../core/format.js';
import { RollcallError } from '../../core/errors.js';
import { bodyExcerpt, isTlsErrorCode } from '../http/failures.js';

/** What the Prometheus client made of a failure; users see it as the error code `prometheus_<kind>`. */
export type PrometheusErrorKind = 'unreachable' | 'unauthorized' | 'query_error' | 'bad_response';

export class PrometheusError extends RollcallError {
  override readonly name = 'PrometheusError';
  declare readonly code: `prometheus_${PrometheusErrorKind}`;
  readonly kind: PrometheusErrorKind;
  /** `host:port` of the Prometheus asked (never a URL with credentials in it). */
  readonly server: string;
  readonly status?: number;
  /** Prometheus' own `errorType` and `error`, verbatim, when it answered with its error envelope. */
  readonly errorType?: string;
  readonly prometheusMessage?: string;
  constructor(
    kind: PrometheusErrorKind,
    message: string,
    init: { server: string; status?: number; errorType?: string; prometheusMessage?: string },
  ) {
    // No `cause`: axios' error carries the request's headers, the token among them, and causes get logged.
    super(`prometheus_${kind}`, message);
    this.kind = kind;
    this.server = init.server;
    this.status = init.status;
    this.errorType = init.errorType;
    this.prometheusMessage = init.prometheusMessage;
  }
}

export function isPrometheusError(error: unknown, kind?: PrometheusErrorKind): error is PrometheusError {
  return error instanceof PrometheusError && (kind === undefined || error.kind === kind);
}

/** What a call was doing, so an error can name the server, the endpoint and the config keys to look at. */
export interface PromCallContext {
  /** `host:port`. */
  server: string;
  /** `/api/v1/query` or `/api/v1/query_range`. */
  endpoint: string;
  /** Where this Prometheus is configured, e.g. `prometheus` or `instances[east].prometheus`. */
  configPath: string;
  timeoutMs: number;
}

/** Prometheus' error envelope: `{"status": "error", "errorType": "bad_data", "error": "..."}`. */
export interface PromErrorBody {
  errorType?: string;
  error?: string;
}

export function readErrorBody(body: unknown): PromErrorBody {
  if (!body || typeof body !== 'object') return {};
  const { errorType, error } = body as Record<string, unknown>;
  return {
    errorType: typeof errorType === 'string' ? errorType : undefined,
    error: typeof error === 'string' ? error : undefined,
  };
}

/**
 * A non-2xx answer. Prometheus answers a PromQL it cannot parse with 400 `bad_data` and one it cannot
 * execute with 422 `execution`: both are the query's fault and say so in Prometheus' words. 503 `timeout` or
 * `canceled` is Prometheus giving up; anything else without its envelope came from something in front of it.
 */
export function errorFromStatus(ctx: PromCallContext, status: number, body: unknown): PrometheusError {
  const { errorType, error } = readErrorBody(body);
  const init = { server: ctx.server, status, errorType, prometheusMessage: error };
  if (status === 401 || status === 403) {
    return new PrometheusError(
      'unauthorized',
      `Prometheus at ${ctx.server} refused rollcall's credentials (HTTP ${status}): check ${ctx.configPath}.token or ` +
        `${ctx.configPath}.basicAuth, and that they may query /api/v1.`,
      init,
    );
  }
  if (status === 407) {
    return new PrometheusError(
      'unreachable',
      `The proxy on the way to Prometheus at ${ctx.server} asks for credentials (HTTP 407): put them in the proxy URL ` +
        '(`HTTPS_PROXY=https://user:password@proxy:port`).',
      init,
    );
  }
  if (error && (errorType === 'bad_data' || errorType === 'execution' || status === 400 || status === 422)) {
    return new PrometheusError('query_error', `Prometheus at ${ctx.server} rejected the query: ${error}`, init);
  }
  if (error) {
    return new PrometheusError(
      'unreachable',
      `Prometheus at ${ctx.server} failed the query (HTTP ${status}${errorType ? `, ${errorType}` : ''}): ${error}`,
      init,
    );
  }
  const start = typeof body === 'string' ? bodyExcerpt(body) : '';
  const hint =
    status === 404
      ? ` There is no Prometheus API at ${ctx.endpoint} there: check ${ctx.configPath}.url (include a path prefix if Prometheus has one).`
      : '';
  return new PrometheusError(
    'unreachable',
    `Prometheus at ${ctx.server} answered ${ctx.endpoint} with HTTP ${status}${start ? ` (${start})` : ''}.${hint}`,
    init,
  );
}

/** A failure without an HTTP answer: refused, reset, timed out, TLS. */
export function errorFromTransport(ctx: PromCallContext, errorCode: string | undefined, detail: string) {
  const init = { server: ctx.server };
  if (errorCode === 'ETIMEDOUT' || errorCode === 'ECONNABORTED') {
    return new PrometheusError(
      'unreachable',
      `Prometheus at ${ctx.server} did not answer ${ctx.endpoint} within ${typedDuration(ctx.timeoutMs)} ` +
        `(${ctx.configPath}.timeout).`,
      init,
    );
  }
  if (isTlsErrorCode(errorCode)) {
    return new PrometheusError(
      'unreachable',
      `TLS verification of Prometheus at ${ctx.server} failed: ${errorCode}. Set ${ctx.configPath}.tls.caFile to the CA ` +
        'that signed its certificate (or tls.insecureSkipVerify: true for a test server).',
      init,
    );
  }
  return new PrometheusError(
    'unreachable',
    `Cannot reach Prometheus at ${ctx.server}: ${errorCode ?? detail}. Check ${ctx.configPath}.url and the network path.`,
    init,
  );
}

/** A 2xx answer that is not Prometheus' envelope, or not the result asked for: never read as "no data". */
export function errorFromBadBody(ctx: PromCallContext, body: string, problem: string): PrometheusError {
  const start = bodyExcerpt(body);
  return new PrometheusError(
    'bad_response',
    `Prometheus at ${ctx.server} answered ${ctx.endpoint} with a body that is not its API's answer (${problem}); ` +
      `${start ? `it starts ${start}` : 'it is empty'}. A proxy in front of Prometheus may be serving its own page: ` +
      `check ${ctx.configPath}.url.`,
    { server: ctx.server },
  );
}
