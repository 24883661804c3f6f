import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

describe('FleetMirror when a stream cannot resume (410)', () => {
  it('relists, reconciles with events, and reopens the stream from the new list', async () => {
    server.on('GET', `${API}/clusters`, { body: { items: [{ name: 'prod-eu1', server: 'https://eu1.k8s' }] } });
    server.on('GET', `${API}/applicationsets`, { body: { metadata: { resourceVersion: '5' }, items: [] } });
    server.on(
      'GET',
      `${API}/applications`,
      { body: { metadata: { resourceVersion: '5' }, items: [app('a', '3'), app('gone', '4')] } },
      { body: { metadata: { resourceVersion: '9' }, items: [app('a', '7'), app('b', '8')] } },
    );
    server.on('GET', `${API}/stream/applicationsets`, { stream: (res) => sseOpen(res) });
    server.on(
      'GET',
      `${API}/stream/applications`,
      {
        stream: (res) => {
          sseOpen(res);
          setTimeout(
            () =>
              sseSend(res, {
                error: { grpc_code: 11, http_code: 410, message: 'too old resource version: 5', http_status: 'Gone' },
              }),
            30,
          );
        },
      },
      { stream: (res) => sseOpen(res) },
    );

    const client = new ArgoClient(instanceSchema.parse({ name: 'eu', url: server.url, token: 't', timeout: 1000 }), {
      watch: { keepAliveMs: 5000, backoff: { baseMs: 10, maxMs: 20 } },
    });
    const mirror = new FleetMirror(new Map([['eu', client]]), [], { relistDelayMs: 10, retryMs: 20 });
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
