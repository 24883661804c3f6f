import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Application, ApplicationList, ApplicationSet } from '../../src/infra/argocd/types.js';
import type { SimServer } from '../../src/sim/server.js';
import { clearSimOperations, simOperations, startTestSim } from '../support/sim.js';

let sim: SimServer;

function call(instance: string, path: string, init: RequestInit & { token?: string | null } = {}) {
  const inst = sim.instances.find((i) => i.name === instance)!;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const token = init.token === undefined ? inst.token : init.token;
  if (token) headers.authorization = `Bearer ${token}`;
  return fetch(`${inst.url}${path}`, { ...init, headers: { ...headers, ...(init.headers as Record<string, string>) } });
}

async function json<T = any>(res: Response | Promise<Response>): Promise<T> {
  return (await (await res).json()) as T;
}

beforeAll(async () => {
  sim = await startTestSim({ fixture: 'sim-multi-instance.json', frozen: true });
});
afterAll(async () => {
  await sim.stop();
});

describe('auth', () => {
  it('serves each instance under /i/<name> with its own token', () => {
    expect(sim.instances.map((i) => [i.name, i.token, i.url])).toEqual([
      ['prod', 'sim-prod-token', `${sim.url}/i/prod`],
      ['staging', 'staging-secret-token', `${sim.url}/i/staging`],
    ]);
  });

  it('answers 401 with gRPC code 16 without a token or with another instance token', async () => {
    const none = await call('prod', '/api/v1/applications', { token: null });
    expect(none.status).toBe(401);
    expect(await none.json()).toEqual({
      error: 'no session information',
      code: 16,
      message: 'no session information',
      details: [],
    });
    const wrong = await call('prod', '/api/v1/applications', { token: 'staging-secret-token' });
    expect(wrong.status).toBe(401);
    const body = await json(wrong);
    expect(body.code).toBe(16);
    expect(body.message).toMatch(/^invalid session: /);
  });

  it('accepts the argocd.token cookie like the UI', async () => {
    const res = await fetch(`${sim.url}/i/staging/api/v1/applications`, {
      headers: { cookie: 'argocd.token=staging-secret-token' },
    });
    expect(res.status).toBe(200);
  });
});

