/**
 * kubectl (client-go) against the simulated Kubernetes API with the kubeconfig `rollcall sim
 * --write-config` writes: over HTTPS with the simulator's CA, so client-go sends the bearer token,
 * after discovery (/api, /apis, group-version lists), with the server-side Table `kubectl get` asks for.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { runSimCommand, type SimServer } from '../../src/sim/cli.js';

const exec = promisify(execFile);
const KUBECTL_MISSING = await exec('kubectl', ['version', '--client']).then(
  () => false,
  () => true,
);
if (KUBECTL_MISSING) console.warn('kubectl is not installed on this machine: skipping the kubectl tests');

let dir: string;
let server: SimServer;
let kubeconfig: string;

// Asynchronous on purpose: the simulator answers from this process's event loop.
async function kubectl(...args: string[]): Promise<string> {
  const { stdout } = await exec('kubectl', ['--kubeconfig', kubeconfig, '--request-timeout=10s', ...args]);
  return stdout;
}

describe.skipIf(KUBECTL_MISSING)('kubectl with the kubeconfig the simulator writes', () => {
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'rollcall-kubectl-'));
    server = await runSimCommand({
      scenario: 'sealed-secrets-migration',
      port: 0,
      writeConfig: path.join(dir, 'rollcall.yaml'),
      out: () => {},
      untilKilled: false,
    });
    kubeconfig = path.join(dir, 'rollcall.kubeconfig');
  }, 30_000);
  afterAll(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('writes https servers and the CA that signed them, no insecure-skip-tls-verify', () => {
    const config = parse(readFileSync(kubeconfig, 'utf8'));
    for (const c of config.clusters) {
      expect(c.cluster.server).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/k\//);
      expect(Buffer.from(c.cluster['certificate-authority-data'], 'base64').toString()).toContain('BEGIN CERTIFICATE');
      expect(c.cluster['insecure-skip-tls-verify']).toBeUndefined();
    }
  });

  it('lists the sealed-secrets keys with the label selector of the README backup command', async () => {
    const out = await kubectl(
      '--context',
      'prod-old',
      'get',
      'secrets',
      '-n',
      'kube-system',
      '-l',
      'sealedsecrets.bitnami.com/sealed-secrets-key',
    );
    const lines = out.trim().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+TYPE\s+DATA\s+AGE$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 3))).toEqual([
      ['sealed-secrets-keyb9w3d', 'kubernetes.io/tls', '2'],
      ['sealed-secrets-keyq8x2m', 'kubernetes.io/tls', '2'],
      ['sealed-secrets-keyz4k7p', 'kubernetes.io/tls', '2'],
    ]);
    const yaml = parse(
      await kubectl(
        '--context',
        'prod-old',
        'get',
        'secret',
        '-n',
        'kube-system',
        '-l',
        'sealedsecrets.bitnami.com/sealed-secrets-key',
        '-o',
        'yaml',
      ),
    );
    expect(yaml.items).toHaveLength(3);
    expect(Object.keys(yaml.items[0].data).sort()).toEqual(['tls.crt', 'tls.key']);
  });

  it('shows SealedSecrets with the Status and Synced columns of the CRD', async () => {
    const out = await kubectl('--context', 'prod-new', 'get', 'sealedsecrets', '-A');
    expect(out.split('\n')[0]).toMatch(/^NAMESPACE\s+NAME\s+STATUS\s+SYNCED\s+AGE$/);
    expect(out).toMatch(/payments\s+payments-db\s+no key could decrypt secret \(password, username\)\s+False/);
  });

  it('gets pods and namespaces by label, and describes a key Secret without its data', async () => {
    const pods = await kubectl(
      '--context',
      'prod-old',
      'get',
      'pods',
      '-n',
      'kube-system',
      '-l',
      'name=sealed-secrets-controller',
    );
    expect(pods).toMatch(/sealed-secrets-controller-\S+\s+1\/1\s+Running/);
    const ns = await kubectl(
      '--context',
      'prod-old',
      'get',
      'ns',
      '-l',
      'kubernetes.io/metadata.name=kube-system',
      '-o',
      'name',
    );
    expect(ns.trim()).toBe('namespace/kube-system');
    const described = await kubectl(
      '--context',
      'prod-old',
      'describe',
      'secret',
      '-n',
      'kube-system',
      'sealed-secrets-keyb9w3d',
    );
    expect(described).toMatch(/Labels:\s+sealedsecrets\.bitnami\.com\/sealed-secrets-key=active/);
    expect(described).toMatch(/tls\.key:\s+\d+ bytes/);
    expect(described).not.toContain('BEGIN');
  });

  it('is refused with a wrong token, as a real API server would (kubectl: Unauthorized)', async () => {
    const bad = path.join(dir, 'bad.kubeconfig');
    writeFileSync(bad, readFileSync(kubeconfig, 'utf8').replace(/token: .+/g, 'token: not-the-token'));
    const failed = await exec('kubectl', [
      '--kubeconfig',
      bad,
      '--context',
      'prod-old',
      '--request-timeout=10s',
      'get',
      'secrets',
      '-n',
      'kube-system',
    ]).then(
      () => undefined,
      (e: { stderr: string }) => e.stderr,
    );
    expect(failed).toContain('You must be logged in to the server (Unauthorized)');
  });

  it('lists the resources it serves for kubectl api-resources', async () => {
    const out = await kubectl('--context', 'prod-old', 'api-resources');
    expect(out).toMatch(/sealedsecrets\s+bitnami\.com\/v1alpha1\s+true\s+SealedSecret/);
    expect(out).toMatch(/secrets\s+v1\s+true\s+Secret/);
  });
});
