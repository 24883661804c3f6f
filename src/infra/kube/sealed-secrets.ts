import { typedDuration } from '../../core/format.js';
import { X509Certificate } from 'node:crypto';
import type { V1Secret } from '@kubernetes/client-node';
import { KubeError, kubeFor, toKubeError, type KubeClients } from './clients.js';

/**
 * Sealed-secrets controller keys (argocd-facts C): `kubernetes.io/tls` Secrets in the
 * controller's namespace labelled `sealedsecrets.bitnami.com/sealed-secrets-key` (only `active`
 * is loaded), plus a legacy pre-0.9 key named exactly `sealed-secrets-key`. Key material stays in
 * this module's memory for the duration of a copy: what leaves it is names, fingerprints and dates.
 */
export const KEY_LABEL = 'sealedsecrets.bitnami.com/sealed-secrets-key';
export const LEGACY_KEY_NAME = 'sealed-secrets-key';
export const BACKUP_LABEL = 'rollcall.io/sealed-secrets-backup';
export const SOURCE_CLUSTER_LABEL = 'rollcall.io/source-cluster';
export const BACKED_UP_AT_LABEL = 'rollcall.io/backed-up-at';

export interface ControllerSettings {
  namespace: string;
  name: string;
  podSelector: string;
}

export interface KeyInfo {
  name: string;
  namespace: string;
  /** Label value; only `active` keys are loaded by the controller. */
  state: string;
  legacy: boolean;
  /** SHA-256 fingerprint of the certificate, as `openssl x509 -fingerprint -sha256` prints it. */
  fingerprint: string;
  notBefore: string;
  notAfter: string;
}

export interface BackupInfo extends KeyInfo {
  sourceCluster: string;
  sourceName: string;
  backedUpAt: string;
}

interface KeySecret {
  info: KeyInfo;
  secret: V1Secret;
}

function certOf(secret: V1Secret): X509Certificate {
  const pem = secret.data?.['tls.crt'];
  if (!pem)
    throw new KubeError('invalid', `secret ${secret.metadata?.namespace}/${secret.metadata?.name} has no tls.crt`);
  return new X509Certificate(Buffer.from(pem, 'base64'));
}

function infoOf(secret: V1Secret): KeyInfo {
  const cert = certOf(secret);
  const name = secret.metadata?.name ?? '';
  return {
    name,
    namespace: secret.metadata?.namespace ?? '',
    state: secret.metadata?.labels?.[KEY_LABEL] ?? (name === LEGACY_KEY_NAME ? 'legacy' : ''),
    legacy: name === LEGACY_KEY_NAME,
    fingerprint: cert.fingerprint256,
    notBefore: new Date(cert.validFrom).toISOString(),
    notAfter: new Date(cert.validTo).toISOString(),
  };
}

const byNotBefore = (a: { info: KeyInfo }, b: { info: KeyInfo }) =>
  a.info.notBefore.localeCompare(b.info.notBefore) || a.info.name.localeCompare(b.info.name);

async function readKeySecrets(k: KubeClients, settings: ControllerSettings): Promise<KeySecret[]> {
  let labelled: V1Secret[];
  try {
    labelled = (await k.core.listNamespacedSecret({ namespace: settings.namespace, labelSelector: KEY_LABEL })).items;
  } catch (error) {
    throw toKubeError(error, `listing sealed-secrets keys in ${k.cluster}/${settings.namespace}`);
  }
  const keys = labelled.map((secret) => ({ info: infoOf(secret), secret }));
  if (!keys.some((key) => key.info.name === LEGACY_KEY_NAME)) {
    try {
      const legacy = await k.core.readNamespacedSecret({ namespace: settings.namespace, name: LEGACY_KEY_NAME });
      keys.push({ info: infoOf(legacy), secret: legacy });
    } catch (error) {
      if ((error as { code?: number }).code !== 404)
        throw toKubeError(error, `reading ${k.cluster}/${settings.namespace}/${LEGACY_KEY_NAME}`);
    }
  }
  return keys.sort(byNotBefore);
}

