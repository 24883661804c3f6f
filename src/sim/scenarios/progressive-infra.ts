import type {
  Application,
  ApplicationSetApplicationStatus,
  ApplicationSetSpec,
  Cluster,
} from '../../infra/argocd/types.js';
import { ROLLOUT_MESSAGES } from '../../fleet/rollingsync.js';
import type { Fixture } from '../fixture-types.js';
import {
  application,
  applicationSet,
  appSetResources,
  appSetUid,
  at,
  cluster,
  commit,
  finishedOperation,
  serviceResources,
  upToDateConditions,
} from './builders.js';

/**
 * DESIGN.md problem 2: a RollingSync rollout stage → canary → prod that has been stuck for almost
 * two hours. Stage and canary are Healthy; in prod (maxUpdate 25% of 12 = 3) three apps failed their
 * sync while the admission webhooks were unreachable, so they sit Progressing forever (there is no
 * step timeout) and fill the step's maxUpdate: the other nine prod apps wait. The webhooks are back,
 * so a manual re-sync of the three succeeds and the rollout moves on.
 *
 * `platform-addons` carries two classic mistakes for the diagnosis: step 1 matches a *cluster*
 * label (`region`), which Application labels do not have, so it selects nothing; and the stage and
 * canary apps are matched by no step (step "-1"), so RollingSync never syncs them.
 */

export const PROGRESSIVE_INFRA_INSTANCE = 'infra';

const CLUSTERS: { name: string; env: string; region: string }[] = [
  { name: 'stage-1', env: 'stage', region: 'us-east-1' },
  { name: 'canary-1', env: 'canary', region: 'us-east-1' },
  { name: 'prod-1', env: 'prod', region: 'us-east-1' },
  { name: 'prod-2', env: 'prod', region: 'us-west-2' },
  { name: 'prod-3', env: 'prod', region: 'eu-west-1' },
  { name: 'prod-4', env: 'prod', region: 'ap-southeast-1' },
];

export const PROGRESSIVE_INFRA_SERVICES = ['ingress-nginx', 'cert-manager', 'external-dns'] as const;

const NAMESPACES: Record<string, string> = {
  'ingress-nginx': 'ingress-nginx',
  'cert-manager': 'cert-manager',
  'external-dns': 'kube-system',
  'metrics-server': 'kube-system',
};
const WORKLOADS: Record<string, string> = {
  'ingress-nginx': 'ingress-nginx-controller',
  'cert-manager': 'cert-manager',
  'external-dns': 'external-dns',
  'metrics-server': 'metrics-server',
};

const REPO = 'https://git.example.com/infra/cluster-addons.git';
const OLD_COMMIT = commit('cluster-addons: previous release');
const NEW_COMMIT = commit('cluster-addons: ingress-nginx 4.12, cert-manager 1.17, external-dns 0.16');

/** The three prod apps whose sync failed, with what the API server answered. */
export const STUCK_APPS: Record<string, string> = {
  'ingress-nginx-prod-1':
    'Internal error occurred: failed calling webhook "validate.nginx.ingress.kubernetes.io": failed to call webhook: Post "https://ingress-nginx-controller-admission.ingress-nginx.svc:443/networking/v1/ingresses?timeout=10s": context deadline exceeded',
  'cert-manager-prod-2':
    'Internal error occurred: failed calling webhook "webhook.cert-manager.io": failed to call webhook: Post "https://cert-manager-webhook.cert-manager.svc:443/validate?timeout=30s": context deadline exceeded',
  'external-dns-prod-3':
    'Internal error occurred: failed calling webhook "validate.kyverno.svc-fail": failed to call webhook: Post "https://kyverno-svc.kyverno.svc:443/validate/fail?timeout=10s": context deadline exceeded',
};

// Timeline in minutes before now.
const T = {
  commit: 118,
  stagePending: 117,
  stageHealthy: 114,
  canaryPending: 113,
  canaryHealthy: 110,
  prodPending: 109,
  prodFailed: 104,
};

