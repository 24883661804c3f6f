import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApplicationList } from '../../src/infra/argocd/types.js';
import { generateFleet } from '../../src/sim/scenarios/index.js';
import { appJsonSerializations } from '../../src/sim/http/json.js';
import { startSimServer, type SimServer } from '../../src/sim/server.js';

let sim: SimServer;

beforeAll(async () => {
  sim = await startSimServer({
    fixture: generateFleet({ apps: 10_000, clusters: 200 }),
    adoptFixture: true,
    manual: true,
  });
}, 60_000);
afterAll(async () => {
  await sim.stop();
});

const get = (path: string) => {
  const inst = sim.instances[0];
  return fetch(`${inst.url}${path}`, { headers: { authorization: `Bearer ${inst.token}` } });
};

describe('a fleet of 10,000 apps on 200 clusters', () => {
  it('lists every app sorted by name, and a repeated full List is served from cached JSON', async () => {
    // Let the background warm-up serialize the fleet, as it would before a bot connects.
    await new Promise((r) => setTimeout(r, 50));
    await get('/api/v1/applications?name=none');
    const first = await get('/api/v1/applications');
    const list = (await first.json()) as ApplicationList;
    expect(list.items).toHaveLength(10_000);
    const names = list.items!.map((a) => a.metadata.name);
    expect(names).toEqual([...names].sort());
    // Wall time is meaningless on a loaded test box; what keeps List fast is that a repeated one
    // joins cached strings, so it must not serialize a single app again.
    const before = appJsonSerializations();
    const again = await (await get('/api/v1/applications')).arrayBuffer();
    expect(again.byteLength).toBeGreaterThan(1_000_000);
    expect(appJsonSerializations()).toBe(before);
    // A change re-serializes exactly that app.
    const store = sim.state.instance(sim.instances[0].name)!;
    const one = structuredClone(store.apps.get(names[42])!);
    one.metadata.labels = { ...one.metadata.labels, touched: 'yes' };
    store.putApp(one);
    const third = await (await get('/api/v1/applications')).text();
    expect(appJsonSerializations()).toBe(before + 1);
    expect(third).toContain('"touched":"yes"');
  }, 60_000);

  it('answers a selector query over the fleet and lists 200 clusters with every app counted', async () => {
    const res = await get(
      '/api/v1/applications?fields=items.metadata.name,items.status.sync.status&selector=team%20in%20(none)',
    );
    expect(((await res.json()) as any).items).toBeNull();
    const clusters = (await (await get('/api/v1/clusters')).json()) as any;
    expect(clusters.items).toHaveLength(200);
    const total = clusters.items.reduce(
      (n: number, c: { info: { applicationsCount: number } }) => n + c.info.applicationsCount,
      0,
    );
    expect(total).toBe(10_000);
  });
});
