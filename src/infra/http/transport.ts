import { AsyncLocalStorage } from 'node:async_hooks';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { createRequire } from 'node:module';
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { ConnectionOptions } from 'node:tls';
import axios, { AxiosError, type AxiosInstance, type AxiosProxyConfig, type AxiosResponse } from 'axios';
import createHttpsProxyAgent from 'https-proxy-agent';
import { JsonListReader, stripBom } from './json-list.js';
import { proxyConfigured } from '../../core/proxy-env.js';

/**
 * An upstream's HTTP API over axios (Argo CD's REST API, Prometheus' query API): one request, its status,
 * headers and body. axios does the wire (gzip, the timeout as ETIMEDOUT, forward proxying of http upstreams,
 * its errors); what stays here is what both clients need: the query form (a list repeats its key, as
 * grpc-gateway and Prometheus read it), the body parsed by rollcall (a 2xx answer that is not JSON is an
 * error, never text handed on as data), the upstream's TLS settings (caFile, insecureSkipVerify), and the
 * CONNECT tunnel of https upstreams.
 */

type Query = Record<string, string | string[] | boolean | undefined>;

const cuts = new AsyncLocalStorage<AbortSignal>();

/**
 * Runs `work` with every request it sends cut (aborted, ERR_CANCELED) once `signal` aborts, unless a request brings its
 * own signal: a read nobody waits for any more stops loading an upstream that is already slow.
 */
export function cutRequestsWith<T>(signal: AbortSignal, work: () => Promise<T>): Promise<T> {
  return cuts.run(signal, work);
}

export interface HttpRequest {
  method: string;
  /** Under the transport's base URL, e.g. `/applications/guestbook`. */
  path: string;
  query?: Query;
  /** Sent as JSON. */
  body?: unknown;
  headers?: Record<string, string>;
  /**
   * `json` (default): a 2xx body must parse (else BadBodyError); an error answer's body is parsed when it
   * parses and stays text otherwise. `stream`: the response as it arrives.
   */
  responseType?: 'json' | 'text' | 'stream';
  /** Time without any answer bytes before the request fails with ETIMEDOUT; 0 = none. Default: the transport's. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Answer every status instead of failing on a non-2xx one. */
  anyStatus?: boolean;
  /** false: ask for the body as is (a stream must not be held back by a compressing proxy). */
  decompress?: boolean;
  /**
   * For a JSON list (`{…, "items": [...]}`): each item as soon as it has arrived, parsed on its own; the answer's
   * `items` holds what this returns instead of the items themselves. An error it throws fails the request as
   * RejectedItemError.
   */
  eachItem?: (item: unknown, index: number) => unknown;
  /** With `eachItem`: each of the list's other top-level fields (its `metadata`) as soon as it has arrived. */
  eachField?: (key: string, value: unknown) => void;
}

export interface HttpAnswer<T> {
  status: number;
  headers: AxiosResponse['headers'];
  data: T;
}

/**
 * A 2xx answer whose body was to be JSON and is not (cut short, a proxy's page, empty). The request reached
 * a server that said it succeeded, so it is no transport failure; `body` is the text as received.
 */
export class BadBodyError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`the answer (HTTP ${status}) is not JSON`);
    this.name = 'BadBodyError';
  }
}

/** A 2xx list answer one of whose items the caller's `eachItem` refused (`cause`); `bodyStart` quotes the answer. */
export class RejectedItemError extends Error {
  constructor(
    readonly status: number,
    readonly bodyStart: string,
    override readonly cause: unknown,
  ) {
    super(`an item of the answer (HTTP ${status}) was refused: ${(cause as Error)?.message ?? String(cause)}`);
    this.name = 'RejectedItemError';
  }
}

export interface HttpTransportOptions {
  baseUrl: string;
  headers: Record<string, string>;
  timeoutMs: number;
  tls?: { insecureSkipVerify?: boolean; caFile?: string };
}

