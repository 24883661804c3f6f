import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ArgoClient } from '../../src/infra/argocd/client.js';
import type { Application } from '../../src/infra/argocd/types.js';
import { instanceSchema } from '../../src/infra/config/schema.js';
import type { FleetEvent } from '../../src/fleet/events.js';
import { FleetMirror } from '../../src/fleet/mirror.js';
import { sseOpen, sseSend, startRecordingServer, type RecordingServer } from '../support/recording-server.js';

const API = '/api/v1';
let server: RecordingServer;

const app = (name: string, rv: string): Application => ({
  metadata: { name, namespace: 'argocd', resourceVersion: rv },
  spec: { project: 'default', destination: { server: 'https://eu1.k8s' } },
});

beforeAll(async () => {
  server = await startRecordingServer();
});
afterAll(async () => {
  await server.stop();
});
beforeEach(() => {
  server.requests.length = 0;
});

/** The instance's clusters and (empty) ApplicationSets. */
function scriptInstance(): void {
  server.on('GET', `${API}/clusters`, { body: { items: [{ name: 'prod-eu1', server: 'https://eu1.k8s' }] } });
  server.on('GET', `${API}/applicationsets`, { body: { metadata: { resourceVersion: '5' }, items: [] } });
}

/** The ApplicationSets stream stays up; the first apps stream does what `first` says to it, the next ones stay up. */
function scriptStreams(first: (res: ServerResponse) => void): void {
  server.on('GET', `${API}/stream/applicationsets`, { stream: (res) => sseOpen(res) });
  server.on(
    'GET',
    `${API}/stream/applications`,
    {
      stream: (res) => {
        sseOpen(res);
        first(res);
      },
    },
    { stream: (res) => sseOpen(res) },
  );
}

/** The apps stream says 410 (too old) 30 ms after it opens; the stream opened after that stays up. */
function scriptExpiringStream(): void {
  scriptStreams((res) =>
    setTimeout(
      () =>
        sseSend(res, {
          error: { grpc_code: 11, http_code: 410, message: 'too old resource version: 5', http_status: 'Gone' },
        }),
      30,
    ),
  );
}

function mirrorOfServer(
  client = new ArgoClient(instanceSchema.parse({ name: 'eu', url: server.url, token: 't', timeout: 1000 }), {
    watch: { keepAliveMs: 5000, backoff: { baseMs: 10, maxMs: 20 } },
  }),
): FleetMirror {
  return new FleetMirror(new Map([['eu', client]]), [], { relistDelayMs: 10, retryMs: 20 });
}

describe('FleetMirror when a stream cannot resume (410)', () => {
  it('relists, reconciles with events, and reopens the stream from the new list', async () => {
    scriptInstance();
    server.on(
      'GET',
      `${API}/applications`,
      { body: { metadata: { resourceVersion: '5' }, items: [app('a', '3'), app('gone', '4')] } },
      { body: { metadata: { resourceVersion: '9' }, items: [app('a', '7'), app('b', '8')] } },
    );
    scriptExpiringStream();

    const mirror = mirrorOfServer();
    const events: FleetEvent[] = [];
    mirror.subscribe((e) => e.kind.startsWith('app-') && events.push(e));
    await mirror.start();
    try {
      expect(mirror.apps().map((a) => a.app.metadata.name)).toEqual(['a', 'gone']);
      await expect.poll(() => server.requestsTo(`${API}/stream/applications`).length, { timeout: 2000 }).toBe(2);
      expect(server.requestsTo(`${API}/stream/applications`).map((r) => r.query.get('resourceVersion'))).toEqual([
        '5',
        '9',
      ]);
      expect(server.requestsTo(`${API}/applications`)).toHaveLength(2);
      expect(
        mirror
          .apps()
          .map((a) => `${a.app.metadata.name}@${a.app.metadata.resourceVersion}/${a.cluster}`)
          .sort(),
      ).toEqual(['a@7/prod-eu1', 'b@8/prod-eu1']);
      expect(events.map((e) => `${e.kind} ${'app' in e ? e.app.app.metadata.name : ''}`)).toEqual([
        'app-changed a',
        'app-added b',
        'app-removed gone',
      ]);
      await expect.poll(() => mirror.health()[0].synced).toBe(true);
    } finally {
      await mirror.stop();
    }
  });
});

