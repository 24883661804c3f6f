import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArgoClient } from '../../src/infra/argocd/client.js';
import type { Application } from '../../src/infra/argocd/types.js';
import { instanceSchema } from '../../src/infra/config/schema.js';
import { FleetMirror } from '../../src/fleet/mirror.js';
import { sseOpen, sseSend, startRecordingServer, type RecordingServer } from '../support/recording-server.js';

const API = '/api/v1';
let server: RecordingServer;

const app = (name: string, rv: string, health: 'Healthy' | 'Degraded' = 'Healthy'): Application => ({
  metadata: { name, namespace: 'argocd', resourceVersion: rv },
  spec: { project: 'default', destination: { server: 'https://eu1.k8s' } },
  status: { health: { status: health } },
});

const event = (type: 'ADDED' | 'MODIFIED' | 'DELETED', application: Application) => ({
  result: { type, application },
});

beforeAll(async () => {
  server = await startRecordingServer();
});
afterAll(async () => {
  await server.stop();
});

function mirrorOf(relistDelayMs = 10): FleetMirror {
  const client = new ArgoClient(instanceSchema.parse({ name: 'eu', url: server.url, token: 't', timeout: 2000 }), {
    watch: { keepAliveMs: 5000, backoff: { baseMs: 10, maxMs: 20 } },
  });
  return new FleetMirror(new Map([['eu', client]]), [], { relistDelayMs, retryMs: 20 });
}

/**
 * What the mirror remembers of stream changes for its relists, per instance. Private: no answer shows it, but it is
 * memory a long-running bot holds, so its size is the behaviour under test.
 */
const touchedKeys = (mirror: FleetMirror) =>
  [...(mirror as unknown as { states: Map<string, { touched: Map<string, number> }> }).states.values()].reduce(
    (n, s) => n + s.touched.size,
    0,
  );

describe('FleetMirror memory under a stream that never stops', () => {
  it('keeps nothing per app for relists while none runs: apps created and deleted leave no trace', async () => {
    let stream: ServerResponse | undefined;
    server.on('GET', `${API}/clusters`, { body: { items: [{ name: 'prod-eu1', server: 'https://eu1.k8s' }] } });
    server.on('GET', `${API}/applicationsets`, { body: { metadata: { resourceVersion: '1' }, items: [] } });
    server.on('GET', `${API}/applications`, { body: { metadata: { resourceVersion: '1' }, items: [app('a', '1')] } });
    server.on('GET', `${API}/stream/applicationsets`, { stream: (res) => sseOpen(res) });
    server.on('GET', `${API}/stream/applications`, {
      stream: (res) => {
        sseOpen(res);
        stream = res;
      },
    });
    const mirror = mirrorOf();
    await mirror.start();
    try {
      // Preview environments: 200 apps that come and go, and an app that keeps changing.
      let rv = 1;
      for (let i = 0; i < 200; i++) {
        sseSend(stream!, event('ADDED', app(`pr-${i}`, String(++rv))));
        sseSend(stream!, event('MODIFIED', app('a', String(++rv), i % 2 ? 'Healthy' : 'Degraded')));
        sseSend(stream!, event('DELETED', app(`pr-${i}`, String(++rv))));
      }
      await expect
        .poll(() => mirror.apps().find((a) => a.app.metadata.name === 'a')?.app.metadata.resourceVersion)
        .toBe(String(rv - 1));
      expect(mirror.apps().map((a) => a.app.metadata.name)).toEqual(['a']);
      expect(touchedKeys(mirror)).toBe(0);
    } finally {
      await mirror.stop();
    }
  });

  it('still lets a stream change made during a relist win over the older list', async () => {
    let streams = 0;
    server.on('GET', `${API}/clusters`, { body: { items: [{ name: 'prod-eu1', server: 'https://eu1.k8s' }] } });
    server.on('GET', `${API}/applicationsets`, { body: { metadata: { resourceVersion: '3' }, items: [] } });
    server.on(
      'GET',
      `${API}/applications`,
      { body: { metadata: { resourceVersion: '3' }, items: [app('a', '3'), app('b', '3')] } },
      // The relist after the reconnect: slow, and listed before the stream's change to `a` below.
      { delayMs: 300, body: { metadata: { resourceVersion: '5' }, items: [app('a', '5'), app('b', '5')] } },
    );
    server.on('GET', `${API}/stream/applicationsets`, { stream: (res) => sseOpen(res) });
    server.on('GET', `${API}/stream/applications`, {
      stream: (res) => {
        sseOpen(res);
        // The first stream drops; the second brings a change while the relist's list is on its way.
        if (++streams === 1) setTimeout(() => res.destroy(), 30);
        else setTimeout(() => sseSend(res, event('MODIFIED', app('a', '7', 'Degraded'))), 100);
      },
    });
    const mirror = mirrorOf();
    await mirror.start();
    try {
      await expect.poll(() => server.requestsTo(`${API}/applications`).length, { timeout: 3000 }).toBe(2);
      await expect
        .poll(() => mirror.apps().find((a) => a.app.metadata.name === 'b')?.app.metadata.resourceVersion, {
          timeout: 3000,
        })
        .toBe('5');
      const a = mirror.apps().find((x) => x.app.metadata.name === 'a')!.app;
      expect(`${a.metadata.resourceVersion} ${a.status?.health?.status}`).toBe('7 Degraded');
      // The relist is over: nothing is kept for the next one.
      expect(touchedKeys(mirror)).toBe(0);
    } finally {
      await mirror.stop();
    }
  });
});