/**
 * Connections are kept for the next request and closed once idle for IDLE_CONNECTION_MS, or for a second less than
 * the server says it keeps them (`Keep-Alive: timeout=N`), whichever is shorter. A server closes an idle connection
 * when its own keep-alive timeout runs out (node's 5 s, a load balancer's 60 s); a request it has not yet read on that
 * connection is reset (ECONNRESET), and a sync whose answer is lost that way is not sent again until its posting
 * window has passed: a 540-app bulk sync against the simulator lost a few syncs in every run to this and ended a
 * minute late. Node's agent heeds the server's announced limit only when it has an idle limit of its own (`timeout`),
 * and has none by default. On a connection in use, axios sets each request's own timeout in its place (none for a
 * watch stream), so the limit applies to idle connections only. 4 s is also node's own fetch's default.
 */
const IDLE_CONNECTION_MS = 4_000;
const POOL: http.AgentOptions = { keepAlive: true, timeout: IDLE_CONNECTION_MS };

/**
 * Failures are axios' own `AxiosError`s: `response` (its body parsed as for `json`) when the server answered
 * with a non-2xx status, otherwise `code` says what happened to the connection (ECONNREFUSED, ECONNRESET,
 * ETIMEDOUT, ERR_CANCELED, a TLS code, ...).
 */
export class HttpTransport {
  private readonly axios: AxiosInstance;

  constructor(opts: HttpTransportOptions) {
    const base = new URL(opts.baseUrl);
    const secure = base.protocol === 'https:';
    const tls: ConnectionOptions = {
      rejectUnauthorized: !opts.tls?.insecureSkipVerify,
      ca: opts.tls?.caFile ? readFileSync(opts.tls.caFile) : undefined,
    };
    const route = proxyRoute(base, tls);
    this.axios = axios.create({
      baseURL: opts.baseUrl,
      headers: opts.headers,
      timeout: opts.timeoutMs,
      httpAgent: forgetsOpeningRequest(new http.Agent(POOL)),
      // An http upstream reaches an https:// proxy over TLS verified against the system's CAs: the upstream's
      // TLS settings are for the upstream.
      httpsAgent: route.tunnel ?? forgetsOpeningRequest(new https.Agent({ ...POOL, ...(secure ? tls : {}) })),
      proxy: route.proxy ?? false,
      paramsSerializer: { serialize: (params) => serializeQuery(params as Query) },
      // The body stays text until parsed here: axios would hand a 2xx body that is not JSON on as a string.
      transformResponse: [(data: unknown) => data],
      // ETIMEDOUT instead of ECONNABORTED for timeouts, so they are told apart from aborts.
      transitional: { clarifyTimeoutError: true },
      maxRedirects: 0,
    });
  }

  async request<T>(req: HttpRequest): Promise<HttpAnswer<T>> {
    const streamed = req.responseType === 'stream';
    let res: AxiosResponse<unknown>;
    try {
      res = await this.axios.request<unknown>({
        method: req.method,
        url: req.path,
        params: req.query,
        data: req.body,
        headers: req.headers,
        // Always a stream from axios: a body that is read as text is decoded as it arrives (readText).
        responseType: 'stream',
        ...(req.timeoutMs === undefined ? {} : { timeout: req.timeoutMs }),
        signal: req.signal ?? cuts.getStore(),
        ...(req.anyStatus ? { validateStatus: () => true } : {}),
        decompress: req.decompress ?? true,
      });
    } catch (error) {
      if (axios.isAxiosError(error) && error.response && isReadable(error.response.data)) {
        const text = await readText(error.response as AxiosResponse<Readable>);
        const parsed = parseJson(text);
        error.response.data = parsed.ok ? parsed.value : text;
      }
      throw error;
    }
    if (streamed) return { status: res.status, headers: res.headers, data: res.data as T };
    if (req.eachItem && (req.responseType ?? 'json') === 'json' && res.status >= 200 && res.status < 300) {
      const data = await readList(res as AxiosResponse<Readable>, req.eachItem, req.eachField);
      return { status: res.status, headers: res.headers, data: data as T };
    }
    const text = await readText(res as AxiosResponse<Readable>);
    const answer = { status: res.status, headers: res.headers, data: text };
    if (req.responseType === 'text') return answer as HttpAnswer<T>;
    const parsed = parseJson(text);
    if (parsed.ok) return { ...answer, data: parsed.value as T };
    if (res.status >= 200 && res.status < 300) throw new BadBodyError(res.status, text);
    // Only with anyStatus: an error answer that is not JSON (a proxy's page) stays text.
    return answer as HttpAnswer<T>;
  }
}

