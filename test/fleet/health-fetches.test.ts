import { describe, expect, it } from 'vitest';
import type { ArgoApi } from '../../src/infra/argocd/api.js';
import type { Application } from '../../src/infra/argocd/types.js';
import { HEALTH_FETCHES_AT_ONCE, HealthFetches, lacksResourceHealth } from '../../src/fleet/health-fetches.js';

/** An app as List sends it: Degraded (or as given) with resources whose health is left out. */
function listed(name: string, health = 'Degraded', namespace = 'argocd'): Application {
  return {
    metadata: { name, namespace, resourceVersion: '1' },
    spec: { project: 'default' },
    status: {
      health: { status: health },
      resources: [{ kind: 'Deployment', name, namespace: 'prod', version: 'v1', group: 'apps' }],
    },
  } as Application;
}

/** A Get that answers when told to, recording what was asked and how many were in flight at most. */
function fakeApi() {
  const asked: string[] = [];
  const pending = new Map<string, ((app: Application) => void)[]>();
  let inFlight = 0;
  let mostInFlight = 0;
  const api = {
    getApplication: (ref: { name: string }) =>
      new Promise<Application>((resolve) => {
        asked.push(ref.name);
        mostInFlight = Math.max(mostInFlight, ++inFlight);
        pending.set(ref.name, [
          ...(pending.get(ref.name) ?? []),
          (app) => {
            inFlight--;
            resolve(app);
          },
        ]);
      }),
  } as unknown as ArgoApi;
  const answer = (name: string) => {
    const app = listed(name);
    app.status!.resources![0].health = { status: 'Degraded', message: `${name}: back-off restarting` };
    pending.get(name)!.shift()!(app);
  };
  return { api, asked, answer, pending, mostInFlight: () => mostInFlight };
}

const tick = () => new Promise((r) => setImmediate(r));
const options = (limit = 500, stopped = () => false) => ({ limit, stopped, onError: () => undefined });

describe('HealthFetches', () => {
  it('fetches an unhealthy app as soon as it is offered, before the list has ended, and applies it once the list is in', async () => {
    const { api, asked, answer } = fakeApi();
    const fetches = new HealthFetches(api, options());
    fetches.offer(listed('auth-service-1'));
    expect(asked).toEqual(['auth-service-1']);
    answer('auth-service-1');
    await tick();
    const applied: Application[] = [];
    fetches.applyWith((full) => applied.push(full));
    expect(applied.map((a) => a.status?.resources?.[0].health?.message)).toEqual([
      'auth-service-1: back-off restarting',
    ]);
    fetches.offer(listed('auth-service-2'));
    answer('auth-service-2');
    await fetches.close();
    expect(applied.map((a) => a.metadata.name)).toEqual(['auth-service-1', 'auth-service-2']);
  });

  it('fetches only apps that lack resource health, each once however often offered, and at most the limit', async () => {
    const { api, asked, answer } = fakeApi();
    const fetches = new HealthFetches(api, options(2));
    const healthy = listed('web', 'Healthy');
    const complete = listed('api');
    complete.status!.resources![0].health = { status: 'Degraded' };
    expect(lacksResourceHealth(healthy)).toBe(false);
    expect(lacksResourceHealth(complete)).toBe(false);
    for (const app of [healthy, complete, listed('a'), listed('a'), listed('a', 'Degraded', 'team-ns'), listed('b')])
      fetches.offer(app);
    expect(asked).toEqual(['a', 'a']);
    fetches.applyWith(() => undefined);
    answer('a');
    answer('a');
    await fetches.close();
  });

  it('fetches the problem apps only: Progressing and Synced is no problem, and nothing reads its resources', () => {
    const withSync = (health: string, sync: string) => {
      const app = listed(`${health}-${sync}`, health);
      app.status!.sync = { status: sync } as NonNullable<Application['status']>['sync'];
      return app;
    };
    expect(lacksResourceHealth(withSync('Progressing', 'Synced'))).toBe(false);
    expect(lacksResourceHealth(withSync('Progressing', 'OutOfSync'))).toBe(true);
    expect(lacksResourceHealth(withSync('Degraded', 'Synced'))).toBe(true);
    expect(lacksResourceHealth(withSync('Missing', 'OutOfSync'))).toBe(true);
    expect(lacksResourceHealth(withSync('Healthy', 'OutOfSync'))).toBe(false);
  });

  it(`keeps at most ${HEALTH_FETCHES_AT_ONCE} fetches in flight and resolves close() once all have ended`, async () => {
    const { api, asked, answer, mostInFlight } = fakeApi();
    const fetches = new HealthFetches(api, options());
    const names = Array.from({ length: 30 }, (_, i) => `app-${i}`);
    for (const name of names) fetches.offer(listed(name));
    const applied: string[] = [];
    fetches.applyWith((full) => applied.push(full.metadata.name));
    let closed = false;
    void fetches.close().then(() => (closed = true));
    for (let i = 0; i < names.length; i++) {
      expect(asked).toHaveLength(Math.min(names.length, HEALTH_FETCHES_AT_ONCE + i));
      expect(closed).toBe(false);
      answer(names[i]);
      await tick();
    }
    await tick();
    expect(closed).toBe(true);
    expect(mostInFlight()).toBe(HEALTH_FETCHES_AT_ONCE);
    expect(applied.sort()).toEqual([...names].sort());
  });

  it('applies nothing and fetches nothing more once cancelled (the list failed)', async () => {
    const { api, asked, answer } = fakeApi();
    const fetches = new HealthFetches(api, options());
    for (let i = 0; i < HEALTH_FETCHES_AT_ONCE + 3; i++) fetches.offer(listed(`app-${i}`));
    fetches.cancel();
    const applied: string[] = [];
    fetches.applyWith((full) => applied.push(full.metadata.name));
    for (let i = 0; i < HEALTH_FETCHES_AT_ONCE; i++) answer(`app-${i}`);
    await fetches.close();
    expect(asked).toHaveLength(HEALTH_FETCHES_AT_ONCE);
    expect(applied).toEqual([]);
  });

  it('stops starting fetches when the mirror stops, and a failed fetch leaves the app as listed', async () => {
    let stopped = false;
    const errors: string[] = [];
    const api = {
      getApplication: async (ref: { name: string }) => {
        throw new Error(`${ref.name}: 503`);
      },
    } as unknown as ArgoApi;
    const fetches = new HealthFetches(api, {
      limit: 500,
      stopped: () => stopped,
      onError: (app, e) => errors.push(`${app.metadata.name} ${(e as Error).message}`),
    });
    fetches.offer(listed('first'));
    stopped = true;
    fetches.offer(listed('second'));
    await fetches.close();
    expect(errors).toEqual(['first first: 503']);
  });
});
