/**
 * The mirror holds Applications lean (src/fleet/lean.ts): what it drops must change no answer. The seed-outage
 * fleet as Argo CD's API sends it, given the bookkeeping a real cluster adds (managedFields, kubectl's
 * last-applied annotation), answers status, app, rollout and diagnose the same whole and lean.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClients } from '../../src/infra/argocd/client.js';
import type { Application, ResourceResult } from '../../src/infra/argocd/types.js';
import { dispatch } from '../../src/commands/index.js';
import type { CommandContext } from '../../src/commands/registry.js';
import { configSchema } from '../../src/infra/config/schema.js';
import { leanApp, sharedStringCount } from '../../src/fleet/lean.js';
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
    // Of the sync's results, only what went wrong (or was pruned, or skipped) stays.
    const results = app.status?.operationState?.syncResult?.resources ?? [];
    const notPlain = results.filter(
      (r) => r.status !== 'Synced' || r.hookPhase === 'Failed' || r.hookPhase === 'Error',
    );
    expect(results.length).toBeGreaterThan(notPlain.length);
    expect(lean.status?.operationState?.syncResult?.resources).toEqual(notPlain);
    expect(lean.status?.history).toEqual(app.status?.history);
    expect(lean.status?.resources).toEqual(app.status?.resources);
    expect(JSON.stringify(lean).length).toBeLessThan(JSON.stringify(app).length * 0.85);
  });

  it("keeps a failed sync's failures, pruned resources and failed hooks, in order", () => {
    const result = (status: ResourceResult['status'], name: string, hookPhase?: string): ResourceResult => ({
      group: 'apps',
      version: 'v1',
      kind: 'Deployment',
      namespace: 'auth',
      name,
      status,
      message: `${name}: ${status}`,
      ...(hookPhase ? { hookPhase, hookType: 'PreSync' } : {}),
    });
    const resources = [
      result('Synced', 'api'),
      result('SyncFailed', 'worker'),
      result('Synced', 'migrate', 'Failed'),
      result('Pruned', 'old'),
      result('Synced', 'web', 'Succeeded'),
      result('PruneSkipped', 'keep'),
    ];
    const app: Application = {
      metadata: { name: 'auth-service-prod' },
      spec: { project: 'p', destination: {} } as Application['spec'],
      status: {
        operationState: {
          operation: { sync: { revision: 'abc' } },
          phase: 'Failed',
          message: 'one or more objects failed to apply',
          startedAt: '2026-01-01T00:00:00Z',
          syncResult: { revision: 'abc', resources },
        },
      },
    };
    const kept = leanApp(app).status?.operationState?.syncResult?.resources?.map((r) => r.name);
    expect(kept).toEqual(['worker', 'migrate', 'old', 'keep']);
    expect(app.status?.operationState?.syncResult?.resources).toHaveLength(6);
  });

  it('shares the strings that repeat across apps: one copy of a revision for the whole fleet', () => {
    const revision = (n: number) => `${'c4a964efe1d4a77c978bcbaa38b3e9cbed89eb9'}${n}`;
    // Each app's copy is its own string, as JSON.parse makes them.
    const appWith = (name: string) =>
      JSON.parse(
        JSON.stringify({
          metadata: { name },
          spec: { project: 'p', source: { repoURL: 'https://git.example.com/deployments.git' }, destination: {} },
          status: {
            sync: { status: 'Synced', revision: revision(7) },
            history: [{ id: 1, revision: revision(7), deployedAt: 'x' }],
          },
        }),
      ) as Application;
    const a = leanApp(appWith('a'));
    const afterFirst = sharedStringCount();
    const b = leanApp(appWith('b'));
    // The second app brings no string the pool does not hold already.
    expect(sharedStringCount()).toBe(afterFirst);
    expect(a.status?.sync?.revision).toBe(revision(7));
    expect(b.status?.history?.[0].revision).toBe(revision(7));
    // Absent fields stay absent.
    expect(a.spec.source).not.toHaveProperty('path');
    expect(Object.keys(a.status!.history![0])).toEqual(['id', 'revision', 'deployedAt']);
  });

  it("holds one object for a history's repeated sources and initiators, and keeps the ones that differ", () => {
    const source = (path: string, extra: object = {}) => ({ repoURL: 'https://git.example.com/d.git', path, ...extra });
    const entry = (id: number, src: object, username = 'ci') => ({
      id,
      revision: `rev-${id}`,
      deployedAt: `2026-01-0${id}T00:00:00Z`,
      source: src,
      initiatedBy: { username, automated: true },
    });
    const app = JSON.parse(
      JSON.stringify({
        metadata: { name: 'checkout' },
        spec: { project: 'p', source: source('apps/checkout'), destination: {} },
        status: {
          history: [
            entry(1, source('apps/checkout')),
            entry(2, source('apps/checkout')),
            entry(3, source('apps/checkout-v2')),
            entry(4, source('apps/checkout-v2', { helm: { parameters: [{ name: 'a', value: '1' }] } })),
            entry(5, source('apps/checkout-v2', { helm: { parameters: [{ name: 'a', value: '1' }] } }), 'admin'),
          ],
        },
      }),
    ) as Application;
    const before = structuredClone(app);
    const h = leanApp(app).status!.history!;
    expect(h[0].source).toBe(app.spec.source);
    expect(h[1].source).toBe(h[0].source);
    expect(h[2].source).not.toBe(h[1].source);
    expect(h[2].source?.path).toBe('apps/checkout-v2');
    // A source with parameters is never merged with another: its parameters would have to be compared too.
    expect(h[4].source).not.toBe(h[3].source);
    expect(h[1].initiatedBy).toBe(h[0].initiatedBy);
    expect(h[4].initiatedBy).not.toBe(h[3].initiatedBy);
    expect(h[4].initiatedBy?.username).toBe('admin');
    expect(leanApp(app)).toEqual(before);
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
