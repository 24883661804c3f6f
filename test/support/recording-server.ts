import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A tiny HTTP server for client tests: it records every request (method, path, query, headers,
 * body) and answers from scripted responses, so a test can pin exact request shapes and
 * retry behaviour without a simulator.
 */
export interface RecordedRequest {
  method: string;
  /** Path without the query string. */
  path: string;
  query: URLSearchParams;
  /** The raw URL as sent, query included. */
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** performance.now() when its body had arrived. */
  at: number;
  json?: unknown;
}

export interface ScriptedResponse {
  status?: number;
  headers?: Record<string, string>;
  /** Objects are sent as JSON. */
  body?: unknown;
  /** Wait before answering (to trigger client timeouts). */
  delayMs?: number;
  /** Destroy the socket without answering (a connection reset). */
  reset?: boolean;
  /** Take over the response (SSE streams): the server does nothing else with it. */
  stream?: (res: ServerResponse, req: RecordedRequest) => void;
}

type Responder = ScriptedResponse | ((req: RecordedRequest) => ScriptedResponse);

interface Route {
  method: string;
  path: string | RegExp;
  /** Consumed in order; the last one repeats. */
  responses: Responder[];
}

export interface RecordingServer {
  url: string;
  requests: RecordedRequest[];
  /** Adds a route; responses are used in order and the last repeats. Later routes win over earlier ones. */
  on(method: string, path: string | RegExp, ...responses: Responder[]): void;
  /** Requests to a path (exact) or matching a pattern. */
  requestsTo(path: string | RegExp, method?: string): RecordedRequest[];
  /** Open streaming responses, for dropping connections in watch tests. */
  openStreams: Set<ServerResponse>;
  stop(): Promise<void>;
}

export async function startRecordingServer(): Promise<RecordingServer> {
  const routes: Route[] = [];
  const requests: RecordedRequest[] = [];
  const openStreams = new Set<ServerResponse>();

  const server = http.createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const parsed = new URL(req.url ?? '/', 'http://localhost');
    const recorded: RecordedRequest = {
      method: req.method ?? 'GET',
      path: parsed.pathname,
      query: parsed.searchParams,
      url: req.url ?? '/',
      headers: req.headers,
      body,
      at: performance.now(),
    };
    if (body) {
      try {
        recorded.json = JSON.parse(body);
      } catch {
        // not JSON: keep the text
      }
    }
    requests.push(recorded);

    const route = [...routes]
      .reverse()
      .find(
        (r) =>
          r.method === recorded.method &&
          (typeof r.path === 'string' ? r.path === recorded.path : r.path.test(recorded.path)),
      );
    if (!route) {
      res.writeHead(599, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: `no scripted response for ${recorded.method} ${recorded.path}` }));
      return;
    }
    const responder = route.responses.length > 1 ? route.responses.shift()! : route.responses[0];
    const scripted = typeof responder === 'function' ? responder(recorded) : responder;
    if (scripted.delayMs) await new Promise((r) => setTimeout(r, scripted.delayMs));
    if (scripted.reset) {
      req.socket.destroy();
      return;
    }
    if (scripted.stream) {
      openStreams.add(res);
      res.on('close', () => openStreams.delete(res));
      scripted.stream(res, recorded);
      return;
    }
    const isText = typeof scripted.body === 'string';
    const payload =
      scripted.body === undefined ? '' : isText ? (scripted.body as string) : JSON.stringify(scripted.body);
    res.writeHead(scripted.status ?? 200, {
      'content-type': isText ? 'text/plain' : 'application/json',
      ...scripted.headers,
    });
    res.end(payload);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    openStreams,
    on(method, path, ...responses) {
      routes.push({ method, path, responses });
    },
    requestsTo(path, method) {
      return requests.filter(
        (r) =>
          (method === undefined || r.method === method) &&
          (typeof path === 'string' ? r.path === path : path.test(r.path)),
      );
    },
    async stop() {
      for (const res of openStreams) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Writes one SSE message the way Argo CD's stream forwarder does. */
export function sseSend(res: ServerResponse, message: unknown): void {
  res.write(`data: ${JSON.stringify(message)}\n\n`);
}

export function sseOpen(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  res.flushHeaders();
}
