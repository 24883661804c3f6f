import { afterEach, describe, expect, it } from 'vitest';
import type { Application, ResourceNode, Rollout } from '../../src/infra/argocd/types.js';
import type { Fixture } from '../../src/sim/fixture-types.js';
import { loadScenario } from '../../src/sim/scenarios/index.js';
import type { SimServer } from '../../src/sim/server.js';
import { simOperations, startTestSim } from '../support/sim.js';

// Argo Rollouts in the simulator (scenario canary-rollouts): the Rollouts live on simulated clusters, Argo CD's
// resource endpoints read them and run their actions (server/application/application.go), a clock-driven
// controller moves them on, and Argo CD's health.lua says what the apps' trees show.

let sim: SimServer | undefined;
afterEach(async () => {
  await sim?.stop();
  sim = undefined;
});

const PAUSED = 'storefront-prod-us-east-1';
const DEGRADED = 'storefront-prod-eu-west-1';
const PROMOTED = 'storefront-prod-ca-central-1';
const BLUE_GREEN = 'search-prod-us-east-1';

const ROLLOUT = { group: 'argoproj.io', version: 'v1alpha1', kind: 'Rollout' };
const refOf = (app: string) => {
  const name = app.startsWith('search') ? 'search' : 'storefront';
  return { ...ROLLOUT, namespace: name, resourceName: name };
};

async function start(fixture?: Fixture): Promise<SimServer> {
  sim = await startTestSim(fixture ? { fixture } : { scenario: 'canary-rollouts' });
  return sim;
}

function api(token?: string) {
  const instance = sim!.instances[0];
  const headers = { Authorization: `Bearer ${token ?? instance.token}`, 'content-type': 'application/json' };
  const base = `${instance.url}/api/v1/applications`;
  return {
    get: (path: string) => fetch(`${base}/${path}`, { headers }),
    post: (path: string, body: unknown) =>
      fetch(`${base}/${path}`, {
        method: 'POST',
        headers,
        body: typeof body === 'string' ? body : JSON.stringify(body),
      }),
  };
}

const query = (r: Record<string, string>) => new URLSearchParams(r).toString();

async function rollout(app: string): Promise<Rollout> {
  const res = await api().get(`${app}/resource?${query(refOf(app))}`);
  expect(res.status).toBe(200);
  return JSON.parse(((await res.json()) as { manifest: string }).manifest) as Rollout;
}

async function actions(app: string): Promise<Record<string, boolean>> {
  const res = await api().get(`${app}/resource/actions?${query(refOf(app))}`);
  expect(res.status).toBe(200);
  const body = (await res.json()) as { actions: { name: string; disabled?: boolean }[] };
  return Object.fromEntries(body.actions.map((a) => [a.name, a.disabled === true]));
}

function run(app: string, action: string, extra: Record<string, unknown> = {}, token?: string) {
  return api(token).post(`${app}/resource/actions/v2`, { ...refOf(app), action, ...extra });
}

async function appOf(app: string): Promise<Application> {
  return (await (await api().get(app)).json()) as Application;
}

const rolloutHealthOf = (app: Application) => app.status?.resources?.find((r) => r.kind === 'Rollout')?.health;

