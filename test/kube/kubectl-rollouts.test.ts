/**
 * kubectl against the Rollouts of the canary-rollouts scenario on the simulated clusters: the Rollout CRD's
 * columns, the short name `ro`, the ReplicaSets they own, and a merge patch of the status subresource (what
 * Argo CD's resume action sends), which the simulator's Rollouts controller then acts on.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

async function kubectl(...args: string[]): Promise<string> {
  const { stdout } = await exec('kubectl', ['--kubeconfig', kubeconfig, '--request-timeout=10s', ...args]);
  return stdout;
}

describe.skipIf(KUBECTL_MISSING)('kubectl get rollouts.argoproj.io on the simulated clusters', () => {
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'rollcall-kubectl-ro-'));
    server = await runSimCommand({
      scenario: 'canary-rollouts',
      port: 0,
      frozen: true,
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

  it('prints the Rollout CRD columns', async () => {
    const out = await kubectl('--context', 'prod-us-east-1', 'get', 'rollouts.argoproj.io', '-n', 'storefront');
    const lines = out.trim().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+DESIRED\s+CURRENT\s+UP-TO-DATE\s+AVAILABLE\s+AGE$/);
    expect(lines[1].split(/\s+/).slice(0, 5)).toEqual(['storefront', '10', '12', '2', '12']);
  });

  it('finds them by short name in every namespace, with the ReplicaSets they own', async () => {
    const all = await kubectl('--context', 'prod-us-east-1', 'get', 'ro', '-A', '-o', 'name');
    expect(all.trim().split('\n').sort()).toEqual(['rollout.argoproj.io/search', 'rollout.argoproj.io/storefront']);
    const sets = await kubectl('--context', 'prod-us-east-1', 'get', 'rs', '-n', 'storefront', '-o', 'json');
    const items = (JSON.parse(sets) as { items: { metadata: { ownerReferences: { kind: string }[] } }[] }).items;
    expect(items).toHaveLength(2);
    expect(items.every((rs) => rs.metadata.ownerReferences[0].kind === 'Rollout')).toBe(true);
  });

  it('patches the status subresource as the resume action does', async () => {
    await kubectl(
      '--context',
      'prod-us-east-1',
      'patch',
      'rollout',
      'storefront',
      '-n',
      'storefront',
      '--type',
      'merge',
      '--subresource',
      'status',
      '-p',
      '{"status":{"pauseConditions":null}}',
    );
    const ro = JSON.parse(
      await kubectl('--context', 'prod-us-east-1', 'get', 'rollout', 'storefront', '-n', 'storefront', '-o', 'json'),
    ) as { status: { pauseConditions?: unknown; controllerPause?: boolean }; metadata: { generation: number } };
    expect(ro.status.pauseConditions).toBeUndefined();
    expect(ro.status.controllerPause).toBe(true);
    expect(ro.metadata.generation).toBe(4);
    const ops = server.state.operations.filter((o) => o.instance === 'kube');
    expect(ops.at(-1)).toMatchObject({ cluster: 'prod-us-east-1', method: 'PATCH' });
  });
});