describe('GET /api/v1/applications', () => {
  it('lists every app sorted by name with the store resourceVersion', async () => {
    const list = await json<ApplicationList>(call('prod', '/api/v1/applications'));
    expect(list.items!.map((a) => a.metadata.name)).toEqual([
      'auth-service-prod-eu1',
      'ingress-prod-eu1',
      'ingress-prod-us1',
      'payments-prod-eu1',
      'payments-prod-us1',
      'web-prod-us1',
    ]);
    expect(list.metadata.resourceVersion).toBe(String(sim.state.instance('prod')!.resourceVersion));
  });

  it('filters by label selector with =, !=, in, notin, exists and !key', async () => {
    const names = async (selector: string) =>
      (
        await json<ApplicationList>(call('prod', `/api/v1/applications?selector=${encodeURIComponent(selector)}`))
      ).items!.map((a) => a.metadata.name);
    expect(await names('team=payments')).toEqual(['payments-prod-eu1', 'payments-prod-us1']);
    expect(await names('team==payments,region!=eu')).toEqual(['payments-prod-us1']);
    expect(await names('team in (web, platform)')).toEqual(['auth-service-prod-eu1', 'web-prod-us1']);
    expect(await names('app notin (ingress),env=prod')).toEqual([
      'auth-service-prod-eu1',
      'payments-prod-eu1',
      'payments-prod-us1',
      'web-prod-us1',
    ]);
    expect(await names('tier')).toEqual(['auth-service-prod-eu1']);
    expect(await names('!region')).toEqual(['web-prod-us1']);
  });

  it('answers a malformed selector as Argo CD does: a plain Go error, HTTP 500 code 2', async () => {
    const res = await call('prod', `/api/v1/applications?selector=${encodeURIComponent('team in (a')}`);
    expect(res.status).toBe(500);
    expect((await json(res)).message).toMatch(/^error parsing the selector: /);
  });

  it('filters by repeated projects, the legacy project alias, name and repo', async () => {
    const names = async (q: string) =>
      (await json<ApplicationList>(call('prod', `/api/v1/applications?${q}`))).items!.map((a) => a.metadata.name);
    expect(await names('projects=payments&projects=default')).toEqual([
      'payments-prod-eu1',
      'payments-prod-us1',
      'web-prod-us1',
    ]);
    expect(await names('project=platform')).toEqual(['auth-service-prod-eu1', 'ingress-prod-eu1', 'ingress-prod-us1']);
    expect(await names('name=web-prod-us1')).toEqual(['web-prod-us1']);
    expect(await names('repo=https://github.com/acme/deploy')).toHaveLength(6);
    expect(await names('repo=https://github.com/acme/other.git')).toEqual([]);
  });

  it('leaves resource health out of List (not persisted since v3.0) but Get fills it in', async () => {
    const list = await json<ApplicationList>(call('prod', '/api/v1/applications?name=payments-prod-us1'));
    const listed = list.items![0].status!.resources!;
    expect(listed.map((r) => r.kind)).toEqual(['Service', 'Deployment', 'ConfigMap']);
    expect(listed.every((r) => !('health' in r))).toBe(true);
    const got = await json<Application>(call('prod', '/api/v1/applications/payments-prod-us1'));
    expect(got.status!.resources![1].health).toEqual({
      status: 'Degraded',
      message: 'Deployment "payments" exceeded its progress deadline',
    });
  });

  it('projects with fields= through the fixed allowlist, dropping unsupported paths silently', async () => {
    const fields =
      'items.metadata.name,items.status.sync.status,items.status.sync.revisions,items.status.conditions,items.metadata.labels';
    const list = await json(call('staging', `/api/v1/applications?fields=${fields}`));
    expect(list.items).toEqual([
      {
        metadata: { name: 'auth-service-staging', labels: { team: 'platform', env: 'staging' } },
        status: { sync: { status: 'Unknown' } },
      },
      {
        metadata: { name: 'payments-staging', labels: { team: 'payments', env: 'staging' } },
        status: { sync: { status: 'Synced' } },
      },
    ]);
    expect(list.metadata.resourceVersion).toBeDefined();
  });

  it('with a leading "-" returns every allowlisted path except the excluded ones', async () => {
    const list = await json(
      call(
        'prod',
        '/api/v1/applications?name=payments-prod-us1&fields=-items.spec,items.status.resources,items.status.summary',
      ),
    );
    const item = list.items[0];
    // spec.destination, spec.source, ... are allowlist entries of their own, so excluding items.spec keeps them.
    expect(Object.keys(item.spec).sort()).toEqual([
      'destination',
      'project',
      'source',
      'sourceHydrator',
      'sources',
      'syncPolicy',
    ]);
    expect(item.spec.sources).toBeNull();
    expect(item.status.resources).toBeUndefined();
    expect(item.status.summary).toBeUndefined();
    expect(item.status.health.status).toBe('Degraded');
    expect(item.status.operationState).toEqual({
      startedAt: '2026-11-30T08:40:02Z',
      finishedAt: '2026-11-30T08:44:19Z',
      phase: 'Failed',
      operation: { sync: expect.objectContaining({ revision: expect.any(String) }) },
    });
    // Not in the allowlist, so absent even though nothing excluded them.
    expect(item.status.conditions).toBeUndefined();
    expect(item.status.history).toBeUndefined();
    expect(item.metadata.uid).toBeUndefined();
  });

  it('returns items [] when nothing matches, and null on the fields path', async () => {
    expect((await json(call('prod', '/api/v1/applications?selector=team=nobody'))).items).toEqual([]);
    expect(
      (await json(call('prod', '/api/v1/applications?selector=team=nobody&fields=items.metadata.name'))).items,
    ).toBeNull();
  });
});

describe('GET /api/v1/applications/{name}', () => {
  it('without project= answers a missing app with 403 permission denied (existence never leaks)', async () => {
    const res = await call('prod', '/api/v1/applications/nope');
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({
      error: 'permission denied',
      code: 7,
      message: 'permission denied',
      details: [],
    });
  });

  it('with project= answers 404 for a missing app and for an app in another project', async () => {
    const missing = await call('prod', '/api/v1/applications/nope?project=payments');
    expect(missing.status).toBe(404);
    expect((await json(missing)).message).toBe('applications.argoproj.io "nope" not found');
    const other = await call('prod', '/api/v1/applications/web-prod-us1?project=payments');
    expect(other.status).toBe(404);
    expect((await json(other)).code).toBe(5);
    expect((await call('prod', '/api/v1/applications/web-prod-us1?project=default')).status).toBe(200);
  });

  it('keeps apps of one instance invisible from another', async () => {
    expect((await call('staging', '/api/v1/applications/web-prod-us1')).status).toBe(403);
  });
});