export function progressiveInfraFixture(now: Date = new Date()): Fixture {
  const clusters: Cluster[] = CLUSTERS.map((c) =>
    cluster({
      name: c.name,
      server: `https://k8s-${c.name}.infra.example.net:6443`,
      labels: { env: c.env, region: c.region, tier: c.env === 'prod' ? 'production' : 'preprod' },
      now,
    }),
  );
  const infraApps: Application[] = [];
  const entries: ApplicationSetApplicationStatus[] = [];
  for (const c of CLUSTERS) {
    for (const service of PROGRESSIVE_INFRA_SERVICES) {
      const { app, entry } = infraApp(now, service, c, clusters);
      infraApps.push(app);
      entries.push(entry);
    }
  }
  entries.sort((a, b) => (a.application < b.application ? -1 : 1));
  const infraSpec: ApplicationSetSpec = {
    goTemplate: true,
    goTemplateOptions: ['missingkey=error'],
    generators: [
      {
        matrix: {
          generators: [
            {
              clusters: {
                selector: { matchExpressions: [{ key: 'env', operator: 'In', values: ['stage', 'canary', 'prod'] }] },
              },
            },
            { list: { elements: PROGRESSIVE_INFRA_SERVICES.map((s) => ({ service: s })) } },
          ],
        },
      },
    ],
    strategy: {
      type: 'RollingSync',
      rollingSync: {
        steps: [
          { matchExpressions: [{ key: 'env', operator: 'In', values: ['stage'] }] },
          { matchExpressions: [{ key: 'env', operator: 'In', values: ['canary'] }] },
          { matchExpressions: [{ key: 'env', operator: 'In', values: ['prod'] }], maxUpdate: '25%' },
        ],
      },
    },
    template: {
      metadata: {
        name: '{{.service}}-{{.name}}',
        labels: {
          app: '{{.service}}',
          service: '{{.service}}',
          env: '{{index .metadata.labels "env"}}',
          cluster: '{{.name}}',
          team: 'infra',
        },
      },
      spec: {
        project: 'infra',
        source: { repoURL: REPO, path: 'addons/{{.service}}', targetRevision: 'main' },
        destination: { server: '{{.server}}', namespace: '{{.service}}' },
        syncPolicy: { automated: { prune: true }, syncOptions: ['CreateNamespace=true', 'ServerSideApply=true'] },
      },
    },
  };
  const infraSet = applicationSet({
    name: 'progressive-infra',
    now,
    labels: { team: 'infra' },
    spec: infraSpec,
    status: {
      conditions: [
        ...upToDateConditions(now),
        {
          type: 'RolloutProgressing',
          status: 'True',
          reason: 'ApplicationSetModified',
          message: 'ApplicationSet is performing rollout of step 3',
          lastTransitionTime: at(now, T.canaryHealthy),
        },
      ],
      applicationStatus: entries,
      resources: appSetResources(infraApps),
      resourcesCount: infraApps.length,
      health: { status: 'Progressing', message: 'ApplicationSet is performing rollout of step 3' },
    },
  });

  const { apps: addonApps, appSet: addonSet } = platformAddons(now, clusters);
  return {
    instances: [
      {
        name: PROGRESSIVE_INFRA_INSTANCE,
        clusters,
        applications: [...infraApps, ...addonApps],
        applicationSets: [infraSet, addonSet],
      },
    ],
  };
}

