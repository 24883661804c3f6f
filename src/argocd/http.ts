import { readFileSync } from 'node:fs';
import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import https from 'node:https';
import { createRequire } from 'node:module';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { proxyConfigured } from '../core/proxy-env.js';

/**
 * Argo CD's REST API over node's own http/https: one request, its status, headers and body.
 * Every rollcall process talks to Argo CD first thing (a one-shot `ask` lists the fleet before it does
 * anything else), so the request goes out through modules node already holds instead of a client
 * library that has to be loaded first.
 */

type Query = Record<string, string | string[] | boolean | undefined>;

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
}

export interface HttpAnswer<T> {
  status: number;
  headers: IncomingHttpHeaders;
  data: T;
}

/**
 * A request that failed: `response` when the server answered with a non-2xx status, otherwise `code`
 * says what happened to the connection (ECONNREFUSED, ECONNRESET, ETIMEDOUT, a TLS code, ...).
 */
export class HttpError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
    readonly response?: HttpAnswer<unknown>,
  ) {
    super(message);
    this.name = 'HttpError';
  }
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

export interface HttpTransportOptions {
  baseUrl: string;
  headers: Record<string, string>;
  timeoutMs: number;
  tls?: { insecureSkipVerify?: boolean; caFile?: string };
}

export class HttpTransport {
  private readonly base: URL;
  private readonly agent: http.Agent;
  private readonly proxy: ProxyRoute | undefined;
  private readonly tls: { rejectUnauthorized: boolean; ca?: Buffer };

  constructor(private readonly opts: HttpTransportOptions) {
    this.base = new URL(opts.baseUrl.replace(/\/+$/, ''));
    const secure = this.base.protocol === 'https:';
    this.tls = { rejectUnauthorized: !opts.tls?.insecureSkipVerify, ca: opts.tls?.caFile ? readFileSync(opts.tls.caFile) : undefined };
    this.proxy = proxyFor(this.base);
    this.agent =
      this.proxy?.agent ??
      (secure
        ? new https.Agent({ keepAlive: true, ...this.tls })
        : // An http instance behind an https:// proxy: TLS to the proxy, verified against the system's CAs.
          this.proxy?.plainHttp?.protocol === 'https:'
          ? new https.Agent({ keepAlive: true })
          : new http.Agent({ keepAlive: true }));
  }

  request<T>(req: HttpRequest): Promise<HttpAnswer<T>> {
    const url = new URL(`${this.base.pathname}${req.path}`, this.base);
    const query = serializeQuery(req.query ?? {});
    if (query) url.search = query;
    const body = req.body === undefined ? undefined : Buffer.from(JSON.stringify(req.body));
    const headers: Record<string, string> = {
      ...this.opts.headers,
      'Accept-Encoding': req.decompress === false ? 'identity' : 'gzip, deflate, br',
      ...req.headers,
      ...(body ? { 'Content-Type': 'application/json', 'Content-Length': String(body.length) } : {}),
    };
    const timeoutMs = req.timeoutMs ?? this.opts.timeoutMs;
    const send = (this.proxy?.plainHttp?.protocol ?? url.protocol) === 'https:' ? https.request : http.request;
    // A plain-http request through a proxy names the whole URL; CONNECT tunnels (https) go through the agent.
    const target = this.proxy?.plainHttp
      ? { ...this.proxy.plainHttp, path: url.href, headers: { ...headers, ...this.proxy.plainHttp.headers, Host: url.host } }
      : { ...urlParts(url), ...(url.protocol === 'https:' ? this.tls : {}), headers };
    return new Promise((resolve, reject) => {
      let settled = false;
      const fail = (error: HttpError | BadBodyError) => {
        if (settled) return;
        settled = true;
        reject(error);
      };
      const r = send({ ...target, method: req.method, agent: this.agent, signal: req.signal }, (res) => {
        const status = res.statusCode ?? 0;
        const ok = req.anyStatus || (status >= 200 && status < 300);
        const stream = req.decompress === false ? res : inflate(res);
        if (req.responseType === 'stream' && ok) {
          settled = true;
          // The request's idle timeout covers the wait for the answer; the stream's liveness is the caller's.
          r.setTimeout(0);
          resolve({ status, headers: res.headers, data: stream as unknown as T });
          return;
        }
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('error', (e: NodeJS.ErrnoException) => fail(new HttpError(e.message, e.code ?? 'ECONNRESET')));
        stream.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const success = status >= 200 && status < 300;
          let data: unknown = text;
          if (req.responseType !== 'text') {
            const parsed = parseJson(text);
            if (success && !parsed.ok) return fail(new BadBodyError(status, text));
            if (parsed.ok) data = parsed.value;
          }
          const answer = { status, headers: res.headers, data };
          if (ok) {
            settled = true;
            resolve(answer as HttpAnswer<T>);
          } else fail(new HttpError(`Request failed with status code ${status}`, undefined, answer));
        });
      });
      if (timeoutMs > 0)
        r.setTimeout(timeoutMs, () => {
          fail(new HttpError(`timeout of ${timeoutMs}ms exceeded`, 'ETIMEDOUT'));
          r.destroy();
        });
      r.on('error', (e: NodeJS.ErrnoException) => fail(new HttpError(e.message, e.name === 'AbortError' ? 'ERR_CANCELED' : e.code)));
      r.end(body);
    });
  }
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