describe('resource tree and managed resources', () => {
  it('derives tree nodes from live resources, with Pods under Deployments and no node for a Missing resource', async () => {
    const tree = await json(call('prod', '/api/v1/applications/auth-service-prod-eu1/resource-tree'));
    const kinds = tree.nodes.map((n: any) => n.kind).sort();
    expect(kinds).toEqual(['Deployment', 'Pod', 'ReplicaSet', 'Service']);
    const pod = tree.nodes.find((n: any) => n.kind === 'Pod');
    expect(pod.health.status).toBe('Degraded');
    expect(pod.info).toContainEqual({ name: 'Status Reason', value: 'CrashLoopBackOff' });
    expect(pod.images).toEqual(['ghcr.io/acme/auth-service:2.15.0']);
    expect(pod.parentRefs[0].kind).toBe('ReplicaSet');
    const deploy = tree.nodes.find((n: any) => n.kind === 'Deployment');
    expect(deploy).toMatchObject({ group: 'apps', version: 'v1', namespace: 'auth-service', name: 'auth-service' });
    expect(deploy.parentRefs).toBeUndefined();
    const missing = await json(call('prod', '/api/v1/applications/web-prod-us1/resource-tree'));
    expect(missing.nodes).toEqual([]);
  });

  it('lists managed resources with JSON-string states; a resource to prune has targetState "null"', async () => {
    const { items } = await json(call('prod', '/api/v1/applications/payments-prod-us1/managed-resources'));
    const prune = items.find((i: any) => i.name === 'payments-legacy');
    expect(prune.targetState).toBe('null');
    expect(JSON.parse(prune.liveState).kind).toBe('ConfigMap');
    const deploy = items.find((i: any) => i.kind === 'Deployment');
    expect(JSON.parse(deploy.targetState).apiVersion).toBe('apps/v1');
    expect(deploy.modified).toBe(true);
  });
});

