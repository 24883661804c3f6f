import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AppProject, SyncWindow } from '../../src/infra/argocd/types.js';
import type { SimServer } from '../../src/sim/server.js';
import { clearSimOperations, simOperations, startTestSim } from '../support/sim.js';

let sim: SimServer;
const ADMIN = 'sim-prod-token';
const VIEWER = 'sim-prod-viewer-token';

function call(path: string, init: RequestInit & { token?: string } = {}) {
  return fetch(`${sim.url}/i/prod${path}`, {
    ...init,
    headers: { authorization: `Bearer ${init.token ?? ADMIN}`, 'content-type': 'application/json' },
  });
}

async function getProject(name: string): Promise<AppProject> {
  const res = await call(`/api/v1/projects/${name}`);
  expect(res.status).toBe(200);
  return (await res.json()) as AppProject;
}

/** What `argocd proj windows add` sends: the project it just read, with one more window. */
async function putProject(project: AppProject, token?: string) {
  const res = await call(`/api/v1/projects/${project.metadata.name}`, {
    method: 'PUT',
    body: JSON.stringify({ project }),
    ...(token ? { token } : {}),
  });
  return { status: res.status, body: (await res.json()) as AppProject & { code?: number; message?: string } };
}

const withWindow = (project: AppProject, window: SyncWindow): AppProject => ({
  ...project,
  spec: { ...project.spec, syncWindows: [...(project.spec.syncWindows ?? []), window] },
});

const FREEZE: SyncWindow = { kind: 'deny', schedule: '* * * * *', duration: '1h', applications: ['payments-*'] };

beforeEach(async () => {
  sim = await startTestSim({ fixture: 'sim-multi-instance.json' });
  await clearSimOperations(sim);
});
afterEach(async () => {
  await sim.stop();
});

describe('PUT /api/v1/projects/{name}', () => {
  it('stores the windows as Argo CD does (time zone defaulted, false fields dropped), bumps resourceVersion and generation, and records the call', async () => {
    const before = await getProject('payments');
    const put = await putProject(withWindow(before, { ...FREEZE, manualSync: false, andOperator: false }));
    expect(put.status).toBe(200);
    expect(put.body.spec.syncWindows).toEqual([{ ...FREEZE, timeZone: 'UTC' }]);
    expect(put.body.metadata.resourceVersion).not.toBe(before.metadata.resourceVersion);
    expect(put.body.metadata.generation).toBe((before.metadata.generation ?? 1) + 1);
    expect(await getProject('payments')).toEqual(put.body);
    const ops = await simOperations(sim, 'prod');
    expect(ops).toEqual([
      expect.objectContaining({
        method: 'PUT',
        path: '/api/v1/projects/payments',
        status: 200,
        body: expect.anything(),
      }),
    ]);

    // Taking the window out again leaves no empty list behind (omitempty).
    const removed = await putProject({ ...put.body, spec: { ...put.body.spec, syncWindows: [] } });
    expect(removed.status).toBe(200);
    expect(removed.body.spec).toEqual(before.spec);
  });

  it('refuses a stale resourceVersion as the Kubernetes conflict Argo CD passes on (Aborted, 409), and a missing one', async () => {
    const read = await getProject('payments');
    expect((await putProject(withWindow(read, FREEZE))).status).toBe(200);
    const stale = await putProject(withWindow(read, { ...FREEZE, applications: ['other'] }));
    expect(stale.status).toBe(409);
    expect(stale.body).toMatchObject({
      code: 10,
      message:
        'Operation cannot be fulfilled on appprojects.argoproj.io "payments": the object has been modified; please apply your changes to the latest version and try again',
    });
    const { resourceVersion: _rv, ...meta } = read.metadata;
    const missing = await putProject({ ...withWindow(read, FREEZE), metadata: meta });
    expect(missing.status).toBe(400);
    expect(missing.body.message).toContain(
      'metadata.resourceVersion: Invalid value: 0x0: must be specified for an update',
    );
    expect((await getProject('payments')).spec.syncWindows).toHaveLength(1);
    expect((await simOperations(sim, 'prod')).map((o) => o.status)).toEqual([200, 409, 400]);
  });

  it('validates the windows as ValidateProject does', async () => {
    const read = await getProject('default');
    const noScope = await putProject(withWindow(read, { ...FREEZE, applications: [] }));
    expect(noScope).toMatchObject({
      status: 400,
      body: { code: 11, message: "window 'deny':'* * * * *':'1h' requires one of application, cluster or namespace" },
    });
    const twice = await putProject(withWindow(withWindow(read, FREEZE), { ...FREEZE, description: 'again' }));
    expect(twice).toMatchObject({ status: 409, body: { code: 6 } });
    const badCron = await putProject(withWindow(read, { ...FREEZE, schedule: '0 3 * * 7' }));
    expect(badCron).toMatchObject({ status: 500, body: { code: 2 } });
    expect(badCron.body.message).toMatch(/^cannot parse schedule '0 3 \* \* 7'/);
    const noPayload = await call('/api/v1/projects/default', { method: 'PUT', body: '{}' });
    expect(noPayload.status).toBe(400);
    expect(((await noPayload.json()) as { message: string }).message).toBe("missing payload 'project' in request");
  });

  it('needs projects, update', async () => {
    const read = await getProject('payments');
    const denied = await putProject(withWindow(read, FREEZE), VIEWER);
    expect(denied.status).toBe(403);
    expect(denied.body.message).toMatch(/^permission denied: projects, update, payments, sub: viewer/);
  });
});

