import { describe, expect, it } from 'vitest';
import type { Application } from '../../src/infra/argocd/types.js';
import type { FleetApp } from '../../src/fleet/model.js';
import { planBulkSync } from '../../src/domain/runbooks/actions/bulk-sync/planner.js';

/** A fleet app: `state` is its sync and health, e.g. 'Synced/Healthy'; `revision` the one it last synced. */
function fleetApp(name: string, cluster: string, state = 'OutOfSync/Healthy', revision = 'abc123'): FleetApp {
  const [sync, health] = state.split('/');
  const app = {
    metadata: { name, namespace: 'argocd' },
    spec: {
      project: 'default',
      source: { repoURL: 'https://git.example/x', path: name, targetRevision: 'main' },
      destination: { name: cluster, namespace: name },
    },
    status: { sync: { status: sync, revision }, health: { status: health } },
  } as Application;
  return { instance: 'prod', cluster, app };
}

const params: Parameters<typeof planBulkSync>[1] = {
  includeSynced: false,
  revision: undefined,
  waves: undefined,
  canary: 0,
  concurrency: 10,
};

describe('bulk-sync wave planner', () => {
  const fleet = [
    fleetApp('web-us-1', 'us1'),
    fleetApp('web-eu-1', 'eu1'),
    fleetApp('web-eu-2', 'eu2', 'Synced/Healthy'),
    fleetApp('api-us-1', 'us1', 'Synced/Degraded'),
    fleetApp('api-eu-1', 'eu1'),
  ];
  // [what the params say, waves as "name: apps @maxUpdate", skipped]
  const table: [string, Partial<typeof params>, string[], string[]][] = [
    [
      'one wave of everything not yet there, sorted by name',
      {},
      ['all: api-eu-1,api-us-1,web-eu-1,web-us-1 @10'],
      ['web-eu-2'],
    ],
    [
      'includeSynced takes the Synced and Healthy app too',
      { includeSynced: true },
      ['all: api-eu-1,api-us-1,web-eu-1,web-eu-2,web-us-1 @10'],
      [],
    ],
    [
      'a revision the app is not at means it is not there yet',
      { revision: 'def456' },
      ['all: api-eu-1,api-us-1,web-eu-1,web-eu-2,web-us-1 @10'],
      [],
    ],
    [
      'the declared target revision counts as there',
      { revision: 'main' },
      ['all: api-eu-1,api-us-1,web-eu-1,web-us-1 @10'],
      ['web-eu-2'],
    ],
    [
      'waves in order, first match wins, the rest last',
      { waves: '*-eu-*;web-*' },
      ['*-eu-*: api-eu-1,web-eu-1 @10', 'web-*: web-us-1 @10', '(the rest): api-us-1 @10'],
      ['web-eu-2'],
    ],
    [
      'a wave matching nothing is left out',
      { waves: 'db-*;web-*' },
      ['web-*: web-eu-1,web-us-1 @10', '(the rest): api-eu-1,api-us-1 @10'],
      ['web-eu-2'],
    ],
    [
      'a canary goes first, out of the first wave',
      { canary: 1, concurrency: 3 },
      ['canary (1): api-eu-1 @3', 'all: api-us-1,web-eu-1,web-us-1 @3'],
      ['web-eu-2'],
    ],
    [
      'no canary wave when the first wave is no larger than the canary',
      { waves: 'api-eu-*', canary: 1 },
      ['api-eu-*: api-eu-1 @10', '(the rest): api-us-1,web-eu-1,web-us-1 @10'],
      ['web-eu-2'],
    ],
  ];
  for (const [what, overrides, waves, skipped] of table) {
    it(what, () => {
      const plan = planBulkSync(fleet, { ...params, ...overrides });
      expect(plan.waves.map((w) => `${w.name}: ${w.apps.map((a) => a.app).join(',')} @${w.maxUpdate}`)).toEqual(waves);
      expect(plan.skipped.map((s) => s.app)).toEqual(skipped);
      expect(plan.toSync.map((f) => f.app.metadata.name).sort()).toEqual(
        plan.waves.flatMap((w) => w.apps.map((a) => a.app)).sort(),
      );
    });
  }

  it('lists the clusters it touches and what will not do as asked', () => {
    const plan = planBulkSync(fleet, { ...params, waves: 'db-*', canary: 9 });
    expect(plan.clusters).toEqual(['eu1', 'us1']);
    expect(plan.warnings).toEqual([
      'wave `db-*` matches none of the 4 apps to sync: it is left out',
      'canary=9 but only 4 app(s) to sync: there is no canary wave, everything goes at once',
    ]);
  });

  it('plans nothing to sync when every app is already there', () => {
    const plan = planBulkSync([fleetApp('web-eu-2', 'eu2', 'Synced/Healthy')], params);
    expect(plan.waves).toEqual([{ name: 'all', apps: [], maxUpdate: 10 }]);
    expect(plan.skipped).toEqual([
      { instance: 'prod', app: 'web-eu-2', cluster: 'eu2', reason: 'already Synced and Healthy' },
    ]);
  });
});
