import { afterEach, describe, expect, it } from 'vitest';
import type { Application } from '../../src/infra/argocd/types.js';
import { dispatch } from '../../src/commands/index.js';
import { keepStatusPrepared, prepareStatus, prepareStatusInSteps, runStatus } from '../../src/commands/status.js';
import { parseCommand } from '../../src/commands/parse.js';
import { FleetIndex, StaticFleet, type FleetApp } from '../../src/fleet/model.js';
import { MIN_CHUNKED, chunkCount } from '../../src/fleet/chunks.js';
import { okAnswer } from '../support/replies.js';
import { ago, app, ctx, services } from './fixtures.js';
import { FeedFleet } from '../support/feed-fleet.js';

/**
 * A bot prepares `status` before it takes requests: the first answer must then read no Application's status again
 * (everything it needs was judged and kept), and say exactly what an unprepared bot says.
 */

const CLUSTERS = 40;

/** An app whose every read of its status is counted. */
function counted(a: Application, status: Application['status'], count: () => void): Application {
  Object.defineProperty(a, 'status', {
    enumerable: true,
    get: () => {
      count();
      return status;
    },
  });
  return a;
}

/** A fleet big enough to be kept in chunks, with crash-looping and OutOfSync apps; counts every read of a status. */
function countedFleet(): { fleet: FeedFleet; reads: () => number; degrade: (at: number) => FleetApp } {
  let reads = 0;
  const count = () => reads++;
  const apps: Application[] = [];
  for (let i = 0; i < MIN_CHUNKED + 500; i++) {
    const cluster = `prod-${i % CLUSTERS}`;
    const service = `svc-${Math.floor(i / CLUSTERS)}`;
    const degraded = i % 97 === 0;
    const outOfSync = i % 89 === 0;
    const status: Application['status'] = {
      sync: { status: outOfSync ? 'OutOfSync' : 'Synced', revision: 'a'.repeat(40) },
      health: { status: degraded ? 'Degraded' : 'Healthy', lastTransitionTime: ago(30 + (i % 7)) },
      ...(degraded ? { resources: crashLooping(service) } : {}),
    };
    apps.push(counted(app({ name: `${service}-${cluster}`, clusterName: cluster }), status, count));
  }
  const clusters = Array.from({ length: CLUSTERS }, (_, c) => ({
    name: `prod-${c}`,
    server: `https://prod-${c}.example.com`,
  }));
  const source = StaticFleet.fromObjects([{ name: 'east', applications: apps, clusters }]);
  const fleet = FeedFleet.of(source);
  // The app at `at` crash-loops from now on: a new object, as the mirror replaces an app on every change.
  const degrade = (at: number) => {
    const previous = fleet.apps()[at];
    const service = previous.app.metadata.name.split('-prod-')[0];
    const status: Application['status'] = {
      ...structuredClone(apps[at].status),
      health: { status: 'Degraded', lastTransitionTime: ago(2) },
      resources: crashLooping(`${service}-${at}`),
    };
    const next = { ...previous, app: counted({ ...previous.app }, status, count) };
    fleet.upsertApp(next);
    fleet.publish({ kind: 'app-changed', instance: 'east', at: new Date().toISOString(), app: next, previous });
    return next;
  };
  return { fleet, reads: () => reads, degrade };
}

function crashLooping(service: string): NonNullable<Application['status']>['resources'] {
  return [
    {
      group: 'apps',
      version: 'v1',
      kind: 'Deployment',
      name: service,
      namespace: service,
      health: {
        status: 'Degraded',
        message: `back-off 5m0s restarting failed container=app pod=${service}-7d4b9c6f5d-x2x9k_${service}`,
      },
    },
  ];
}

const statusOf = async (fleet: FleetIndex) => okAnswer(await dispatch('status', ctx(services(fleet))), 'status');

describe('prepareStatus', () => {
  it('leaves the first status nothing to read again, and the answer is the one an unprepared bot gives', async () => {
    const prepared = countedFleet();
    prepareStatus(prepared.fleet);
    const afterPrepare = prepared.reads();
    expect(afterPrepare).toBeGreaterThan(0);
    const first = okAnswer(await dispatch('status', ctx(services(prepared.fleet))), 'status');
    expect(prepared.reads() - afterPrepare).toBe(0);

    const cold = countedFleet();
    const coldAnswer = okAnswer(await dispatch('status', ctx(services(cold.fleet))), 'status');
    // Without preparing, the first answer judges every app itself.
    expect(cold.reads()).toBeGreaterThanOrEqual(cold.fleet.apps().length);

    expect(first.data).toEqual(coldAnswer.data);
    expect(first.blocks).toEqual(coldAnswer.blocks);
    expect(first.data.total.apps).toBe(MIN_CHUNKED + 500);
    expect(first.data.groups.some((g) => g.kind === 'degraded' && g.reason.startsWith('CrashLoopBackOff'))).toBe(true);
    expect(first.data.groups.some((g) => g.kind === 'outofsync')).toBe(true);
  });
});

