/**
 * The mirror holds Applications lean (src/fleet/lean.ts): what it drops must change no answer. The seed-outage
 * fleet as Argo CD's API sends it, given the bookkeeping a real cluster adds (managedFields, kubectl's
 * last-applied annotation), answers status, app, rollout and diagnose the same whole and lean.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClients } from '../../src/infra/argocd/client.js';
import type { Application } from '../../src/infra/argocd/types.js';
import { dispatch } from '../../src/commands/index.js';
import type { CommandContext } from '../../src/commands/registry.js';
import { configSchema } from '../../src/infra/config/schema.js';
import { leanApp } from '../../src/fleet/lean.js';
import { FleetMirror } from '../../src/fleet/mirror.js';
import { StaticFleet, type FleetView } from '../../src/fleet/model.js';
import { SEED_OUTAGE_INSTANCE } from '../../src/sim/scenarios/seed-outage.js';
import type { SimServer } from '../../src/sim/server.js';
import { startTestSim } from '../support/sim.js';

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

let sim: SimServer;
let config: ReturnType<typeof configSchema.parse>;
let whole: Application[];
let ctx: (fleet: FleetView) => CommandContext;
let fleets: { whole: StaticFleet; lean: StaticFleet };

/** What a real cluster adds to every object and the simulator leaves out. */
function withBookkeeping(app: Application): Application {
  const copy = structuredClone(app);
  copy.metadata.managedFields = [{ manager: 'argocd-application-controller', fieldsV1: { 'f:status': {} } }];
  copy.metadata.annotations = { ...copy.metadata.annotations, [LAST_APPLIED]: JSON.stringify(app.spec) };
  return copy;
}

beforeAll(async () => {
  sim = await startTestSim({ scenario: 'seed-outage', frozen: true });
  const instance = sim.instances.find((i) => i.name === SEED_OUTAGE_INSTANCE)!;
  config = configSchema.parse({
    instances: [{ name: instance.name, url: instance.url, token: instance.token, timeout: 3000 }],
  });
  const argocd = createClients(config, { retry: { retries: 0, baseMs: 10, maxMs: 10 } });
  const api = argocd.get(instance.name)!;
  const [apps, appSets, clusters] = await Promise.all([
    api.listApplications(),
    api.listApplicationSets(),
    api.listClusters(),
  ]);
  // A List leaves out resource health (argocd-facts B6); the mirror fetches it for unhealthy apps. Get every
  // app so both fleets hold what the mirror holds after that.
  whole = await Promise.all(apps.items.map((a) => api.getApplication({ name: a.metadata.name }).then(withBookkeeping)));
  const fleetOf = (applications: Application[]) =>
    StaticFleet.fromObjects([
      { name: instance.name, applications, applicationSets: appSets.items, clusters: clusters.items },
    ]);
  fleets = { whole: fleetOf(whole), lean: fleetOf(whole.map(leanApp)) };
  ctx = (fleet) => ({
    services: { config, fleet, argocd, now: () => sim.controller.clock.now() },
    user: 'U_ONCALL',
    surface: 'terminal',
  });
}, 60_000);
afterAll(async () => {
  await sim?.stop();
});

describe('leanApp', () => {
  it('drops the bookkeeping and the repeated sources, and leaves the object it was given whole', () => {
    const app = whole.find((a) => a.status?.operationState?.syncResult && a.status.sync?.comparedTo)!;
    expect(app).toBeDefined();
    const before = structuredClone(app);
    const lean = leanApp(app);
    expect(app).toEqual(before);
    expect(lean.metadata.managedFields).toBeUndefined();
    expect(lean.metadata.annotations?.[LAST_APPLIED]).toBeUndefined();
    expect(lean.status?.sync).not.toHaveProperty('comparedTo');
    expect(lean.status?.operationState?.syncResult).not.toHaveProperty('source');
    // What readers use stays.
    expect(lean.status?.sync?.revision).toBe(app.status?.sync?.revision);
    expect(lean.status?.operationState?.syncResult?.resources).toEqual(
      app.status?.operationState?.syncResult?.resources,
    );
    expect(lean.status?.history).toEqual(app.status?.history);
    expect(lean.status?.resources).toEqual(app.status?.resources);
    expect(JSON.stringify(lean).length).toBeLessThan(JSON.stringify(app).length * 0.85);
  });

  it('returns an app with nothing to drop as it is', () => {
    const bare: Application = {
      metadata: { name: 'a' },
      spec: { project: 'p', destination: {} } as Application['spec'],
    };
    expect(leanApp(bare)).toBe(bare);
  });
});

describe('a lean fleet answers as a whole one', () => {
  const questions = () => {
    const appSets = fleets.whole.appSets().map((s) => s.appSet.metadata.name);
    const unhealthy = fleets.whole
      .apps()
      .filter((a) => a.app.status?.health?.status !== 'Healthy' || a.app.status?.sync?.status !== 'Synced')
      .map((a) => a.app.metadata.name);
    return [
      'status',
      'status auth-*',
      ...unhealthy.slice(0, 6).map((name) => `app ${name}`),
      ...appSets.flatMap((name) => [`rollout ${name}`, `diagnose ${name}`]),
    ];
  };

  it('status, app, diagnose and rollout give the same replies', async () => {
    const asked = questions();
    expect(asked.filter((q) => q.startsWith('app ')).length).toBeGreaterThan(1);
    expect(asked.filter((q) => q.startsWith('rollout ')).length).toBeGreaterThan(0);
    for (const q of asked) {
      const fromWhole = await dispatch(q, ctx(fleets.whole));
      const fromLean = await dispatch(q, ctx(fleets.lean));
      expect(fromWhole?.ok, `${q}: ${fromWhole?.error?.message}`).toBe(true);
      expect(fromLean, q).toEqual(fromWhole);
    }
  }, 60_000);
});

describe('FleetMirror', () => {
  it('holds listed apps lean', async () => {
    const argocd = createClients(config, { retry: { retries: 0, baseMs: 10, maxMs: 10 } });
    const mirror = new FleetMirror(argocd, [{ name: SEED_OUTAGE_INSTANCE }], { follow: false });
    await mirror.start();
    try {
      const held = mirror.apps();
      expect(held.length).toBe(whole.length);
      expect(held.some((a) => a.app.status?.operationState?.syncResult)).toBe(true);
      for (const a of held) {
        expect(a.app.status?.sync).not.toHaveProperty('comparedTo');
        expect(a.app.status?.operationState?.syncResult ?? {}).not.toHaveProperty('source');
      }
    } finally {
      await mirror.stop();
    }
  });
});
