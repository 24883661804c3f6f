import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { WatchHandle } from '../../src/infra/argocd/api.js';
import { ArgoClient } from '../../src/infra/argocd/client.js';
import type { ArgoError } from '../../src/infra/argocd/errors.js';
import type { Application, ApplicationWatchEvent } from '../../src/infra/argocd/types.js';
import { instanceSchema } from '../../src/infra/config/schema.js';
import { sseOpen, sseSend, startRecordingServer, type RecordingServer } from '../support/recording-server.js';

const STREAM = '/api/v1/stream/applications';
let server: RecordingServer;
let handles: WatchHandle[] = [];

const app = (name: string, rv: string): Application => ({
  metadata: { name, resourceVersion: rv },
  spec: { project: 'default', destination: { name: 'in-cluster' } },
});

function client(keepAliveMs = 200) {
  const cfg = instanceSchema.parse({ name: 'eu', url: server.url, token: 'tok', timeout: 1000 });
  return new ArgoClient(cfg, { watch: { keepAliveMs, backoff: { baseMs: 10, maxMs: 40 } } });
}

function watch(
  c: ArgoClient,
  query: { resourceVersion?: string; selector?: string } = {},
  extra: { expired?: boolean } = {},
) {
  const events: ApplicationWatchEvent[] = [];
  const errors: ArgoError[] = [];
  const reconnects: (string | undefined)[] = [];
  let expired = 0;
  const handle = c.watchApplications(query, {
    onEvent: (e) => events.push(e),
    onError: (e) => errors.push(e as ArgoError),
    onReconnect: (rv) => reconnects.push(rv),
    ...(extra.expired ? { onExpired: () => expired++ } : {}),
  });
  handles.push(handle);
  return { handle, events, errors, reconnects, expired: () => expired };
}

beforeAll(async () => {
  server = await startRecordingServer();
});
afterAll(async () => {
  await server.stop();
});
beforeEach(() => {
  for (const h of handles) h.close();
  handles = [];
  server.requests.length = 0;
});