function isReadable(data: unknown): data is Readable {
  return typeof (data as Readable | undefined)?.on === 'function';
}

/**
 * The body as text, decoded chunk by chunk as it arrives. axios' own text mode keeps every chunk received until the
 * end and then copies them into one buffer: for a 30 MB application list that is 30 MB of small native allocations
 * alive at once, which the C allocator keeps as the process' memory long after they are freed (and five instances
 * listing at once hold five). Decoded as it comes, each chunk is let go before the next one arrives.
 */
async function readText(res: AxiosResponse<Readable>): Promise<string> {
  const parts: string[] = [];
  await readBody(res, (text) => parts.push(text));
  return stripBom(parts.join(''));
}

/** A JSON list read as it arrives (JsonListReader): each item goes to `eachItem` and its text is let go. */
async function readList(
  res: AxiosResponse<Readable>,
  eachItem: NonNullable<HttpRequest['eachItem']>,
  eachField: HttpRequest['eachField'],
): Promise<unknown> {
  let failed: unknown;
  const reader = new JsonListReader((item, index) => {
    try {
      return eachItem(item, index);
    } catch (error) {
      failed = error;
      throw error;
    }
  }, eachField);
  try {
    await readBody(res, (text) => reader.write(text));
    return reader.end();
  } catch (error) {
    if (failed !== undefined) throw new RejectedItemError(res.status, reader.head, failed);
    if (error instanceof SyntaxError) throw new BadBodyError(res.status, reader.head);
    throw error;
  }
}

/**
 * The body decoded chunk by chunk into `sink`. An error `sink` throws ends the read with that error; a body cut off
 * midway fails as axios fails it: an AxiosError that keeps the answer's status (a 2xx that lost its body in
 * transit), or axios' own error when it aborted the request (a timeout, a cut).
 */
function readBody(res: AxiosResponse<Readable>, sink: (text: string) => void): Promise<void> {
  const body = res.data;
  return new Promise<void>((resolve, reject) => {
    const decoder = new StringDecoder('utf8');
    const fail = (error: Error & { code?: string }) => {
      body.destroy();
      reject(axios.isAxiosError(error) ? error : AxiosError.from(error, error.code, res.config, res.request, res));
    };
    const refuse = (error: unknown) => {
      body.removeAllListeners('data');
      body.destroy();
      reject(error as Error);
    };
    body.on('data', (chunk: Buffer) => {
      try {
        sink(decoder.write(chunk));
      } catch (error) {
        refuse(error);
      }
    });
    body.once('error', fail);
    body.once('aborted', () => fail(Object.assign(new Error('stream has been aborted'), { code: 'ECONNRESET' })));
    body.once('end', () => {
      try {
        sink(decoder.end());
        resolve();
      } catch (error) {
        refuse(error);
      }
    });
  });
}

/** Query parameters as grpc-gateway reads them: a list repeats its key; empty values are left out. */
export function serializeQuery(params: Query): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(params ?? {})) {
    if (value === undefined || value === '') continue;
    const values = Array.isArray(value) ? value : [String(value)];
    for (const v of values) parts.push(`${encodeURIComponent(key)}=${encodeURIComponent(v)}`);
  }
  return parts.join('&');
}

