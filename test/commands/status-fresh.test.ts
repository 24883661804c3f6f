import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Application, ApplicationSet, ProgressiveSyncStatus } from '../../src/infra/argocd/types.js';
import { configSchema } from '../../src/infra/config/schema.js';
import { dispatch } from '../../src/commands/index.js';
import { parseCommand } from '../../src/commands/parse.js';
import { runStatus } from '../../src/commands/status.js';
import { FleetMirror } from '../../src/fleet/mirror.js';
import { StaticFleet, tagApp, type FleetApp } from '../../src/fleet/model.js';
import { groupProblems } from '../../src/fleet/groups.js';
import { summarizeApps } from '../../src/fleet/status.js';
import type { SimServer } from '../../src/sim/server.js';
import { startTestSim, simClients } from '../support/sim.js';
import { okAnswer } from '../support/replies.js';
import { NOW, ago, app, authAppSet, ctx, services } from './fixtures.js';

/**
 * status keeps what it judged of each Application (and each ApplicationSet's entries) until the object is
 * replaced: these check that a change through the mirror, and time passing, still show in the next answer.
 */

let sim: SimServer | undefined;
let mirror: FleetMirror | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await mirror?.stop();
  await sim?.stop();
  mirror = sim = undefined;
});

interface Problem {
  app: string;
  health: string;
  sync: string;
  reason: string;
}

describe('status over the mirror, as apps change', () => {
  it('counts and explains an app by its latest state: Degraded, a new message, Healthy again', async () => {
    sim = await startTestSim({ fixture: 'sim-multi-instance.json', keepAliveMs: 50 });
    const clients = simClients(sim, { timeout: 2000, retries: 2, keepAliveMs: 50 });
    mirror = new FleetMirror(
      clients,
      sim.instances.map((i) => ({ name: i.name })),
      { relistDelayMs: 20, retryMs: 50 },
    );
    await mirror.start();
    const config = configSchema.parse({
      instances: sim.instances.map((i) => ({ name: i.name, url: i.url, token: i.token })),
    });
    const fleet = mirror;
    // A Services of its own per question: no answer is shared between them.
    const status = async () =>
      okAnswer(
        await dispatch('status', { services: { config, fleet, argocd: clients }, user: 'U1', surface: 'terminal' }),
        'status',
      ).data;
    const store = sim.state.instance('prod')!;
    const name = 'payments-prod-eu1';
    const put = async (change: (a: Application) => void, seen: (a: Application) => boolean) => {
      const next = structuredClone(store.apps.get(name)!) as Application;
      change(next);
      store.putApp(next);
      await expect.poll(() => seen(fleet.appsNamed(name)[0].app), { timeout: 3000 }).toBe(true);
    };
    const problemOf = async () => ((await status()).problems as Problem[]).find((p) => p.app === name);

    const before = await status();
    expect(await problemOf()).toBeUndefined();
    const degradedBefore = before.total.health.Degraded ?? 0;

    await put(
      (a) => {
        a.status!.health = { status: 'Degraded', lastTransitionTime: '2026-12-01T10:00:00Z' };
        a.status!.conditions = [{ type: 'ComparisonError', message: 'first reason' }];
      },
      (a) => a.status?.health?.status === 'Degraded',
    );
    expect((await status()).total.health.Degraded ?? 0).toBe(degradedBefore + 1);
    expect(await problemOf()).toMatchObject({ health: 'Degraded', reason: 'ComparisonError: first reason' });

    await put(
      (a) => (a.status!.conditions = [{ type: 'ComparisonError', message: 'second reason' }]),
      (a) => a.status?.conditions?.[0]?.message === 'second reason',
    );
    expect(await problemOf()).toMatchObject({ reason: 'ComparisonError: second reason' });

    await put(
      (a) => {
        a.status!.health = { status: 'Healthy' };
        delete a.status!.conditions;
      },
      (a) => a.status?.health?.status === 'Healthy',
    );
    expect(await problemOf()).toBeUndefined();
    expect((await status()).total.health.Degraded ?? 0).toBe(degradedBefore);
  }, 20_000);
});

