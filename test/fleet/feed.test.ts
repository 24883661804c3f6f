import { afterEach, describe, expect, it } from 'vitest';
import type { Application } from '../../src/infra/argocd/types.js';
import { FleetFeed, type FleetEvent } from '../../src/fleet/events.js';
import { FleetMirror } from '../../src/fleet/mirror.js';
import { StaticFleet } from '../../src/fleet/model.js';
import type { SimServer } from '../../src/sim/server.js';
import { simFault, startTestSim, simClients } from '../support/sim.js';

let sim: SimServer | undefined;
let mirror: FleetMirror | undefined;

afterEach(async () => {
  await mirror?.stop();
  await sim?.stop();
  mirror = sim = undefined;
});

async function startMirror(server: SimServer, keepAliveMs = 200, lostAfterMs = 5000) {
  const clients = simClients(server, { timeout: 2000, retries: 2, keepAliveMs });
  mirror = new FleetMirror(clients, [], { relistDelayMs: 20, retryMs: 50, lostAfterMs });
  await mirror.start();
  return { mirror, clients };
}

describe('the typed fleet event feed', () => {
  it('delivers an app change with its previous state, and stops after unsubscribe', async () => {
    // (the sync request itself is the first change: operation set, no operationState yet)
    sim = await startTestSim({ fixture: 'sim-multi-instance.json', keepAliveMs: 50 });
    const { mirror, clients } = await startMirror(sim);
    const events: FleetEvent[] = [];
    const unsubscribe = mirror.subscribe((e) => events.push(e));

    await clients.get('prod')!.sync({ name: 'payments-prod-us1' });
    await expect
      .poll(() => events.some((e) => e.kind === 'app-changed' && e.app.app.metadata.name === 'payments-prod-us1'))
      .toBe(true);
    const changed = events.find((e) => e.kind === 'app-changed')!;
    expect(changed.kind === 'app-changed' && changed.previous.app.operation).toBeFalsy();
    expect(changed.kind === 'app-changed' && changed.app.app.operation?.sync).toBeTruthy();
    expect(changed).toMatchObject({ instance: 'prod', app: { instance: 'prod', cluster: 'prod-us1' } });
    expect(Date.parse(changed.at)).not.toBeNaN();

    unsubscribe();
    const seen = events.length;
    sim.controller.advance(120_000);
    await expect
      .poll(() => mirror.findApp('prod', 'payments-prod-us1', 'argocd')?.app.status?.operationState?.phase)
      .toBe('Succeeded');
    expect(events.length).toBe(seen);
  });

  it('says added and removed, and appset changes, in typed form', async () => {
    sim = await startTestSim({ fixture: 'sim-multi-instance.json', keepAliveMs: 50 });
    const { mirror, clients } = await startMirror(sim);
    const events: FleetEvent[] = [];
    mirror.subscribe((e) => events.push(e));
    const store = sim.state.instance('prod')!;
    const added = structuredClone(store.apps.get('payments-prod-eu1')!) as Application;
    added.metadata.name = 'payments-prod-eu2';
    store.putApp(added);
    store.deleteApp('web-prod-us1');
    const appSet = structuredClone(mirror.appSetsNamed('ingress')[0].appSet);
    appSet.metadata.labels = { ...appSet.metadata.labels, team: 'edge' };
    await clients.get('prod')!.upsertApplicationSet(appSet);
    await expect
      .poll(() =>
        events
          .map(
            (e) =>
              `${e.kind} ${'app' in e ? e.app.app.metadata.name : 'appSet' in e ? e.appSet.appSet.metadata.name : ''}`,
          )
          .sort(),
      )
      .toEqual(['app-added payments-prod-eu2', 'app-removed web-prod-us1', 'appset-changed ingress']);
    const removed = events.find((e) => e.kind === 'app-removed')!;
    // The last known state travels with a removal: a recorder can say what was deleted.
    expect(removed.kind === 'app-removed' && removed.app.cluster).toBe('prod-us1');
  });

  it('tells an instance lost once and connected again once, however many streams drop', async () => {
    // Sim keep-alives slower than the client expects: every stream goes silent and reconnects
    // every 100 ms, the way streams through an impatient proxy do. Those heal within lostAfterMs
    // (1.5 s: a reconnect on a busy machine takes hundreds of milliseconds, and that is still no loss). Keep-alives
    // come only on an answered stream (Argo CD answers with the first event): these are answered at once.
    sim = await startTestSim({ fixture: 'sim-multi-instance.json', keepAliveMs: 60_000, watchAnswer: 'at-once' });
    const { mirror } = await startMirror(sim, 100, 1500);
    const flaps: FleetEvent[] = [];
    mirror.subscribe((e) => {
      if (e.instance === 'staging') flaps.push(e);
    });
    const events: FleetEvent[] = [];
    mirror.subscribe((e) => {
      if (e.kind.startsWith('instance-') && e.instance === 'prod') events.push(e);
    });
    await simFault(sim, { kind: 'http5xx', instance: 'prod', status: 503, match: 'stream/' });
    await expect.poll(() => events.map((e) => e.kind), { timeout: 6000 }).toEqual(['instance-lost']);
    expect(events[0]).toMatchObject({ instance: 'prod' });
    // Both streams keep failing their reconnects meanwhile: still one loss.
    await new Promise((r) => setTimeout(r, 400));
    expect(events.map((e) => e.kind)).toEqual(['instance-lost']);
    expect(mirror.health().find((h) => h.instance === 'prod')?.synced).toBe(false);

    await simFault(sim, { kind: 'clear', instance: 'prod' });
    await expect
      .poll(() => events.map((e) => e.kind), { timeout: 6000 })
      .toEqual(['instance-lost', 'instance-connected']);
    expect(mirror.health().find((h) => h.instance === 'prod')?.synced).toBe(true);
    // Staging's streams dropped and healed a dozen times meanwhile: none of it was a loss.
    expect(flaps.filter((e) => e.kind === 'instance-lost')).toEqual([]);
  });

  it('keeps delivering to the others when one listener throws, and reports the failure', () => {
    const failures: string[] = [];
    const feed = new FleetFeed((error, event) => failures.push(`${event.kind}: ${(error as Error).message}`));
    const got: string[] = [];
    feed.subscribe(() => {
      throw new Error('rule broke');
    });
    feed.subscribe((e) => got.push(e.kind));
    feed.publish({ kind: 'instance-lost', instance: 'prod', at: new Date().toISOString() });
    expect(got).toEqual(['instance-lost']);
    expect(failures).toEqual(['instance-lost: rule broke']);
  });

  it('a fixture-built fleet follows every instance and accepts subscribers', () => {
    const fleet = StaticFleet.fromObjects([
      { name: 'prod', applications: [] },
      { name: 'staging', applications: [] },
    ]);
    expect(fleet.health().map((h) => `${h.instance}:${h.synced}`)).toEqual(['prod:true', 'staging:true']);
    const off = fleet.subscribe(() => undefined);
    expect(typeof off).toBe('function');
  });
});