describe('status prepared a chunk at a time', () => {
  it('counts only the changed chunks, one per step, and the answer after reads nothing again and is a cold answer', async () => {
    const { fleet, reads, degrade } = countedFleet();
    prepareStatus(fleet);
    // Three apps in three chunks of 1,024 (and the last, shorter one untouched).
    for (const at of [10, 2100, 3500]) degrade(at);
    let pauses = 0;
    const before = reads();
    await prepareStatusInSteps(fleet, async () => void pauses++);
    // Each changed chunk is counted once and read for its groups' clusters once.
    expect(pauses).toBe(6);
    expect(reads()).toBeGreaterThan(before);
    const afterSteps = reads();
    const answer = await statusOf(fleet);
    expect(reads()).toBe(afterSteps);

    const cold = countedFleet();
    for (const at of [10, 2100, 3500]) cold.degrade(at);
    const coldAnswer = await statusOf(cold.fleet);
    expect(answer.data).toEqual(coldAnswer.data);
    expect(answer.blocks).toEqual(coldAnswer.blocks);
    expect(answer.data.problems.some((p) => p.app === fleet.apps()[2100].app.metadata.name)).toBe(true);
  });

  it('ends while the fleet keeps changing: each chunk is counted once per run', async () => {
    const { fleet, degrade } = countedFleet();
    prepareStatus(fleet);
    degrade(0);
    let pauses = 0;
    // Every step, another app changes in every chunk: steps never run out of work.
    await prepareStatusInSteps(fleet, async () => {
      pauses++;
      for (let at = pauses % 1024; at < fleet.apps().length; at += 1024) degrade(at);
    });
    expect(pauses).toBe(2 * chunkCount(fleet.apps()));
  });

  it('lets the event loop turn between chunks while it answers a whole-fleet status', async () => {
    const { fleet, degrade } = countedFleet();
    prepareStatus(fleet);
    for (let at = 0; at < fleet.apps().length; at += 1024) degrade(at);
    let turns = 0;
    let answered = false;
    const turn = () => {
      if (answered) return;
      turns++;
      setImmediate(turn);
    };
    setImmediate(turn);
    const answer = await runStatus(parseCommand('status'), ctx(services(fleet)));
    answered = true;
    // A chunk a turn: five chunks counted, then read for clusters.
    expect(turns).toBeGreaterThanOrEqual(chunkCount(fleet.apps()));
    expect(answer.data.total.apps).toBe(MIN_CHUNKED + 500);
  });
});

describe('keepStatusPrepared', () => {
  let stop: (() => void) | undefined;
  afterEach(() => stop?.());
  const until = async (what: () => boolean, ms: number) => {
    for (const end = Date.now() + ms; !what() && Date.now() < end;) await new Promise((r) => setTimeout(r, 20));
    return what();
  };

  it('counts what changed soon after the change, so the next answer reads nothing; stopped, it counts no more', async () => {
    const { fleet, reads, degrade } = countedFleet();
    prepareStatus(fleet);
    const errors: unknown[] = [];
    stop = keepStatusPrepared(fleet, (err) => errors.push(err));
    degrade(1500);
    degrade(4200);
    const before = reads();
    // Not at once: changes come in bursts, and one run counts a burst.
    expect(reads()).toBe(before);
    expect(await until(() => reads() > before, 3000)).toBe(true);
    const prepared = reads();
    await new Promise((r) => setTimeout(r, 100));
    expect(reads()).toBe(prepared);
    const answer = await statusOf(fleet);
    expect(reads()).toBe(prepared);
    expect(answer.data.problems.some((p) => p.app === fleet.apps()[4200].app.metadata.name)).toBe(true);

    stop();
    degrade(700);
    const afterStop = reads();
    await new Promise((r) => setTimeout(r, 1200));
    expect(reads()).toBe(afterStop);
    expect(errors).toEqual([]);
  });

  it('while the fleet keeps changing, spaces its runs by the CPU share it may take', async () => {
    const { fleet, reads, degrade } = countedFleet();
    prepareStatus(fleet);
    // A hundred-thousandth of a CPU: a run of even 0.02 ms is followed by none for two seconds or more.
    stop = keepStatusPrepared(fleet, () => undefined, { afterMs: 20, share: 0.00001 });
    degrade(1500);
    const before = reads();
    expect(await until(() => reads() > before, 3000)).toBe(true);
    await new Promise((r) => setTimeout(r, 100));
    degrade(3000);
    const second = reads();
    await new Promise((r) => setTimeout(r, 1500));
    expect(reads()).toBe(second);
  });
});