describe('the canary-rollouts scenario', () => {
  it('serves the Rollouts as Argo Rollouts left them: a controller pass changes none of them, nor their apps', async () => {
    const server = await start();
    const kube = server.kube.find((k) => k.cluster === 'prod-us-east-1')!;
    const list = async (path: string) =>
      (
        (await (
          await fetch(`${server.url}/k/prod-us-east-1${path}`, { headers: { Authorization: `Bearer ${kube.token}` } })
        ).json()) as {
          items: { metadata: { name: string; resourceVersion: string } }[];
        }
      ).items.map((o) => `${o.metadata.name}@${o.metadata.resourceVersion}`);
    const before = [await list('/apis/argoproj.io/v1alpha1/rollouts'), await list('/apis/apps/v1/replicasets')];
    const apps = async () =>
      (await Promise.all([PAUSED, DEGRADED, PROMOTED, BLUE_GREEN].map(appOf))).map((a) => a.metadata.resourceVersion);
    const appsBefore = await apps();
    server.controller.advance(5_000);
    expect([await list('/apis/argoproj.io/v1alpha1/rollouts'), await list('/apis/apps/v1/replicasets')]).toEqual(
      before,
    );
    expect(before[0]).toHaveLength(2);
    expect(await apps()).toEqual(appsBefore);
  });

  it("gives each app the health Argo CD's health.lua gives its Rollout", async () => {
    await start();
    expect(rolloutHealthOf(await appOf(PAUSED))).toEqual({ status: 'Suspended', message: 'CanaryPauseStep' });
    expect((await appOf(PAUSED)).status?.health?.status).toBe('Suspended');
    expect(rolloutHealthOf(await appOf(DEGRADED))).toEqual({
      status: 'Degraded',
      message: expect.stringMatching(
        /^ProgressDeadlineExceeded: ReplicaSet "storefront-\w+" has timed out progressing\.$/,
      ),
    });
    expect((await appOf(PROMOTED)).status?.health?.status).toBe('Healthy');
    expect(rolloutHealthOf(await appOf(BLUE_GREEN))).toEqual({ status: 'Suspended', message: 'BlueGreenPause' });
    const ro = await rollout(PAUSED);
    expect(ro.status).toMatchObject({
      currentStepIndex: 1,
      phase: 'Paused',
      canary: { weights: { canary: { weight: 20 }, stable: { weight: 80 } } },
    });
    expect(ro.spec.strategy?.canary?.steps).toHaveLength(4);
  });

  it('shows the Rollout in the resource tree with its ReplicaSets and Pods; the crash-looping canary pods Degraded', async () => {
    await start();
    const tree = (await (await api().get(`${DEGRADED}/resource-tree`)).json()) as { nodes: ResourceNode[] };
    const rolloutNode = tree.nodes.find((n) => n.kind === 'Rollout')!;
    expect(rolloutNode).toMatchObject({
      group: 'argoproj.io',
      name: 'storefront',
      info: [{ name: 'Revision', value: 'Rev:7' }],
    });
    expect(rolloutNode.health?.status).toBe('Degraded');
    const sets = tree.nodes.filter((n) => n.kind === 'ReplicaSet');
    expect(sets.map((n) => n.info?.[0].value).sort()).toEqual(['Rev:6', 'Rev:7']);
    expect(sets.every((n) => n.parentRefs?.[0].uid === rolloutNode.uid)).toBe(true);
    const pods = tree.nodes.filter((n) => n.kind === 'Pod');
    expect(pods).toHaveLength(12);
    const crashing = pods.filter((p) => p.health?.status === 'Degraded');
    expect(crashing).toHaveLength(2);
    expect(crashing[0].health?.message).toMatch(/^back-off 5m0s restarting failed container=storefront pod=/);
    expect(crashing[0].images).toEqual(['registry.example.com/commerce/storefront:v4.2.0']);
    // Only pods carry images in Argo CD's tree.
    expect(rolloutNode.images).toBeUndefined();
    const pod = crashing[0];
    const events = (await (
      await api().get(
        `${DEGRADED}/events?${query({ resourceUID: pod.uid!, resourceName: pod.name, resourceNamespace: 'storefront' })}`,
      )
    ).json()) as { items: { reason: string; message: string }[] };
    expect(events.items.find((e) => e.reason === 'BackOff')?.message).toMatch(
      /^Back-off restarting failed container storefront in pod storefront-/,
    );
  });

  it('serves Rollouts and ReplicaSets on the Kubernetes API, as kubectl get reads them', async () => {
    const server = await start();
    const kube = server.kube.find((k) => k.cluster === 'prod-us-east-1')!;
    const res = await fetch(`${server.url}/k/prod-us-east-1/apis/argoproj.io/v1alpha1/namespaces/storefront/rollouts`, {
      headers: { Authorization: `Bearer ${kube.token}`, Accept: 'application/json;as=Table;g=meta.k8s.io;v=v1' },
    });
    const table = (await res.json()) as { columnDefinitions: { name: string }[]; rows: { cells: unknown[] }[] };
    expect(table.columnDefinitions.map((c) => c.name)).toEqual([
      'Name',
      'Desired',
      'Current',
      'Up-to-date',
      'Available',
      'Age',
    ]);
    expect(table.rows[0].cells.slice(0, 5)).toEqual(['storefront', 10, 12, 2, 12]);
    const discovery = (await (
      await fetch(`${server.url}/k/prod-us-east-1/apis/argoproj.io/v1alpha1`, {
        headers: { Authorization: `Bearer ${kube.token}` },
      })
    ).json()) as { resources: { name: string; shortNames?: string[] }[] };
    expect(discovery.resources).toContainEqual(expect.objectContaining({ name: 'rollouts', shortNames: ['ro'] }));
  });
});

