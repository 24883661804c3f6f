import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { ArgoApi } from '../../src/infra/argocd/api.js';
import type { Application, ApplicationSet } from '../../src/infra/argocd/types.js';
import type { FleetEvent } from '../../src/fleet/events.js';
import { FleetMirror } from '../../src/fleet/mirror.js';
import type { SimServer } from '../../src/sim/server.js';
import { simClients, simFault, startTestSim } from '../support/sim.js';

/**
 * Argo CD answers a watch only with its first message (grpc-gateway waits for the gRPC stream's header, which the
 * server sends with its first event; the SSE keep-alives start after it). On a fleet where nothing changes, a
 * watch that skips the snapshot stays unanswered. The simulator does the same (its default), and the mirror must
 * follow such a fleet without calling it lost.
 */

let sim: SimServer | undefined;
let mirror: FleetMirror | undefined;

afterEach(async () => {
  await mirror?.stop();
  await sim?.stop();
  mirror = sim = undefined;
});

/** Opens a watch as the mirror does (SSE, skipping the snapshot) and says when its answer came, if it did. */
function rawWatch(server: SimServer, path: string): { answered: () => boolean; close: () => void } {
  const inst = server.instances.find((i) => i.name === 'prod')!;
  let answered = false;
  const req = http.get(`${inst.url}/api/v1/stream/${path}?resourceVersion=1`, {
    headers: { accept: 'text/event-stream', authorization: `Bearer ${inst.token}` },
  });
  req.on('response', (res) => {
    answered = true;
    res.resume();
  });
  req.on('error', () => undefined);
  return { answered: () => answered, close: () => req.destroy() };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `api`, each call also written down as "instance method". */
function counted(instance: string, api: ArgoApi, calls: string[]): ArgoApi {
  return new Proxy(api, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.push(`${instance} ${String(prop)}`);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

async function quietMirror(
  server: SimServer,
  calls: string[] = [],
): Promise<{ mirror: FleetMirror; events: FleetEvent[] }> {
  // An instance timeout far below how long the streams stay unanswered, and a loss told quickly: waiting for an
  // answer as for any other request would call the instance lost within a second.
  const clients = new Map(
    [...simClients(server, { timeout: 400, retries: 1, keepAliveMs: 200 })].map(([name, api]) => [
      name,
      counted(name, api, calls),
    ]),
  );
  const m = new FleetMirror(
    clients,
    server.instances.map((i) => ({ name: i.name, uiUrl: `https://${i.name}.argocd.example` })),
    { relistDelayMs: 20, retryMs: 50, lostAfterMs: 300 },
  );
  const events: FleetEvent[] = [];
  m.subscribe((e) => events.push(e));
  mirror = m;
  await m.start();
  return { mirror: m, events };
}

/** prod's health as the mirror tells it. */
const prodHealth = () => mirror!.health().find((h) => h.instance === 'prod');

/** prod's streams of `watches` (both when not given) dropped, and refused from then on: prod is no longer current. */
async function cutProdStreams(server: SimServer, watches?: 'applicationsets'): Promise<void> {
  await simFault(server, { kind: 'http5xx', instance: 'prod', status: 503, match: `stream/${watches ?? ''}` });
  await simFault(server, { kind: 'dropStreams', instance: 'prod', ...(watches ? { watches } : {}) });
  await expect.poll(() => prodHealth()?.synced, { timeout: 3000 }).toBe(false);
}

describe('watch streams over a fleet where nothing changes', () => {
  it('the simulator answers a watch without a snapshot only with its first event, as Argo CD does', async () => {
    sim = await startTestSim({ fixture: 'sim-multi-instance.json' });
    const apps = rawWatch(sim, 'applications');
    const appSets = rawWatch(sim, 'applicationsets');
    try {
      await sleep(300);
      expect([apps.answered(), appSets.answered()]).toEqual([false, false]);
      const store = sim.state.instance('prod')!;
      const app = structuredClone([...store.apps.values()][0]) as Application;
      app.metadata.labels = { ...app.metadata.labels, touched: 'yes' };
      store.putApp(app);
      await expect.poll(() => apps.answered(), { timeout: 2000 }).toBe(true);
      expect(appSets.answered()).toBe(false);
    } finally {
      apps.close();
      appSets.close();
    }
  });

  it('follows them without calling the instance lost, and sees the first change when it comes', async () => {
    sim = await startTestSim({ fixture: 'sim-multi-instance.json' });
    const started = await quietMirror(sim);
    // Well past the instance timeout and lostAfterMs, with both streams of both instances still unanswered.
    await sleep(1500);
    const told = () =>
      started.events
        .filter((e) => e.kind.startsWith('instance-'))
        .map((e) => `${e.kind} ${e.instance}`)
        .sort();
    // Connected once each, when the streams counted as subscribed; never lost.
    expect(told()).toEqual(sim.instances.map((i) => `instance-connected ${i.name}`).sort());
    expect(mirror!.health().map((h) => [h.instance, h.synced, h.error])).toEqual(
      sim.instances.map((i) => [i.name, true, undefined]),
    );

    const store = sim.state.instance('prod')!;
    const app = structuredClone([...store.apps.values()][0]) as Application;
    app.metadata.labels = { ...app.metadata.labels, tier: 'gold' };
    store.putApp(app);
    const appSet = structuredClone([...store.appSets.values()][0]) as ApplicationSet;
    appSet.metadata.labels = { ...appSet.metadata.labels, tier: 'gold' };
    store.putAppSet(appSet);
    await expect
      .poll(() => mirror!.findApp('prod', app.metadata.name, app.metadata.namespace)?.app.metadata.labels?.tier, {
        timeout: 3000,
      })
      .toBe('gold');
    await expect
      .poll(
        () => mirror!.appSetsNamed(appSet.metadata.name).find((s) => s.instance === 'prod')?.appSet.metadata.labels,
        { timeout: 3000 },
      )
      .toMatchObject({ tier: 'gold' });
    expect(told()).toEqual(sim.instances.map((i) => `instance-connected ${i.name}`).sort());
  });

  it('a stream dropped before its first event reconnects, and what changed while it was down is relisted', async () => {
    sim = await startTestSim({ fixture: 'sim-multi-instance.json' });
    await quietMirror(sim);
    await cutProdStreams(sim);

    // Changed while no stream followed prod: only a relist can bring it.
    const store = sim.state.instance('prod')!;
    const app = structuredClone([...store.apps.values()][0]) as Application;
    app.metadata.labels = { ...app.metadata.labels, tier: 'silver' };
    store.putApp(app);

    await simFault(sim, { kind: 'clear', instance: 'prod' });
    await expect
      .poll(() => mirror!.findApp('prod', app.metadata.name, app.metadata.namespace)?.app.metadata.labels?.tier, {
        timeout: 5000,
      })
      .toBe('silver');
    await expect.poll(() => prodHealth()?.synced, { timeout: 3000 }).toBe(true);
  });

  it('relists only what the cut stream follows: a quiet ApplicationSet stream cut by a proxy costs no app list', async () => {
    sim = await startTestSim({ fixture: 'sim-multi-instance.json' });
    const calls: string[] = [];
    await quietMirror(sim, calls);
    const lists = (instance: string) =>
      ['listApplications', 'listApplicationSets'].map((m) => calls.filter((c) => c === `${instance} ${m}`).length);
    expect(lists('prod')).toEqual([1, 1]);

    await cutProdStreams(sim, 'applicationsets');
    // Changed while no stream followed prod's ApplicationSets: only a relist can bring it.
    const store = sim.state.instance('prod')!;
    const appSet = structuredClone([...store.appSets.values()][0]) as ApplicationSet;
    appSet.metadata.labels = { ...appSet.metadata.labels, tier: 'bronze' };
    store.putAppSet(appSet);
    await simFault(sim, { kind: 'clear', instance: 'prod' });

    await expect
      .poll(
        () => mirror!.appSetsNamed(appSet.metadata.name).find((s) => s.instance === 'prod')?.appSet.metadata.labels,
        { timeout: 5000 },
      )
      .toMatchObject({ tier: 'bronze' });
    await expect.poll(() => prodHealth()?.synced, { timeout: 3000 }).toBe(true);
    expect(lists('prod')).toEqual([1, 2]);
    expect(lists('staging')).toEqual([1, 1]);
  });

  it('streams refused at first and then followed leave no error behind on an instance that is current', async () => {
    sim = await startTestSim({ fixture: 'sim-multi-instance.json' });
    // prod's first two stream requests are refused: the watch reports each, then subscribes.
    await simFault(sim, { kind: 'http5xx', instance: 'prod', status: 503, match: 'stream/', count: 2 });
    await quietMirror(sim);
    await expect.poll(() => prodHealth()?.synced, { timeout: 3000 }).toBe(true);
    expect(prodHealth()?.error).toBeUndefined();
  });

  it('a proxy that holds every request while Argo CD is down does not make the instance look connected again', async () => {
    sim = await startTestSim({ fixture: 'sim-multi-instance.json' });
    const started = await quietMirror(sim);
    const prod = () =>
      started.events.filter((e) => e.kind.startsWith('instance-') && e.instance === 'prod').map((e) => e.kind);
    expect(prod()).toEqual(['instance-connected']);

    // Streams are held 3 s, then refused; lists are refused at once: nothing of prod answers.
    await simFault(sim, { kind: 'latency', instance: 'prod', ms: 3000, match: 'stream/' });
    await simFault(sim, { kind: 'http5xx', instance: 'prod', status: 503 });
    await simFault(sim, { kind: 'dropStreams', instance: 'prod' });
    await expect.poll(prod, { timeout: 3000 }).toEqual(['instance-connected', 'instance-lost']);
    // The reconnects stay open past subscribeAfterMs, and every relist is refused: still lost, never connected.
    await sleep(2500);
    expect(prod()).toEqual(['instance-connected', 'instance-lost']);
    expect(prodHealth()?.synced).toBe(false);

    await simFault(sim, { kind: 'clear', instance: 'prod' });
    await expect.poll(prod, { timeout: 8000 }).toEqual(['instance-connected', 'instance-lost', 'instance-connected']);
    expect(prodHealth()?.synced).toBe(true);
  });
});