describe('FleetMirror applying a list or a read over its streams', () => {
  it('first handles what the streams read and had not yet handled, as when events were handled as read', async () => {
    scriptInstance();
    const inMotion = {
      ...app('a', '7'),
      status: { operationState: { phase: 'Running', startedAt: '2026-12-06T10:00:00Z' } },
    } as Application;
    server.on(
      'GET',
      `${API}/applications`,
      { body: { metadata: { resourceVersion: '5' }, items: [app('a', '3')] } },
      { body: { metadata: { resourceVersion: '9' }, items: [inMotion] } },
    );
    server.on('GET', `${API}/applications/a`, {
      body: { ...inMotion, metadata: { ...inMotion.metadata, resourceVersion: '10' } },
    });
    scriptExpiringStream();
    const client = new ArgoClient(instanceSchema.parse({ name: 'eu', url: server.url, token: 't', timeout: 1000 }), {
      watch: { keepAliveMs: 5000, backoff: { baseMs: 10, maxMs: 20 } },
    });
    const calls: string[] = [];
    const watchAppSets = client.watchApplicationSets.bind(client);
    client.watchApplicationSets = (q, o) => {
      const handle = watchAppSets(q, o);
      const n = calls.filter((c) => c.startsWith('open')).length + 1;
      calls.push(`open ${n}`);
      return {
        ready: handle.ready,
        drain: () => (calls.push(`drain ${n}`), handle.drain!()),
        close: () => (calls.push(`close ${n}`), handle.close()),
      };
    };
    const mirror = mirrorOfServer(client);
    await mirror.start();
    try {
      // The relist after the 410 reads the old streams before applying its lists; the read of the app in motion
      // after the new streams opened reads the new ones before applying the app.
      await expect.poll(() => calls, { timeout: 2000 }).toEqual(['open 1', 'drain 1', 'close 1', 'open 2', 'drain 2']);
      expect(mirror.findApp('eu', 'a', 'argocd')?.app.metadata.resourceVersion).toBe('10');
    } finally {
      await mirror.stop();
    }
  });
});

describe('FleetMirror after reopening an expired stream', () => {
  it('reads again what was in motion when relisted: a sync that ended before the new stream subscribed is seen', async () => {
    const running = (rv: string, phase: string): Application =>
      ({
        ...app('a', rv),
        status: { operationState: { phase, startedAt: '2026-12-06T10:00:00Z' } },
      }) as Application;
    scriptInstance();
    server.on(
      'GET',
      `${API}/applications`,
      { body: { metadata: { resourceVersion: '5' }, items: [app('a', '3')] } },
      { body: { metadata: { resourceVersion: '9' }, items: [running('7', 'Running')] } },
    );
    // The sync ends after the relist and before the new stream subscribes: only a read of the app can see it.
    server.on('GET', `${API}/applications/a`, { body: running('10', 'Succeeded') });
    scriptExpiringStream();
    const mirror = mirrorOfServer();
    await mirror.start();
    try {
      const a = () => mirror.findApp('eu', 'a', 'argocd')?.app;
      await expect
        .poll(() => `${a()?.metadata.resourceVersion} ${a()?.status?.operationState?.phase}`, { timeout: 3000 })
        .toBe('10 Succeeded');
      expect(server.requestsTo(`${API}/applications/a`)).toHaveLength(1);
    } finally {
      await mirror.stop();
    }
  });
});

describe('FleetMirror whose first list is cut short after its streams opened', () => {
  it('opens them again from the retried list, and what the first streams told is not applied', async () => {
    scriptInstance();
    const first = JSON.stringify({ metadata: { resourceVersion: '5' }, items: [app('a', '3')] });
    server.on(
      'GET',
      `${API}/applications`,
      {
        // The list's version and its first app, then the connection drops once the stream opened from that version
        // has told a change: the list is read again, from another version.
        stream: (res) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.write(first.slice(0, -2));
          const cut = setInterval(() => {
            if (server.requestsTo(`${API}/stream/applications`).length === 0) return;
            clearInterval(cut);
            setTimeout(() => res.destroy(), 100);
          }, 5);
        },
      },
      { body: { metadata: { resourceVersion: '9' }, items: [app('a', '7'), app('b', '8')] } },
    );
    scriptStreams((res) => sseSend(res, { result: { type: 'MODIFIED', application: app('a', '6') } }));
    const mirror = mirrorOfServer();
    await mirror.start();
    try {
      expect(server.requestsTo(`${API}/applications`)).toHaveLength(2);
      expect(server.requestsTo(`${API}/stream/applications`).map((r) => r.query.get('resourceVersion'))).toEqual([
        '5',
        '9',
      ]);
      expect(mirror.apps().map((a) => `${a.app.metadata.name}@${a.app.metadata.resourceVersion}`)).toEqual([
        'a@7',
        'b@8',
      ]);
      await expect.poll(() => mirror.health()[0].synced).toBe(true);
    } finally {
      await mirror.stop();
    }
  });
});
