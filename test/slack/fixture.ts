import type { Application, ApplicationSet, Cluster } from '../../src/infra/argocd/types.js';

/** A small fleet in Argo CD's real shapes: 2 clusters, 5 apps (2 with problems), one RollingSync appset mid-rollout. */
export function app(
  name: string,
  cluster: string,
  sync: string,
  health: string,
  extra: { appSet?: string; message?: string; labels?: Record<string, string> } = {},
): Application {
  return {
    metadata: {
      name,
      namespace: 'argocd',
      labels: extra.labels,
      ...(extra.appSet
        ? { ownerReferences: [{ apiVersion: 'argoproj.io/v1alpha1', kind: 'ApplicationSet', name: extra.appSet }] }
        : {}),
    },
    spec: {
      project: 'default',
      destination: { name: cluster, namespace: name },
      source: { repoURL: 'https://git.example/apps', path: name, targetRevision: 'main' },
    },
    status: {
      sync: { status: sync as never, revision: 'abc123' },
      health: {
        status: health as never,
        ...(extra.message ? { message: extra.message } : {}),
        lastTransitionTime: '2026-12-02T17:00:00Z',
      },
      ...(extra.message
        ? {
            operationState: {
              phase: 'Failed',
              message: extra.message,
              startedAt: '2026-12-02T16:59:00Z',
              finishedAt: '2026-12-02T17:00:00Z',
              operation: { sync: {} },
            },
          }
        : {}),
    } as never,
  };
}

export const clusters: Cluster[] = [
  { name: 'prod-us1', server: 'https://prod-us1.k8s.example', connectionState: { status: 'Successful' } } as Cluster,
  { name: 'prod-eu1', server: 'https://prod-eu1.k8s.example', connectionState: { status: 'Successful' } } as Cluster,
];

export const rollingAppSet: ApplicationSet = {
  metadata: { name: 'payments', namespace: 'argocd' },
  spec: {
    generators: [],
    template: {
      metadata: { name: '{{name}}-payments', labels: { env: '{{env}}' } },
      spec: { project: 'default', destination: { name: '{{name}}' } },
    },
    strategy: {
      type: 'RollingSync',
      rollingSync: {
        steps: [
          { matchExpressions: [{ key: 'env', operator: 'In', values: ['canary'] }] },
          { matchExpressions: [{ key: 'env', operator: 'In', values: ['prod'] }], maxUpdate: 1 },
        ],
      },
    },
  },
  status: {
    conditions: [
      {
        type: 'RolloutProgressing',
        status: 'True',
        reason: 'ApplicationSetModified',
        message: 'ApplicationSet is performing rollout of step 2',
      },
    ],
  },
};

export function smallFleetObjects() {
  return [
    {
      name: 'prod',
      uiUrl: 'https://argocd.example',
      clusters,
      applicationSets: [rollingAppSet],
      applications: [
        app('auth-service-prod-us1', 'prod-us1', 'Synced', 'Degraded', {
          message: 'Back-off restarting failed container auth',
        }),
        app('auth-config-prod-us1', 'prod-us1', 'OutOfSync', 'Healthy'),
        app('web-prod-us1', 'prod-us1', 'Synced', 'Healthy'),
        app('prod-us1-payments', 'prod-us1', 'Synced', 'Healthy', { appSet: 'payments', labels: { env: 'prod' } }),
        app('prod-eu1-payments', 'prod-eu1', 'Synced', 'Healthy', { appSet: 'payments', labels: { env: 'canary' } }),
      ],
    },
  ];
}

/** n healthy apps spread over `clusterCount` clusters, every third one Degraded (for pagination). */
export function bigFleetObjects(n: number, clusterCount = 4) {
  const cs = Array.from(
    { length: clusterCount },
    (_, i) => ({ name: `c${i}`, server: `https://c${i}.k8s.example` }) as Cluster,
  );
  return [
    {
      name: 'prod',
      clusters: cs,
      applications: Array.from({ length: n }, (_, i) =>
        app(
          `svc-${String(i).padStart(4, '0')}`,
          `c${i % clusterCount}`,
          i % 3 === 0 ? 'OutOfSync' : 'Synced',
          i % 3 === 0 ? 'Degraded' : 'Healthy',
          i % 3 === 0 ? { message: `pod svc-${i} CrashLoopBackOff` } : {},
        ),
      ),
    },
  ];
}
