import type { Application, ApplicationSet, Cluster, ResourceStatus } from '../../infra/argocd/types.js';
import { crashLoopMessage } from '../faults.js';
import type { Fixture } from '../fixture-types.js';
import type { ScenarioBehaviour } from './behaviour.js';
import {
  application,
  applicationSet,
  appSetResources,
  appSetUid,
  cluster,
  clusterGeneratorSpec,
  commit,
  finishedOperation,
  hex,
  serviceResources,
  uid,
  upToDateConditions,
} from './builders.js';

/**
 * The outage rollcall was born from (DESIGN.md problem 1): one commit bumped `auth-service` to
 * v2.15.0 and CI synced all 540 apps on 12 prod clusters at once. v2.15.0 crash-loops because of
 * session flags in `auth-config-v2-session-flags`; the fix commit removed that ConfigMap, so
 * `auth-config-*` are OutOfSync and need a sync *with prune*. Once auth-config on a cluster is
 * synced (and so pruned), auth-service there recovers.
 */

export const SEED_OUTAGE_INSTANCE = 'prod';

export const SEED_OUTAGE_CLUSTERS = [
  'prod-us-east-1',
  'prod-us-east-2',
  'prod-us-west-1',
  'prod-us-west-2',
  'prod-ca-central-1',
  'prod-sa-east-1',
  'prod-eu-west-1',
  'prod-eu-west-2',
  'prod-eu-central-1',
  'prod-eu-north-1',
  'prod-ap-southeast-1',
  'prod-ap-northeast-1',
] as const;

/** 45 services, each generated onto every prod cluster by its own ApplicationSet; value = project. */
export const SEED_OUTAGE_SERVICES: Record<string, string> = {
  'auth-service': 'identity',
  'auth-config': 'identity',
  'user-profile': 'identity',
  sessions: 'identity',
  accounts: 'identity',
  'api-gateway': 'platform',
  'rate-limiter': 'platform',
  'feature-flags': 'platform',
  'config-service': 'platform',
  scheduler: 'platform',
  webhooks: 'platform',
  'status-page': 'platform',
  'admin-console': 'platform',
  'audit-log': 'platform',
  'log-forwarder': 'observability',
  'metrics-exporter': 'observability',
  'tracing-collector': 'observability',
  'analytics-ingest': 'data',
  reporting: 'data',
  'data-export': 'data',
  'batch-runner': 'data',
  payments: 'payments',
  billing: 'payments',
  invoicing: 'payments',
  ledger: 'payments',
  'fraud-detection': 'payments',
  'risk-scoring': 'payments',
  checkout: 'commerce',
  cart: 'commerce',
  catalog: 'commerce',
  search: 'commerce',
  recommendations: 'commerce',
  inventory: 'commerce',
  orders: 'commerce',
  shipping: 'commerce',
  pricing: 'commerce',
  promotions: 'commerce',
  loyalty: 'commerce',
  reviews: 'commerce',
  notifications: 'messaging',
  'email-sender': 'messaging',
  'sms-gateway': 'messaging',
  'media-resizer': 'media',
  'cdn-purger': 'media',
  'customer-support': 'support',
};

/** Services whose appsets target clusters by name (destination.name); the rest use the server URL. */
const BY_NAME = new Set(['api-gateway', 'payments', 'billing', 'search', 'notifications', 'reporting', 'scheduler']);

/** Drift a real fleet always has: someone scaled or edited these by hand. */
const DRIFTED = new Set([
  'feature-flags-prod-us-west-2',
  'search-prod-sa-east-1',
  'reporting-prod-eu-north-1',
  'batch-runner-prod-ap-northeast-1',
]);

const REPO = 'https://git.example.com/platform/deployments.git';
const REGISTRY = 'registry.example.com';
/** The commit CI synced everywhere 45 minutes ago (auth-service v2.15.0). */
const BAD_COMMIT = commit('deployments: auth-service v2.15.0');
/** HEAD now: the fix removing auth-config-v2-session-flags. */
const FIX_COMMIT = commit('deployments: auth-config drop v2 session flags');
const PREVIOUS_COMMIT = commit('deployments: weekly dependency bumps');
const CI = { username: 'ci-deployer' };
/** auth-service's image is pinned in its ApplicationSet template; the bad commit bumped the pin. */
export const AUTH_SERVICE_GOOD = 'v2.14.3';
export const AUTH_SERVICE_BAD = 'v2.15.0';
/**
 * The appset controller rewrote the auth-service apps from the new template and started their syncs
 * (Argo CD's initiator for syncs the ApplicationSet controller starts).
 */
const APPSET_CONTROLLER = { username: 'applicationset-controller', automated: true };
const authServiceImage = (tag: string) => `${REGISTRY}/identity/auth-service:${tag}`;

export function seedOutageFixture(now: Date = new Date()): Fixture {
  const clusters: Cluster[] = SEED_OUTAGE_CLUSTERS.map((name) => {
    const region = name.slice('prod-'.length);
    return cluster({
      name,
      server: `https://${hex(`eks:${name}`, 32).toUpperCase()}.gr7.${region}.eks.amazonaws.com`,
      labels: { env: 'prod', region, provider: 'aws' },
      serverVersion: '1.31',
      now,
    });
  });
  const applications: Application[] = [];
  const applicationSets: ApplicationSet[] = [];
  for (const [service, project] of Object.entries(SEED_OUTAGE_SERVICES)) {
    const useName = BY_NAME.has(service);
    const spec = clusterGeneratorSpec({
      service,
      repoURL: REPO,
      path: `services/${service}/overlays/prod`,
      namespace: namespaceOf(service, project),
      project,
      selector: { env: 'prod' },
      useName,
    });
    const apps = clusters.map((c) => serviceApp(now, service, project, c, useName));
    applications.push(...apps);
    applicationSets.push(
      applicationSet({
        name: service,
        now,
        labels: { team: project },
        spec,
        status: { conditions: upToDateConditions(now), resources: appSetResources(apps), resourcesCount: apps.length },
      }),
    );
  }
  return { instances: [{ name: SEED_OUTAGE_INSTANCE, clusters, applications, applicationSets }] };
}

