import type { Application, Cluster } from '../../infra/argocd/types.js';
import type { Fixture } from '../fixture-types.js';
import { rfc3339 } from '../clock.js';
import { certFingerprint, KEY_LABEL, SEALED_WITH_ANNOTATION } from './cluster.js';
import { SIM_KEYS } from './keys.js';
import { keyCertificate } from './tls.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const MINUTE = 60_000;
const DAY = 86_400_000;

/**
 * How long before the scenario's present each key was made. The controller renews a key older than
 * 30 days at start, so the newest of prod-old's monthly keys is 27 days old: the scenario starts with
 * three keys there, and a fourth appears only if the simulated clock runs three more days.
 */
export const KEY_AGES_MS = { old1: 87 * DAY, old2: 57 * DAY, old3: 27 * DAY, new1: 30 * MINUTE } as const;

type ScenarioKey = keyof typeof KEY_AGES_MS;

/** The certificate a scenario key carries, dated by its age before `now`. */
export function scenarioKeyCert(pair: ScenarioKey, now: Date): string {
  return keyCertificate(SIM_KEYS[pair].key, new Date(now.getTime() - KEY_AGES_MS[pair]));
}

function keySecret(name: string, pair: ScenarioKey, now: Date) {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/tls',
    metadata: {
      name,
      namespace: 'kube-system',
      labels: { [KEY_LABEL]: 'active' },
      creationTimestamp: rfc3339(now.getTime() - KEY_AGES_MS[pair]),
    },
    data: { 'tls.crt': b64(scenarioKeyCert(pair, now)), 'tls.key': b64(SIM_KEYS[pair].key) },
  };
}

function controllerObjects() {
  return [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name: 'sealed-secrets-controller',
        namespace: 'kube-system',
        generation: 1,
        labels: { name: 'sealed-secrets-controller' },
      },
      spec: {
        replicas: 1,
        selector: { matchLabels: { name: 'sealed-secrets-controller' } },
        template: {
          metadata: { labels: { name: 'sealed-secrets-controller' } },
          spec: {
            containers: [
              { name: 'sealed-secrets-controller', image: 'docker.io/bitnami/sealed-secrets-controller:0.38.4' },
            ],
          },
        },
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

function sealedSecrets(synced: boolean, now: Date) {
  const ago = (ms: number) => rfc3339(now.getTime() - ms);
  return SEALED.map((s) => ({
    apiVersion: 'bitnami.com/v1alpha1',
    kind: 'SealedSecret',
    metadata: {
      name: s.name,
      namespace: s.namespace,
      generation: 1,
      annotations: { [SEALED_WITH_ANNOTATION]: certFingerprint(scenarioKeyCert(s.key, now)) },
      labels: { 'app.kubernetes.io/instance': `${s.namespace}-secrets` },
    },
    spec: {
      encryptedData: Object.fromEntries(s.items.map((i) => [i, `AgB${b64(`${s.name}/${i}`).slice(0, 40)}...`])),
      template: { metadata: { name: s.name, namespace: s.namespace } },
    },
    status: {
      observedGeneration: 1,
      conditions: [
        synced
          ? { type: 'Synced', status: 'True', lastUpdateTime: ago(2 * DAY), lastTransitionTime: ago(154 * DAY) }
          : {
              type: 'Synced',
              status: 'False',
              message: `no key could decrypt secret (${s.items.join(', ')})`,
              lastUpdateTime: ago(5 * MINUTE),
              lastTransitionTime: ago(20 * MINUTE),
            },
      ],
    },
  }));
}

function secretsApp(namespace: string, cluster: string, healthy: boolean, now: Date): Application {
  // prod-old has been healthy for months; prod-new failed this morning, 20 minutes ago.
  const changed = now.getTime() - (healthy ? 154 * DAY : 20 * MINUTE);
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
      health: { status: healthy ? 'Healthy' : 'Degraded', lastTransitionTime: rfc3339(changed) },
      resources: SEALED.filter((s) => s.namespace === namespace).map((s) => ({
        group: 'bitnami.com',
        version: 'v1alpha1',
        kind: 'SealedSecret',
        namespace,
        name: s.name,
        status: 'Synced' as const,
        health: healthy
          ? { status: 'Healthy' as const }
          : { status: 'Degraded' as const, message: `no key could decrypt secret (${s.items.join(', ')})` },
      })),
      operationState: {
        operation: { sync: { revision: '5f2c1a9d0e4b7c3a8f6d2e1b0a9c8d7e6f5a4b3c' }, initiatedBy: { automated: true } },
        phase: 'Succeeded',
        message: 'successfully synced (all tasks run)',
        startedAt: rfc3339(changed - 30_000),
        finishedAt: rfc3339(changed),
      },
    },
  };
}

const clusters: Cluster[] = [
  {
    name: 'prod-old',
    server: 'https://10.0.1.10:6443',
    labels: { env: 'prod', generation: 'old' },
    connectionState: { status: 'Successful' },
    info: { serverVersion: '1.29' },
  },
  {
    name: 'prod-new',
    server: 'https://10.0.2.10:6443',
    labels: { env: 'prod', generation: 'new' },
    connectionState: { status: 'Successful' },
    info: { serverVersion: '1.31' },
  },
  {
    name: 'ops',
    server: 'https://10.0.9.10:6443',
    labels: { env: 'ops' },
    connectionState: { status: 'Successful' },
    info: { serverVersion: '1.31' },
  },
];

/**
 * `sealed-secrets-migration`: prod-old has run sealed-secrets for months (three monthly keys, never
 * backed up); prod-new was built this morning, its controller generated its own key, and every
 * SealedSecret copied there from git fails with "no key could decrypt". `ops` holds backups.
 * Every date is relative to `now`, the simulator's clock at start.
 */
export function sealedSecretsMigration(now: Date = new Date()): Fixture {
  const namespaces = [...new Set(SEALED.map((s) => s.namespace))];
  return {
    instances: [
      {
        name: 'platform',
        clusters,
        applications: [
          ...namespaces.map((ns) => secretsApp(ns, 'prod-old', true, now)),
          ...namespaces.map((ns) => secretsApp(ns, 'prod-new', false, now)),
        ],
        applicationSets: [],
      },
    ],
    kube: [
      {
        cluster: 'prod-old',
        sealedSecretsController: {},
        objects: [
          keySecret('sealed-secrets-keyq8x2m', 'old1', now),
          keySecret('sealed-secrets-keyz4k7p', 'old2', now),
          keySecret('sealed-secrets-keyb9w3d', 'old3', now),
          ...controllerObjects(),
          ...sealedSecrets(true, now),
        ],
      },
      {
        cluster: 'prod-new',
        sealedSecretsController: {},
        objects: [
          keySecret('sealed-secrets-keyn5t6v', 'new1', now),
          ...controllerObjects(),
          ...sealedSecrets(false, now),
        ],
      },
      {
        cluster: 'ops',
        objects: [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'sealed-secrets-backup' } }],
      },
    ],
  };
}
