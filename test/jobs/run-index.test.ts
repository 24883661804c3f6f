import { afterAll, describe, expect, it } from 'vitest';
import { RunStore, type Run } from '../../src/domain/runbooks/run-store.js';
import { closeRedis, createRedis, keyBase } from '../../src/infra/redis.js';
import { cleanPrefix, testPrefix } from '../runbooks/fake-argo.js';

const REDIS_URL = process.env.REDIS_URL!;

/** A run record of `runbook` as the engine stores one, awaiting confirmation. */
const fields = (runbook: string, n: number): Omit<Run, 'id' | 'version' | 'createdAt' | 'updatedAt'> => ({
  runbook,
  title: runbook,
  params: { n: String(n) },
  requester: 'U1',
  surface: 'terminal',
  status: 'awaiting-confirmation',
  approvalsRequired: 0,
  approvals: [],
  steps: [],
  generation: 0,
  targets: [],
});

describe('run records: one runbook’s runs, however many others came since', () => {
  const prefix = testPrefix();
  const redis = createRedis(REDIS_URL);
  const store = new RunStore(redis, prefix);
  afterAll(async () => {
    await cleanPrefix(REDIS_URL, prefix);
    await closeRedis(redis);
  });

  it('lists a runbook’s newest runs behind newer runs of others, older records included, discarded ones not', async () => {
    // A freeze stored before runs had a per-runbook index: in the index of all runs only.
    const before = await store.create(fields('freeze', 0));
    await redis.zrem(`${keyBase(prefix)}runs:runbook:freeze`, before.id);
    expect((await store.listOf(['freeze'], 5)).map((r) => r.id)).toEqual([before.id]);

    // A millisecond apart: runs created in the same one have no order between them.
    for (let n = 1; n <= 3; n++) {
      await new Promise((resolve) => setTimeout(resolve, 2));
      await store.create(fields('freeze', n));
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
    await store.create(fields('unfreeze', 5));
    const dropped = await store.create(fields('freeze', 4));
    await store.discard(dropped, []);
    for (let n = 0; n < 60; n++) {
      // The last two a millisecond apart from the rest, so that they are the newest two.
      if (n >= 58) await new Promise((resolve) => setTimeout(resolve, 2));
      await store.create(fields('bulk-sync', n));
    }

    expect((await store.list(50)).some((r) => r.runbook === 'freeze')).toBe(false);
    const listed = await store.listOf(['freeze'], 50);
    expect(listed.map((r) => r.params.n)).toEqual(['3', '2', '1']);
    expect((await store.listOf(['freeze'], 2)).map((r) => r.params.n)).toEqual(['3', '2']);
    expect(await store.get(dropped.id)).toBeUndefined();
    expect((await store.listOf(['unfreeze'], 10)).map((r) => r.params.n)).toEqual(['5']);
    expect(
      (await store.listOf(['bulk-sync', 'unfreeze', 'freeze'], 2)).map((r) => `${r.runbook} ${r.params.n}`),
    ).toEqual(['bulk-sync 59', 'bulk-sync 58', 'unfreeze 5', 'freeze 3', 'freeze 2']);
  });
});
