import type {
  Application,
  ApplicationSet,
  Cluster,
  HealthStatusCode,
  ResourceStatus,
  RolloutCondition,
  RolloutStatus,
} from '../../infra/argocd/types.js';
import type { Fixture, FixtureKube } from '../fixture-types.js';
import { SIM_ANNOTATIONS } from '../annotations.js';
import { POD_HASH_LABEL, REVISION_ANNOTATION } from '../live-objects.js';
import { podTemplateHash } from '../rollouts/controller.js';
import { rolloutHealth } from '../rollouts/health.js';
import {
  application,
  applicationSet,
  appSetResources,
  appSetUid,
  at,
  cluster,
  clusterGeneratorSpec,
  commit,
  finishedOperation,
  hex,
  uid,
  upToDateConditions,
} from './builders.js';
import { SEED_OUTAGE_CLUSTERS } from './seed-outage.js';

/**
 * Canaries on Argo Rollouts in the middle of an incident (DESIGN.md problem 6). `storefront` v4.2.0 is a canary
 * Rollout on 12 prod clusters (steps: setWeight 20, pause until resumed, setWeight 50, pause 10m): 9 sit paused
 * at step 1 of 4 with 20% of traffic, on prod-eu-west-1 the canary pods crash-loop so the Rollout passed its
 * progress deadline at step 0 (Degraded, no traffic on the canary), and prod-ca-central-1 and prod-sa-east-1 were
 * promoted fully. `search` v2.8.0 is a blue-green Rollout on 3 clusters whose preview is up and waits for
 * promotion (autoPromotionEnabled: false). The Rollouts live on the simulated clusters (fixture `kube`), where
 * the simulator's Argo Rollouts controller moves them on; Argo CD's resource actions act on them.
 */

export const CANARY_ROLLOUTS_INSTANCE = 'prod';

type Obj = Record<string, any>;
type StorefrontState = 'paused' | 'degraded' | 'promoted';

export const STOREFRONT = {
  namespace: 'storefront',
  project: 'commerce',
  repoURL: 'https://git.example.com/commerce/storefront-deploy.git',
  stable: { tag: 'v4.1.3', revision: 6 },
  canary: { tag: 'v4.2.0', revision: 7 },
  replicas: 10,
  steps: [{ setWeight: 20 }, { pause: {} }, { setWeight: 50 }, { pause: { duration: '10m' } }],
  degraded: 'prod-eu-west-1',
  promoted: ['prod-ca-central-1', 'prod-sa-east-1'],
} as const;

export const SEARCH = {
  namespace: 'search',
  project: 'search',
  repoURL: 'https://git.example.com/search/search-deploy.git',
  stable: { tag: 'v2.7.1', revision: 11 },
  preview: { tag: 'v2.8.0', revision: 12 },
  replicas: 4,
  clusters: ['prod-us-east-1', 'prod-eu-central-1', 'prod-ap-southeast-1'],
} as const;

/** Minutes before the scenario's present: the release synced, the canaries reached their pause, the deadline. */
const SYNCED_MIN = 41;
const PAUSED_MIN = 38;
const CRASHING_SINCE_MIN = 39;
const DEADLINE_MIN = CRASHING_SINCE_MIN - 10;
const SEARCH_SYNCED_MIN = 24;
const SEARCH_PAUSED_MIN = 22;

const REGISTRY = 'registry.example.com';

function template(service: string, team: string, tag: string): Obj {
  return {
    metadata: { labels: { app: service } },
    spec: {
      containers: [{ name: service, image: `${REGISTRY}/${team}/${service}:${tag}`, ports: [{ containerPort: 8080 }] }],
    },
  };
}

function condition(
  type: string,
  status: string,
  reason: string,
  message: string,
  now: Date,
  minutes: number,
  updatedMinutes = minutes,
): RolloutCondition {
  return {
    type,
    status,
    reason,
    message,
    lastUpdateTime: at(now, updatedMinutes),
    lastTransitionTime: at(now, minutes),
  };
}