describe('GET …/resource/actions: what discovery.lua offers for the Rollout as it is now', () => {
  it('offers resume, abort, promote-full and skip on a paused canary; retry only once aborted', async () => {
    await start();
    expect(await actions(PAUSED)).toEqual({
      restart: false,
      resume: false,
      abort: false,
      retry: true,
      pause: false,
      'promote-full': false,
      'skip-current-step': false,
    });
    // A fully promoted canary has nothing to resume, abort, retry, pause, promote or skip.
    expect(Object.entries(await actions(PROMOTED)).filter(([, disabled]) => !disabled)).toEqual([['restart', false]]);
    // Blue-green: no steps to skip.
    expect((await actions(BLUE_GREEN))['skip-current-step']).toBe(true);
    expect((await actions(BLUE_GREEN)).resume).toBe(false);
    // The Degraded canary is not paused: nothing to resume.
    expect((await actions(DEGRADED)).resume).toBe(true);
  });

  it('writes enabled actions without `disabled` (omitempty) and restart with its display name', async () => {
    await start();
    const body = (await (await api().get(`${PAUSED}/resource/actions?${query(refOf(PAUSED))}`)).json()) as {
      actions: Record<string, unknown>[];
    };
    expect(body.actions).toContainEqual({ name: 'restart', displayName: 'Restart Pods' });
    expect(body.actions).toContainEqual({ name: 'resume' });
    expect(body.actions).toContainEqual({ name: 'retry', disabled: true });
  });

  it('answers {} for a kind without actions, and Argo CD’s errors for a resource it cannot find', async () => {
    await start();
    const configMap = await api().get(
      `${PAUSED}/resource/actions?${query({ namespace: 'storefront', resourceName: 'storefront-config', version: 'v1', kind: 'ConfigMap' })}`,
    );
    expect(await configMap.json()).toEqual({});
    const missing = await api().get(
      `${PAUSED}/resource/actions?${query({ ...refOf(PAUSED), resourceName: 'checkout' })}`,
    );
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({
      code: 3,
      message: `Rollout argoproj.io checkout not found as part of application ${PAUSED}`,
    });
    const { kind: _kind, ...noKind } = refOf(PAUSED);
    const unset = await api().get(`${PAUSED}/resource/actions?${query(noKind)}`);
    expect(unset.status).toBe(500);
    expect(await unset.json()).toMatchObject({
      code: 13,
      message: 'grpc: error while marshaling: proto: required field "kind" not set',
    });
  });
});

