import { afterAll, describe, expect, it } from 'vitest';
import { AuditLog } from '../../src/domain/audit/audit-log.js';
import { createRedis, closeRedis } from '../../src/infra/redis.js';
import { cleanPrefix, testPrefix } from '../runbooks/fake-argo.js';

const prefix = testPrefix();
const redis = createRedis(process.env.REDIS_URL!);
afterAll(async () => {
  await cleanPrefix(process.env.REDIS_URL!, prefix);
  await closeRedis(redis);
});

describe('audit stream', () => {
  it('keeps who, what, when, params and result under <prefix>:audit, newest first, and never a secret', async () => {
    const audit = new AuditLog(redis, prefix, 50);
    expect(audit.key).toBe(`${prefix}:audit`);
    await audit.record({
      kind: 'run.start',
      who: 'U1',
      runId: 'r-abcde',
      target: 'bulk-sync',
      params: { selector: 'a-*', token: 'xoxb-secret', nested: { password: 'hunter2', 'tls.key': 'PEM' } },
    });
    await audit.record({ kind: 'argocd.sync', who: 'U1', runId: 'r-abcde', target: 'prod/a-1', result: 'accepted' });
    const [latest, first] = await audit.latest(2);
    expect(latest).toMatchObject({ kind: 'argocd.sync', who: 'U1', target: 'prod/a-1', result: 'accepted' });
    expect(first.params).toEqual({
      selector: 'a-*',
      token: '[redacted]',
      nested: { password: '[redacted]', 'tls.key': '[redacted]' },
    });
    expect(Date.parse(first.at)).toBeGreaterThan(Date.now() - 10_000);
    const raw = JSON.stringify(await redis.xrange(audit.key, '-', '+'));
    expect(raw).not.toContain('xoxb-secret');
    expect(raw).not.toContain('hunter2');
  });

  it('trims to about maxLen entries', async () => {
    const audit = new AuditLog(redis, `${prefix}-trim`, 100);
    for (let i = 0; i < 400; i++) await audit.record({ kind: 'step.end', who: 'rollcall', result: String(i) });
    const len = await redis.xlen(audit.key);
    expect(len).toBeLessThan(400);
    expect(len).toBeGreaterThanOrEqual(100);
    expect((await audit.latest(1))[0].result).toBe('399');
    await cleanPrefix(process.env.REDIS_URL!, `${prefix}-trim`);
  });

  it('reads a time range filtered by kind, run and user, in either order, across pages', async () => {
    const audit = new AuditLog(redis, `${prefix}-read`, 10_000);
    const before = Date.now();
    // More entries than one page of reads, so the filters have to keep going past the first page.
    for (let i = 0; i < 1200; i++) {
      await audit.record({
        kind: i % 3 === 0 ? 'argocd.sync' : 'step.end',
        who: i % 2 ? 'U2' : 'U1',
        runId: `r-${i % 4}`,
        result: String(i),
      });
    }
    const syncsOfU1 = await audit.read({ kinds: ['argocd.sync'], who: 'U1', limit: 1000 });
    // i % 3 === 0 and i even: i % 6 === 0 → 200 entries, newest first.
    expect(syncsOfU1).toHaveLength(200);
    expect(syncsOfU1[0].result).toBe('1194');
    expect(syncsOfU1.every((e) => e.kind === 'argocd.sync' && e.who === 'U1')).toBe(true);
    const oldestOfRun = await audit.read({ runId: 'r-3', order: 'oldest', limit: 3 });
    expect(oldestOfRun.map((e) => e.result)).toEqual(['3', '7', '11']);
    expect(await audit.read({ until: before - 60_000 })).toEqual([]);
    expect((await audit.read({ since: new Date(before), limit: 5 })).map((e) => e.result)).toEqual([
      '1199',
      '1198',
      '1197',
      '1196',
      '1195',
    ]);
    expect(await audit.read({ since: Date.now() + 60_000 })).toEqual([]);
    await cleanPrefix(process.env.REDIS_URL!, `${prefix}-read`);
  });
});

describe('audit entries read back from Redis', () => {
  it('skips a malformed stored entry with a warning naming it and the field, and still returns the rest', async () => {
    const p = `${prefix}-malformed`;
    const warnings: { o: unknown; m?: string }[] = [];
    const audit = new AuditLog(redis, p, 100, { warn: (o, m) => warnings.push({ o, m }) });
    await audit.record({ kind: 'run.start', who: 'U1', runId: 'r-good1' });
    const badParams = (await redis.xadd(
      audit.key,
      '*',
      'kind',
      'argocd.sync',
      'who',
      'U2',
      'params',
      '{not json',
      'at',
      new Date().toISOString(),
    )) as string;
    const badKind = (await redis.xadd(
      audit.key,
      '*',
      'kind',
      'run.explode',
      'who',
      'U3',
      'at',
      new Date().toISOString(),
    )) as string;
    await audit.record({ kind: 'run.end', who: 'U1', runId: 'r-good1', result: 'ok' });

    const entries = await audit.read({ order: 'oldest' });
    expect(entries.map((e) => e.kind)).toEqual(['run.start', 'run.end']);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatchObject({ o: { entry: badParams }, m: 'skipped a malformed audit entry' });
    expect((warnings[0].o as { err: string }).err).toMatch(
      new RegExp(`audit entry ${badParams} in Redis is malformed \\(params: not JSON`),
    );
    expect(warnings[1]).toMatchObject({ o: { entry: badKind } });
    expect((warnings[1].o as { err: string }).err).toContain('kind: not an audit kind');
    await cleanPrefix(process.env.REDIS_URL!, p);
  });

  it('decodes actAs and params to their types, not strings', async () => {
    const p = `${prefix}-types`;
    const audit = new AuditLog(redis, p);
    await audit.record({ kind: 'run.refused', who: 'U1', actAs: true, params: { as: 'U9' } });
    const [entry] = await audit.latest(1);
    expect(entry.actAs).toBe(true);
    expect(entry.params).toEqual({ as: 'U9' });
    await cleanPrefix(process.env.REDIS_URL!, p);
  });
});