/** The controller's keys, oldest first: names, fingerprints and dates only. */
export async function listKeys(k: KubeClients, settings: ControllerSettings): Promise<KeyInfo[]> {
  return (await readKeySecrets(k, settings)).map((key) => key.info);
}

function compactTime(iso: string): string {
  // Label values allow [A-Za-z0-9_.-]: 2026-12-02T18:00:00.000Z -> 20261202T180000Z
  return iso.replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
}

function fromCompactTime(text: string | undefined): string {
  const m = text?.match(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/);
  return m ? `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}Z` : (text ?? '');
}

async function ensureNamespace(k: KubeClients, namespace: string): Promise<void> {
  try {
    await k.core.readNamespace({ name: namespace });
  } catch (error) {
    if ((error as { code?: number }).code !== 404)
      throw toKubeError(error, `reading namespace ${k.cluster}/${namespace}`);
    try {
      await k.core.createNamespace({ body: { metadata: { name: namespace } } });
    } catch (createError) {
      if ((createError as { code?: number }).code !== 409)
        throw toKubeError(createError, `creating namespace ${k.cluster}/${namespace}`);
    }
  }
}

export async function listBackups(
  target: KubeClients,
  backupNamespace: string,
  sourceCluster?: string,
): Promise<BackupInfo[]> {
  let items: V1Secret[];
  try {
    const selector = sourceCluster
      ? `${BACKUP_LABEL}=true,${SOURCE_CLUSTER_LABEL}=${sourceCluster}`
      : `${BACKUP_LABEL}=true`;
    items = (await target.core.listNamespacedSecret({ namespace: backupNamespace, labelSelector: selector })).items;
  } catch (error) {
    if ((error as { code?: number }).code === 404) return [];
    throw toKubeError(error, `listing backups in ${target.cluster}/${backupNamespace}`);
  }
  return items
    .map((secret) => ({
      ...infoOf(secret),
      sourceCluster: secret.metadata?.labels?.[SOURCE_CLUSTER_LABEL] ?? '',
      sourceName: secret.metadata?.annotations?.['rollcall.io/source-name'] ?? '',
      backedUpAt: fromCompactTime(secret.metadata?.labels?.[BACKED_UP_AT_LABEL]),
    }))
    .sort((a, b) => a.notBefore.localeCompare(b.notBefore) || a.name.localeCompare(b.name));
}

export interface BackupResult {
  sourceCluster: string;
  location: string;
  /** Keys copied by this run. */
  created: BackupInfo[];
  /** Keys whose certificate was already backed up (nothing to do). */
  alreadyBackedUp: KeyInfo[];
  newestKey?: KeyInfo;
  newestBackup?: BackupInfo;
}

/**
 * Copies every key Secret of the source cluster's controller into the backup namespace as
 * `<cluster>-<key name>`, labelled with source cluster and time. A key whose certificate is
 * already there is skipped, so running it again changes nothing.
 */
