import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Application } from '../../src/infra/argocd/types.js';
import type { SimServer } from '../../src/sim/server.js';
import { clearSimOperations, simFault, simOperations, startTestSim } from '../support/sim.js';

let sim: SimServer;

function call(instance: string, path: string, init: RequestInit = {}) {
  const inst = sim.instances.find((i) => i.name === instance)!;
  return fetch(`${inst.url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${inst.token}`, 'content-type': 'application/json' },
  });
}

const sync = (instance: string, app: string, body: unknown = {}) =>
  call(instance, `/api/v1/applications/${app}/sync`, { method: 'POST', body: JSON.stringify(body) });
const get = async (instance: string, app: string) =>
  (await (await call(instance, `/api/v1/applications/${app}`)).json()) as Application;

beforeAll(async () => {
  sim = await startTestSim({ fixture: 'sim-multi-instance.json', manual: true });
});
beforeEach(async () => {
  await simFault(sim, { kind: 'clear' });
});
afterAll(async () => {
  await sim.stop();
});

describe('HTTP faults', () => {
  it('answers a counted 503 as Argo CD Unavailable JSON, only on the targeted instance and path', async () => {
    expect(
      (await simFault(sim, { instance: 'prod', kind: 'http5xx', status: 503, count: 2, match: '/applications' }))
        .status,
    ).toBe(200);
    const first = await call('prod', '/api/v1/applications');
    expect(first.status).toBe(503);
    expect((await first.json()) as any).toMatchObject({ code: 14 });
    expect((await call('prod', '/api/v1/clusters')).status).toBe(200);
    expect((await call('staging', '/api/v1/applications')).status).toBe(200);
    expect((await call('prod', '/api/v1/applications')).status).toBe(503);
    expect((await call('prod', '/api/v1/applications')).status).toBe(200);
  });

  it('answers 502 and 504 with a proxy HTML page, for a while with forMs', async () => {
    await simFault(sim, { instance: 'prod', kind: 'http5xx', status: 502, forMs: 150 });
    const res = await call('prod', '/api/v1/applications');
    expect(res.status).toBe(502);
    expect(res.headers.get('content-type')).toBe('text/html');
    expect(await res.text()).toContain('502 Bad Gateway');
    await new Promise((r) => setTimeout(r, 200));
    expect((await call('prod', '/api/v1/applications')).status).toBe(200);
  });

  it('badBody: answers 200 with the given body, or the real answer cut short, on the targeted path', async () => {
    await simFault(sim, {
      instance: 'prod',
      kind: 'badBody',
      body: '<html>Sign in</html>',
      match: '/clusters',
      count: 1,
    });
    const page = await call('prod', '/api/v1/clusters');
    expect(page.status).toBe(200);
    expect(await page.text()).toBe('<html>Sign in</html>');
    // `path` is the whole path: unlike `match`, it leaves /api/v1/applicationsets alone.
    await simFault(sim, { instance: 'prod', kind: 'badBody', truncateAt: 22, path: '/api/v1/applications', count: 1 });
    expect((await call('prod', '/api/v1/applicationsets')).headers.get('content-length')).not.toBe('22');
    const cut = await call('prod', '/api/v1/applications');
    expect(cut.status).toBe(200);
    const text = await cut.text();
    expect(text).toHaveLength(22);
    expect(text).toBe('{"metadata":{"resource');
    // Counted: the next answers are whole again.
    expect(
      ((await (await call('prod', '/api/v1/applications')).json()) as { items: unknown[] }).items.length,
    ).toBeGreaterThan(0);
    const refused = await simFault(sim, { kind: 'badBody', body: 'x', truncateAt: 3 });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: string }).error).toBe(
      '"badBody" needs either "body" (a string) or "truncateAt" (>= 0)',
    );
  });

  it('answerLost: serves a sync in full (operation started, recorded as accepted) and destroys the connection instead of answering', async () => {
    await clearSimOperations(sim);
    const apps = (await (await call('prod', '/api/v1/applications')).json()) as { items: Application[] };
    const name = apps.items.find((a) => !a.operation && a.status?.operationState?.phase !== 'Running')!.metadata.name;
    expect(
      (await simFault(sim, { instance: 'prod', kind: 'answerLost', match: '/sync', method: 'POST', count: 1 })).status,
    ).toBe(200);
    await expect(sync('prod', name, { infos: [{ name: 'rollcall-run', value: 'r-lost1' }] })).rejects.toThrow();
    const ops = await simOperations(sim, 'prod');
    expect(ops.filter((o) => o.method === 'POST' && o.app === name)).toMatchObject([{ status: 200 }]);
    const app = await get('prod', name);
    const op = app.operation ?? app.status?.operationState?.operation;
    expect(op?.info).toEqual([{ name: 'rollcall-run', value: 'r-lost1' }]);
    // Counted: the next request is answered.
    expect((await call('prod', `/api/v1/applications/${name}`)).status).toBe(200);
  });

  it('answers 429 with Retry-After', async () => {
    await simFault(sim, { kind: 'http429', retryAfterSeconds: 7, count: 1 });
    const res = await call('staging', '/api/v1/applications');
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('7');
    expect((await call('staging', '/api/v1/applications')).status).toBe(200);
  });

  it('adds latency until cleared', async () => {
    await simFault(sim, { instance: 'staging', kind: 'latency', ms: 150 });
    let t = Date.now();
    expect((await call('staging', '/api/v1/applications')).status).toBe(200);
    expect(Date.now() - t).toBeGreaterThanOrEqual(140);
    await simFault(sim, { kind: 'clear', instance: 'staging' });
    t = Date.now();
    await call('staging', '/api/v1/applications');
    expect(Date.now() - t).toBeLessThan(140);
  });

  it('rejects a fault it does not know, naming the choices', async () => {
    const res = await simFault(sim, { kind: 'meteor' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toMatch(/unknown fault kind "meteor": use fail, crashloop/);
    const inst = await simFault(sim, { kind: 'fail', instance: 'nope', app: 'x' });
    expect(((await inst.json()) as any).error).toMatch(/unknown instance "nope"/);
    const noApp = await simFault(sim, { kind: 'fail', instance: 'prod', app: 'ghost' });
    expect(((await noApp.json()) as any).error).toBe('no app "ghost" on instance "prod"');
  });
});