describe('application watch (SSE)', () => {
  it('streams the initial snapshot with the SSE Accept header and the Bearer token', async () => {
    server.on('GET', STREAM, {
      stream: (res) => {
        sseOpen(res);
        sseSend(res, { result: { type: 'ADDED', application: app('a', '1') } });
        // One message split across writes, with CRLF line ends, must still parse.
        const text = `data: ${JSON.stringify({ result: { type: 'ADDED', application: app('b', '2') } })}\r\n\r\n`;
        res.write(text.slice(0, 20));
        setTimeout(() => res.write(text.slice(20)), 10);
      },
    });
    const w = watch(client(), { selector: 'team=payments' });
    await w.handle.ready;
    await expect.poll(() => w.events.map((e) => e.application.metadata.name)).toEqual(['a', 'b']);
    const [req] = server.requestsTo(STREAM);
    expect(req.headers.accept).toBe('text/event-stream');
    expect(req.headers.authorization).toBe('Bearer tok');
    expect(req.query.get('selector')).toBe('team=payments');
    expect(req.query.has('resourceVersion')).toBe(false);
  });

  it('stays connected while keep-alives arrive, and reconnects when they stop', async () => {
    let connection = 0;
    server.on('GET', STREAM, {
      stream: (res: ServerResponse) => {
        connection++;
        sseOpen(res);
        if (connection === 1) {
          // keep-alives for 500 ms (well past 2 x 100 ms), then silence with the socket open
          const timer = setInterval(() => res.write(':\n\n'), 40);
          setTimeout(() => clearInterval(timer), 500);
          res.on('close', () => clearInterval(timer));
        }
      },
    });
    const w = watch(client(100));
    await w.handle.ready;
    await new Promise((r) => setTimeout(r, 450));
    expect(server.requestsTo(STREAM)).toHaveLength(1);
    await expect.poll(() => server.requestsTo(STREAM).length, { timeout: 2000 }).toBeGreaterThanOrEqual(2);
    expect(w.errors.some((e) => e.kind === 'timeout' && /went silent/.test(e.message))).toBe(true);
  });

  it('reconnects after the server drops the stream and resumes from the last resourceVersion', async () => {
    server.on(
      'GET',
      STREAM,
      {
        stream: (res) => {
          sseOpen(res);
          sseSend(res, { result: { type: 'MODIFIED', application: app('a', '17') } });
          setTimeout(() => res.destroy(), 20);
        },
      },
      {
        stream: (res) => {
          sseOpen(res);
          sseSend(res, { result: { type: 'MODIFIED', application: app('a', '18') } });
        },
      },
    );
    const w = watch(client(), { resourceVersion: '10' });
    await w.handle.ready;
    await expect.poll(() => w.events.map((e) => e.application.metadata.resourceVersion)).toEqual(['17', '18']);
    const [first, second] = server.requestsTo(STREAM);
    expect(first.query.get('resourceVersion')).toBe('10');
    expect(second.query.get('resourceVersion')).toBe('17');
    expect(w.reconnects).toEqual(['17']);
  });

  it('on 410 (resourceVersion too old) stops and asks the caller to relist', async () => {
    server.on('GET', STREAM, {
      stream: (res) => {
        sseOpen(res);
        sseSend(res, {
          error: { grpc_code: 11, http_code: 410, message: 'too old resource version', http_status: 'Gone' },
        });
      },
    });
    const w = watch(client(), { resourceVersion: '3' }, { expired: true });
    await expect.poll(() => w.expired()).toBe(1);
    await new Promise((r) => setTimeout(r, 100));
    expect(server.requestsTo(STREAM)).toHaveLength(1);
  });

  it('without an onExpired handler restarts from a fresh snapshot (no resourceVersion)', async () => {
    server.on(
      'GET',
      STREAM,
      { status: 410, body: { code: 11, message: 'too old resource version' } },
      {
        stream: (res) => {
          sseOpen(res);
          sseSend(res, { result: { type: 'ADDED', application: app('a', '40') } });
        },
      },
    );
    const w = watch(client(), { resourceVersion: '3' });
    await expect.poll(() => w.events.length).toBe(1);
    const [first, second] = server.requestsTo(STREAM);
    expect(first.query.get('resourceVersion')).toBe('3');
    expect(second.query.has('resourceVersion')).toBe(false);
  });

  it('reports a rejected token and keeps retrying with backoff', async () => {
    server.on(
      'GET',
      STREAM,
      { status: 401, body: { code: 16, message: 'token is expired' } },
      { status: 401, body: {} },
      {
        stream: (res) => sseOpen(res),
      },
    );
    const w = watch(client());
    await w.handle.ready;
    expect(w.errors.map((e) => e.kind)).toEqual(['unauthenticated', 'unauthenticated']);
    expect(server.requestsTo(STREAM)).toHaveLength(3);
  });

  it('reports a message that is not JSON as bad_response, drops the connection and resumes from the last event it read', async () => {
    server.on(
      'GET',
      STREAM,
      {
        stream: (res) => {
          sseOpen(res);
          sseSend(res, { result: { type: 'MODIFIED', application: app('a', '17') } });
          res.write('data: {"result":{"type":"MODIFIED","applic\n\n');
          sseSend(res, { result: { type: 'MODIFIED', application: app('b', '19') } });
        },
      },
      {
        stream: (res) => {
          sseOpen(res);
          sseSend(res, { result: { type: 'MODIFIED', application: app('a', '20') } });
        },
      },
    );
    const w = watch(client(), { resourceVersion: '10' });
    await expect.poll(() => w.events.map((e) => e.application.metadata.resourceVersion)).toEqual(['17', '20']);
    expect(w.errors.map((e) => e.code)).toEqual(['argocd_bad_response']);
    expect(w.errors[0].message).toContain(
      'Argo CD instance eu answered GET /stream/applications with a body that is not what Argo CD sends',
    );
    expect(w.errors[0].message).toContain('`{"result":{"type":"MODIFIED","applic`');
    // What followed the bad message on that connection was not taken as read; the caller relists on reconnect.
    expect(server.requestsTo(STREAM)[1].query.get('resourceVersion')).toBe('17');
    expect(w.reconnects).toEqual(['17']);
  });

  it("reports a line of a proxy's page and an event without an application, instead of skipping them", async () => {
    server.on(
      'GET',
      STREAM,
      { stream: (res) => (sseOpen(res), res.write('<html><body>502 Bad Gateway</body></html>\n')) },
      { stream: (res) => (sseOpen(res), sseSend(res, { result: { type: 'ADDED', application: null } })) },
      { stream: (res) => (sseOpen(res), sseSend(res, { result: { type: 'ADDED', application: app('a', '5') } })) },
    );
    const w = watch(client());
    await expect.poll(() => w.events.length).toBe(1);
    expect(w.errors.map((e) => e.kind)).toEqual(['bad_response', 'bad_response']);
    expect(w.errors[0].message).toContain('`<html><body>502 Bad Gateway</body></html>`');
    expect(w.errors[1].message).toContain('application to be an object with metadata.name');
  });

  it('backs off when every connection ends on garbage, instead of reconnecting at once each time', async () => {
    server.on('GET', STREAM, { stream: (res) => (sseOpen(res), res.write('garbage\n')) });
    const cfg = instanceSchema.parse({ name: 'eu', url: server.url, token: 'tok', timeout: 1000 });
    const w = watch(new ArgoClient(cfg, { watch: { keepAliveMs: 200, backoff: { baseMs: 10, maxMs: 400 } } }));
    await new Promise((r) => setTimeout(r, 400));
    w.handle.close();
    // Backoff from 10 ms, doubling per connection that ended on garbage: at most 7 connects in 400 ms (data arriving
    // on each connection must not reset it to 10 ms, which would make it dozens).
    expect(server.requestsTo(STREAM).length).toBeLessThanOrEqual(7);
    expect(w.errors.length).toBeGreaterThan(2);
    expect(w.errors.every((e) => e.kind === 'bad_response')).toBe(true);
  });

  it('close() ends the stream and never reconnects', async () => {
    server.on('GET', STREAM, { stream: (res) => sseOpen(res) });
    const w = watch(client());
    await w.handle.ready;
    w.handle.close();
    await expect.poll(() => server.openStreams.size).toBe(0);
    await new Promise((r) => setTimeout(r, 100));
    expect(server.requestsTo(STREAM)).toHaveLength(1);
  });
});