describe('status as time passes', () => {
  it('says for how long a sync has been running by the clock of each answer, not of the first one', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(NOW);
    const running = app({
      name: 'slow-sync',
      clusterName: 'prod-us1',
      status: {
        sync: { status: 'OutOfSync' },
        health: { status: 'Healthy' },
        operationState: { phase: 'Running', startedAt: ago(5), operation: {} },
      } as Application['status'],
    });
    const fleet = StaticFleet.fromObjects([{ name: 'east', applications: [running] }]);
    const reason = async () =>
      ((await runStatus(parseCommand('status'), ctx(services(fleet)))).data.problems as Problem[])[0].reason;
    expect(await reason()).toBe('sync running for 5m');
    vi.setSystemTime(new Date(NOW.getTime() + 60 * 60_000));
    expect(await reason()).toBe('sync running for 1h 5m');
  });
});

describe('status as an ApplicationSet moves on', () => {
  const member = app({
    name: 'auth-prod-us1',
    clusterName: 'prod-us1',
    appSet: authAppSet.metadata.name,
    status: { sync: { status: 'OutOfSync' }, health: { status: 'Healthy', lastTransitionTime: ago(60) } },
  });
  const withEntry = (
    status: ProgressiveSyncStatus,
    lastTransitionTime: string | undefined = ago(10),
  ): ApplicationSet => ({
    ...authAppSet,
    status: {
      ...authAppSet.status,
      applicationStatus: [
        {
          application: 'auth-prod-us1',
          status,
          step: '1',
          message: '',
          ...(lastTransitionTime ? { lastTransitionTime } : {}),
        },
      ],
    },
  });
  const kinds = async (fleet: StaticFleet) => {
    const reply = await runStatus(parseCommand('status'), ctx(services(fleet)));
    return reply.data.groups.map((g) => `${g.kind}: ${g.reason}`);
  };
  const waiting = 'waiting: step 1 has not reached them yet';
  const outOfSync = 'outofsync: live state differs from the target revision';

  it('reads each new ApplicationSet object: an app waiting for its step becomes a plain OutOfSync when released', async () => {
    const fleetWith = (appSet: ApplicationSet) =>
      StaticFleet.fromObjects([{ name: 'east', applications: [member], applicationSets: [appSet] }]);
    expect(await kinds(fleetWith(withEntry('Waiting')))).toEqual([waiting]);
    expect(await kinds(fleetWith(withEntry('Healthy')))).toEqual([outOfSync]);
  });

  it('reads a new ApplicationSet object while the app itself stays the same object', async () => {
    // With an entry time the waiting app's row is a row of its own; without one ('') it is the problem itself.
    for (const lastTransitionTime of [ago(10), '']) {
      const fleet = StaticFleet.fromObjects([
        { name: 'east', applications: [member], applicationSets: [withEntry('Waiting', lastTransitionTime)] },
      ]);
      const same = fleet.apps()[0];
      expect(await kinds(fleet)).toEqual([waiting]);
      fleet.upsertAppSet({ instance: 'east', appSet: withEntry('Healthy', lastTransitionTime) });
      expect(await kinds(fleet)).toEqual([outOfSync]);
      fleet.upsertAppSet({ instance: 'east', appSet: withEntry('Waiting', lastTransitionTime) });
      expect(await kinds(fleet)).toEqual([waiting]);
      expect(fleet.apps()[0]).toBe(same);
    }
  });
});