function namespaceOf(service: string, project: string): string {
  return project === 'identity' ? 'identity' : service;
}

function serviceApp(now: Date, service: string, project: string, c: Cluster, useName: boolean): Application {
  const name = `${service}-${c.name}`;
  const namespace = namespaceOf(service, project);
  const isAuthService = service === 'auth-service';
  const base = { repoURL: REPO, path: `services/${service}/overlays/prod`, targetRevision: 'HEAD' };
  const pinned = (tag: string) => ({ ...base, kustomize: { images: [authServiceImage(tag)] } });
  const source = isAuthService ? pinned(AUTH_SERVICE_BAD) : base;
  const destination = useName ? { name: c.name, namespace } : { server: c.server, namespace };
  const labels = { app: service, service, env: 'prod', cluster: c.name };
  // auth-service: v2.14.3 three days ago, v2.15.0 synced by the appset controller 44 minutes ago.
  const history = isAuthService
    ? [
        { revision: PREVIOUS_COMMIT, minutesAgo: 60 * 24 * 3, initiatedBy: CI, source: pinned(AUTH_SERVICE_GOOD) },
        {
          revision: BAD_COMMIT,
          minutesAgo: 44,
          initiatedBy: APPSET_CONTROLLER,
          durationSeconds: 25,
          source: pinned(AUTH_SERVICE_BAD),
        },
      ]
    : [
        { revision: PREVIOUS_COMMIT, minutesAgo: 60 * 24 * 3, initiatedBy: CI },
        { revision: BAD_COMMIT, minutesAgo: 44, initiatedBy: CI, durationSeconds: 25 },
      ];
  const common = {
    name,
    now,
    project,
    source,
    destination,
    labels,
    appSet: { name: service, uid: appSetUid(service) },
    history,
    revision: FIX_COMMIT,
  };

  if (service === 'auth-service') {
    const podHash = hex(`rs:${name}`, 10);
    const pod = `auth-service-${podHash}-${hex(`pod:${name}`, 5)}`;
    const resources = serviceResources({
      name: 'auth-service',
      namespace,
      health: 'Degraded',
      healthMessage: crashLoopMessage('auth-service', pod, namespace, uid(`pod:${name}`)),
    });
    return application({
      ...common,
      resources,
      sync: 'Synced',
      health: 'Degraded',
      healthSinceMinutes: 41,
      images: [authServiceImage(AUTH_SERVICE_BAD)],
      operationState: finishedOperation({
        now,
        revision: BAD_COMMIT,
        source,
        resources,
        startedMinutesAgo: 44.4,
        durationSeconds: 25,
        initiatedBy: APPSET_CONTROLLER,
      }),
    });
  }
  if (service === 'auth-config') {
    const resources: ResourceStatus[] = [
      { version: 'v1', kind: 'ConfigMap', namespace, name: 'auth-config', status: 'OutOfSync' },
      { version: 'v1', kind: 'Secret', namespace, name: 'auth-config-signing-keys', status: 'Synced' },
      // Removed from git by the fix: only a sync with prune deletes it.
      {
        version: 'v1',
        kind: 'ConfigMap',
        namespace,
        name: 'auth-config-v2-session-flags',
        status: 'OutOfSync',
        requiresPruning: true,
      },
    ];
    return application({
      ...common,
      resources,
      sync: 'OutOfSync',
      health: 'Healthy',
      healthSinceMinutes: 60 * 24 * 3,
      operationState: finishedOperation({
        now,
        revision: BAD_COMMIT,
        source,
        resources: resources.map((r) => ({ ...r, requiresPruning: false })),
        startedMinutesAgo: 44.5,
        initiatedBy: CI,
      }),
    });
  }
  const drifted = DRIFTED.has(name);
  const resources = serviceResources({ name: service, namespace });
  if (drifted) resources.find((r) => r.kind === 'Deployment')!.status = 'OutOfSync';
  return application({
    ...common,
    resources,
    sync: drifted ? 'OutOfSync' : 'Synced',
    health: 'Healthy',
    healthSinceMinutes: 43,
    images: [
      `${REGISTRY}/${project}/${service}:v${1 + (service.length % 4)}.${service.length % 10}.${(service.charCodeAt(0) % 7) + 1}`,
    ],
    operationState: finishedOperation({
      now,
      revision: BAD_COMMIT,
      source,
      resources,
      startedMinutesAgo: 44.5,
      initiatedBy: CI,
    }),
  });
}

export const seedOutageBehaviour: ScenarioBehaviour = {
  onStart(ctx) {
    // v2.15.0 keeps crash-looping wherever it is re-synced until the session flags are pruned.
    for (const c of SEED_OUTAGE_CLUSTERS) ctx.faults.crashLoop(SEED_OUTAGE_INSTANCE, `auth-service-${c}`);
  },
  onSyncSucceeded(ctx, instance, app) {
    if (instance !== SEED_OUTAGE_INSTANCE || app.metadata.labels?.service !== 'auth-config') return;
    // A sync without prune leaves the flags ConfigMap behind (PruneSkipped, app still OutOfSync).
    if (app.status?.resources?.some((r) => r.name === 'auth-config-v2-session-flags')) return;
    const cluster = app.metadata.labels?.cluster;
    const target = `auth-service-${cluster}`;
    if (ctx.store?.apps.has(target)) ctx.faults.clear(instance, target);
  },
};