export async function backupKeys(opts: {
  source: KubeClients;
  sourceCluster: string;
  target: KubeClients;
  backupNamespace: string;
  settings: ControllerSettings;
  now: Date;
}): Promise<BackupResult> {
  const keys = await readKeySecrets(opts.source, opts.settings);
  if (!keys.length)
    throw new KubeError(
      'not_found',
      `cluster ${opts.sourceCluster} has no sealed-secrets keys in ${opts.settings.namespace}: is the controller installed there?`,
    );
  await ensureNamespace(opts.target, opts.backupNamespace);
  const existing = await listBackups(opts.target, opts.backupNamespace, opts.sourceCluster);
  const have = new Set(existing.map((b) => b.fingerprint));
  const created: BackupInfo[] = [];
  const alreadyBackedUp: KeyInfo[] = [];
  const at = compactTime(opts.now.toISOString());
  for (const key of keys) {
    if (have.has(key.info.fingerprint)) {
      alreadyBackedUp.push(key.info);
      continue;
    }
    const name = `${opts.sourceCluster}-${key.info.name}`.toLowerCase().slice(0, 253);
    try {
      await opts.target.core.createNamespacedSecret({
        namespace: opts.backupNamespace,
        body: {
          metadata: {
            name,
            labels: { [BACKUP_LABEL]: 'true', [SOURCE_CLUSTER_LABEL]: opts.sourceCluster, [BACKED_UP_AT_LABEL]: at },
            annotations: {
              'rollcall.io/source-name': key.info.name,
              'rollcall.io/source-namespace': key.info.namespace,
              'rollcall.io/fingerprint': key.info.fingerprint,
            },
          },
          type: 'kubernetes.io/tls',
          data: { 'tls.crt': key.secret.data!['tls.crt'], 'tls.key': key.secret.data!['tls.key'] },
        },
      });
    } catch (error) {
      throw toKubeError(
        error,
        `backing up ${opts.sourceCluster}/${key.info.name} to ${opts.target.cluster}/${opts.backupNamespace}`,
      );
    }
    created.push({
      ...key.info,
      name,
      sourceCluster: opts.sourceCluster,
      sourceName: key.info.name,
      backedUpAt: opts.now.toISOString(),
    });
  }
  const backups = await listBackups(opts.target, opts.backupNamespace, opts.sourceCluster);
  return {
    sourceCluster: opts.sourceCluster,
    location: `${opts.target.cluster}/${opts.backupNamespace}`,
    created,
    alreadyBackedUp,
    newestKey: keys[keys.length - 1]?.info,
    newestBackup: backups[backups.length - 1],
  };
}

export interface SealedSecretSummary {
  total: number;
  synced: number;
  failing: { namespace: string; name: string; message: string }[];
}

export async function sealedSecretStatus(k: KubeClients): Promise<SealedSecretSummary> {
  let items: any[];
  try {
    items =
      (
        (await k.custom.listClusterCustomObject({
          group: 'bitnami.com',
          version: 'v1alpha1',
          plural: 'sealedsecrets',
        })) as any
      ).items ?? [];
  } catch (error) {
    throw toKubeError(error, `listing SealedSecrets on ${k.cluster}`);
  }
  const failing: SealedSecretSummary['failing'] = [];
  let synced = 0;
  for (const ss of items) {
    const condition = (ss.status?.conditions ?? []).find((c: { type: string }) => c.type === 'Synced');
    if (condition?.status === 'True') synced++;
    else
      failing.push({
        namespace: ss.metadata.namespace,
        name: ss.metadata.name,
        message: condition?.message ?? 'not reconciled yet',
      });
  }
  return { total: items.length, synced, failing };
}

/** Where restored keys come from: another cluster's controller, or the backups of one. */
export type KeySource =
  | { kind: 'cluster'; kube: KubeClients; cluster: string }
  | { kind: 'backup'; kube: KubeClients; namespace: string; sourceCluster: string; name?: string };

async function sourceKeys(source: KeySource, settings: ControllerSettings): Promise<KeySecret[]> {
  if (source.kind === 'cluster') return readKeySecrets(source.kube, settings);
  let items: V1Secret[];
  try {
    items = (
      await source.kube.core.listNamespacedSecret({
        namespace: source.namespace,
        labelSelector: `${BACKUP_LABEL}=true,${SOURCE_CLUSTER_LABEL}=${source.sourceCluster}`,
      })
    ).items;
  } catch (error) {
    throw toKubeError(
      error,
      `reading backups of ${source.sourceCluster} in ${source.kube.cluster}/${source.namespace}`,
    );
  }
  const chosen = source.name ? items.filter((s) => s.metadata?.name === source.name) : items;
  if (source.name && !chosen.length) {
    throw new KubeError(
      'not_found',
      `no backup named ${source.name} for ${source.sourceCluster} in ${source.kube.cluster}/${source.namespace}`,
    );
  }
  return chosen
    .map((secret) => {
      const restoredName = secret.metadata?.annotations?.['rollcall.io/source-name'] ?? secret.metadata!.name!;
      return { info: { ...infoOf(secret), name: restoredName }, secret };
    })
    .sort(byNotBefore);
}

