import { request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Application, ApplicationList } from '../../src/infra/argocd/types.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { selectApps, SelectorError } from '../../src/fleet/select.js';
import type { SimServer } from '../../src/sim/server.js';
import { startTestSim } from '../support/sim.js';

/**
 * One table of selectors, read three ways: the fleet's selection, the simulator's Argo CD
 * `?selector=` and its Kubernetes `labelSelector=`. They share one parser, so they must agree.
 */
const LABELS: Record<string, Record<string, string>> = {
  'pay-eu': { team: 'payments', env: 'prod', region: 'eu', 'app.kubernetes.io/part-of': 'shop' },
  'pay-us': { team: 'payments', env: 'prod', region: 'us' },
  'web-eu': { team: 'web', env: 'staging', region: 'eu', tier: 'front' },
  'auth-eu': { team: 'platform', env: 'prod', region: 'eu', tier: '' },
  bare: {},
};
const NAMES = Object.keys(LABELS).sort();

const app = (name: string): Application =>
  ({
    metadata: { name, namespace: 'argocd', labels: LABELS[name] },
    spec: {
      project: 'default',
      source: { repoURL: 'https://example.test/deploy.git', path: name },
      destination: { server: 'https://10.0.0.1:6443', namespace: name },
    },
    status: { sync: { status: 'Synced' }, health: { status: 'Healthy' } },
  }) as Application;

const MATCHES: [string, string[]][] = [
  ['', NAMES],
  ['team=payments', ['pay-eu', 'pay-us']],
  ['team==payments,region!=eu', ['pay-us']],
  ['region!=eu', ['bare', 'pay-us']],
  ['team in (web, platform)', ['auth-eu', 'web-eu']],
  ['team notin (payments)', ['auth-eu', 'bare', 'web-eu']],
  ['tier', ['auth-eu', 'web-eu']],
  ['!tier', ['bare', 'pay-eu', 'pay-us']],
  ['tier=', ['auth-eu']],
  ['app.kubernetes.io/part-of=shop', ['pay-eu']],
  ['env=prod,!tier,region in (eu)', ['pay-eu']],
  ['  env = staging ', ['web-eu']],
  ['team=nobody', []],
];

const MALFORMED: [string, number, string][] = [
  ['team in (a', 11, "expected ')' after values"],
  ['team in ()', 10, 'in needs at least one value'],
  ['team in a', 9, "expected '(' after in"],
  ['team ~ x', 6, 'expected an operator (=, ==, !=, in, notin)'],
  ['=x', 1, 'expected a label key'],
  ['env=a b', 7, "expected ',' between requirements"],
  ['env=prod,', 10, "expected a requirement after ','"],
  ['-a=b', 1, 'invalid label key "-a"'],
  [`${'k'.repeat(64)}=v`, 1, `invalid label key "${'k'.repeat(64)}"`],
  ['a=b%c', 3, 'invalid label value "b%c"'],
];

let sim: SimServer;
const fleet = StaticFleet.fromObjects([{ name: 'prod', applications: NAMES.map(app) }]);

beforeAll(async () => {
  sim = await startTestSim({
    fixture: {
      instances: [{ name: 'prod', applications: NAMES.map(app) }],
      kube: [
        {
          cluster: 'c1',
          objects: NAMES.map((name) => ({
            apiVersion: 'v1',
            kind: 'Namespace',
            metadata: { name, labels: LABELS[name] },
          })),
        },
      ],
    },
    frozen: true,
  });
});
afterAll(async () => {
  await sim.stop();
});

function fleetNames(selector: string): string[] {
  return selectApps(fleet, { labels: selector })
    .map((a) => a.app.metadata.name)
    .sort();
}

async function argoList(selector: string): Promise<{ status: number; body: any }> {
  const inst = sim.instances[0];
  const res = await fetch(`${inst.url}/api/v1/applications?selector=${encodeURIComponent(selector)}`, {
    headers: { authorization: `Bearer ${inst.token}` },
  });
  return { status: res.status, body: await res.json() };
}

/** The simulated Kubernetes API speaks TLS with its own CA, as a real API server does. */
function kubeList(selector: string): Promise<{ status: number; body: any }> {
  const kube = sim.kube[0];
  return new Promise((resolve, reject) => {
    const req = request(
      `${kube.url}/api/v1/namespaces?labelSelector=${encodeURIComponent(selector)}`,
      { ca: sim.kubeCaPem, headers: { authorization: `Bearer ${kube.token}` } },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const names = (list: { items?: { metadata: { name: string } }[] | null }) =>
  (list.items ?? []).map((i) => i.metadata.name).sort();

describe('a label selector picks the same objects in the fleet and in the simulator', () => {
  it.each(MATCHES)('%j picks %j', async (selector, want) => {
    expect(fleetNames(selector)).toEqual(want);
    const argo = await argoList(selector);
    expect(argo.status).toBe(200);
    expect(names(argo.body as ApplicationList)).toEqual(want);
    const kube = await kubeList(selector);
    expect(kube.status).toBe(200);
    expect(names(kube.body)).toEqual(want);
  });

  it.each(MALFORMED)('%j is refused everywhere at column %i: %s', async (selector, at, problem) => {
    const expected = `invalid label selector at ${at}: ${problem}`;
    let fleetError: unknown;
    try {
      fleetNames(selector);
    } catch (e) {
      fleetError = e;
    }
    expect(fleetError).toBeInstanceOf(SelectorError);
    expect((fleetError as SelectorError).code).toBe('invalid_selector');
    expect((fleetError as SelectorError).message).toContain(expected);
    expect((fleetError as SelectorError).details.position).toBe(at);

    const argo = await argoList(selector);
    expect(argo.status).toBe(500);
    expect(argo.body.code).toBe(2);
    expect(argo.body.message).toContain(`error parsing the selector: ${expected}`);

    const kube = await kubeList(selector);
    expect(kube.status).toBe(400);
    expect(kube.body).toMatchObject({ kind: 'Status', reason: 'BadRequest' });
    expect(kube.body.message).toContain(expected);
  });
});