function infraApp(
  now: Date,
  service: string,
  c: (typeof CLUSTERS)[number],
  clusters: Cluster[],
): { app: Application; entry: ApplicationSetApplicationStatus } {
  const name = `${service}-${c.name}`;
  const namespace = NAMESPACES[service];
  const server = clusters.find((x) => x.name === c.name)!.server;
  const source = { repoURL: REPO, path: `addons/${service}`, targetRevision: 'main' };
  const resources = serviceResources({ name: WORKLOADS[service], namespace });
  const stuck = STUCK_APPS[name];
  const rolledOut = c.env !== 'prod';
  const RS_INITIATOR = { username: 'applicationset-controller', automated: true };
  const info = [{ name: 'Reason', value: 'ApplicationSet RollingSync triggered a sync of this Application resource' }];
  const base = {
    name,
    now,
    project: 'infra',
    source,
    destination: { server, namespace: service },
    labels: { app: service, service, env: c.env, cluster: c.name, team: 'infra' },
    appSet: { name: 'progressive-infra', uid: appSetUid('progressive-infra') },
    // As the appset controller writes it since v3.3: the template's automated block with enabled=false.
    syncPolicy: {
      automated: { prune: true, enabled: false },
      syncOptions: ['CreateNamespace=true', 'ServerSideApply=true'],
    },
    revision: NEW_COMMIT,
  };
  const step = c.env === 'stage' ? '1' : c.env === 'canary' ? '2' : '3';
  if (rolledOut) {
    const pending = c.env === 'stage' ? T.stagePending : T.canaryPending;
    const healthy = c.env === 'stage' ? T.stageHealthy : T.canaryHealthy;
    const app = application({
      ...base,
      resources,
      sync: 'Synced',
      health: 'Healthy',
      healthSinceMinutes: healthy,
      history: [
        { revision: OLD_COMMIT, minutesAgo: 60 * 24 * 14, initiatedBy: RS_INITIATOR },
        { revision: NEW_COMMIT, minutesAgo: pending - 0.5, initiatedBy: RS_INITIATOR, durationSeconds: 25 },
      ],
      operationState: finishedOperation({
        now,
        revision: NEW_COMMIT,
        source,
        resources,
        startedMinutesAgo: pending - 0.1,
        durationSeconds: 25,
        initiatedBy: RS_INITIATOR,
        info,
        prune: true,
        retryLimit: 5,
      }),
    });
    return {
      app,
      entry: {
        application: name,
        status: 'Healthy',
        message: ROLLOUT_MESSAGES.becameHealthy,
        step,
        targetRevisions: [NEW_COMMIT],
        lastTransitionTime: at(now, healthy),
      },
    };
  }
  const outOfSync = resources.map((r) =>
    r.kind === 'Deployment' || r.kind === 'ConfigMap' ? { ...r, status: 'OutOfSync' as const } : r,
  );
  const history = [{ revision: OLD_COMMIT, minutesAgo: 60 * 24 * 14, initiatedBy: RS_INITIATOR }];
  if (stuck) {
    const app = application({
      ...base,
      resources: outOfSync,
      sync: 'OutOfSync',
      health: 'Healthy',
      history,
      operationState: finishedOperation({
        now,
        revision: NEW_COMMIT,
        source,
        resources: outOfSync,
        startedMinutesAgo: T.prodPending - 0.1,
        durationSeconds: (T.prodPending - T.prodFailed) * 60,
        initiatedBy: RS_INITIATOR,
        info,
        prune: true,
        retryLimit: 5,
        retryCount: 5,
        failing: { name: WORKLOADS[service], message: stuck },
      }),
    });
    return {
      app,
      entry: {
        application: name,
        status: 'Progressing',
        message: ROLLOUT_MESSAGES.syncCompleted,
        step,
        targetRevisions: [NEW_COMMIT],
        lastTransitionTime: at(now, T.prodPending - 0.1),
      },
    };
  }
  const app = application({
    ...base,
    resources: outOfSync,
    sync: 'OutOfSync',
    health: 'Healthy',
    history,
    operationState: finishedOperation({
      now,
      revision: OLD_COMMIT,
      source,
      resources,
      startedMinutesAgo: 60 * 24 * 14,
      initiatedBy: RS_INITIATOR,
      info,
      prune: true,
      retryLimit: 5,
    }),
  });
  return {
    app,
    entry: {
      application: name,
      status: 'Waiting',
      message: ROLLOUT_MESSAGES.revisionChanged,
      step,
      targetRevisions: [NEW_COMMIT],
      lastTransitionTime: at(now, T.commit),
    },
  };
}

