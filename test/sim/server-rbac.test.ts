import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Application, ApplicationList } from '../../src/infra/argocd/types.js';
import type { SimServer } from '../../src/sim/server.js';
import { startTestSim } from '../support/sim.js';

let sim: SimServer;
const ROLLCALL = 'sim-prod-rollcall-token';
const VIEWER = 'sim-prod-viewer-token';

function call(token: string, path: string, init: RequestInit = {}) {
  return fetch(`${sim.url}/i/prod${path}`, {
    ...init,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
  });
}

beforeAll(async () => {
  sim = await startTestSim({ fixture: 'sim-multi-instance.json', frozen: true });
});
afterAll(async () => {
  await sim.stop();
});

describe('RBAC of limited fixture accounts', () => {
  it('lists only the apps the token may get', async () => {
    const list = (await (await call(VIEWER, '/api/v1/applications')).json()) as ApplicationList;
    expect(list.items!.map((a) => a.metadata.name)).toEqual(['payments-prod-eu1', 'payments-prod-us1']);
    const user = (await (await call(VIEWER, '/api/v1/session/userinfo')).json()) as { username: string };
    expect(user.username).toBe('viewer');
  });

  it('answers an app it may not get like a missing one: 403 without project=, 404 with the right project', async () => {
    const denied = await call(VIEWER, '/api/v1/applications/web-prod-us1');
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as { message: string }).message).toBe('permission denied');
    // project= names a project the token has no get on: the first check denies outright.
    expect((await call(VIEWER, '/api/v1/applications/web-prod-us1?project=default')).status).toBe(403);
    expect((await call(VIEWER, '/api/v1/applications/payments-prod-eu1?project=payments')).status).toBe(200);
  });

  it('denies a sync with the permission, object, subject and issue time, and records it', async () => {
    const res = await call(VIEWER, '/api/v1/applications/payments-prod-eu1/sync', { method: 'POST', body: '{}' });
    expect(res.status).toBe(403);
    const body = (await res.json()) as { code: number; message: string };
    expect(body.code).toBe(7);
    expect(body.message).toMatch(
      /^permission denied: applications, sync, payments\/payments-prod-eu1, sub: viewer, iat: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/,
    );
  });

  it('lets an account sync where it is granted, recording it as the initiator', async () => {
    const ok = await call(ROLLCALL, '/api/v1/applications/payments-prod-eu1/sync', { method: 'POST', body: '{}' });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as Application).operation!.initiatedBy!.username).toBe('rollcall');
    const other = await call(ROLLCALL, '/api/v1/applications/auth-service-prod-eu1/sync', {
      method: 'POST',
      body: '{}',
    });
    expect(other.status).toBe(403);
    expect(((await other.json()) as { message: string }).message).toMatch(
      /^permission denied: applications, sync, platform\/auth-service-prod-eu1, sub: rollcall/,
    );
  });

  it('needs applicationsets create (and update) to upsert an appset', async () => {
    const appSet = structuredClone(sim.state.instance('prod')!.appSets.get('ingress')!);
    appSet.spec.strategy!.rollingSync!.steps![1].maxUpdate = 0;
    const res = await call(ROLLCALL, '/api/v1/applicationsets?upsert=true', {
      method: 'POST',
      body: JSON.stringify(appSet),
    });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { message: string }).message).toMatch(
      /^permission denied: applicationsets, create, platform\/ingress, sub: rollcall/,
    );
    expect((await call(VIEWER, '/api/v1/applicationsets/ingress')).status).toBe(403);
  });

  it('streams only apps the token may get', async () => {
    const ctrl = new AbortController();
    const res = await fetch(`${sim.url}/i/prod/api/v1/stream/applications`, {
      headers: { authorization: `Bearer ${VIEWER}` },
      signal: ctrl.signal,
    });
    const reader = res.body!.getReader();
    let raw = '';
    while ((raw.match(/\n/g) ?? []).length < 2) raw += new TextDecoder().decode((await reader.read()).value);
    ctrl.abort();
    const names = raw
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { result: { application: Application } }).result.application.metadata.name);
    expect(names).toEqual(['payments-prod-eu1', 'payments-prod-us1']);
  });
});
