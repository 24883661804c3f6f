import { afterEach, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { FleetMirror } from '../../src/fleet/mirror.js';
import { ArgoClient } from '../../src/infra/argocd/client.js';
import type { ArgoApi } from '../../src/infra/argocd/api.js';
import type { Application } from '../../src/infra/argocd/types.js';
import { instanceSchema } from '../../src/infra/config/schema.js';
import type { SimServer } from '../../src/sim/server.js';
import { startTestSim, simClients } from '../support/sim.js';

let sim: SimServer | undefined;
let mirror: FleetMirror | undefined;

afterEach(async () => {
  await mirror?.stop();
  await sim?.stop();
  mirror = sim = undefined;
});

async function start(enrichLimit?: number) {
  sim = await startTestSim({ scenario: 'seed-outage' });
  const clients = simClients(sim);
  mirror = new FleetMirror(
    clients,
    sim.instances.map((i) => ({ name: i.name })),
    { enrichLimit },
  );
  await mirror.start();
  return mirror;
}

const crashLooping = (m: FleetMirror) => m.apps().filter((a) => a.app.metadata.name.startsWith('auth-service-'));
const resourceMessages = (m: FleetMirror) =>
  crashLooping(m).flatMap((a) => (a.app.status?.resources ?? []).map((r) => r.health?.message).filter(Boolean));

describe('mirror resource health', () => {
  it('fills in the resource health List leaves out, for the unhealthy apps only', async () => {
    const m = await start();
    expect(crashLooping(m)).toHaveLength(12);
    await expect.poll(() => resourceMessages(m).length, { timeout: 10_000 }).toBeGreaterThanOrEqual(12);
    expect(resourceMessages(m).join('\n')).toMatch(/back-off/);
    const healthy = m.apps().filter((a) => a.app.status?.health?.status === 'Healthy');
    expect(healthy.every((a) => (a.app.status?.resources ?? []).every((r) => r.health === undefined))).toBe(true);
  });

  it('has the resource health when start() resolves: the first answer is as complete as later ones', async () => {
    const m = await start();
    expect(resourceMessages(m)).toHaveLength(12);
    expect(resourceMessages(m).every((msg) => /back-off/.test(msg!))).toBe(true);
  });

  it('keeps List data as it is when enrichment is off', async () => {
    const m = await start(0);
    await new Promise((r) => setTimeout(r, 300));
    expect(resourceMessages(m)).toEqual([]);
  });
});

describe('mirror resource health, fetched as the list arrives', () => {
  const app = (name: string, withHealth: boolean): Application =>
    ({
      metadata: { name, namespace: 'argocd', resourceVersion: '7' },
      spec: { project: 'default', destination: { server: 'https://kubernetes.default.svc', namespace: 'prod' } },
      status: {
        health: { status: 'Degraded' },
        sync: { status: 'Synced' },
        resources: [
          {
            group: 'apps',
            version: 'v1',
            kind: 'Deployment',
            name,
            namespace: 'prod',
            ...(withHealth ? { health: { status: 'Degraded', message: 'back-off restarting failed container' } } : {}),
          },
        ],
      },
    }) as Application;

  it('fetches an unhealthy app while the rest of the list is still on its way, and start() resolves with it complete', async () => {
    // The list's first app arrives at once; the rest only once that app has been fetched.
    const gets: string[] = [];
    let fetched!: () => void;
    const firstFetched = new Promise<void>((resolve) => (fetched = resolve));
    const body = JSON.stringify({
      metadata: { resourceVersion: '7' },
      items: [app('auth-1', false), app('auth-2', false)],
    });
    const cut = body.indexOf('{"metadata":{"name":"auth-2"');
    const raw = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(body.slice(0, cut));
      void firstFetched.then(() => res.end(body.slice(cut)));
    });
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = raw.address() as AddressInfo;
      const client = new ArgoClient(
        instanceSchema.parse({ name: 'eu', url: `http://127.0.0.1:${port}`, token: 't', timeout: 5000 }),
        { retry: { retries: 0, baseMs: 5, maxMs: 20 } },
      );
      const api = {
        listClusters: async () => ({ items: [] }),
        listApplicationSets: async () => ({ items: [] }),
        listApplications: client.listApplications.bind(client),
        getApplication: async (ref: { name: string }) => {
          gets.push(ref.name);
          fetched();
          return app(ref.name, true);
        },
      } as unknown as ArgoApi;
      const m = new FleetMirror(new Map([['eu', api]]), [{ name: 'eu' }], { follow: false });
      await m.start();
      expect(gets.sort()).toEqual(['auth-1', 'auth-2']);
      expect(m.apps().map((a) => a.app.status?.resources?.[0].health?.message)).toEqual([
        'back-off restarting failed container',
        'back-off restarting failed container',
      ]);
    } finally {
      await new Promise<void>((resolve) => raw.close(() => resolve()));
    }
  });
});
