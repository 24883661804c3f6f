import type { Application, ApplicationSet, ApplicationSource, Cluster } from '../../infra/argocd/types.js';
import { resolveRevision } from '../app-model.js';
import type { Fixture } from '../fixture-types.js';
import { runningRevision } from '../traffic.js';
import type { ScenarioBehaviour } from './behaviour.js';
import {
  application,
  applicationSet,
  appSetResources,
  appSetUid,
  cluster,
  clusterGeneratorSpec,
  finishedOperation,
  hex,
  serviceResources,
  upToDateConditions,
} from './builders.js';
import { SEED_OUTAGE_CLUSTERS } from './seed-outage.js';

/**
 * A release Argo CD calls good and users do not (DESIGN.md problem 5): `checkout` and `payments` run on 12 prod
 * clusters and both ApplicationSet templates were bumped to a new tag, so all 24 apps are OutOfSync and Healthy.
 * Nothing in Argo CD tells the two releases apart: synced, checkout v1.9.0 reports Healthy like payments v3.5.0,
 * but fails about 30% of its requests (500s) and slows down. Only its metrics show it, so a rollout has to be
 * verified against them. Apps carry the cluster's `tier` (1 canary, 5 low-traffic, 6 high-traffic clusters), so
 * label waves such as `tier=canary;tier=low-traffic@50%` select something.
 */

export const CANARY_REGRESSION_INSTANCE = 'prod';

export type Tier = 'canary' | 'low-traffic' | 'high-traffic';

/** Where each prod cluster sits in a rollout: one canary, then the clusters with little traffic, then the rest. */
export const CANARY_REGRESSION_TIERS: Record<(typeof SEED_OUTAGE_CLUSTERS)[number], Tier> = {
  'prod-ca-central-1': 'canary',
  'prod-sa-east-1': 'low-traffic',
  'prod-eu-north-1': 'low-traffic',
  'prod-us-west-1': 'low-traffic',
  'prod-eu-west-2': 'low-traffic',
  'prod-ap-northeast-1': 'low-traffic',
  'prod-us-east-1': 'high-traffic',
  'prod-us-east-2': 'high-traffic',
  'prod-us-west-2': 'high-traffic',
  'prod-eu-west-1': 'high-traffic',
  'prod-eu-central-1': 'high-traffic',
  'prod-ap-southeast-1': 'high-traffic',
};

const REQUESTS_PER_SECOND: Record<Tier, number> = { canary: 5, 'low-traffic': 10, 'high-traffic': 40 };

interface Release {
  /** Project and team. */
  team: string;
  namespace: string;
  repoURL: string;
  /** Deployed 20 days ago, then 6 days ago (running now), and the new tag the template points at. */
  tags: [older: string, running: string, next: string];
  /** Target clusters by name (destination.name) rather than by server URL. */
  byName: boolean;
}

export const CANARY_REGRESSION_SERVICES: Record<'checkout' | 'payments', Release> = {
  checkout: {
    team: 'commerce',
    namespace: 'checkout',
    repoURL: 'https://git.example.com/commerce/checkout-deploy.git',
    tags: ['v1.7.4', 'v1.8.0', 'v1.9.0'],
    byName: false,
  },
  payments: {
    team: 'payments',
    namespace: 'payments',
    repoURL: 'https://git.example.com/payments/payments-deploy.git',
    tags: ['v3.4.1', 'v3.4.2', 'v3.5.0'],
    byName: true,
  },
};

/** The commit a release tag resolves to, as the repo server resolves it for a sync to that tag. */
export function releaseCommit(service: keyof typeof CANARY_REGRESSION_SERVICES, tag: string): string {
  return resolveRevision(CANARY_REGRESSION_SERVICES[service].repoURL, tag);
}

/** checkout's new release: Healthy in Argo CD, 30% of requests answered 500 and slower, once it runs. */
export const CHECKOUT_REGRESSION = { errorRatio: 0.3, latency: { p50: 0.12, p99: 0.9 } };

const REGISTRY = 'registry.example.com';
const imageOf = (service: string, team: string, tag: string) => `${REGISTRY}/${team}/${service}:${tag}`;
const DEPLOYER = { username: 'release-bot' };

export function canaryRegressionFixture(now: Date = new Date()): Fixture {
  const clusters: Cluster[] = SEED_OUTAGE_CLUSTERS.map((name) => {
    const region = name.slice('prod-'.length);
    return cluster({
      name,
      server: `https://${hex(`eks:${name}`, 32).toUpperCase()}.gr7.${region}.eks.amazonaws.com`,
      labels: { env: 'prod', region, provider: 'aws', tier: CANARY_REGRESSION_TIERS[name] },
      serverVersion: '1.31',
      now,
    });
  });
  const applications: Application[] = [];
  const applicationSets: ApplicationSet[] = [];
  for (const [service, release] of Object.entries(CANARY_REGRESSION_SERVICES)) {
    const apps = clusters.map((c) => releaseApp(now, service, release, c));
    applications.push(...apps);
    applicationSets.push(releaseAppSet(now, service, release, apps));
  }
  return { instances: [{ name: CANARY_REGRESSION_INSTANCE, clusters, applications, applicationSets }] };
}