export interface RestorePlan {
  toCreate: KeyInfo[];
  alreadyPresent: KeyInfo[];
  /** Keys on the target not in the source: what its controller generated. */
  generated: KeyInfo[];
  /** Same name on the target, different certificate: refused. */
  conflicts: { name: string; sourceFingerprint: string; targetFingerprint: string }[];
}

export async function planRestore(
  source: KeySource,
  target: KubeClients,
  settings: ControllerSettings,
): Promise<RestorePlan> {
  const [from, to] = await Promise.all([sourceKeys(source, settings), readKeySecrets(target, settings)]);
  if (!from.length)
    throw new KubeError(
      'not_found',
      source.kind === 'cluster'
        ? `cluster ${source.cluster} has no sealed-secrets keys to restore from`
        : `no backups of ${source.sourceCluster} found`,
    );
  const targetByName = new Map(to.map((k) => [k.info.name, k.info]));
  const targetPrints = new Set(to.map((k) => k.info.fingerprint));
  const sourcePrints = new Set(from.map((k) => k.info.fingerprint));
  const plan: RestorePlan = { toCreate: [], alreadyPresent: [], generated: [], conflicts: [] };
  for (const key of from) {
    const same = targetByName.get(key.info.name);
    if (same && same.fingerprint !== key.info.fingerprint)
      plan.conflicts.push({
        name: key.info.name,
        sourceFingerprint: key.info.fingerprint,
        targetFingerprint: same.fingerprint,
      });
    else if (targetPrints.has(key.info.fingerprint)) plan.alreadyPresent.push(key.info);
    else plan.toCreate.push(key.info);
  }
  plan.generated = to.filter((k) => !sourcePrints.has(k.info.fingerprint)).map((k) => k.info);
  return plan;
}

/** Creates the source keys on the target with the active label and the same names. Idempotent. */
export async function writeRestoredKeys(
  source: KeySource,
  target: KubeClients,
  settings: ControllerSettings,
): Promise<{ created: KeyInfo[]; alreadyPresent: KeyInfo[] }> {
  const plan = await planRestore(source, target, settings);
  if (plan.conflicts.length) {
    const c = plan.conflicts[0];
    throw new KubeError(
      'conflict',
      `key ${c.name} already exists on ${target.cluster} with a different certificate (${c.targetFingerprint.slice(0, 23)}… vs ${c.sourceFingerprint.slice(0, 23)}…); refusing to overwrite it`,
    );
  }
  const keys = await sourceKeys(source, settings);
  const created: KeyInfo[] = [];
  for (const key of keys) {
    if (!plan.toCreate.some((k) => k.fingerprint === key.info.fingerprint)) continue;
    try {
      await target.core.createNamespacedSecret({
        namespace: settings.namespace,
        body: {
          metadata: {
            name: key.info.name,
            labels: { [KEY_LABEL]: 'active' },
            annotations: {
              'rollcall.io/restored-from':
                source.kind === 'cluster' ? source.cluster : `${source.kube.cluster}/${source.namespace}`,
            },
          },
          type: 'kubernetes.io/tls',
          data: { 'tls.crt': key.secret.data!['tls.crt'], 'tls.key': key.secret.data!['tls.key'] },
        },
      });
    } catch (error) {
      throw toKubeError(error, `creating key ${key.info.name} on ${target.cluster}`);
    }
    created.push({ ...key.info, namespace: settings.namespace, state: 'active' });
  }
  return { created, alreadyPresent: plan.alreadyPresent };
}

export async function deleteKeys(
  target: KubeClients,
  settings: ControllerSettings,
  names: string[],
): Promise<string[]> {
  const deleted: string[] = [];
  for (const name of names) {
    try {
      await target.core.deleteNamespacedSecret({ namespace: settings.namespace, name });
      deleted.push(name);
    } catch (error) {
      if ((error as { code?: number }).code !== 404)
        throw toKubeError(error, `deleting key ${name} on ${target.cluster}`);
    }
  }
  return deleted;
}

