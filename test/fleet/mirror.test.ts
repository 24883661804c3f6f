import { afterEach, describe, expect, it } from 'vitest';
import { ArgoClient } from '../../src/infra/argocd/client.js';
import type { ArgoApi } from '../../src/infra/argocd/api.js';
import type { Application } from '../../src/infra/argocd/types.js';
import { instanceSchema } from '../../src/infra/config/schema.js';
import type { FleetEvent } from '../../src/fleet/events.js';
import { FleetMirror } from '../../src/fleet/mirror.js';

type AppEvent = Extract<FleetEvent, { kind: 'app-added' | 'app-changed' | 'app-removed' }>;
type AppSetEvent = Extract<FleetEvent, { kind: 'appset-added' | 'appset-changed' | 'appset-removed' }>;
const isAppEvent = (e: FleetEvent): e is AppEvent => e.kind.startsWith('app-');
import type { SimServer } from '../../src/sim/server.js';
import { simFault, simOperations, startTestSim, simClients } from '../support/sim.js';

let sim: SimServer | undefined;
let mirror: FleetMirror | undefined;

afterEach(async () => {
  await mirror?.stop();
  await sim?.stop();
  mirror = sim = undefined;
});

function clientsFor(server: SimServer, keepAliveMs = 200) {
  return simClients(server, { timeout: 2000, retries: 2, keepAliveMs });
}

async function startMirror(server: SimServer, keepAliveMs?: number) {
  const clients = clientsFor(server, keepAliveMs);
  mirror = new FleetMirror(
    clients,
    server.instances.map((i) => ({ name: i.name, uiUrl: `https://${i.name}.argocd.example` })),
    {
      relistDelayMs: 20,
      retryMs: 50,
    },
  );
  await mirror.start();
  return { mirror, clients };
}

const summary = (m: FleetMirror) =>
  m
    .apps()
    .map((a) => `${a.instance}/${a.cluster}/${a.app.metadata.name}`)
    .sort();