describe('app faults through the controller', () => {
  it('makes the next sync of an app fail with the given message', async () => {
    await simFault(sim, {
      kind: 'fail',
      instance: 'staging',
      app: 'payments-staging',
      message: 'admission webhook "policy.acme.io" denied the request',
    });
    expect((await sync('staging', 'payments-staging')).status).toBe(200);
    sim.controller.advance(60_000);
    const app = await get('staging', 'payments-staging');
    expect(app.status!.operationState!.phase).toBe('Failed');
    expect(app.status!.operationState!.message).toContain('admission webhook "policy.acme.io" denied the request');
    expect(app.operation).toBeUndefined();
  });

  it('runs a sync to Succeeded when there is no fault, and the time to settle is simulated', async () => {
    expect((await sync('prod', 'web-prod-us1', { prune: true })).status).toBe(200);
    expect((await get('prod', 'web-prod-us1')).operation).toBeDefined();
    sim.controller.advance(60_000);
    const app = await get('prod', 'web-prod-us1');
    expect(app.status!.operationState!.phase).toBe('Succeeded');
    expect(app.status!.sync!.status).toBe('Synced');
  });

  it('marks a cluster down in the served cluster list', async () => {
    expect(
      (await simFault(sim, { kind: 'clusterDown', instance: 'prod', cluster: 'prod-us1', down: true })).status,
    ).toBe(200);
    sim.controller.advance(2_000);
    const { items } = (await (await call('prod', '/api/v1/clusters')).json()) as any;
    expect(items.find((c: { name: string }) => c.name === 'prod-us1').connectionState.status).toBe('Failed');
    await simFault(sim, { kind: 'clusterDown', instance: 'prod', cluster: 'prod-us1', down: false });
  });
});

describe('GET /_sim/operations', () => {
  it('records every mutating call that reached the fake Argo CD, not reads nor injected failures', async () => {
    await clearSimOperations(sim);
    await call('prod', '/api/v1/applications');
    await simFault(sim, { kind: 'http5xx', instance: 'prod', status: 503, count: 1, match: '/sync' });
    await sync('prod', 'payments-prod-eu1', { prune: false }); // 503 injected: never reached Argo CD
    await sync('prod', 'payments-prod-eu1', { prune: false, dryRun: true });
    await call('prod', '/api/v1/applications/payments-prod-eu1', {
      method: 'PATCH',
      body: JSON.stringify({ patchType: 'merge', patch: '{"metadata":{"labels":{"x":"1"}}}' }),
    });
    const ops = await simOperations(sim);
    expect(ops.map((o) => [o.instance, o.method, o.path, o.app, o.status])).toEqual([
      ['prod', 'POST', '/api/v1/applications/payments-prod-eu1/sync', 'payments-prod-eu1', 200],
      ['prod', 'PATCH', '/api/v1/applications/payments-prod-eu1', 'payments-prod-eu1', 200],
    ]);
    expect(ops[0].body).toEqual({ prune: false, dryRun: true });
    // Stamped with simulated time (a manual clock here, which has not moved since).
    expect(ops[0].at).toBe(sim.controller.clock.now().toISOString());
    await clearSimOperations(sim);
    expect(await simOperations(sim)).toEqual([]);
  });
});
