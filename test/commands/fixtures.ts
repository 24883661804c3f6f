import type { Application, ApplicationSet, Cluster } from '../../src/infra/argocd/types.js';
import type { CommandContext, Services } from '../../src/commands/registry.js';
import { configSchema } from '../../src/infra/config/schema.js';
import { StaticFleet } from '../../src/fleet/model.js';

export const NOW = new Date('2026-12-02T12:00:00Z');
export const ago = (minutes: number) =>
  new Date(NOW.getTime() - minutes * 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z');

interface AppOpts {
  name: string;
  server?: string;
  clusterName?: string;
  labels?: Record<string, string>;
  appSet?: string;
  status?: Application['status'];
  project?: string;
}

export function app(o: AppOpts): Application {
  return {
    metadata: {
      name: o.name,
      namespace: 'argocd',
      labels: o.labels,
      ...(o.appSet
        ? {
            ownerReferences: [
              { apiVersion: 'argoproj.io/v1alpha1', kind: 'ApplicationSet', name: o.appSet, controller: true },
            ],
          }
        : {}),
    },
    spec: {
      project: o.project ?? 'default',
      source: { repoURL: 'https://git.example.com/platform.git', path: `apps/${o.name}`, targetRevision: 'main' },
      destination: {
        ...(o.server ? { server: o.server } : {}),
        ...(o.clusterName ? { name: o.clusterName } : {}),
        namespace: o.name,
      },
    },
    ...(o.status ? { status: o.status } : {}),
  };
}

const healthy = (transition = ago(300)): Application['status'] => ({
  sync: { status: 'Synced', revision: 'a'.repeat(40) },
  health: { status: 'Healthy', lastTransitionTime: transition },
});

export const eastClusters: Cluster[] = [
  {
    name: 'in-cluster',
    server: 'https://kubernetes.default.svc',
    info: { serverVersion: '1.31', connectionState: { status: 'Successful' } },
  },
  {
    name: 'prod-us1',
    server: 'https://10.0.0.1:6443',
    connectionState: { status: 'Successful' },
    serverVersion: '1.30',
  },
  {
    name: 'prod-us2',
    server: 'https://10.0.0.2:6443',
    info: { connectionState: { status: 'Failed', message: 'dial tcp 10.0.0.2:6443: i/o timeout' } },
  },
];

export const eastApps: Application[] = [
  // Trailing slash on the server: resolved to prod-us1 all the same.
  app({ name: 'web-prod-us1', server: 'https://10.0.0.1:6443/', status: healthy() }),
  app({
    name: 'auth-prod-us1',
    clusterName: 'prod-us1',
    appSet: 'auth',
    labels: { env: 'prod' },
    status: {
      sync: { status: 'Synced', revision: 'b'.repeat(40) },
      health: { status: 'Degraded', lastTransitionTime: ago(30) },
      resources: [
        { version: 'v1', kind: 'Service', name: 'auth', status: 'Synced', health: { status: 'Healthy' } },
        {
          group: 'apps',
          version: 'v1',
          kind: 'Deployment',
          name: 'auth',
          status: 'Synced',
          health: { status: 'Degraded', message: 'Deployment "auth" exceeded its progress deadline' },
        },
      ],
      operationState: {
        operation: {
          sync: { revision: 'b'.repeat(40) },
          initiatedBy: { username: 'applicationset-controller', automated: true },
        },
        phase: 'Succeeded',
        message: 'successfully synced (all tasks run)',
        startedAt: ago(32),
        finishedAt: ago(31),
      },
      summary: { images: ['registry.example.com/auth-service:v2.15.0'] },
      history: [1, 2, 3, 4, 5, 6].map((id) => ({
        id,
        revision: `${id}`.repeat(40),
        deployedAt: ago(600 - id * 60),
        initiatedBy: { username: id === 6 ? 'alice' : undefined, automated: id !== 6 },
      })),
    },
  }),
  app({
    name: 'auth-prod-us2',
    server: 'https://10.0.0.2:6443',
    appSet: 'auth',
    labels: { env: 'prod' },
    status: {
      sync: { status: 'OutOfSync', revision: 'c'.repeat(40) },
      health: { status: 'Healthy', lastTransitionTime: ago(500) },
      operationState: {
        operation: { sync: { revision: 'c'.repeat(40) }, initiatedBy: { username: 'bob' } },
        phase: 'Failed',
        message: 'one or more objects failed to apply,\nreason: admission webhook denied',
        syncResult: {
          revision: 'c'.repeat(40),
          resources: [
            {
              group: '',
              version: 'v1',
              kind: 'ConfigMap',
              namespace: 'auth',
              name: 'auth-config',
              status: 'SyncFailed',
              message: 'admission webhook "validate.example.com" denied the request',
              syncPhase: 'Sync',
            },
            {
              group: 'apps',
              version: 'v1',
              kind: 'Deployment',
              namespace: 'auth',
              name: 'auth',
              status: 'Synced',
              message: 'deployment.apps/auth configured',
            },
          ],
        },
        startedAt: ago(62),
        finishedAt: ago(60),
      },
      conditions: [
        { type: 'OrphanedResourceWarning', message: 'Application has 1 orphaned resources' },
        { type: 'SyncError', message: 'Failed sync attempt to cccc: one or more objects failed to apply' },
      ],
    },
  }),
  // Just created: Argo CD has not reconciled it, so it has no status at all.
  app({ name: 'new-app', clusterName: 'prod-us2' }),
  // A destination server Argo CD has no cluster for: the cluster is the URL.
  app({
    name: 'orphan-app',
    server: 'https://unknown.example:6443',
    status: { sync: { status: 'Synced' }, health: { status: 'Missing', lastTransitionTime: ago(10) } },
  }),
];

export const westClusters: Cluster[] = [
  {
    name: 'prod-eu1',
    server: 'https://10.1.0.1:6443',
    info: { serverVersion: '1.29', connectionState: { status: 'Successful' } },
  },
];

export const westApps: Application[] = [
  app({ name: 'web-prod-eu1', clusterName: 'prod-eu1', status: healthy() }),
  // Same name as an east app: `app auth-prod-us1` is ambiguous across instances.
  app({
    name: 'auth-prod-us1',
    clusterName: 'prod-eu1',
    status: { sync: { status: 'Synced' }, health: { status: 'Progressing', lastTransitionTime: ago(3) } },
  }),
];

export const authAppSet: ApplicationSet = {
  metadata: { name: 'auth', namespace: 'argocd' },
  spec: {
    generators: [],
    template: {
      metadata: { name: 'auth-{{name}}', labels: { env: 'prod' } },
      spec: { project: 'default', destination: {} },
    },
    strategy: {
      type: 'RollingSync',
      rollingSync: { steps: [{ matchExpressions: [{ key: 'env', operator: 'In', values: ['prod'] }], maxUpdate: 1 }] },
    },
  },
  status: {
    conditions: [
      {
        type: 'RolloutProgressing',
        status: 'True',
        reason: 'ApplicationSetModified',
        message: 'ApplicationSet is performing rollout of step 1',
      },
    ],
    applicationStatus: [
      {
        application: 'auth-prod-us1',
        status: 'Healthy',
        message: 'Application resource became Healthy, updating status from Progressing to Healthy.',
        step: '1',
        lastTransitionTime: ago(31),
      },
      {
        application: 'auth-prod-us2',
        status: 'Progressing',
        message: 'Application resource completed a sync successfully, updating status from Pending to Progressing.',
        step: '1',
        lastTransitionTime: ago(62),
      },
    ],
  },
};

export const platformAppSet: ApplicationSet = {
  metadata: { name: 'platform', namespace: 'argocd' },
  spec: { generators: [], template: { metadata: {}, spec: { project: 'default', destination: {} } } },
};

export function twoInstanceFleet(): StaticFleet {
  return StaticFleet.fromObjects([
    {
      name: 'east',
      uiUrl: 'https://cd-east.example.com',
      applications: eastApps,
      applicationSets: [authAppSet],
      clusters: eastClusters,
    },
    {
      name: 'west',
      uiUrl: 'https://cd-west.example.com',
      applications: westApps,
      applicationSets: [platformAppSet],
      clusters: westClusters,
    },
  ]);
}

export function services(
  fleet: StaticFleet,
  access: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
): Services {
  const config = configSchema.parse({
    instances: fleet.instances().map((name) => ({ name, url: `http://${name}.example`, token: 't' })),
    access,
    ...extra,
  });
  return { config, fleet, argocd: new Map(), now: () => NOW };
}

export function ctx(s: Services, user = 'U_ONCALL'): CommandContext {
  return { services: s, user, surface: 'terminal' };
}