/** The part of Node's http.Agent that forgetsOpeningRequest wraps: not in its typings (an agent without it is left as it is). */
interface AgentInternals {
  createSocket?: (req: unknown, options: Record<string, unknown>, cb: unknown) => void;
}

/**
 * A keep-alive agent that lets go of the request that opened each socket. Node's agent keeps that request's
 * options for as long as the socket lives (to find its pool again when the socket is freed), and axios puts in
 * them `beforeRedirects`, closures over the whole exchange, response body included: a 30 MB application list
 * that opened a connection stayed in memory, as text and as the bytes received, while the connection lived.
 * Redirects are never followed here (maxRedirects: 0), so Node's agent needs none of them.
 */
function forgetsOpeningRequest<A extends http.Agent>(agent: A): A {
  const internals = agent as unknown as AgentInternals;
  const createSocket = internals.createSocket;
  if (typeof createSocket !== 'function') return agent;
  internals.createSocket = function (req, options, cb) {
    const { beforeRedirects: _redirects, ...kept } = options;
    createSocket.call(this, req, kept, cb);
  };
  return agent;
}

/** Parsed, or not JSON at all: the caller decides what a body that is not JSON means. */
function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

/**
 * The tunnel to an https upstream: axios' own would build the CONNECT connection from the same TLS options as
 * the upstream's, so the upstream's caFile would be asked to vouch for an https:// proxy (and insecureSkipVerify
 * would stop checking the proxy). Here the proxy is verified against the system's CAs (NODE_EXTRA_CA_CERTS) and
 * the upstream's settings go to the TLS connection inside the tunnel.
 */
class TunnelAgent extends createHttpsProxyAgent.HttpsProxyAgent {
  constructor(
    proxy: createHttpsProxyAgent.HttpsProxyAgentOptions,
    private readonly upstreamTls: ConnectionOptions,
  ) {
    super(proxy);
  }

  override callback(...[req, opts]: Parameters<createHttpsProxyAgent.HttpsProxyAgent['callback']>) {
    return super.callback(req, { ...opts, ...this.upstreamTls } as typeof opts);
  }
}

/**
 * HTTPS_PROXY / HTTP_PROXY / ALL_PROXY and NO_PROXY, as curl and the Argo CD CLI read them (credentials in the
 * proxy URL are percent-decoded, as curl does): an https upstream through a CONNECT tunnel, an http one
 * forwarded by axios to the proxy.
 */
function proxyRoute(target: URL, upstreamTls: ConnectionOptions): { tunnel?: TunnelAgent; proxy?: AxiosProxyConfig } {
  if (!proxyConfigured()) return {};
  const { getProxyForUrl } = createRequire(import.meta.url)('proxy-from-env') as {
    getProxyForUrl: (url: string) => string;
  };
  const proxy = getProxyForUrl(target.href);
  if (!proxy) return {};
  const via = new URL(proxy);
  const auth = via.username
    ? { username: decodeURIComponent(via.username), password: decodeURIComponent(via.password) }
    : undefined;
  const hostname = via.hostname.replace(/^\[|\]$/g, '');
  const port = via.port ? Number(via.port) : via.protocol === 'https:' ? 443 : 80;
  if (target.protocol === 'https:') {
    // Left to itself, the agent offers an https:// proxy the ALPN protocol "http 1.1", which a server that speaks
    // ALPN (node's own, Envoy) refuses with "no application protocol"; "http/1.1" is the registered name.
    const tunnel = new TunnelAgent(
      {
        protocol: via.protocol,
        host: hostname,
        port,
        auth: auth ? `${auth.username}:${auth.password}` : undefined,
        ALPNProtocols: ['http/1.1'],
      },
      upstreamTls,
    );
    return { tunnel };
  }
  return { proxy: { protocol: via.protocol, host: hostname, port, auth } };
}
