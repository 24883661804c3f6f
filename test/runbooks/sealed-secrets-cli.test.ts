import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/infra/config/load.js';
import { createKubeClients, kubeFor } from '../../src/infra/kube/clients.js';
import { listKeys, sealedSecretStatus } from '../../src/infra/kube/sealed-secrets.js';
import { runSimCommand, type SimServer } from '../../src/sim/cli.js';

describe('rollcall sim --scenario sealed-secrets-migration --write-config', () => {
  let server: SimServer | undefined;
  afterAll(async () => server?.stop());

  it('prints a kube line per cluster and writes a config whose kube clients and backup location work', async () => {
    const lines: string[] = [];
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'rollcall-sim-cli-')), 'rollcall.yaml');
    server = await runSimCommand({
      scenario: 'sealed-secrets-migration',
      writeConfig: file,
      untilKilled: false,
      out: (l) => lines.push(l),
    });
    expect(lines.filter((l) => l.startsWith('kube ')).map((l) => l.split(' ').slice(0, 2).join(' '))).toEqual([
      'kube prod-old',
      'kube prod-new',
      'kube ops',
    ]);
    expect(lines.find((l) => l.startsWith('kube prod-new '))).toMatch(
      /^kube prod-new https:\/\/127\.0\.0\.1:\d+\/k\/prod-new$/,
    );

    const { config } = loadConfig(file);
    expect(config.kube.clusters.map((c) => c.name)).toEqual(['prod-old', 'prod-new', 'ops']);
    expect(config.sealedSecrets.backup).toEqual({ cluster: 'ops', namespace: 'sealed-secrets-backup' });
    const kube = await createKubeClients(config);
    expect((await listKeys(kubeFor(kube, 'prod-old'), config.sealedSecrets.controller)).map((k) => k.name)).toEqual([
      'sealed-secrets-keyq8x2m',
      'sealed-secrets-keyz4k7p',
      'sealed-secrets-keyb9w3d',
    ]);
    expect((await sealedSecretStatus(kubeFor(kube, 'prod-new'))).failing).toHaveLength(5);
  });
});