describe('FleetMirror over the simulator (2 instances)', () => {
  it('loads apps, appsets and clusters of every instance, tagged with instance and cluster name', async () => {
    sim = await startTestSim({ fixture: 'sim-multi-instance.json', keepAliveMs: 50 });
    const { mirror } = await startMirror(sim);
    expect(summary(mirror)).toEqual([
      'prod/prod-eu1/auth-service-prod-eu1',
      'prod/prod-eu1/ingress-prod-eu1',
      'prod/prod-eu1/payments-prod-eu1',
      'prod/prod-us1/ingress-prod-us1',
      'prod/prod-us1/payments-prod-us1',
      // destination.server with a trailing slash still resolves through the cluster list
      'prod/prod-us1/web-prod-us1',
      'staging/staging-1/auth-service-staging',
      'staging/staging-1/payments-staging',
    ]);
    expect(
      mirror
        .appsOf('prod', 'ingress')
        .map((a) => a.app.metadata.name)
        .sort(),
    ).toEqual(['ingress-prod-eu1', 'ingress-prod-us1']);
    expect(mirror.appSets().map((s) => `${s.instance}/${s.appSet.metadata.name}`)).toEqual(['prod/ingress']);
    expect(
      mirror
        .clusters()
        .filter((c) => c.instance === 'staging')
        .map((c) => c.cluster.name),
    ).toEqual(['staging-1']);
    expect(mirror.clusters().every((c) => c.cluster.config === undefined)).toBe(true);
    expect(mirror.health()).toEqual([
      { instance: 'prod', synced: true, lastEventAt: undefined, error: undefined },
      { instance: 'staging', synced: true, lastEventAt: undefined, error: undefined },
    ]);
  });

  it('as a snapshot (follow: false) lists every instance once, opens no stream, and is in sync', async () => {
    sim = await startTestSim({ fixture: 'sim-multi-instance.json', keepAliveMs: 50 });
    const clients = clientsFor(sim);
    const watches: string[] = [];
    for (const [name, client] of clients) {
      const apps = client.watchApplications.bind(client);
      const appSets = client.watchApplicationSets.bind(client);
      client.watchApplications = (q, o) => (watches.push(`${name} apps`), apps(q, o));
      client.watchApplicationSets = (q, o) => (watches.push(`${name} appsets`), appSets(q, o));
    }
    mirror = new FleetMirror(
      clients,
      sim.instances.map((i) => ({ name: i.name, uiUrl: i.url })),
      { follow: false },
    );
    const events: FleetEvent[] = [];
    mirror.subscribe((e) => events.push(e));
    await mirror.start();
    expect(watches).toEqual([]);
    expect(mirror.apps()).toHaveLength(8);
    expect(mirror.health().map((h) => [h.instance, h.synced])).toEqual([
      ['prod', true],
      ['staging', true],
    ]);
    expect(
      events
        .filter((e) => e.kind === 'instance-connected')
        .map((e) => e.instance)
        .sort(),
    ).toEqual(['prod', 'staging']);
    // What changes afterwards is not followed: a snapshot answers from the lists it took.
    await clients.get('prod')!.sync({ name: 'payments-prod-us1', prune: true });
    await new Promise((r) => setTimeout(r, 200));
    expect(events.some((e) => isAppEvent(e))).toBe(false);
  });

  it('reflects a sync done through the client, with the previous state on each event', async () => {
    sim = await startTestSim({ fixture: 'sim-multi-instance.json', keepAliveMs: 50 });
    const { mirror, clients } = await startMirror(sim);
    const events: AppEvent[] = [];
    mirror.subscribe((e) => isAppEvent(e) && events.push(e));

    await clients.get('prod')!.sync({ name: 'payments-prod-us1', prune: true });
    await expect.poll(() => events.some((e) => e.app.app.metadata.name === 'payments-prod-us1')).toBe(true);

    sim.controller.advance(120_000);
    await expect
      .poll(() => mirror.findApp('prod', 'payments-prod-us1', 'argocd')?.app.status?.operationState?.phase, {
        timeout: 3000,
      })
      .toBe('Succeeded');
    const app = mirror.appsNamed('payments-prod-us1')[0];
    expect(app.instance).toBe('prod');
    expect(app.cluster).toBe('prod-us1');
    expect(app.app.status?.sync?.status).toBe('Synced');
    const last = events.filter((e) => e.app.app.metadata.name === 'payments-prod-us1').at(-1)!;
    expect(last.kind).toBe('app-changed');
    expect(last.kind === 'app-changed' && last.previous.app.metadata.resourceVersion).not.toBe(
      last.app.app.metadata.resourceVersion,
    );
    // Staging saw nothing of it.
    expect(events.every((e) => e.instance === 'prod')).toBe(true);
    const ops = await simOperations(sim, 'prod');
    expect(ops.filter((o) => o.method === 'POST').map((o) => o.path)).toEqual([
      expect.stringContaining('/applications/payments-prod-us1/sync'),
    ]);
    expect(mirror.health().find((h) => h.instance === 'prod')?.lastEventAt).toBeDefined();
  });

  it('catches up on changes made while its stream was down (Argo CD does not replay on resume)', async () => {
    // Sim keep-alives slower than the client expects: a blocked stream is noticed quickly. Keep-alives come only on
    // an answered stream, and Argo CD answers with the first event: streams answered at once stand for a fleet busy
    // enough that they were.
    sim = await startTestSim({ fixture: 'sim-multi-instance.json', keepAliveMs: 60_000, watchAnswer: 'at-once' });
    const { mirror } = await startMirror(sim, 100);
    const events: AppEvent[] = [];
    mirror.subscribe((e) => isAppEvent(e) && events.push(e));

    await simFault(sim, { kind: 'http5xx', instance: 'prod', status: 503, match: 'stream/applications' });
    await expect.poll(() => mirror.health().find((h) => h.instance === 'prod')?.synced, { timeout: 3000 }).toBe(false);

    const store = sim.state.instance('prod')!;
    store.deleteApp('web-prod-us1');
    const changed = structuredClone(store.apps.get('payments-prod-eu1')!) as Application;
    changed.metadata.labels = { ...changed.metadata.labels, tier: 'gold' };
    store.putApp(changed);
    const added = structuredClone(store.apps.get('payments-prod-eu1')!) as Application;
    added.metadata.name = 'payments-prod-eu2';
    store.putApp(added);

    await simFault(sim, { kind: 'clear', instance: 'prod' });
    await expect
      .poll(() => mirror.findApp('prod', 'payments-prod-eu2', 'argocd') !== undefined, { timeout: 3000 })
      .toBe(true);
    expect(mirror.findApp('prod', 'web-prod-us1', 'argocd')).toBeUndefined();
    expect(mirror.appsNamed('payments-prod-eu1')[0].app.metadata.labels?.tier).toBe('gold');
    expect(events.map((e) => `${e.kind} ${e.app.app.metadata.name}`).sort()).toEqual([
      'app-added payments-prod-eu2',
      'app-changed payments-prod-eu1',
      'app-removed web-prod-us1',
    ]);
    await expect.poll(() => mirror.health().find((h) => h.instance === 'prod')?.synced, { timeout: 3000 }).toBe(true);
  });

  it('reads again what was in motion when listed: an operation that ended before the streams started is seen', async () => {
    sim = await startTestSim({ fixture: 'sim-multi-instance.json' });
    // Streams that stay up (no reconnect, whose relist would catch up too): only reading again can see the end.
    const clients = clientsFor(sim, 60_000);
    const store = sim.state.instance('prod')!;
    const name = 'payments-prod-eu1';
    const withPhase = (phase: 'Running' | 'Succeeded') => {
      const app = structuredClone(store.apps.get(name)!) as Application;
      const op = app.status!.operationState!;
      app.status!.operationState = { ...op, phase, finishedAt: phase === 'Running' ? undefined : op.finishedAt };
      store.putApp(app);
    };
    withPhase('Running');
    // The sync ends after the list's snapshot and before the streams subscribe: Argo CD's watch replays nothing,
    // so neither the list nor the stream carries it.
    const prod = clients.get('prod')!;
    const gap: ArgoApi = Object.create(prod, {
      watchApplications: {
        value: (...args: Parameters<ArgoApi['watchApplications']>) => {
          withPhase('Succeeded');
          return prod.watchApplications(...args);
        },
      },
    });
    mirror = new FleetMirror(
      new Map([...clients, ['prod', gap]]),
      sim.instances.map((i) => ({ name: i.name })),
      { relistDelayMs: 20, retryMs: 50 },
    );
    const events: AppEvent[] = [];
    mirror.subscribe((e) => isAppEvent(e) && events.push(e));
    await mirror.start();
    const phase = () => mirror!.findApp('prod', name, 'argocd')?.app.status?.operationState?.phase;
    await expect.poll(phase, { timeout: 3000 }).toBe('Succeeded');
    expect(events.filter((e) => e.app.app.metadata.name === name).map((e) => e.kind)).toEqual(['app-changed']);
  });

  it('subscribes while the list is read: an app that breaks after the snapshot and before the list is in is seen', async () => {
    // Answered at once, so a stream that was opened is known to be subscribed.
    sim = await startTestSim({ fixture: 'sim-multi-instance.json', watchAnswer: 'at-once' });
    const clients = clientsFor(sim, 60_000);
    const store = sim.state.instance('prod')!;
    const name = 'payments-prod-eu1';
    const prod = clients.get('prod')!;
    let stream: { ready: Promise<void>; told: string[] } | undefined;
    // The app breaks once the whole list has arrived and before the mirror has it, as it would while a list of
    // thousands of apps is still being read: Healthy, nothing in motion, so only a stream can tell.
    const slowList: ArgoApi = Object.create(prod, {
      listApplications: {
        value: async (...args: Parameters<ArgoApi['listApplications']>) => {
          const list = await prod.listApplications(...args);
          if (stream) await stream.ready;
          const broken = structuredClone(store.apps.get(name)!) as Application;
          broken.status!.health = { status: 'Degraded', message: 'Back-off restarting failed container' };
          store.putApp(broken);
          if (stream) await expect.poll(() => stream!.told, { timeout: 2000 }).toContain(name);
          return list;
        },
      },
      watchApplications: {
        value: (...[query, options]: Parameters<ArgoApi['watchApplications']>) => {
          const told: string[] = [];
          const handle = prod.watchApplications(query, {
            ...options,
            onEvent: (e) => {
              told.push(e.application.metadata.name);
              options.onEvent(e);
            },
          });
          stream ??= { ready: handle.ready, told };
          return handle;
        },
      },
    });
    mirror = new FleetMirror(
      new Map([...clients, ['prod', slowList]]),
      sim.instances.map((i) => ({ name: i.name })),
      {
        relistDelayMs: 20,
        retryMs: 50,
      },
    );
    const events: AppEvent[] = [];
    mirror.subscribe((e) => isAppEvent(e) && events.push(e));
    await mirror.start();
    // The stream was open before the list was in, and what it told then is applied over the list, once.
    const health = () => mirror!.findApp('prod', name, 'argocd')?.app.status?.health;
    expect(health()).toEqual({ status: 'Degraded', message: 'Back-off restarting failed container' });
    expect(events.filter((e) => e.app.app.metadata.name === name).map((e) => e.kind)).toEqual(['app-changed']);
    expect(mirror.health().find((h) => h.instance === 'prod')?.synced).toBe(true);
  });

  it('reflects an ApplicationSet upserted through the client', async () => {
    sim = await startTestSim({ fixture: 'sim-multi-instance.json', keepAliveMs: 50 });
    const { mirror, clients } = await startMirror(sim);
    const events: AppSetEvent[] = [];
    mirror.subscribe((e) => e.kind.startsWith('appset-') && events.push(e as AppSetEvent));
    const appSet = structuredClone(mirror.appSetsNamed('ingress')[0].appSet);
    appSet.spec.strategy = {
      type: 'RollingSync',
      rollingSync: {
        steps: [{ matchExpressions: [{ key: 'region', operator: 'In', values: ['eu'] }], maxUpdate: 0 }, {}],
      },
    };
    await clients.get('prod')!.upsertApplicationSet(appSet);
    await expect.poll(() => events.length, { timeout: 3000 }).toBeGreaterThan(0);
    expect(events[0]).toMatchObject({ instance: 'prod', kind: 'appset-changed' });
    expect(mirror.appSetsNamed('ingress')[0].appSet.spec.strategy?.rollingSync?.steps?.[0].maxUpdate).toBe(0);
    expect(
      events[0].kind === 'appset-changed' &&
        events[0].previous.appSet.spec.strategy?.rollingSync?.steps?.[0]?.maxUpdate,
    ).not.toBe(0);
  });

  it('resolves the cluster name of an app on a cluster added after the start', async () => {
    sim = await startTestSim({ fixture: 'sim-multi-instance.json', keepAliveMs: 50 });
    const { mirror } = await startMirror(sim);
    const store = sim.state.instance('staging')!;
    store.putCluster({ name: 'staging-2', server: 'https://staging-2.k8s.example.com' });
    const added = structuredClone(store.apps.get('payments-staging')!) as Application;
    added.metadata.name = 'payments-staging-2';
    added.spec.destination = { server: 'https://staging-2.k8s.example.com', namespace: 'payments' };
    store.putApp(added);
    await expect
      .poll(() => mirror.findApp('staging', 'payments-staging-2', 'argocd')?.cluster, { timeout: 3000 })
      .toBe('staging-2');
    expect(
      mirror
        .clusters()
        .filter((c) => c.instance === 'staging')
        .map((c) => c.cluster.name)
        .sort(),
    ).toEqual(['staging-1', 'staging-2']);
  });

  it('serves the reachable instances when one is down, and reports the down one', async () => {
    sim = await startTestSim({ fixture: 'sim-multi-instance.json', keepAliveMs: 50 });
    const clients = clientsFor(sim);
    clients.set(
      'gone',
      new ArgoClient(instanceSchema.parse({ name: 'gone', url: 'http://127.0.0.1:1', token: 't', timeout: 500 }), {
        retry: { retries: 0, baseMs: 1, maxMs: 1 },
      }),
    );
    mirror = new FleetMirror(clients, [], { retryMs: 10_000 });
    await mirror.start();
    expect(mirror.apps().length).toBe(8);
    const gone = mirror.health().find((h) => h.instance === 'gone')!;
    expect(gone.synced).toBe(false);
    expect(gone.error).toContain('Cannot reach Argo CD instance gone');
  });
});
