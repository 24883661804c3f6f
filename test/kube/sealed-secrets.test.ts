import http from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKubeClients, kubeFor, type KubeClients } from '../../src/infra/kube/clients.js';
import {
  backupKeys,
  deleteKeys,
  listBackups,
  listKeys,
  planRestore,
  restartController,
  sealedSecretStatus,
  waitControllerReady,
  writeRestoredKeys,
} from '../../src/infra/kube/sealed-secrets.js';
import { parseConfig } from '../../src/infra/config/load.js';
import { SimKube } from '../../src/sim/kube/index.js';
import { kubeconfigYaml } from '../../src/sim/kube/kubeconfig.js';
import { KEY_AGES_MS, sealedSecretsMigration } from '../../src/sim/kube/scenario.js';
import { SIM_KEYS } from '../../src/sim/kube/keys.js';

const settings = {
  namespace: 'kube-system',
  name: 'sealed-secrets-controller',
  podSelector: 'name=sealed-secrets-controller',
};

describe('sealed-secrets keys against the simulated Kubernetes API', () => {
  let server: http.Server;
  let kube: SimKube;
  let clients: Map<string, KubeClients>;
  const operations: { cluster: string; method: string; path: string; body: unknown }[] = [];

  // The scenario's present: its keys are dated relative to it, and the simulated cluster's clock starts there.
  const scenarioNow = new Date();
  const ago = (ms: number) => new Date(scenarioNow.getTime() - ms).toISOString().slice(0, 10);

  beforeAll(async () => {
    const fixture = sealedSecretsMigration(scenarioNow);
    for (const k of fixture.kube!) if (k.sealedSecretsController) k.sealedSecretsController.startupMs = 50;
    kube = new SimKube(fixture.kube);
    server = http.createServer(async (req, res) => {
      const url = new URL(req.url!, 'http://localhost');
      if (!(await kube.handle(req, res, url, (op) => operations.push(op)))) res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-kube-'));
    const file = path.join(dir, 'kubeconfig');
    writeFileSync(
      file,
      kubeconfigYaml(
        [...kube.clusters.values()].map((c) => ({
          name: c.name,
          server: `http://127.0.0.1:${port}/k/${c.name}`,
          token: c.token,
        })),
      ),
    );
    const config = parseConfig(
      `instances: [{name: x, url: "http://127.0.0.1:1", token: t}]\nkube:\n  clusters:\n` +
        ['prod-old', 'prod-new', 'ops'].map((n) => `    - {name: ${n}, kubeconfig: ${file}, context: ${n}}\n`).join(''),
    );
    clients = await createKubeClients(config);
  });

  afterAll(async () => {
    kube.stop();
    await new Promise((r) => server.close(r));
  });

  it('lists keys with fingerprints and NotBefore dates, oldest first', async () => {
    const keys = await listKeys(kubeFor(clients, 'prod-old'), settings);
    expect(keys.map((k) => [k.name, k.notBefore.slice(0, 10), k.state])).toEqual([
      ['sealed-secrets-keyq8x2m', ago(KEY_AGES_MS.old1), 'active'],
      ['sealed-secrets-keyz4k7p', ago(KEY_AGES_MS.old2), 'active'],
      ['sealed-secrets-keyb9w3d', ago(KEY_AGES_MS.old3), 'active'],
    ]);
    expect(keys[0].fingerprint).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
  });

  it('names the configured clusters when asked for an unknown one', () => {
    expect(() => kubeFor(clients, 'prod-nwe')).toThrow(
      /no Kubernetes access configured for cluster "prod-nwe" \(configured: prod-old, prod-new, ops\)/,
    );
  });

  it('backs up every key once, labelled with source cluster and time; a second run changes nothing', async () => {
    const now = new Date('2026-12-02T08:00:00Z');
    const first = await backupKeys({
      source: kubeFor(clients, 'prod-old'),
      sourceCluster: 'prod-old',
      target: kubeFor(clients, 'ops'),
      backupNamespace: 'sealed-secrets-backup',
      settings,
      now,
    });
    expect(first.created.map((b) => b.name)).toEqual([
      'prod-old-sealed-secrets-keyq8x2m',
      'prod-old-sealed-secrets-keyz4k7p',
      'prod-old-sealed-secrets-keyb9w3d',
    ]);
    expect(first.newestBackup?.fingerprint).toBe(first.newestKey?.fingerprint);
    const writes = operations.length;
    const second = await backupKeys({
      source: kubeFor(clients, 'prod-old'),
      sourceCluster: 'prod-old',
      target: kubeFor(clients, 'ops'),
      backupNamespace: 'sealed-secrets-backup',
      settings,
      now,
    });
    expect(second.created).toEqual([]);
    expect(second.alreadyBackedUp).toHaveLength(3);
    expect(operations.length).toBe(writes);
    const backups = await listBackups(kubeFor(clients, 'ops'), 'sealed-secrets-backup', 'prod-old');
    expect(backups.map((b) => [b.sourceCluster, b.sourceName, b.backedUpAt])).toContainEqual([
      'prod-old',
      'sealed-secrets-keyq8x2m',
      '2026-12-02T08:00:00Z',
    ]);
  });

  it('restores onto a cluster that cannot decrypt: keys, restart, every SealedSecret Synced', async () => {
    const target = kubeFor(clients, 'prod-new');
    const before = await sealedSecretStatus(target);
    expect(before.failing.map((f) => f.message)).toContain('no key could decrypt secret (password, username)');
    expect(before.synced).toBe(0);

    const source = {
      kind: 'backup' as const,
      kube: kubeFor(clients, 'ops'),
      namespace: 'sealed-secrets-backup',
      sourceCluster: 'prod-old',
    };
    const plan = await planRestore(source, target, settings);
    expect(plan.toCreate).toHaveLength(3);
    expect(plan.generated.map((k) => k.name)).toEqual(['sealed-secrets-keyn5t6v']);

    const written = await writeRestoredKeys(source, target, settings);
    expect(written.created.map((k) => k.name)).toEqual([
      'sealed-secrets-keyq8x2m',
      'sealed-secrets-keyz4k7p',
      'sealed-secrets-keyb9w3d',
    ]);
    // Written but not loaded: the controller reads keys only at start.
    expect((await sealedSecretStatus(target)).synced).toBe(0);

    await deleteKeys(
      target,
      settings,
      plan.generated.map((k) => k.name),
    );
    const oldPods = await restartController(target, settings);
    const newPod = await waitControllerReady(target, settings, oldPods, 5000, 20);
    expect(oldPods).not.toContain(newPod);
    const after = await sealedSecretStatus(target);
    expect(after).toEqual({ total: before.total, synced: before.total, failing: [] });

    // Idempotent: the same restore again creates nothing.
    expect((await writeRestoredKeys(source, target, settings)).created).toEqual([]);
  });

  it('never writes key material into the operation log', () => {
    const log = JSON.stringify(operations);
    for (const pair of Object.values(SIM_KEYS)) {
      expect(log).not.toContain(Buffer.from(pair.key).toString('base64').slice(0, 40));
      expect(log).not.toContain(pair.key.split('\n')[1]);
    }
    expect(operations.some((o) => o.method === 'POST' && o.path.endsWith('/secrets'))).toBe(true);
  });
});