describe('sync windows on syncs', () => {
  it('refuses a manual sync under an active deny window with Argo CD text, unless the window allows manual syncs', async () => {
    const read = await getProject('payments');
    expect((await putProject(withWindow(read, FREEZE))).status).toBe(200);
    const refused = await call('/api/v1/applications/payments-prod-eu1/sync', { method: 'POST', body: '{}' });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: 7, message: 'cannot sync: blocked by sync window' });
    // Another project's app is not covered.
    expect((await call('/api/v1/applications/web-prod-us1/sync', { method: 'POST', body: '{}' })).status).toBe(200);

    const frozen = await getProject('payments');
    const manual = { ...frozen, spec: { ...frozen.spec, syncWindows: [{ ...FREEZE, manualSync: true }] } };
    expect((await putProject(manual)).status).toBe(200);
    const allowed = await call('/api/v1/applications/payments-prod-eu1/sync', { method: 'POST', body: '{}' });
    expect(allowed.status).toBe(200);
    const syncs = (await simOperations(sim, 'prod')).filter((o) => o.path.endsWith('/sync'));
    expect(syncs.map((o) => [o.app, o.status])).toEqual([
      ['payments-prod-eu1', 403],
      ['web-prod-us1', 200],
      ['payments-prod-eu1', 200],
    ]);
  });

  it('turns the syncWindow fault into a real deny window in the project, and takes it back', async () => {
    const before = await getProject('payments');
    await fetch(`${sim.url}/_sim/faults`, {
      method: 'POST',
      body: JSON.stringify({ kind: 'syncWindow', instance: 'prod', app: 'payments-prod-eu1' }),
    });
    expect((await getProject('payments')).spec.syncWindows).toEqual([
      expect.objectContaining({ kind: 'deny', applications: ['payments-prod-eu1'] }),
    ]);
    expect((await call('/api/v1/applications/payments-prod-us1/sync', { method: 'POST', body: '{}' })).status).toBe(
      200,
    );
    expect((await call('/api/v1/applications/payments-prod-eu1/sync', { method: 'POST', body: '{}' })).status).toBe(
      403,
    );
    await fetch(`${sim.url}/_sim/faults`, {
      method: 'POST',
      body: JSON.stringify({ kind: 'syncWindow', instance: 'prod', app: 'payments-prod-eu1', active: false }),
    });
    expect((await getProject('payments')).spec).toEqual(before.spec);
  });
});
