/**
 * The Argo CD API surface off-the-shelf clients use, beyond what rollcall itself calls: events,
 * projects, revision metadata, pod logs, and an instance served at the root path. Field names are
 * checked against Argo CD v3.5.1's assets/swagger.json (the property lists below are copied from it).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/server.js';
import { startTestSim } from '../support/sim.js';

// assets/swagger.json @ v3.5.1: definitions.eventsEvent, eventsObjectReference, v1alpha1AppProject,
// v1alpha1RevisionMetadata, applicationLogEntry.
const SWAGGER = {
  eventsEvent: [
    'action',
    'count',
    'eventTime',
    'firstTimestamp',
    'involvedObject',
    'lastTimestamp',
    'message',
    'metadata',
    'reason',
    'related',
    'reportingComponent',
    'reportingInstance',
    'series',
    'source',
    'type',
  ],
  eventsObjectReference: ['apiVersion', 'fieldPath', 'kind', 'name', 'namespace', 'resourceVersion', 'uid'],
  v1alpha1AppProject: ['metadata', 'spec', 'status'],
  v1alpha1RevisionMetadata: [
    'author',
    'date',
    'message',
    'references',
    'signatureInfo',
    'sourceIntegrityResult',
    'tags',
  ],
  applicationLogEntry: ['content', 'last', 'podName', 'timeStamp', 'timeStampStr'],
};

let sim: SimServer;

function call(path: string, opts: { root?: boolean; token?: string | null; instance?: string } = {}) {
  const inst = sim.instances.find((i) => i.name === (opts.instance ?? 'prod'))!;
  const headers: Record<string, string> = {};
  const token = opts.token === undefined ? inst.token : opts.token;
  if (token) headers.authorization = `Bearer ${token}`;
  return fetch(`${opts.root ? sim.url : inst.url}${path}`, { headers });
}
const json = async (res: Response | Promise<Response>) => (await (await res).json()) as any;

beforeAll(async () => {
  sim = await startTestSim({ fixture: 'sim-multi-instance.json', manual: true });
});
afterAll(async () => {
  await sim.stop();
});

describe('root path', () => {
  it('serves the first instance at /api/v1 too (Argo CD without --rootpath), keeping /i/<name>', async () => {
    const root = await json(call('/api/v1/applications', { root: true }));
    const based = await json(call('/api/v1/applications'));
    expect(root.items.map((a: any) => a.metadata.name)).toEqual(based.items.map((a: any) => a.metadata.name));
    expect((await call('/api/v1/applications', { root: true, token: null })).status).toBe(401);
    // Another instance's token is not the root instance's.
    expect((await call('/api/v1/applications', { root: true, token: sim.instances[1].token })).status).toBe(401);
    expect((await call('/api/v1/applications', { instance: 'staging' })).status).toBe(200);
  });
});

describe('GET /api/v1/applications/{name}/events (ListResourceEvents)', () => {
  it("returns the app's own events as an EventList, with Argo CD's reasons and messages", async () => {
    const app = sim.state.instance('prod')!.apps.values().next().value!;
    const name = app.metadata.name;
    const sync = await fetch(`${sim.instances[0].url}/api/v1/applications/${name}/sync`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sim.instances[0].token}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(sync.status).toBe(200);
    sim.controller.advance(30_000);
    const list = await json(call(`/api/v1/applications/${name}/events`));
    expect(Object.keys(list).sort()).toEqual(['items', 'metadata']);
    for (const e of list.items) {
      for (const k of Object.keys(e)) expect(SWAGGER.eventsEvent).toContain(k);
      for (const k of Object.keys(e.involvedObject)) expect(SWAGGER.eventsObjectReference).toContain(k);
      expect(e.involvedObject).toMatchObject({ kind: 'Application', apiVersion: 'argoproj.io/v1alpha1', name });
    }
    expect(list.items[0]).toMatchObject({
      reason: 'OperationStarted',
      type: 'Normal',
      source: { component: 'argocd-server' },
      message: expect.stringMatching(/^admin initiated sync to [0-9a-f]{40}$/),
    });
    expect(list.items.at(-1)).toMatchObject({
      reason: 'ResourceUpdated',
      source: { component: 'argocd-application-controller' },
    });
    expect(list.items.map((e: any) => e.reason)).toContain('OperationCompleted');
  });

  it('refuses a resource that is not a node of the app tree with InvalidArgument', async () => {
    const app = sim.state.instance('prod')!.apps.values().next().value!;
    const res = await call(
      `/api/v1/applications/${app.metadata.name}/events?resourceName=nope&resourceUID=x&resourceNamespace=default`,
    );
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      code: 3,
      message: `nope not found as part of application ${app.metadata.name}`,
    });
  });
});

describe('projects (server/project/project.go List and Get)', () => {
  it('always has default, and lists the projects apps use', async () => {
    const list = await json(call('/api/v1/projects'));
    const names = list.items.map((p: any) => p.metadata.name);
    expect(names).toContain('default');
    expect(names).toEqual([...names].sort());
    const one = await json(call('/api/v1/projects/default'));
    expect(Object.keys(one).sort()).toEqual(SWAGGER.v1alpha1AppProject);
    expect(one.spec).toEqual({
      sourceRepos: ['*'],
      destinations: [{ server: '*', namespace: '*' }],
      clusterResourceWhitelist: [{ group: '*', kind: '*' }],
    });
  });

  it('answers 404 with the Kubernetes NotFound wording for an unknown project', async () => {
    const res = await call('/api/v1/projects/nope');
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: 5, message: 'appprojects.argoproj.io "nope" not found' });
  });
});

describe('revision metadata and pod logs', () => {
  it('describes a revision the app knows, and refuses one the repo cannot resolve', async () => {
    const app = [...sim.state.instance('prod')!.apps.values()].find((a) => a.status?.sync?.revision)!;
    const meta = await json(
      call(`/api/v1/applications/${app.metadata.name}/revisions/${app.status!.sync!.revision}/metadata`),
    );
    for (const k of Object.keys(meta)) expect(SWAGGER.v1alpha1RevisionMetadata).toContain(k);
    expect(meta).toMatchObject({
      author: expect.stringContaining('@'),
      date: expect.stringMatching(/Z$/),
      message: expect.any(String),
    });
    const bad = await call(`/api/v1/applications/${app.metadata.name}/revisions/no-such-branch/metadata`);
    expect(bad.status).toBe(500);
  });

  it('streams pod logs as one {"result": LogEntry} object per line, ending with last: true', async () => {
    const app = [...sim.state.instance('prod')!.apps.values()].find((a) =>
      a.status?.resources?.some((r) => r.kind === 'Deployment'),
    )!;
    const text = await (await call(`/api/v1/applications/${app.metadata.name}/logs?tailLines=2`)).text();
    const lines = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.length).toBeGreaterThan(1);
    for (const l of lines) {
      expect(Object.keys(l)).toEqual(['result']);
      for (const k of Object.keys(l.result)) expect(SWAGGER.applicationLogEntry).toContain(k);
    }
    expect(lines.at(-1).result.last).toBe(true);
    expect(lines.slice(0, -1).every((l) => l.result.last === false && l.result.podName)).toBe(true);
  });

  const logLines = async (path: string) =>
    (await (await call(path)).text())
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l).result);
  const withPods = () =>
    [...sim.state.instance('prod')!.apps.values()].find((a) =>
      a.status?.resources?.some((r) => r.kind === 'Deployment' && r.health?.status !== 'Missing'),
    )!;

  // getSelectedPods: every non-empty field must match the pod or one of its ancestors; an empty one matches anything.
  it('picks pods by resource name alone, by kind/name, and by pod name; tailLines applies per pod', async () => {
    const app = withPods();
    const deploy = app.status!.resources!.find((r) => r.kind === 'Deployment')!;
    const byName = await logLines(
      `/api/v1/applications/${app.metadata.name}/logs?resourceName=${deploy.name}&tailLines=5`,
    );
    const pods = new Set(byName.filter((e) => !e.last).map((e) => e.podName));
    expect(pods.size).toBe(1);
    expect(byName.filter((e) => !e.last)).toHaveLength(5);
    const pod = [...pods][0];
    const byKind = await logLines(
      `/api/v1/applications/${app.metadata.name}/logs?kind=Deployment&group=apps&resourceName=${deploy.name}&tailLines=3`,
    );
    expect(byKind.filter((e) => !e.last).map((e) => e.podName)).toEqual([pod, pod, pod]);
    const recent = await logLines(
      `/api/v1/applications/${app.metadata.name}/logs?resourceName=${deploy.name}&sinceSeconds=7&tailLines=100`,
    );
    expect(recent.filter((e) => !e.last)).toHaveLength(7);
    const byPod = await logLines(`/api/v1/applications/${app.metadata.name}/pods/${pod}/logs?tailLines=1`);
    expect(byPod.map((e) => [e.podName, e.last])).toEqual([
      [pod, false],
      ['', true],
    ]);
  });

  it('answers an empty body when no pod matches, as PodLogs returns before streaming', async () => {
    const app = withPods();
    const res = await call(`/api/v1/applications/${app.metadata.name}/logs?podName=no-such-pod`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('');
  });

  it("passes on Kubernetes' refusal of a container the pod does not run as an entry's content", async () => {
    const app = withPods();
    const entries = await logLines(`/api/v1/applications/${app.metadata.name}/logs?container=sidecar`);
    const refusal = entries.find((e) => !e.last)!;
    expect(refusal.content).toMatch(/^container sidecar is not valid for pod \S+$/);
    expect(refusal.podName).toBe('');
    expect(entries.at(-1).last).toBe(true);
  });

  it('treats a missing app like Argo CD: 403 without project, 404 with it', async () => {
    expect((await call('/api/v1/applications/no-such-app/logs')).status).toBe(403);
    expect((await call('/api/v1/applications/no-such-app/logs?project=default')).status).toBe(404);
    expect((await call('/api/v1/applications/no-such-app/revisions/abc/metadata')).status).toBe(403);
  });
});

describe('managed resources (the diff view)', () => {
  it('masks Secret values like HideSecretData, and predicts the live object with server-set metadata kept', async () => {
    const apps = [...sim.state.instance('prod')!.apps.values()];
    for (const app of apps) {
      const { items } = await json(call(`/api/v1/applications/${app.metadata.name}/managed-resources`));
      for (const item of items) {
        if (item.kind === 'Secret')
          for (const state of [item.liveState, item.targetState])
            if (state !== 'null')
              for (const v of Object.values(JSON.parse(state).data ?? {})) expect(v).toMatch(/^\+{8,}$/);
        if (item.targetState === 'null') {
          expect(item.predictedLiveState).toBe('null');
          expect(item.modified).toBe(false);
        } else if (item.normalizedLiveState !== 'null') {
          expect(JSON.parse(item.predictedLiveState).metadata.uid).toBe(
            JSON.parse(item.normalizedLiveState).metadata.uid,
          );
        }
      }
    }
  });
});