function replicaSet(o: {
  rollout: Obj;
  template: Obj;
  revision: number;
  replicas: number;
  available: number;
  createdMinutesAgo: number;
  crashLoop?: boolean;
  now: Date;
}): Obj {
  const hash = podTemplateHash(o.template);
  const name = o.rollout.metadata.name as string;
  return {
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: {
      name: `${name}-${hash}`,
      namespace: o.rollout.metadata.namespace,
      uid: uid(`rs:${o.rollout.metadata.uid}:${hash}`),
      generation: 1,
      creationTimestamp: at(o.now, o.createdMinutesAgo),
      labels: { app: name, [POD_HASH_LABEL]: hash },
      annotations: {
        [REVISION_ANNOTATION]: String(o.revision),
        ...(o.crashLoop ? { [SIM_ANNOTATIONS.crashLoop]: 'true' } : {}),
      },
      ownerReferences: [
        {
          apiVersion: 'argoproj.io/v1alpha1',
          kind: 'Rollout',
          name,
          uid: o.rollout.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      replicas: o.replicas,
      selector: { matchLabels: { app: name, [POD_HASH_LABEL]: hash } },
      template: { ...o.template, metadata: { labels: { ...o.template.metadata.labels, [POD_HASH_LABEL]: hash } } },
    },
    status: {
      replicas: o.replicas,
      fullyLabeledReplicas: o.replicas,
      readyReplicas: o.available,
      availableReplicas: o.available,
      observedGeneration: 1,
    },
  };
}

function rolloutBase(o: {
  name: string;
  cluster: string;
  namespace: string;
  createdMinutesAgo: number;
  now: Date;
}): Obj {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Rollout',
    metadata: {
      name: o.name,
      namespace: o.namespace,
      uid: uid(`rollout:${o.cluster}:${o.namespace}/${o.name}`),
      generation: 4,
      creationTimestamp: at(o.now, o.createdMinutesAgo),
      labels: { 'app.kubernetes.io/instance': `${o.name}-${o.cluster}` },
    },
  };
}

/** The storefront Rollout on one cluster, its two ReplicaSets, and the status Argo Rollouts left in `state`. */
function storefrontObjects(clusterName: string, state: StorefrontState, offset: number, now: Date): Obj[] {
  const s = STOREFRONT;
  const ro = rolloutBase({
    name: 'storefront',
    cluster: clusterName,
    namespace: s.namespace,
    createdMinutesAgo: 60 * 24 * 200,
    now,
  });
  const next = template('storefront', 'commerce', s.canary.tag);
  const prev = template('storefront', 'commerce', s.stable.tag);
  const [newHash, oldHash] = [podTemplateHash(next), podTemplateHash(prev)];
  ro.metadata.annotations = { [REVISION_ANNOTATION]: String(s.canary.revision) };
  ro.spec = {
    replicas: s.replicas,
    selector: { matchLabels: { app: 'storefront' } },
    template: next,
    strategy: {
      canary: {
        canaryService: 'storefront-canary',
        stableService: 'storefront-stable',
        trafficRouting: { nginx: { stableIngress: 'storefront' } },
        steps: structuredClone(s.steps),
      },
    },
  };
  const canaryReplicas = state === 'promoted' ? s.replicas : 2;
  const canaryAvailable = state === 'degraded' ? 0 : canaryReplicas;
  const stableReplicas = state === 'promoted' ? 0 : s.replicas;
  const sets = [
    replicaSet({
      rollout: ro,
      template: prev,
      revision: s.stable.revision,
      replicas: stableReplicas,
      available: stableReplicas,
      createdMinutesAgo: 60 * 24 * 9,
      now,
    }),
    replicaSet({
      rollout: ro,
      template: next,
      revision: s.canary.revision,
      replicas: canaryReplicas,
      available: canaryAvailable,
      createdMinutesAgo: SYNCED_MIN - offset,
      crashLoop: state === 'degraded',
      now,
    }),
  ];
  const replicas = canaryReplicas + stableReplicas;
  const available = canaryAvailable + stableReplicas;
  const rsName = `storefront-${newHash}`;
  const weights = (canary: number, stableHash: string) => ({
    canary: { weight: canary, serviceName: 'storefront-canary', podTemplateHash: newHash },
    stable: { weight: 100 - canary, serviceName: 'storefront-stable', podTemplateHash: stableHash },
  });
  const base = {
    currentPodHash: newHash,
    replicas,
    updatedReplicas: canaryReplicas,
    readyReplicas: available,
    availableReplicas: available,
    HPAReplicas: replicas,
    observedGeneration: '4',
    blueGreen: {},
    selector: 'app=storefront',
  };
  const available10 = condition(
    'Available',
    'True',
    'AvailableReason',
    'Rollout has minimum availability',
    now,
    60 * 24 * 9,
  );
  let status: RolloutStatus;
  if (state === 'paused') {
    const pausedAt = PAUSED_MIN - offset;
    status = {
      pauseConditions: [{ reason: 'CanaryPauseStep', startTime: at(now, pausedAt) }],
      controllerPause: true,
      ...base,
      currentStepIndex: 1,
      conditions: [
        available10,
        condition('Completed', 'False', 'RolloutCompleted', 'RolloutCompleted', now, SYNCED_MIN - offset),
        condition('Progressing', 'Unknown', 'RolloutPaused', 'Rollout is paused', now, pausedAt),
        condition('Paused', 'True', 'RolloutPaused', 'Rollout is paused', now, pausedAt),
      ],
      canary: { weights: weights(20, oldHash) },
      stableRS: oldHash,
      phase: 'Paused',
      message: 'CanaryPauseStep',
    };
  } else if (state === 'degraded') {
    const message = `ReplicaSet "${rsName}" has timed out progressing.`;
    status = {
      ...base,
      currentStepIndex: 0,
      conditions: [
        available10,
        condition('Completed', 'False', 'RolloutCompleted', 'RolloutCompleted', now, SYNCED_MIN),
        condition('Progressing', 'False', 'ProgressDeadlineExceeded', message, now, DEADLINE_MIN, DEADLINE_MIN),
      ],
      canary: { weights: weights(0, oldHash) },
      stableRS: oldHash,
      phase: 'Degraded',
      message: `ProgressDeadlineExceeded: ${message}`,
    };
  } else {
    status = {
      ...base,
      currentStepIndex: s.steps.length,
      conditions: [
        condition('Available', 'True', 'AvailableReason', 'Rollout has minimum availability', now, 60 * 24 * 9),
        condition('Completed', 'True', 'RolloutCompleted', 'RolloutCompleted', now, 12 + offset),
        condition(
          'Progressing',
          'True',
          'NewReplicaSetAvailable',
          `ReplicaSet "${rsName}" has successfully progressed.`,
          now,
          12 + offset,
        ),
      ],
      canary: { weights: weights(0, newHash) },
      stableRS: newHash,
      phase: 'Healthy',
    };
  }
  ro.status = status;
  return [ro, ...sets];
}

/** The search Rollout on one cluster: the v2.8.0 preview up beside the active v2.7.1, paused for promotion. */
function searchObjects(clusterName: string, offset: number, now: Date): Obj[] {
  const s = SEARCH;
  const ro = rolloutBase({
    name: 'search',
    cluster: clusterName,
    namespace: s.namespace,
    createdMinutesAgo: 60 * 24 * 300,
    now,
  });
  const next = template('search', 'search', s.preview.tag);
  const prev = template('search', 'search', s.stable.tag);
  const [newHash, oldHash] = [podTemplateHash(next), podTemplateHash(prev)];
  ro.metadata.annotations = { [REVISION_ANNOTATION]: String(s.preview.revision) };
  ro.spec = {
    replicas: s.replicas,
    selector: { matchLabels: { app: 'search' } },
    template: next,
    strategy: {
      blueGreen: { activeService: 'search-active', previewService: 'search-preview', autoPromotionEnabled: false },
    },
  };
  const pausedAt = SEARCH_PAUSED_MIN - offset;
  ro.status = {
    pauseConditions: [{ reason: 'BlueGreenPause', startTime: at(now, pausedAt) }],
    controllerPause: true,
    currentPodHash: newHash,
    replicas: 2 * s.replicas,
    updatedReplicas: s.replicas,
    readyReplicas: 2 * s.replicas,
    availableReplicas: 2 * s.replicas,
    HPAReplicas: 2 * s.replicas,
    observedGeneration: '4',
    conditions: [
      condition('Available', 'True', 'AvailableReason', 'Rollout has minimum availability', now, 60 * 24 * 30),
      condition('Completed', 'False', 'RolloutCompleted', 'RolloutCompleted', now, SEARCH_SYNCED_MIN - offset),
      condition('Progressing', 'Unknown', 'RolloutPaused', 'Rollout is paused', now, pausedAt),
      condition('Paused', 'True', 'RolloutPaused', 'Rollout is paused', now, pausedAt),
    ],
    canary: {},
    blueGreen: { activeSelector: oldHash, previewSelector: newHash },
    selector: 'app=search',
    stableRS: oldHash,
    phase: 'Paused',
    message: 'BlueGreenPause',
  } satisfies RolloutStatus;
  return [
    ro,
    replicaSet({
      rollout: ro,
      template: prev,
      revision: s.stable.revision,
      replicas: s.replicas,
      available: s.replicas,
      createdMinutesAgo: 60 * 24 * 12,
      now,
    }),
    replicaSet({
      rollout: ro,
      template: next,
      revision: s.preview.revision,
      replicas: s.replicas,
      available: s.replicas,
      createdMinutesAgo: SEARCH_SYNCED_MIN - offset,
      now,
    }),
  ];
}

const HEALTH_ORDER: readonly HealthStatusCode[] = [
  'Healthy',
  'Suspended',
  'Progressing',
  'Missing',
  'Degraded',
  'Unknown',
];

/** An app whose resources include `rollout`, with Argo CD's view of it: health by health.lua, pod images. */
function rolloutApp(o: {
  service: 'storefront' | 'search';
  cluster: Cluster;
  objects: Obj[];
  resources: ResourceStatus[];
  release: { tag: string; minutesAgo: number };
  previous: { tag: string; minutesAgo: number };
  now: Date;
}): Application {
  const meta = o.service === 'storefront' ? STOREFRONT : SEARCH;
  const [ro, ...sets] = o.objects;
  const health = rolloutHealth(ro);
  const resources: ResourceStatus[] = [
    ...o.resources,
    {
      group: 'argoproj.io',
      version: 'v1alpha1',
      kind: 'Rollout',
      namespace: meta.namespace,
      name: o.service,
      status: 'Synced',
      health: health.message ? { status: health.status, message: health.message } : { status: health.status },
    },
  ];
  const worst = resources.reduce<HealthStatusCode>(
    (w, r) => (r.health && HEALTH_ORDER.indexOf(r.health.status) > HEALTH_ORDER.indexOf(w) ? r.health.status : w),
    'Healthy',
  );
  const source = { repoURL: meta.repoURL, path: 'overlays/prod', targetRevision: 'main' };
  const released = commit(`${o.service}: release ${o.release.tag}`);
  const earlier = commit(`${o.service}: release ${o.previous.tag}`);
  const images = [
    ...new Set(
      sets
        .filter((rs) => rs.spec.replicas > 0)
        .flatMap((rs) => rs.spec.template.spec.containers.map((c: Obj) => c.image as string)),
    ),
  ].sort();
  return application({
    name: `${o.service}-${o.cluster.name}`,
    now: o.now,
    project: meta.project,
    source,
    destination: { server: o.cluster.server, namespace: meta.namespace },
    labels: { app: o.service, service: o.service, env: 'prod', cluster: o.cluster.name, team: meta.project },
    appSet: { name: o.service, uid: appSetUid(o.service) },
    resources,
    sync: 'Synced',
    revision: released,
    health: worst,
    healthSinceMinutes: o.release.minutesAgo - 3,
    history: [
      { revision: earlier, minutesAgo: o.previous.minutesAgo, initiatedBy: { username: 'release-bot' } },
      { revision: released, minutesAgo: o.release.minutesAgo, initiatedBy: { username: 'release-bot' } },
    ],
    operationState: finishedOperation({
      now: o.now,
      revision: released,
      source,
      resources,
      startedMinutesAgo: o.release.minutesAgo + 0.4,
      initiatedBy: { username: 'release-bot' },
    }),
    images,
  });
}

const serviceResources = (namespace: string, names: [string, string, string]): ResourceStatus[] => [
  { version: 'v1', kind: 'ConfigMap', namespace, name: names[0], status: 'Synced' },
  { version: 'v1', kind: 'Service', namespace, name: names[1], status: 'Synced', health: { status: 'Healthy' } },
  { version: 'v1', kind: 'Service', namespace, name: names[2], status: 'Synced', health: { status: 'Healthy' } },
];

export function canaryRolloutsFixture(now: Date = new Date()): Fixture {
  const clusters: Cluster[] = SEED_OUTAGE_CLUSTERS.map((name) => {
    const region = name.slice('prod-'.length);
    return cluster({
      name,
      server: `https://${hex(`eks:${name}`, 32).toUpperCase()}.gr7.${region}.eks.amazonaws.com`,
      labels: {
        env: 'prod',
        region,
        provider: 'aws',
        ...((SEARCH.clusters as readonly string[]).includes(name) ? { search: 'serving' } : {}),
      },
      serverVersion: '1.31',
      now,
    });
  });
  const kube: FixtureKube[] = [];
  const storefront: Application[] = [];
  const search: Application[] = [];
  clusters.forEach((c, i) => {
    const state: StorefrontState =
      c.name === STOREFRONT.degraded
        ? 'degraded'
        : (STOREFRONT.promoted as readonly string[]).includes(c.name)
          ? 'promoted'
          : 'paused';
    const objects = storefrontObjects(c.name, state, i % 4, now);
    storefront.push(
      rolloutApp({
        service: 'storefront',
        cluster: c,
        objects,
        resources: [
          ...serviceResources(STOREFRONT.namespace, ['storefront-config', 'storefront-canary', 'storefront-stable']),
          {
            group: 'networking.k8s.io',
            version: 'v1',
            kind: 'Ingress',
            namespace: STOREFRONT.namespace,
            name: 'storefront',
            status: 'Synced',
            health: { status: 'Healthy' },
          },
        ],
        release: { tag: STOREFRONT.canary.tag, minutesAgo: SYNCED_MIN - (i % 4) },
        previous: { tag: STOREFRONT.stable.tag, minutesAgo: 60 * 24 * 9 },
        now,
      }),
    );
    const searchObjs = (SEARCH.clusters as readonly string[]).includes(c.name) ? searchObjects(c.name, i % 3, now) : [];
    if (searchObjs.length)
      search.push(
        rolloutApp({
          service: 'search',
          cluster: c,
          objects: searchObjs,
          resources: serviceResources(SEARCH.namespace, ['search-config', 'search-active', 'search-preview']),
          release: { tag: SEARCH.preview.tag, minutesAgo: SEARCH_SYNCED_MIN - (i % 3) },
          previous: { tag: SEARCH.stable.tag, minutesAgo: 60 * 24 * 12 },
          now,
        }),
      );
    kube.push({ cluster: c.name, objects: [...objects, ...searchObjs] });
  });
  const applicationSets: ApplicationSet[] = [
    appSetOf('storefront', STOREFRONT, { env: 'prod' }, storefront, now),
    appSetOf('search', SEARCH, { env: 'prod', search: 'serving' }, search, now),
  ];
  return {
    instances: [
      { name: CANARY_ROLLOUTS_INSTANCE, clusters, applications: [...storefront, ...search], applicationSets },
    ],
    kube,
  };
}

function appSetOf(
  service: string,
  meta: { namespace: string; project: string; repoURL: string },
  selector: Record<string, string>,
  apps: Application[],
  now: Date,
): ApplicationSet {
  return applicationSet({
    name: service,
    now,
    labels: { team: meta.project },
    spec: clusterGeneratorSpec({
      service,
      repoURL: meta.repoURL,
      path: 'overlays/prod',
      namespace: meta.namespace,
      project: meta.project,
      selector,
      labels: { team: meta.project },
    }),
    status: { conditions: upToDateConditions(now), resources: appSetResources(apps), resourcesCount: apps.length },
  });
}