function urlParts(url: URL): { protocol: string; hostname: string; port?: string; path: string } {
  return { protocol: url.protocol, hostname: url.hostname.replace(/^\[|\]$/g, ''), port: url.port || undefined, path: `${url.pathname}${url.search}` };
}

/** Parsed, or not JSON at all (an error answer may be a proxy's HTML page, which then stays text). */
function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

function inflate(res: IncomingMessage): Readable {
  const encoding = String(res.headers['content-encoding'] ?? '').toLowerCase();
  const decoder =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? zlib.createGunzip()
      : encoding === 'deflate'
        ? zlib.createInflate()
        : encoding === 'br'
          ? zlib.createBrotliDecompress()
          : undefined;
  if (!decoder) return res;
  res.on('error', (e) => decoder.destroy(e));
  return res.pipe(decoder);
}

interface ProxyRoute {
  /** https targets: an agent that opens a CONNECT tunnel through the proxy. */
  agent?: http.Agent;
  /** http targets: where to send the request (the proxy), with the full URL as its path. */
  plainHttp?: { protocol: string; hostname: string; port?: string; headers?: Record<string, string> };
}

/**
 * HTTPS_PROXY / HTTP_PROXY / ALL_PROXY and NO_PROXY, as curl and the Argo CD CLI read them. The proxy
 * libraries load only when one of these is set, so a process that talks to Argo CD directly never pays for them.
 */
function proxyFor(target: URL): ProxyRoute | undefined {
  if (!proxyConfigured()) return undefined;
  const require = createRequire(import.meta.url);
  const { getProxyForUrl } = require('proxy-from-env') as { getProxyForUrl: (url: string) => string };
  const proxy = getProxyForUrl(target.href);
  if (!proxy) return undefined;
  const via = new URL(proxy);
  const credentials = via.username ? `${decodeURIComponent(via.username)}:${decodeURIComponent(via.password)}` : undefined;
  const { path: _path, ...proxyAddress } = urlParts(via);
  // The target's TLS settings travel with each request (the tunnel agent hands them to its TLS connect).
  if (target.protocol === 'https:') {
    const { HttpsProxyAgent } = require('https-proxy-agent') as { HttpsProxyAgent: new (proxy: Record<string, unknown>) => http.Agent };
    // Left to itself, this agent offers an https:// proxy the ALPN protocol "http 1.1", which a server that speaks
    // ALPN (node's own, Envoy) refuses with "no application protocol"; "http/1.1" is the registered name.
    return { agent: new HttpsProxyAgent({ ...proxyAddress, host: proxyAddress.hostname, auth: credentials, ALPNProtocols: ['http/1.1'] }) };
  }
  return {
    plainHttp: { ...proxyAddress, ...(credentials ? { headers: { 'Proxy-Authorization': `Basic ${Buffer.from(credentials).toString('base64')}` } } : {}) },
  };
}
