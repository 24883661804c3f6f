import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { WatchHandle } from '../../src/infra/argocd/api.js';
import { ArgoClient } from '../../src/infra/argocd/client.js';
import type { ArgoError } from '../../src/infra/argocd/errors.js';
import { MessageSlices, PAUSE_AT_MESSAGES } from '../../src/infra/argocd/watch.js';
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

/** A watch of streams each answered by `stream`, followed for `ms` and closed. */
async function watchFor(
  ms: number,
  stream: (res: ServerResponse) => void,
  backoff: { baseMs: number; maxMs: number },
  subscribeAfterMs?: number,
) {
  server.on('GET', STREAM, { stream });
  const cfg = instanceSchema.parse({ name: 'eu', url: server.url, token: 'tok', timeout: 1000 });
  const w = watch(new ArgoClient(cfg, { watch: { keepAliveMs: 200, subscribeAfterMs, backoff } }));
  await new Promise((r) => setTimeout(r, ms));
  w.handle.close();
  return w;
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
    const w = await watchFor(400, (res) => (sseOpen(res), res.write('garbage\n')), { baseMs: 10, maxMs: 400 });
    // Backoff from 10 ms, doubling per connection that ended on garbage: at most 7 connects in 400 ms (data arriving
    // on each connection must not reset it to 10 ms, which would make it dozens).
    expect(server.requestsTo(STREAM).length).toBeLessThanOrEqual(7);
    expect(w.errors.length).toBeGreaterThan(2);
    expect(w.errors.every((e) => e.kind === 'bad_response')).toBe(true);
  });

  it('backs off when the server holds each watch past subscribeAfterMs and then refuses it', async () => {
    // A load balancer holding requests while Argo CD restarts, then answering 503: each attempt outlives
    // subscribeAfterMs unanswered, which must not count as a stream that restarts the backoff.
    const w = await watchFor(
      900,
      (res) => setTimeout(() => res.writeHead(503, { 'content-type': 'application/json' }).end('{}'), 60),
      { baseMs: 20, maxMs: 400 },
      20,
    );
    // 60 ms each, then 10–20, 20–40, 40–80, 80–160, 160–320 ms...: at most 7 in 900 ms; 12 or more when each
    // attempt restarts the backoff at 10–20 ms.
    expect(server.requestsTo(STREAM).length).toBeLessThanOrEqual(7);
    expect(w.errors.length).toBeGreaterThan(2);
    expect(w.errors.every((e) => e.kind === 'unavailable')).toBe(true);
  });

  it('reconnects without backing off when a quiet, unanswered stream is cut after staying open a while', async () => {
    // A proxy's idle timeout cutting a stream that had nothing to say: it was followed, so no failure to back off from.
    server.on('GET', STREAM, { stream: (res) => setTimeout(() => res.destroy(), 450) });
    const cfg = instanceSchema.parse({ name: 'eu', url: server.url, token: 'tok', timeout: 1000 });
    const w = watch(
      new ArgoClient(cfg, { watch: { keepAliveMs: 200, subscribeAfterMs: 20, backoff: { baseMs: 100, maxMs: 3200 } } }),
    );
    await expect.poll(() => server.requestsTo(STREAM).length, { timeout: 4000 }).toBe(5);
    // Each reconnect counts once it has stayed open subscribeAfterMs.
    await expect.poll(() => w.reconnects).toHaveLength(4);
    w.handle.close();
    const at = server.requestsTo(STREAM).map((r) => r.at);
    const gaps = at.slice(1).map((t, i) => t - at[i] - 450);
    // Each reconnect waits 50–100 ms after the cut; backing off would wait 100–200, 200–400, 400–800 ms.
    expect(Math.max(...gaps)).toBeLessThan(200);
  });

  it('handles a burst of events a slice at a time, so other work runs between them', async () => {
    // 60 events in one write, each taking 1 ms to handle: handled as read, a timer set at the first would run after
    // the last.
    server.on('GET', STREAM, {
      stream: (res) => {
        sseOpen(res);
        res.write(
          Array.from(
            { length: 60 },
            (_, i) =>
              `data: ${JSON.stringify({ result: { type: 'MODIFIED', application: app(`a${i}`, String(i + 1)) } })}\n\n`,
          ).join(''),
        );
      },
    });
    let handled = 0;
    let handledWhenTimerRan: number | undefined;
    const handle = client().watchApplications(
      {},
      {
        onEvent: () => {
          if (++handled === 1) setTimeout(() => (handledWhenTimerRan = handled), 0);
          const until = performance.now() + 1;
          while (performance.now() < until);
        },
      },
    );
    handles.push(handle);
    await expect.poll(() => handled).toBe(60);
    expect(handledWhenTimerRan).toBeDefined();
    expect(handledWhenTimerRan!).toBeLessThan(20);
  });

  it('handles every event read before the server ended the stream, in order, before it reconnects', async () => {
    const burst = Array.from({ length: 3000 }, (_, i) => ({
      type: 'MODIFIED',
      application: app(`a${i % 50}`, String(i + 1)),
    }));
    server.on(
      'GET',
      STREAM,
      {
        stream: (res) => (
          sseOpen(res),
          res.end(burst.map((result) => `data: ${JSON.stringify({ result })}\n\n`).join(''))
        ),
      },
      { stream: (res) => sseOpen(res) },
    );
    const w = watch(client(), { resourceVersion: '0' });
    await expect.poll(() => server.requestsTo(STREAM).length).toBe(2);
    expect(w.events.map((e) => e.application.metadata.resourceVersion)).toEqual(burst.map((_, i) => String(i + 1)));
    expect(server.requestsTo(STREAM)[1].query.get('resourceVersion')).toBe('3000');
  });

  it('drain() handles at once what was read; close() alone drops it', async () => {
    const burst = (res: ServerResponse) => {
      sseOpen(res);
      res.write(
        Array.from(
          { length: 300 },
          (_, i) =>
            `data: ${JSON.stringify({ result: { type: 'MODIFIED', application: app(`a${i}`, String(i + 1)) } })}\n\n`,
        ).join(''),
      );
    };
    const run = async (drain: boolean) => {
      server.on('GET', STREAM, { stream: burst });
      let handled = 0;
      let first!: () => void;
      const firstSeen = new Promise<void>((resolve) => (first = resolve));
      const handle = client().watchApplications(
        {},
        {
          onEvent: () => {
            if (++handled === 1) first();
            const until = performance.now() + 0.2;
            while (performance.now() < until);
          },
        },
      );
      handles.push(handle);
      await firstSeen;
      if (drain) handle.drain!();
      handle.close();
      const atClose = handled;
      await new Promise((r) => setTimeout(r, 100));
      expect(handled).toBe(atClose);
      return handled;
    };
    expect(await run(true)).toBe(300);
    expect(await run(false)).toBeLessThan(300);
  });

  it('pauses a stream while too many of its messages wait, and resumes it once they are handled', async () => {
    const calls: string[] = [];
    const handled: string[] = [];
    const slices = new MessageSlices(
      {
        pause: () => (calls.push('pause'), undefined as never),
        resume: () => (calls.push('resume'), undefined as never),
      },
      (m) => handled.push(m),
      () => false,
    );
    for (let i = 0; i < PAUSE_AT_MESSAGES - 1; i++) slices.push(String(i));
    expect(calls).toEqual([]);
    slices.push('last');
    expect(calls).toEqual(['pause']);
    expect(handled).toEqual([]);
    await expect.poll(() => handled.length).toBe(PAUSE_AT_MESSAGES);
    expect(handled.at(-1)).toBe('last');
    expect(calls).toEqual(['pause', 'resume']);
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