describe('status of a large fleet, counted per chunk of apps', () => {
  // Over 4,096 apps summarizeApps and the group denominators keep what each chunk of 1,024 apps adds up to.
  const CLUSTERS = 40;
  const apps = Array.from({ length: 6000 }, (_, i) =>
    app({
      name: `svc${i % 150}-c${i % CLUSTERS}`,
      clusterName: `c${i % CLUSTERS}`,
      appSet: i % 3 ? `svc${i % 150}` : undefined,
      status: {
        sync: { status: i % 97 ? 'Synced' : 'OutOfSync', revision: 'a'.repeat(40) },
        health: { status: i % 89 ? 'Healthy' : 'Degraded', lastTransitionTime: ago(i % 600) },
      },
    }),
  ).map((a, i) => ({ ...a, metadata: { ...a.metadata, name: `${a.metadata.name}-${i}` } }));
  // The same apps one at a time: not an array, so counted in one pass.
  const onePass = (fleet: StaticFleet) =>
    summarizeApps(
      (function* () {
        yield* fleet.apps();
      })(),
    );
  const answer = async (fleet: StaticFleet) => (await runStatus(parseCommand('status'), ctx(services(fleet)))).data;
  // toEqual does not read the order of keys, which the counts keep as one pass meets each value first.
  const inOrder = (s: ReturnType<typeof summarizeApps>) =>
    JSON.stringify({ ...s, appSets: [...s.appSets].map(([instance, names]) => [instance, [...names]]) });

  it('answers as one pass does, before and after apps in the middle and at the end change', async () => {
    const fleet = StaticFleet.fromObjects([{ name: 'east', applications: apps }]);
    expect(summarizeApps(fleet.apps())).toEqual(onePass(fleet));
    const first = await answer(fleet);
    expect(first.total.apps).toBe(6000);

    const changed = fleet.apps()[3000];
    const degraded = {
      ...changed.app,
      status: { ...changed.app.status, health: { status: 'Degraded', lastTransitionTime: ago(1) } },
    } as Application;
    fleet.upsertApp({ ...changed, app: degraded });
    const last = fleet.apps()[5999];
    fleet.upsertApp({ ...last, cluster: 'c-moved' });
    expect(summarizeApps(fleet.apps())).toEqual(onePass(fleet));
    const second = await answer(fleet);
    expect(second.total.health.Degraded).toBe(
      (first.total.health.Degraded ?? 0) + (changed.app.status?.health?.status === 'Degraded' ? 0 : 1),
    );
    expect(second.clusters.find((c) => c.cluster === 'c-moved')).toMatchObject({ apps: 1 });
    expect((second.problems as Problem[]).some((p) => p.app === changed.app.metadata.name)).toBe(true);
  });

  it('answers as one pass does through a run of changes, additions and removals anywhere in the list', () => {
    const fleet = StaticFleet.fromObjects([{ name: 'east', applications: apps }]);
    const groupsOf = (scope: Iterable<FleetApp>, version?: number) =>
      groupProblems(
        summarizeApps(fleet.apps()).problems.map((p) => ({ ...p })),
        scope,
        () => 'degraded',
        undefined,
        version,
      );
    const check = () => {
      const version = fleet.version();
      expect(summarizeApps(fleet.apps(), version)).toEqual(onePass(fleet));
      expect(inOrder(summarizeApps(fleet.apps(), version))).toBe(inOrder(onePass(fleet)));
      const onePassScope = (function* () {
        yield* fleet.apps();
      })();
      expect(groupsOf(fleet.apps(), version)).toEqual(groupsOf(onePassScope));
    };
    check();
    const flip = (at: number) => {
      const fa = fleet.apps()[at];
      const health = fa.app.status?.health?.status === 'Degraded' ? 'Healthy' : 'Degraded';
      const next = { ...fa.app, status: { ...fa.app.status, health: { status: health } } } as Application;
      fleet.upsertApp({ ...fa, app: next, cluster: at % 2 ? fa.cluster : `moved-${at % 7}` });
    };
    for (let round = 0; round < 6; round++) {
      // A few apps replaced in place, one in each of some chunks, then the list read again at the new version.
      for (let k = 0; k < 5; k++) flip((round * 977 + k * 1231) % fleet.apps().length);
      check();
      // An app added at the end (the last chunk grows), and one removed (the last app takes its place).
      const added = app({ name: `new-${round}`, clusterName: `c${round}`, status: { health: { status: 'Degraded' } } });
      fleet.upsertApp(tagApp('east', added, new Map()));
      check();
      const gone = fleet.apps()[(round * 1511) % fleet.apps().length].app.metadata;
      fleet.removeApp('east', gone.name, gone.namespace);
      check();
    }
    expect(fleet.apps()).toHaveLength(6000);
  });

  it('counts the clusters of a group among the selection as one pass does', async () => {
    const fleet = StaticFleet.fromObjects([{ name: 'east', applications: apps }]);
    const summary = summarizeApps(fleet.apps());
    const rows = summary.problems.map((p) => ({ ...p }));
    const chunkedGroups = groupProblems(rows, fleet.apps(), () => 'degraded');
    const onePassGroups = groupProblems(
      rows,
      (function* () {
        yield* fleet.apps();
      })(),
      () => 'degraded',
    );
    expect(chunkedGroups).toEqual(onePassGroups);
    expect(chunkedGroups.some((g) => g.clustersOfGroup > 1)).toBe(true);
  });
});