/** Keys are read once at start, so a restore needs a restart: delete the controller's pods. */
export async function restartController(target: KubeClients, settings: ControllerSettings): Promise<string[]> {
  let pods;
  try {
    pods = (await target.core.listNamespacedPod({ namespace: settings.namespace, labelSelector: settings.podSelector }))
      .items;
  } catch (error) {
    throw toKubeError(error, `listing controller pods on ${target.cluster}`);
  }
  if (!pods.length)
    throw new KubeError(
      'not_found',
      `no pods match ${settings.podSelector} in ${target.cluster}/${settings.namespace}: check sealedSecrets.controller in rollcall.yaml (Helm installs use app.kubernetes.io/name=sealed-secrets)`,
    );
  for (const pod of pods) {
    try {
      await target.core.deleteNamespacedPod({ namespace: settings.namespace, name: pod.metadata!.name! });
    } catch (error) {
      if ((error as { code?: number }).code !== 404)
        throw toKubeError(error, `deleting pod ${pod.metadata?.name} on ${target.cluster}`);
    }
  }
  return pods.map((p) => p.metadata!.name!);
}

/** Waits until a controller pod not in `oldPods` is Ready. */
export async function waitControllerReady(
  target: KubeClients,
  settings: ControllerSettings,
  oldPods: string[],
  timeoutMs: number,
  pollMs = 500,
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pods = (
      await target.core.listNamespacedPod({ namespace: settings.namespace, labelSelector: settings.podSelector })
    ).items;
    const ready = pods.find(
      (p) =>
        !oldPods.includes(p.metadata!.name!) &&
        p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    );
    if (ready) return ready.metadata!.name!;
    if (Date.now() > deadline)
      throw new KubeError(
        'unavailable',
        `the sealed-secrets controller on ${target.cluster} was not Ready within ${typedDuration(timeoutMs)}`,
      );
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

export interface KeyBackupStatus {
  cluster: string;
  newestKey?: { name: string; notBefore: string; fingerprint: string };
  newestBackup?: { name: string; notBefore: string; fingerprint: string; backedUpAt: string };
  /** The newest key's certificate is in the backups: a restore from them can decrypt everything sealed so far. */
  upToDate: boolean;
  /** Why the cluster could not be checked (unreachable, forbidden): said, not hidden. */
  error?: string;
}

/**
 * For digests: per cluster, the newest controller key against the newest backed-up key. The
 * controller seals with its newest key and renews monthly (argocd-facts C), so a backup that lacks
 * that key cannot decrypt what was sealed since. Names, NotBefore and fingerprints only.
 */
export async function keyBackupStatus(opts: {
  clusters: ReadonlyMap<string, KubeClients>;
  backup: { cluster: string; namespace: string };
  settings: ControllerSettings;
  /** Which clusters to report; default every configured cluster except the backup cluster. */
  only?: string[];
}): Promise<KeyBackupStatus[]> {
  const names = opts.only ?? [...opts.clusters.keys()].filter((c) => c !== opts.backup.cluster);
  const statuses: KeyBackupStatus[] = [];
  for (const cluster of names) {
    const entry: KeyBackupStatus = { cluster, upToDate: false };
    try {
      const keys = await listKeys(kubeFor(opts.clusters, cluster), opts.settings);
      const newest = keys[keys.length - 1];
      if (newest) entry.newestKey = { name: newest.name, notBefore: newest.notBefore, fingerprint: newest.fingerprint };
      const backups = await listBackups(kubeFor(opts.clusters, opts.backup.cluster), opts.backup.namespace, cluster);
      const last = backups[backups.length - 1];
      if (last)
        entry.newestBackup = {
          name: last.name,
          notBefore: last.notBefore,
          fingerprint: last.fingerprint,
          backedUpAt: last.backedUpAt,
        };
      entry.upToDate = !!newest && backups.some((b) => b.fingerprint === newest.fingerprint);
    } catch (error) {
      entry.error = (error as Error).message;
    }
    statuses.push(entry);
  }
  return statuses;
}
