import { describe, expect, it } from 'vitest';
import type { Application } from '../../src/infra/argocd/types.js';
import { parseCommand } from '../../src/commands/parse.js';
import { runStatus } from '../../src/commands/status.js';
import { shortReasonsKept } from '../../src/fleet/groups.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { ago, app, ctx, services } from '../commands/fixtures.js';

const APPS = 6000;
const DEGRADED = 200;

/** An app Degraded for a reason of its own (its namespace's quota), or Healthy. */
function state(i: number, degraded: boolean): Application {
  return app({
    name: `svc-${i}`,
    server: `https://c${i % 20}.example.com`,
    status: {
      sync: { status: 'Synced', revision: 'a'.repeat(40) },
      health: { status: degraded ? 'Degraded' : 'Healthy', lastTransitionTime: ago(60) },
      resources: [
        {
          group: 'apps',
          version: 'v1',
          kind: 'Deployment',
          name: `svc-${i}`,
          namespace: `svc-${i}`,
          status: 'Synced',
          health: degraded
            ? { status: 'Degraded', message: `exceeded quota: compute-resources in namespace svc-${i}` }
            : { status: 'Healthy' },
        },
      ],
    },
  });
}

describe('the reasons status shortens', () => {
  it('are kept for the answers that show them, not for every app that was ever a problem', async () => {
    const fleet = StaticFleet.fromObjects([
      { name: 'east', applications: Array.from({ length: APPS }, (_, i) => state(i, false)) },
    ]);
    const answer = async () => (await runStatus(parseCommand('status'), ctx(services(fleet)))).data;
    // Thirty rounds of churn: each round a new set of apps goes Degraded, each with a reason of its own, and the last
    // round's apps are fine again, as a fleet under steady churn moves.
    let degraded: number[] = [];
    for (let round = 0; round < APPS / DEGRADED; round++) {
      const next = Array.from({ length: DEGRADED }, (_, k) => round * DEGRADED + k);
      for (const i of degraded) fleet.upsertApp({ ...fleet.appsNamed(`svc-${i}`)[0], app: state(i, false) });
      for (const i of next) fleet.upsertApp({ ...fleet.appsNamed(`svc-${i}`)[0], app: state(i, true) });
      degraded = next;
      const data = await answer();
      expect(data.total.health.Degraded).toBe(DEGRADED);
      expect(data.groups.map((g) => g.reason)).toContain(
        `exceeded quota: compute-resources in namespace svc-${next[0]} (Deployment/svc-${next[0]})`,
      );
    }
    // The last two rounds' reasons at most; 6,000 (every reason ever shown) when they were forgotten at a size limit.
    expect(shortReasonsKept()).toBeLessThanOrEqual(2 * DEGRADED);
  });
});