describe('POST …/resource/actions/v2: the action script applied to the live Rollout', () => {
  it('resume clears the pause; the controller then takes the steps on its clock until the canary is stable', async () => {
    const server = await start();
    const res = await run(PAUSED, 'resume');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({});
    const resumed = await rollout(PAUSED);
    expect(resumed.status?.pauseConditions).toBeUndefined();
    // Only the controller moves the step: until its next pass the Rollout still says Paused.
    expect(resumed.status).toMatchObject({ currentStepIndex: 1, phase: 'Paused', controllerPause: true });
    server.controller.advance(1_000);
    expect((await rollout(PAUSED)).status).toMatchObject({ currentStepIndex: 2, phase: 'Progressing' });
    expect((await appOf(PAUSED)).status?.health?.status).toBe('Progressing');
    server.controller.advance(12_000);
    const timedPause = await rollout(PAUSED);
    expect(timedPause.status).toMatchObject({
      currentStepIndex: 3,
      phase: 'Paused',
      canary: { weights: { canary: { weight: 50 } } },
      pauseConditions: [{ reason: 'CanaryPauseStep' }],
    });
    // pause: {duration: 10m} resumes by itself.
    server.controller.advance(10 * 60_000 + 15_000);
    const done = await rollout(PAUSED);
    expect(done.status).toMatchObject({ currentStepIndex: 4, phase: 'Healthy', replicas: 10, updatedReplicas: 10 });
    expect(done.status?.stableRS).toBe(done.status?.currentPodHash);
    const app = await appOf(PAUSED);
    expect(app.status?.health?.status).toBe('Healthy');
    expect(app.status?.summary?.images).toEqual(['registry.example.com/commerce/storefront:v4.2.0']);
  });

  it('abort sends all traffic back to stable and degrades the Rollout; retry starts the steps over', async () => {
    const server = await start();
    expect((await run(PAUSED, 'abort')).status).toBe(200);
    expect((await rollout(PAUSED)).status?.abort).toBe(true);
    server.controller.advance(1_000);
    const aborted = await rollout(PAUSED);
    expect(aborted.status).toMatchObject({
      currentStepIndex: 0,
      phase: 'Degraded',
      message: 'RolloutAborted: Rollout aborted update to revision 7',
      canary: { weights: { canary: { weight: 0 }, stable: { weight: 100 } } },
      updatedReplicas: 0,
    });
    expect(rolloutHealthOf(await appOf(PAUSED))?.status).toBe('Degraded');
    expect(await actions(PAUSED)).toMatchObject({ abort: true, retry: false });
    expect((await run(PAUSED, 'retry')).status).toBe(200);
    server.controller.advance(12_000);
    expect((await rollout(PAUSED)).status).toMatchObject({
      currentStepIndex: 1,
      phase: 'Paused',
      message: 'CanaryPauseStep',
    });
  });

  it('promote-full on the blue-green switches the active service to the preview and makes it stable', async () => {
    const server = await start();
    const before = await rollout(BLUE_GREEN);
    expect(before.status?.blueGreen?.activeSelector).not.toBe(before.status?.currentPodHash);
    expect((await run(BLUE_GREEN, 'promote-full')).status).toBe(200);
    expect((await rollout(BLUE_GREEN)).status?.promoteFull).toBe(true);
    server.controller.advance(3_000);
    const after = await rollout(BLUE_GREEN);
    expect(after.status).toMatchObject({
      phase: 'Healthy',
      blueGreen: { activeSelector: before.status?.currentPodHash },
      stableRS: before.status?.currentPodHash,
      replicas: 4,
    });
    expect(after.status?.promoteFull).toBeUndefined();
    expect((await appOf(BLUE_GREEN)).status?.health?.status).toBe('Healthy');
  });

  it('resume on the blue-green promotes it the same way once the controller sees the pause gone', async () => {
    const server = await start();
    await run(BLUE_GREEN, 'resume');
    server.controller.advance(3_000);
    expect((await rollout(BLUE_GREEN)).status).toMatchObject({ phase: 'Healthy' });
  });

  it('skip-current-step moves past the pause; pause sets spec.paused, which the controller has to observe first', async () => {
    const server = await start();
    await run(PAUSED, 'skip-current-step');
    expect((await rollout(PAUSED)).status).toMatchObject({ currentStepIndex: 2 });
    await run(PROMOTED.replace('ca-central-1', 'us-west-2'), 'pause');
    const paused = await rollout('storefront-prod-us-west-2');
    expect(paused.spec.paused).toBe(true);
    expect(paused.metadata.generation).toBe(5);
    // health.lua: a spec the controller has not observed yet is "Progressing".
    const tree = (await (await api().get('storefront-prod-us-west-2/resource-tree')).json()) as {
      nodes: ResourceNode[];
    };
    expect(tree.nodes.find((n) => n.kind === 'Rollout')?.health).toEqual({
      status: 'Progressing',
      message: 'Waiting for rollout spec update to be observed',
    });
    server.controller.advance(1_000);
    expect((await rollout('storefront-prod-us-west-2')).status).toMatchObject({
      observedGeneration: '5',
      phase: 'Paused',
      message: 'manually paused',
    });
  });

  it('restart stamps spec.restartAt with the time the action ran', async () => {
    const server = await start();
    const now = server.controller.clock.now();
    await run(PROMOTED, 'restart');
    expect((await rollout(PROMOTED)).spec.restartAt).toBe(now.toISOString().replace(/\.\d{3}Z$/, 'Z'));
  });

  it('runs a disabled action as Argo CD does (it never consults discovery), which changes nothing here', async () => {
    await start();
    const before = await rollout(DEGRADED);
    const res = await run(DEGRADED, 'resume');
    expect(res.status).toBe(200);
    expect((await rollout(DEGRADED)).metadata.resourceVersion).toBe(before.metadata.resourceVersion);
  });

  it('answers an unknown action, a missing field and a bad body with Argo CD’s errors, and records every POST', async () => {
    await start();
    const unknown = await run(PAUSED, 'promote');
    expect(unknown.status).toBe(500);
    expect(await unknown.json()).toEqual({
      error: 'error getting Lua resource action: built-in script does not exist',
      code: 2,
      message: 'error getting Lua resource action: built-in script does not exist',
      details: [],
    });
    const { version: _v, ...noVersion } = refOf(PAUSED);
    const missing = await api().post(`${PAUSED}/resource/actions/v2`, { ...noVersion, action: 'resume' });
    expect(missing.status).toBe(500);
    expect(((await missing.json()) as { message: string }).message).toBe(
      'grpc: error while marshaling: proto: required field "version" not set',
    );
    const badParams = await run(PAUSED, 'resume', { resourceActionParameters: [{ name: 'x', value: 3 }] });
    expect(badParams.status).toBe(400);
    expect(((await badParams.json()) as { message: string }).message).toBe(
      'json: cannot unmarshal number into Go struct field ResourceActionRunRequestV2.resourceActionParameters.value of type string',
    );
    await run(PAUSED, 'resume');
    const ops = await simOperations(sim!);
    expect(ops.map((o) => [o.method, o.path, o.app, o.status, (o.body as { action?: string }).action])).toEqual([
      ['POST', `/api/v1/applications/${PAUSED}/resource/actions/v2`, PAUSED, 500, 'promote'],
      ['POST', `/api/v1/applications/${PAUSED}/resource/actions/v2`, PAUSED, 500, 'resume'],
      ['POST', `/api/v1/applications/${PAUSED}/resource/actions/v2`, PAUSED, 400, 'resume'],
      ['POST', `/api/v1/applications/${PAUSED}/resource/actions/v2`, PAUSED, 200, 'resume'],
    ]);
  });

  it('refuses a token without `action/argoproj.io/Rollout/<action>` on the app with a plain 403, and runs nothing', async () => {
    const { fixture } = loadScenario('canary-rollouts');
    fixture.instances[0].accounts = [
      { name: 'reader', token: 'reader-token', allow: ['applications, get, */*'] },
      {
        name: 'canary-ops',
        token: 'ops-token',
        allow: ['applications, get, */*', 'applications, action/argoproj.io/Rollout/resume, commerce/*'],
      },
    ];
    await start(fixture);
    const denied = await run(PAUSED, 'resume', { project: 'commerce' }, 'reader-token');
    expect(denied.status).toBe(403);
    expect(await denied.json()).toMatchObject({ code: 7, message: 'permission denied' });
    expect((await rollout(PAUSED)).status?.pauseConditions).toHaveLength(1);
    expect((await run(PAUSED, 'abort', {}, 'ops-token')).status).toBe(403);
    expect((await run(PAUSED, 'resume', {}, 'ops-token')).status).toBe(200);
    expect((await rollout(PAUSED)).status?.pauseConditions).toBeUndefined();
    expect((await simOperations(sim!)).map((o) => o.status)).toEqual([403, 403, 200]);
  });
});

describe('the Rollouts controller on its own', () => {
  it('a retried canary whose pods crash-loop passes its progress deadline again, ten minutes after it last progressed', async () => {
    const server = await start();
    await run(DEGRADED, 'abort');
    server.controller.advance(1_000);
    expect((await rollout(DEGRADED)).status?.message).toMatch(/^RolloutAborted/);
    await run(DEGRADED, 'retry');
    server.controller.advance(5 * 60_000);
    expect((await rollout(DEGRADED)).status).toMatchObject({ phase: 'Progressing', currentStepIndex: 0 });
    server.controller.advance(6 * 60_000);
    expect((await rollout(DEGRADED)).status).toMatchObject({
      phase: 'Degraded',
      message: expect.stringMatching(
        /^ProgressDeadlineExceeded: ReplicaSet "storefront-\w+" has timed out progressing\.$/,
      ),
    });
  });
});
