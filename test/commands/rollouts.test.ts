import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { dispatch } from '../../src/commands/index.js';
import type { ActionsData, AppData, RolloutsData } from '../../src/commands/replies.js';
import { createClients } from '../../src/infra/argocd/client.js';
import { configSchema } from '../../src/infra/config/schema.js';
import { StaticFleet } from '../../src/fleet/model.js';
import type { Reply } from '../../src/core/reply.js';
import type { SimServer } from '../../src/sim/server.js';
import { renderText } from '../../src/views/text.js';
import { simFault, startTestSim } from '../support/sim.js';

// `rollouts`, `actions` and the Rollouts in `app`, against the simulator's canary-rollouts scenario: the mirror
// (here a StaticFleet of what Argo CD lists) says which apps have Rollouts, each Rollout is read live.

describe('Argo Rollouts commands on canary-rollouts', () => {
  let sim: SimServer;
  let fleet: StaticFleet;
  let now: Date;

  function services() {
    const instance = sim.instances[0];
    const config = configSchema.parse({
      instances: [{ name: instance.name, url: instance.url, token: instance.token, timeout: 2000 }],
    });
    return {
      config,
      fleet,
      argocd: createClients(config, { retry: { retries: 0, baseMs: 5, maxMs: 5 } }),
      now: () => now,
    };
  }
  const ask = (text: string): Promise<Reply> =>
    dispatch(text, { services: services(), user: 'U1', surface: 'terminal' });

  beforeAll(async () => {
    sim = await startTestSim({ scenario: 'canary-rollouts', frozen: true });
    now = sim.controller.clock.now();
    const api = createClients(
      configSchema.parse({
        instances: [{ name: sim.instances[0].name, url: sim.instances[0].url, token: sim.instances[0].token }],
      }),
    ).get(sim.instances[0].name)!;
    // What the mirror holds: Argo CD's List answers (no resource health).
    const [apps, appSets, clusters] = await Promise.all([
      api.listApplications(),
      api.listApplicationSets(),
      api.listClusters(),
    ]);
    fleet = StaticFleet.fromObjects([
      {
        name: sim.instances[0].name,
        applications: apps.items,
        applicationSets: appSets.items,
        clusters: clusters.items,
      },
    ]);
  });
  afterAll(async () => {
    await sim?.stop();
  });
  beforeEach(async () => {
    await simFault(sim, { kind: 'clear' });
  });

  it('rollouts --json: every Rollout with its app, cluster, strategy, phase, step and weight', async () => {
    const reply = await ask('rollouts');
    expect(reply.ok).toBe(true);
    const data = reply.data as RolloutsData;
    expect(data.rollouts).toHaveLength(15);
    expect(data.unread).toEqual([]);
    const storefront = data.rollouts.filter((r) => r.name === 'storefront');
    expect(storefront).toHaveLength(12);
    const paused = storefront.filter((r) => r.phase === 'Paused');
    expect(paused).toHaveLength(9);
    for (const r of paused)
      expect(r).toMatchObject({
        strategy: 'canary',
        step: 1,
        steps: 4,
        weight: 20,
        message: 'CanaryPauseStep',
        pausedReason: 'CanaryPauseStep',
        namespace: 'storefront',
        instance: 'prod',
        app: `storefront-${r.cluster}`,
      });
    expect(storefront.find((r) => r.cluster === 'prod-eu-west-1')).toMatchObject({
      phase: 'Degraded',
      step: 0,
      weight: 0,
      setWeight: 20,
      message: expect.stringMatching(
        /^ProgressDeadlineExceeded: ReplicaSet "storefront-\w+" has timed out progressing\.$/,
      ),
    });
    expect(storefront.filter((r) => r.fullyPromoted).map((r) => [r.cluster, r.phase, r.step, r.weight])).toEqual([
      ['prod-ca-central-1', 'Healthy', 4, 100],
      ['prod-sa-east-1', 'Healthy', 4, 100],
    ]);
    const search = data.rollouts.filter((r) => r.name === 'search');
    expect(search.map((r) => [r.strategy, r.phase, r.step, r.weight, r.pausedReason])).toEqual(
      Array(3).fill(['blue-green', 'Paused', null, null, 'BlueGreenPause']),
    );
  });

  it('groups Rollouts alike but for their cluster into one line with the cluster count, worst first', async () => {
    const reply = await ask('rollouts');
    const groups = (reply.data as RolloutsData).groups;
    expect(groups.map((g) => [g.name, g.phase, g.clusters.length, g.clustersOfRollout])).toEqual([
      ['storefront', 'Degraded', 1, 12],
      ['search', 'Paused', 3, 3],
      ['storefront', 'Paused', 9, 12],
      ['storefront', 'Healthy', 2, 12],
    ]);
    const text = renderText(reply);
    expect(text).toContain(
      'storefront · canary · Paused at step 1/4 · 20% of traffic · CanaryPauseStep · on 9/12 clusters · for 38m',
    );
    expect(text).toMatch(
      /storefront · canary · Degraded at step 0\/4 · 0% of traffic \(step sets 20%\) · ProgressDeadlineExceeded: ReplicaSet "storefront" has timed out progressing\. · on prod-eu-west-1 \(1\/12 clusters\)/,
    );
    expect(text).toContain('search · blue-green · Paused · BlueGreenPause · on 3/3 clusters');
    expect(text).toContain('registry.example.com/commerce/storefront:v4.2.0');
  });

  it('selects like status: an ApplicationSet name, a cluster', async () => {
    const search = (await ask('rollouts search')).data as RolloutsData;
    expect(search.rollouts.map((r) => r.app).sort()).toEqual([
      'search-prod-ap-southeast-1',
      'search-prod-eu-central-1',
      'search-prod-us-east-1',
    ]);
    const cluster = (await ask('rollouts cluster=prod-us-east-1')).data as RolloutsData;
    expect(cluster.rollouts.map((r) => r.name).sort()).toEqual(['search', 'storefront']);
    const typo = await ask('rollouts storefrnt');
    expect(typo.ok).toBe(false);
    expect(typo.error?.suggestions).toContain('storefront (appset)');
  });

  it('names the Rollouts it could not read live, and counts only the others', async () => {
    await simFault(sim, {
      kind: 'http5xx',
      status: 503,
      path: '/api/v1/applications/storefront-prod-us-west-2/resource',
    });
    const reply = await ask('rollouts storefront');
    expect(reply.ok).toBe(true);
    const data = reply.data as RolloutsData;
    expect(data.rollouts).toHaveLength(11);
    expect(data.unread).toEqual([
      expect.objectContaining({
        app: 'storefront-prod-us-west-2',
        cluster: 'prod-us-west-2',
        name: 'storefront',
        error: expect.stringContaining('503'),
      }),
    ]);
    // Still 12 clusters have the Rollout: the unread one is not forgotten in the denominator.
    expect(data.groups.find((g) => g.phase === 'Paused')).toMatchObject({ clustersOfRollout: 12 });
    expect(renderText(reply)).toContain(
      '1 Rollout of 12 could not be read live from Argo CD, so they are not counted above: storefront-prod-us-west-2',
    );
  });

  it('reads a replaced app anew: one that no longer lists its Rollout is no longer read', async () => {
    const before = (await ask('rollouts storefront')).data as RolloutsData;
    expect(before.rollouts).toHaveLength(12);
    const fa = fleet.appsNamed('storefront-prod-us-west-2')[0];
    const resources = (fa.app.status?.resources ?? []).filter((r) => r.kind !== 'Rollout');
    fleet.upsertApp({ ...fa, app: { ...fa.app, status: { ...fa.app.status, resources } } });
    try {
      const after = (await ask('rollouts storefront')).data as RolloutsData;
      expect(after.rollouts).toHaveLength(11);
      expect(after.rollouts.map((r) => r.app)).not.toContain('storefront-prod-us-west-2');
    } finally {
      fleet.upsertApp(fa);
    }
    expect(((await ask('rollouts storefront')).data as RolloutsData).rollouts).toHaveLength(12);
  });

  it('fails, naming why, when no Rollout could be read at all', async () => {
    await simFault(sim, { kind: 'badBody', body: '<html>gateway</html>', match: '/resource' });
    const reply = await ask('rollouts search');
    expect(reply.ok).toBe(false);
    expect(reply.error?.code).toBe('argocd_unavailable');
    expect(reply.error?.message).toMatch(
      /^Could not read any of the 3 Rollouts of appset `search` from Argo CD \(Argo CD instance prod answered GET/,
    );
  });

  it('app NAME shows its Rollout read live, and offers its actions', async () => {
    const reply = await ask('app storefront-prod-eu-west-1');
    const app = (reply.data as AppData).app;
    expect(app.rollouts).toEqual([
      expect.objectContaining({ name: 'storefront', phase: 'Degraded', step: 0, steps: 4, weight: 0, revision: '7' }),
    ]);
    const text = renderText(reply);
    expect(text).toContain('Argo Rollouts');
    expect(text).toMatch(/Rollout\/storefront.* · canary · Degraded at step 0\/4/);
    expect(reply.blocks.at(-1)).toMatchObject({
      kind: 'actions',
      buttons: expect.arrayContaining([{ label: 'Rollout actions', command: 'actions storefront-prod-eu-west-1' }]),
    });
  });

  it('actions APP: what Argo CD offers now on the app’s Rollout, enabled first', async () => {
    const reply = await ask('actions storefront-prod-us-east-1');
    expect(reply.ok).toBe(true);
    const data = reply.data as ActionsData;
    expect(data.resource).toEqual({
      group: 'argoproj.io',
      version: 'v1alpha1',
      kind: 'Rollout',
      namespace: 'storefront',
      name: 'storefront',
    });
    expect(data.actions.map((a) => [a.name, a.disabled])).toEqual([
      ['abort', false],
      ['pause', false],
      ['promote-full', false],
      ['restart', false],
      ['resume', false],
      ['skip-current-step', false],
      ['retry', true],
    ]);
    expect(data.actions.find((a) => a.name === 'restart')?.displayName).toBe('Restart Pods');
    expect(renderText(reply)).toMatch(/\n {2}\S* ?retry · disabled now\n/);
    const promoted = (await ask('actions storefront-prod-ca-central-1')).data as ActionsData;
    expect(promoted.actions.filter((a) => !a.disabled).map((a) => a.name)).toEqual(['restart']);
  });

  it('actions APP KIND/NAME for another resource; a name the app lacks gets its resources offered', async () => {
    const service = (await ask('actions search-prod-us-east-1 service/search-active')).data as ActionsData;
    expect(service.resource).toMatchObject({ kind: 'Service', name: 'search-active' });
    expect(service.actions).toEqual([]);
    const missing = await ask('actions search-prod-us-east-1 Deployment/search');
    expect(missing.ok).toBe(false);
    expect(missing.error?.code).toBe('unknown_target');
    expect(missing.error?.suggestions?.[0]).toBe('actions search-prod-us-east-1 Rollout/search');
  });

  it('rollout on an app with a Rollout points to rollouts; rollout on its ApplicationSet says where its canaries are', async () => {
    const onApp = await ask('rollout storefront-prod-eu-west-1');
    expect(onApp.ok).toBe(false);
    expect(onApp.error?.message).toContain('`rollouts storefront-prod-eu-west-1` shows its canary step and weight');
    expect(onApp.error?.suggestions?.[0]).toBe('rollouts storefront-prod-eu-west-1');
    const onAppSet = await ask('rollout storefront');
    expect(renderText(onAppSet)).toContain(
      '12 of its apps deploy an Argo Rollouts Rollout: rollouts storefront shows their steps and weights.',
    );
  });
});

describe('rollouts on a RollingSync ApplicationSet without Rollouts', () => {
  let sim: SimServer;
  beforeAll(async () => {
    sim = await startTestSim({ scenario: 'progressive-infra', frozen: true });
  });
  afterAll(async () => {
    await sim?.stop();
  });

  it('points to rollout, which follows RollingSync steps', async () => {
    const instance = sim.instances[0];
    const config = configSchema.parse({
      instances: [{ name: instance.name, url: instance.url, token: instance.token }],
    });
    const argocd = createClients(config);
    const api = argocd.get(instance.name)!;
    const fleet = StaticFleet.fromObjects([
      {
        name: instance.name,
        applications: (await api.listApplications()).items,
        applicationSets: (await api.listApplicationSets()).items,
      },
    ]);
    const reply = await dispatch('rollouts progressive-infra', {
      services: { config, fleet, argocd },
      user: 'U1',
      surface: 'terminal',
    });
    expect(reply.ok).toBe(false);
    expect(reply.error?.code).toBe('unknown_target');
    expect(reply.error?.message).toBe(
      '`progressive-infra` is a RollingSync ApplicationSet and none of its apps has an Argo Rollouts Rollout: `rollout progressive-infra` shows its steps.',
    );
    expect(reply.error?.suggestions).toEqual(['rollout progressive-infra']);
    const fleetWide = await dispatch('rollouts', {
      services: { config, fleet, argocd },
      user: 'U1',
      surface: 'terminal',
    });
    expect(fleetWide.ok).toBe(true);
    expect((fleetWide.data as RolloutsData).rollouts).toEqual([]);
    expect(renderText(fleetWide)).toContain('deploys an Argo Rollouts Rollout');
  });
});
