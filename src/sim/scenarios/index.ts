import type { Fixture } from '../fixture-types.js';
import { sealedSecretsMigration } from '../kube/scenario.js';
import type { ScenarioBehaviour } from './behaviour.js';
import { canaryRegressionBehaviour, canaryRegressionFixture } from './canary-regression.js';
import { canaryRolloutsFixture } from './canary-rollouts.js';
import { generateFleet } from './fleet.js';
import { progressiveInfraFixture } from './progressive-infra.js';
import { seedOutageBehaviour, seedOutageFixture } from './seed-outage.js';

export type { ScenarioBehaviour, ScenarioContext } from './behaviour.js';
export { generateFleet, type FleetOptions } from './fleet.js';

export interface Scenario {
  fixture: Fixture;
  behaviour?: ScenarioBehaviour;
}

/** Built-in scenarios: a fixture plus behaviour (DESIGN.md "Simulator"). */
export const SCENARIOS: Record<string, { description: string; build(now: Date): Scenario }> = {
  'seed-outage': {
    description:
      '12 prod clusters x 45 services = 540 apps; auth-service v2.15.0 crash-loops until auth-config is synced with prune',
    build: (now) => ({ fixture: seedOutageFixture(now), behaviour: seedOutageBehaviour }),
  },
  'progressive-infra': {
    description:
      '6 clusters, stage -> canary -> prod RollingSync stuck on step 3: three prod apps failed their sync and sit Progressing',
    build: (now) => ({ fixture: progressiveInfraFixture(now) }),
  },
  'sealed-secrets-migration': {
    description:
      'prod-old has three sealed-secrets keys never backed up; prod-new generated its own and every SealedSecret there fails with "no key could decrypt"; ops holds backups',
    build: (now) => ({ fixture: sealedSecretsMigration(now) }),
  },
  'canary-regression': {
    description:
      'checkout and payments on 12 prod clusters (24 apps, labelled tier=canary|low-traffic|high-traffic), both OutOfSync to a new release; synced, checkout v1.9.0 is Healthy in Argo CD but answers ~30% of requests with 500s, payments v3.5.0 stays good',
    build: (now) => ({ fixture: canaryRegressionFixture(now), behaviour: canaryRegressionBehaviour }),
  },
  'canary-rollouts': {
    description:
      'Argo Rollouts: storefront v4.2.0 a canary on 12 prod clusters (9 paused at step 1 of 4 with 20% of traffic, 1 Degraded past its progress deadline, 2 promoted), search v2.8.0 a blue-green on 3 waiting for promotion; resource actions move them',
    build: (now) => ({ fixture: canaryRolloutsFixture(now) }),
  },
  'fleet-10k': {
    description: '10,000 apps on 200 clusters (benchmark)',
    build: (now) => ({ fixture: generateFleet({ apps: 10_000, clusters: 200, now }) }),
  },
};

export class ScenarioError extends Error {
  readonly code = 'unknown_scenario';
  constructor(name: string) {
    super(`unknown scenario "${name}": choose one of ${Object.keys(SCENARIOS).join(', ')}, or pass --fixture FILE`);
    this.name = 'ScenarioError';
  }
}

/** A fresh copy of a built-in scenario, with timestamps relative to `now`. Throws ScenarioError for an unknown name. */
export function loadScenario(name: 'seed-outage' | 'progressive-infra' | string, opts: { now?: Date } = {}): Scenario {
  const scenario = SCENARIOS[name];
  if (!scenario) throw new ScenarioError(name);
  return scenario.build(opts.now ?? new Date());
}