const sourceAt = (release: Release, tag: string): ApplicationSource => ({
  repoURL: release.repoURL,
  path: 'overlays/prod',
  targetRevision: tag,
});

function releaseApp(now: Date, service: string, release: Release, c: Cluster): Application {
  const [older, running, next] = release.tags;
  const resources = serviceResources({ name: service, namespace: release.namespace });
  // The new tag changes the Deployment's image; config and Service are the same in both releases.
  resources.find((r) => r.kind === 'Deployment')!.status = 'OutOfSync';
  const runningSource = sourceAt(release, running);
  return application({
    name: `${service}-${c.name}`,
    now,
    project: release.team,
    source: sourceAt(release, next),
    destination: release.byName
      ? { name: c.name, namespace: release.namespace }
      : { server: c.server, namespace: release.namespace },
    labels: {
      app: service,
      service,
      env: 'prod',
      cluster: c.name,
      team: release.team,
      tier: c.labels!.tier,
    },
    appSet: { name: service, uid: appSetUid(service) },
    resources,
    sync: 'OutOfSync',
    revision: resolveRevision(release.repoURL, next),
    health: 'Healthy',
    healthSinceMinutes: 60 * 24 * 6 - 2,
    history: [
      {
        revision: resolveRevision(release.repoURL, older),
        minutesAgo: 60 * 24 * 20,
        initiatedBy: DEPLOYER,
        source: sourceAt(release, older),
      },
      {
        revision: resolveRevision(release.repoURL, running),
        minutesAgo: 60 * 24 * 6,
        initiatedBy: DEPLOYER,
        source: runningSource,
      },
    ],
    operationState: finishedOperation({
      now,
      revision: resolveRevision(release.repoURL, running),
      source: runningSource,
      resources: serviceResources({ name: service, namespace: release.namespace }),
      startedMinutesAgo: 60 * 24 * 6 + 0.4,
      initiatedBy: DEPLOYER,
    }),
    images: [imageOf(service, release.team, running)],
  });
}

function releaseAppSet(now: Date, service: string, release: Release, apps: Application[]): ApplicationSet {
  const spec = clusterGeneratorSpec({
    service,
    repoURL: release.repoURL,
    path: 'overlays/prod',
    namespace: release.namespace,
    project: release.team,
    selector: { env: 'prod' },
    useName: release.byName,
    labels: { team: release.team, tier: '{{index .metadata.labels "tier"}}' },
  });
  // The commit that started this: the template's tag moved to the new release.
  spec.template.spec.source = { ...spec.template.spec.source!, targetRevision: release.tags[2] };
  return applicationSet({
    name: service,
    now,
    labels: { team: release.team },
    spec,
    status: { conditions: upToDateConditions(now), resources: appSetResources(apps), resourcesCount: apps.length },
  });
}

const CHECKOUT_BAD_COMMIT = releaseCommit('checkout', CANARY_REGRESSION_SERVICES.checkout.tags[2]);

function releaseOf(app: Application): { service: string; release: Release } | undefined {
  const service = app.metadata.labels?.service;
  if (!service || !Object.hasOwn(CANARY_REGRESSION_SERVICES, service)) return undefined;
  return { service, release: CANARY_REGRESSION_SERVICES[service as keyof typeof CANARY_REGRESSION_SERVICES] };
}

export const canaryRegressionBehaviour: ScenarioBehaviour = {
  traffic(instance, app, running) {
    if (instance !== CANARY_REGRESSION_INSTANCE) return undefined;
    const tier = app.metadata.labels?.tier;
    const rate =
      tier && Object.hasOwn(REQUESTS_PER_SECOND, tier) ? { requestsPerSecond: REQUESTS_PER_SECOND[tier as Tier] } : {};
    if (releaseOf(app)?.service === 'checkout' && running?.revision === CHECKOUT_BAD_COMMIT)
      return { ...rate, ...CHECKOUT_REGRESSION };
    return rate;
  },
  onSyncSucceeded(ctx, instance, app) {
    // Argo CD reads the running images from the live workload: after a sync they are the synced release's.
    const found = releaseOf(app);
    const tag = runningRevision(app)?.source?.targetRevision;
    if (instance !== CANARY_REGRESSION_INSTANCE || !found || !tag || !ctx.store) return;
    const image = imageOf(found.service, found.release.team, tag);
    if (app.status?.summary?.images?.[0] === image) return;
    const next = structuredClone(app);
    next.status = { ...next.status, summary: { ...next.status?.summary, images: [image] } };
    ctx.store.putApp(next);
  },
};