describe('POST /api/v1/applications/{name}/sync', () => {
  it('rejects syncOptions sent as a bare array like Go json decoding does', async () => {
    await clearSimOperations(sim);
    const res = await call('staging', '/api/v1/applications/payments-staging/sync', {
      method: 'POST',
      body: JSON.stringify({ name: 'payments-staging', syncOptions: ['Prune=false'] }),
    });
    expect(res.status).toBe(400);
    const body = await json(res);
    expect(body.code).toBe(3);
    expect(body.message).toBe(
      'json: cannot unmarshal array into Go struct field ApplicationSyncRequest.syncOptions of type application.SyncOptions',
    );
    expect(sim.state.instance('staging')!.apps.get('payments-staging')!.operation).toBeUndefined();
  });

  it('rejects sourcePositions sent as strings (the Go type is []int64)', async () => {
    const res = await call('staging', '/api/v1/applications/payments-staging/sync', {
      method: 'POST',
      body: JSON.stringify({ revisions: ['main'], sourcePositions: ['1'] }),
    });
    expect(res.status).toBe(400);
    expect((await json(res)).message).toMatch(
      /cannot unmarshal string into Go struct field ApplicationSyncRequest.sourcePositions of type int64/,
    );
  });

  it('writes the operation, returns the app, records the call, then refuses a second sync while it runs', async () => {
    await clearSimOperations(sim);
    const body = {
      name: 'payments-staging',
      prune: true,
      strategy: { hook: { force: true } },
      syncOptions: { items: ['ServerSideApply=true'] },
    };
    const res = await call('staging', '/api/v1/applications/payments-staging/sync', {
      method: 'POST',
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    const app = await json<Application>(res);
    expect(app.metadata.name).toBe('payments-staging');
    expect(app.operation?.sync).toMatchObject({
      prune: true,
      syncOptions: ['ServerSideApply=true'],
      syncStrategy: { hook: { force: true } },
    });
    expect(app.operation?.initiatedBy?.username).toBe('admin');

    const again = await call('staging', '/api/v1/applications/payments-staging/sync', { method: 'POST', body: '{}' });
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({ code: 9, message: 'another operation is already in progress' });

    const ops = await simOperations(sim, 'staging');
    expect(ops.map((o) => [o.method, o.path, o.app, o.status])).toEqual([
      ['POST', '/api/v1/applications/payments-staging/sync', 'payments-staging', 200],
      ['POST', '/api/v1/applications/payments-staging/sync', 'payments-staging', 400],
    ]);
    expect(ops[0].body).toEqual(body);
  });

  it('refuses a sync to another revision while auto-sync is on, as Argo CD does', async () => {
    const res = await call('prod', '/api/v1/applications/auth-service-prod-eu1/sync', {
      method: 'POST',
      body: JSON.stringify({ revision: 'v9' }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 9, message: 'Cannot sync to v9: auto-sync currently set to main' });
  });

  it('terminates a running operation and answers 400 when none is running', async () => {
    const none = await call('prod', '/api/v1/applications/payments-prod-eu1/operation', { method: 'DELETE' });
    expect(none.status).toBe(400);
    expect((await json(none)).message).toMatch(/No operation is in progress/);
    const running = await call('prod', '/api/v1/applications/ingress-prod-eu1/operation', { method: 'DELETE' });
    expect(running.status).toBe(200);
    expect(await running.json()).toEqual({});
    expect(sim.state.instance('prod')!.apps.get('ingress-prod-eu1')!.status!.operationState!.phase).toBe('Terminating');
  });

  it('refuses a sync inside a deny sync window with 403', async () => {
    await fetch(`${sim.url}/_sim/faults`, {
      method: 'POST',
      body: JSON.stringify({ kind: 'syncWindow', instance: 'prod', project: 'payments' }),
    });
    const res = await call('prod', '/api/v1/applications/payments-prod-eu1/sync', { method: 'POST', body: '{}' });
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ code: 7, message: 'cannot sync: blocked by sync window' });
    await fetch(`${sim.url}/_sim/faults`, {
      method: 'POST',
      body: JSON.stringify({ kind: 'syncWindow', instance: 'prod', project: 'payments', active: false }),
    });
  });
});

describe('PATCH /api/v1/applications/{name}', () => {
  it('applies a merge patch where null deletes (dropping autosync)', async () => {
    const res = await call('prod', '/api/v1/applications/auth-service-prod-eu1', {
      method: 'PATCH',
      body: JSON.stringify({
        name: 'auth-service-prod-eu1',
        patchType: 'merge',
        patch: JSON.stringify({ spec: { syncPolicy: { automated: null } } }),
      }),
    });
    expect(res.status).toBe(200);
    const app = await json<Application>(res);
    expect(app.spec.syncPolicy).toEqual({ syncOptions: ['CreateNamespace=true'] });
    expect(sim.state.instance('prod')!.apps.get('auth-service-prod-eu1')!.spec.syncPolicy!.automated).toBeUndefined();
  });

  it('applies a JSON patch by default and fails a failed test op with 400', async () => {
    const patch = [
      { op: 'test', path: '/spec/project', value: 'default' },
      { op: 'add', path: '/metadata/labels/paused', value: 'true' },
      { op: 'replace', path: '/spec/source/targetRevision', value: 'v2' },
    ];
    const res = await call('prod', '/api/v1/applications/web-prod-us1', {
      method: 'PATCH',
      body: JSON.stringify({ patch: JSON.stringify(patch) }),
    });
    expect(res.status).toBe(200);
    const app = await json<Application>(res);
    expect(app.metadata.labels!.paused).toBe('true');
    expect(app.spec.source!.targetRevision).toBe('v2');
    const bad = await call('prod', '/api/v1/applications/web-prod-us1', {
      method: 'PATCH',
      body: JSON.stringify({ patch: JSON.stringify([{ op: 'test', path: '/spec/project', value: 'payments' }]) }),
    });
    expect(bad.status).toBe(400);
    expect(sim.state.instance('prod')!.apps.get('web-prod-us1')!.spec.project).toBe('default');
  });

  it('rejects an unknown patch type and a patch sent as an object instead of a string', async () => {
    const type = await call('prod', '/api/v1/applications/web-prod-us1', {
      method: 'PATCH',
      body: JSON.stringify({ patch: '{}', patchType: 'strategic' }),
    });
    expect((await json(type)).message).toBe("Patch type 'strategic' is not supported");
    const obj = await call('prod', '/api/v1/applications/web-prod-us1', {
      method: 'PATCH',
      body: JSON.stringify({ patch: { spec: {} }, patchType: 'merge' }),
    });
    expect(obj.status).toBe(400);
    expect((await json(obj)).message).toMatch(
      /cannot unmarshal object into Go struct field ApplicationPatchRequest.patch of type string/,
    );
  });
});

describe('ApplicationSets', () => {
  const url = (q = '') => `/api/v1/applicationsets${q}`;

  it('lists and gets appsets with status.applicationStatus (targetRevisions spelled as in real JSON)', async () => {
    const list = await json(call('prod', url('?selector=team=platform')));
    expect(list.items.map((a: ApplicationSet) => a.metadata.name)).toEqual(['ingress']);
    expect((await json(call('prod', url('?projects=payments')))).items).toEqual([]);
    const one = await json<ApplicationSet>(call('prod', url('/ingress')));
    expect(one.status!.applicationStatus![0]).toHaveProperty('targetRevisions');
    expect(one.spec.strategy!.rollingSync!.steps![1].maxUpdate).toBe(1);
    const missing = await call('prod', url('/nope'));
    expect(missing.status).toBe(404);
  });

  it('returns the existing object unchanged for an identical spec, and refuses a changed one without upsert', async () => {
    const current = await json<ApplicationSet>(call('prod', url('/ingress')));
    const rv = current.metadata.resourceVersion;
    const same = await call('prod', url(), {
      method: 'POST',
      body: JSON.stringify({ metadata: current.metadata, spec: current.spec }),
    });
    expect(same.status).toBe(200);
    expect((await json<ApplicationSet>(same)).metadata.resourceVersion).toBe(rv);

    const changed = structuredClone(current);
    changed.spec.strategy!.rollingSync!.steps![1].maxUpdate = 0;
    delete changed.status;
    const refused = await call('prod', url(), { method: 'POST', body: JSON.stringify(changed) });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({
      code: 3,
      message: 'existing ApplicationSet spec is different, use upsert flag to force update',
    });

    const dry = await call('prod', url('?upsert=true&dryRun=true'), { method: 'POST', body: JSON.stringify(changed) });
    expect(dry.status).toBe(200);
    expect(sim.state.instance('prod')!.appSets.get('ingress')!.spec.strategy!.rollingSync!.steps![1].maxUpdate).toBe(1);

    const upserted = await call('prod', url('?upsert=true'), { method: 'POST', body: JSON.stringify(changed) });
    expect(upserted.status).toBe(200);
    const stored = sim.state.instance('prod')!.appSets.get('ingress')!;
    expect(stored.spec.strategy!.rollingSync!.steps![1].maxUpdate).toBe(0);
    // Only spec/labels/annotations/finalizers are replaced: the controller's status stays.
    expect(stored.status!.applicationStatus).toHaveLength(2);
    expect(stored.metadata.generation).toBe(13);
  });

  it('has no PATCH or PUT for an ApplicationSet', async () => {
    const res = await call('prod', url('/ingress'), { method: 'PATCH', body: '{}' });
    expect(res.status).toBe(405);
    expect((await call('prod', url('/ingress'), { method: 'PUT', body: '{}' })).status).toBe(405);
  });
});

describe('GET /api/v1/clusters', () => {
  it('serves the real Cluster shape without credentials and counts apps by server or name', async () => {
    const { items } = await json(call('prod', '/api/v1/clusters'));
    expect(items.map((c: any) => c.name)).toEqual(['in-cluster', 'prod-eu1', 'prod-us1']);
    for (const c of items) expect(c.config).toEqual({ tlsClientConfig: { insecure: false } });
    expect(JSON.stringify(items)).not.toContain('do-not-serve-me');
    const eu = items.find((c: any) => c.name === 'prod-eu1');
    expect(eu.info.applicationsCount).toBe(3);
    expect(eu.connectionState.status).toBe('Successful');
    // web-prod-us1 targets the server with a trailing slash, the ingress and payments apps by name.
    expect(items.find((c: any) => c.name === 'prod-us1').info.applicationsCount).toBe(3);
  });
});

describe('unknown routes', () => {
  it('answers an unknown instance and an unknown API path with 404', async () => {
    expect((await fetch(`${sim.url}/i/nope/api/v1/applications`)).status).toBe(404);
    const res = await call('prod', '/api/v1/nothing-here');
    expect(res.status).toBe(404);
    expect((await json(res)).code).toBe(5);
  });
});