function platformAddons(now: Date, clusters: Cluster[]) {
  const service = 'metrics-server';
  const namespace = NAMESPACES[service];
  const source = { repoURL: REPO, path: `addons/${service}`, targetRevision: 'main' };
  const revision = commit('cluster-addons: metrics-server 0.7.2');
  const apps: Application[] = [];
  const entries: ApplicationSetApplicationStatus[] = [];
  for (const c of CLUSTERS) {
    const name = `${service}-${c.name}`;
    const prod = c.env === 'prod';
    const resources = serviceResources({ name: service, namespace, sync: prod ? 'Synced' : 'OutOfSync' });
    const initiatedBy = { username: 'applicationset-controller', automated: true };
    apps.push(
      application({
        name,
        now,
        project: 'infra',
        source,
        destination: { server: clusters.find((x) => x.name === c.name)!.server, namespace },
        labels: { app: service, env: c.env, cluster: c.name },
        appSet: { name: 'platform-addons', uid: appSetUid('platform-addons') },
        syncPolicy: { automated: { enabled: false, prune: true } },
        resources,
        sync: prod ? 'Synced' : 'OutOfSync',
        revision,
        health: 'Healthy',
        history: [
          { revision: commit('cluster-addons: metrics-server 0.7.1'), minutesAgo: 60 * 24 * 30, initiatedBy },
          ...(prod ? [{ revision, minutesAgo: 60 * 26, initiatedBy }] : []),
        ],
      }),
    );
    entries.push(
      prod
        ? {
            application: name,
            status: 'Healthy',
            message: ROLLOUT_MESSAGES.becameHealthy,
            step: '2',
            targetRevisions: [revision],
            lastTransitionTime: at(now, 60 * 26),
          }
        : {
            application: name,
            status: 'Waiting',
            message: ROLLOUT_MESSAGES.revisionChanged,
            step: '-1',
            targetRevisions: [revision],
            lastTransitionTime: at(now, 60 * 27),
          },
    );
  }
  entries.sort((a, b) => (a.application < b.application ? -1 : 1));
  const appSet = applicationSet({
    name: 'platform-addons',
    now,
    labels: { team: 'infra' },
    spec: {
      goTemplate: true,
      generators: [{ clusters: {} }],
      strategy: {
        type: 'RollingSync',
        rollingSync: {
          steps: [
            // A cluster label: Application labels do not carry it, so this step selects nothing (A3).
            { matchExpressions: [{ key: 'region', operator: 'In', values: ['us-east-1'] }] },
            { matchExpressions: [{ key: 'env', operator: 'In', values: ['prod'] }], maxUpdate: 2 },
          ],
        },
      },
      template: {
        metadata: {
          name: `${service}-{{.name}}`,
          labels: { app: service, env: '{{index .metadata.labels "env"}}', cluster: '{{.name}}' },
        },
        spec: {
          project: 'infra',
          source: { repoURL: REPO, path: `addons/${service}`, targetRevision: 'main' },
          destination: { server: '{{.server}}', namespace },
          syncPolicy: { automated: { prune: true } },
        },
      },
    },
    status: {
      conditions: [
        ...upToDateConditions(now),
        {
          type: 'RolloutProgressing',
          status: 'False',
          reason: 'ApplicationSetRolloutComplete',
          message: 'ApplicationSet Rollout has completed',
          lastTransitionTime: at(now, 60 * 26),
        },
      ],
      applicationStatus: entries,
      resources: appSetResources(apps),
      resourcesCount: apps.length,
      health: { status: 'Healthy' },
    },
  });
  return { apps, appSet };
}
