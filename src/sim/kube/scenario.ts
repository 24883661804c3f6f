import type { Application, Cluster } from '../../argocd/types.js';
import type { Fixture } from '../fixture-types.js';
import { certFingerprint, KEY_LABEL, SEALED_WITH_ANNOTATION } from './cluster.js';
import { SIM_KEYS } from './keys.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

function keySecret(name: string, pair: keyof typeof SIM_KEYS, createdAt: string) {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/tls',
    metadata: { name, namespace: 'kube-system', labels: { [KEY_LABEL]: 'active' }, creationTimestamp: createdAt },
    data: { 'tls.crt': b64(SIM_KEYS[pair].cert), 'tls.key': b64(SIM_KEYS[pair].key) },
  };
}

function controllerObjects() {
  return [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'sealed-secrets-controller', namespace: 'kube-system', generation: 1, labels: { name: 'sealed-secrets-controller' } },
      spec: {
        replicas: 1,
        selector: { matchLabels: { name: 'sealed-secrets-controller' } },
        template: { metadata: { labels: { name: 'sealed-secrets-controller' } }, spec: { containers: [{ name: 'sealed-secrets-controller', image: 'docker.io/bitnami/sealed-secrets-controller:0.38.4' }] } },
      },
      status: { replicas: 1, readyReplicas: 1, availableReplicas: 1 },
    },
  ];
}

const SEALED = [
  { namespace: 'payments', name: 'payments-db', items: ['password', 'username'], key: 'old1' },
  { namespace: 'payments', name: 'payments-stripe', items: ['api-key'], key: 'old2' },
  { namespace: 'auth', name: 'auth-jwt-signing', items: ['private.pem'], key: 'old3' },
  { namespace: 'auth', name: 'auth-oidc-client', items: ['client-secret'], key: 'old3' },
  { namespace: 'orders', name: 'orders-kafka', items: ['sasl-password'], key: 'old2' },
] as const;

function sealedSecrets(synced: boolean) {
  return SEALED.map((s) => ({
    apiVersion: 'bitnami.com/v1alpha1',
    kind: 'SealedSecret',
    metadata: {
      name: s.name,
      namespace: s.namespace,
      generation: 1,
      annotations: { [SEALED_WITH_ANNOTATION]: certFingerprint(SIM_KEYS[s.key].cert) },
      labels: { 'app.kubernetes.io/instance': `${s.namespace}-secrets` },
    },
    spec: { encryptedData: Object.fromEntries(s.items.map((i) => [i, `AgB${b64(`${s.name}/${i}`).slice(0, 40)}...`])), template: { metadata: { name: s.name, namespace: s.namespace } } },
    status: {
      observedGeneration: 1,
      conditions: [
        synced
          ? { type: 'Synced', status: 'True', lastUpdateTime: '2026-11-30T10:00:00Z', lastTransitionTime: '2026-07-01T09:05:00Z' }
          : {
              type: 'Synced',
              status: 'False',
              message: `no key could decrypt secret (${s.items.join(', ')})`,
              lastUpdateTime: '2026-12-02T07:55:00Z',
              lastTransitionTime: '2026-12-02T07:40:00Z',
            },
      ],
    },
  }));
}

function secretsApp(namespace: string, cluster: string, healthy: boolean): Application {
  return {
    metadata: { name: `${namespace}-secrets-${cluster}`, namespace: 'argocd', labels: { team: namespace, cluster } },
    spec: {
      project: namespace,
      source: { repoURL: 'https://git.example.com/platform/secrets.git', path: `${namespace}`, targetRevision: 'main' },
      destination: { name: cluster, namespace },
      syncPolicy: { automated: { prune: true, selfHeal: true } },
    },
    status: {
      sync: { status: 'Synced', revision: '5f2c1a9d0e4b7c3a8f6d2e1b0a9c8d7e6f5a4b3c' },
      health: { status: healthy ? 'Healthy' : 'Degraded', lastTransitionTime: healthy ? '2026-07-01T09:05:00Z' : '2026-12-02T07:40:00Z' },
      resources: SEALED.filter((s) => s.namespace === namespace).map((s) => ({
        group: 'bitnami.com',
        version: 'v1alpha1',
        kind: 'SealedSecret',
        namespace,
        name: s.name,
        status: 'Synced' as const,
        health: healthy ? { status: 'Healthy' as const } : { status: 'Degraded' as const, message: `no key could decrypt secret (${s.items.join(', ')})` },
      })),
      operationState: {
        operation: { sync: { revision: '5f2c1a9d0e4b7c3a8f6d2e1b0a9c8d7e6f5a4b3c' }, initiatedBy: { automated: true } },
        phase: 'Succeeded',
        message: 'successfully synced (all tasks run)',
        startedAt: healthy ? '2026-07-01T09:04:30Z' : '2026-12-02T07:39:30Z',
        finishedAt: healthy ? '2026-07-01T09:05:00Z' : '2026-12-02T07:40:00Z',
      },
    },
  };
}

const clusters: Cluster[] = [
  { name: 'prod-old', server: 'https://10.0.1.10:6443', labels: { env: 'prod', generation: 'old' }, connectionState: { status: 'Successful' }, info: { serverVersion: '1.29' } },
  { name: 'prod-new', server: 'https://10.0.2.10:6443', labels: { env: 'prod', generation: 'new' }, connectionState: { status: 'Successful' }, info: { serverVersion: '1.31' } },
  { name: 'ops', server: 'https://10.0.9.10:6443', labels: { env: 'ops' }, connectionState: { status: 'Successful' }, info: { serverVersion: '1.31' } },
];

/**
 * `sealed-secrets-migration`: prod-old has run sealed-secrets for months (three monthly keys, never
 * backed up); prod-new was built this morning, its controller generated its own key, and every
 * SealedSecret copied there from git fails with "no key could decrypt". `ops` holds backups.
 */
export function sealedSecretsMigration(): Fixture {
  const namespaces = [...new Set(SEALED.map((s) => s.namespace))];
  return {
    instances: [
      {
        name: 'platform',
        clusters,
        applications: [...namespaces.map((ns) => secretsApp(ns, 'prod-old', true)), ...namespaces.map((ns) => secretsApp(ns, 'prod-new', false))],
        applicationSets: [],
      },
    ],
    kube: [
      {
        cluster: 'prod-old',
        sealedSecretsController: {},
        objects: [
          keySecret('sealed-secrets-keyq8x2m', 'old1', '2026-09-05T09:00:00Z'),
          keySecret('sealed-secrets-keyz4k7p', 'old2', '2026-10-05T09:00:00Z'),
          keySecret('sealed-secrets-keyb9w3d', 'old3', '2026-11-05T09:00:00Z'),
          ...controllerObjects(),
          ...sealedSecrets(true),
        ],
      },
      {
        cluster: 'prod-new',
        sealedSecretsController: {},
        objects: [keySecret('sealed-secrets-keyn5t6v', 'new1', '2026-12-02T07:30:00Z'), ...controllerObjects(), ...sealedSecrets(false)],
      },
      { cluster: 'ops', objects: [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'sealed-secrets-backup' } }] },
    ],
  };
}
