import { describe, expect, it } from 'vitest';
import type { Application } from '../../src/infra/argocd/types.js';
import { dispatch } from '../../src/commands/index.js';
import { prepareStatus } from '../../src/commands/status.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { MIN_CHUNKED } from '../../src/fleet/chunks.js';
import { okAnswer } from '../support/replies.js';
import { ago, app, ctx, services } from './fixtures.js';

/**
 * A bot prepares `status` before it takes requests: the first answer must then read no Application's status again
 * (everything it needs was judged and kept), and say exactly what an unprepared bot says.
 */

const CLUSTERS = 40;

/** A fleet big enough to be kept in chunks, with crash-looping and OutOfSync apps; counts every read of a status. */
function countedFleet(): { fleet: StaticFleet; reads: () => number } {
  let reads = 0;
  const apps: Application[] = [];
  for (let i = 0; i < MIN_CHUNKED + 500; i++) {
    const cluster = `prod-${i % CLUSTERS}`;
    const service = `svc-${Math.floor(i / CLUSTERS)}`;
    const degraded = i % 97 === 0;
    const outOfSync = i % 89 === 0;
    const status: Application['status'] = {
      sync: { status: outOfSync ? 'OutOfSync' : 'Synced', revision: 'a'.repeat(40) },
      health: { status: degraded ? 'Degraded' : 'Healthy', lastTransitionTime: ago(30 + (i % 7)) },
      ...(degraded
        ? {
            resources: [
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
            ],
          }
        : {}),
    };
    const a = app({ name: `${service}-${cluster}`, clusterName: cluster });
    Object.defineProperty(a, 'status', {
      enumerable: true,
      get: () => {
        reads++;
        return status;
      },
    });
    apps.push(a);
  }
  const clusters = Array.from({ length: CLUSTERS }, (_, c) => ({
    name: `prod-${c}`,
    server: `https://prod-${c}.example.com`,
  }));
  return { fleet: StaticFleet.fromObjects([{ name: 'east', applications: apps, clusters }]), reads: () => reads };
}

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
