import { afterAll, describe, expect, it } from 'vitest';
import { AuditLog } from '../../src/domain/audit/audit-log.js';
import { isRollcallError } from '../../src/core/errors.js';
import { ChangeLog } from '../../src/domain/incidents/change-log.js';
import { IncidentStore } from '../../src/domain/incidents/store.js';
import { closeRedis, createRedis } from '../../src/infra/redis.js';
import { cleanPrefix, testPrefix } from '../runbooks/fake-argo.js';

const prefix = testPrefix();
const redis = createRedis(process.env.REDIS_URL!);
afterAll(async () => {
  await cleanPrefix(process.env.REDIS_URL!, prefix);
  await closeRedis(redis);
});

const declared = {
  title: 'auth down',
  severity: 2,
  scopeApps: ['prod/auth-service-us1'],
  declaredBy: 'U1',
  declaredAt: new Date().toISOString(),
  lookbackMs: 900_000,
};

describe('incidents read back from Redis', () => {
  it('round-trips an incident with its numbers, lists and Slack header typed', async () => {
    const store = new IncidentStore(redis, `${prefix}-ok`);
    const created = await store.create({ ...declared, header: { channel: 'C1', ts: '1.2' } });
    const read = await store.get(created.id);
    expect(read).toEqual(created);
    expect(typeof read!.severity).toBe('number');
  });

  it('refuses a stored incident whose severity is not a number with stored_record_invalid naming the incident and field', async () => {
    const p = `${prefix}-bad`;
    const store = new IncidentStore(redis, p);
    const created = await store.create(declared);
    await redis.hset(`${p}:incident:${created.id}`, 'severity', '"high"', 'state', 'panicking');
    const error = await store.get(created.id).catch((e: unknown) => e);
    expect(isRollcallError(error, 'stored_record_invalid')).toBe(true);
    expect((error as Error).message).toMatch(
      new RegExp(`^incident ${created.id} in Redis is malformed \\(severity: .*; state: `),
    );
  });

  it('refuses a stored incident with a field that is not JSON rather than throwing a bare SyntaxError', async () => {
    const p = `${prefix}-json`;
    const store = new IncidentStore(redis, p);
    const created = await store.create(declared);
    await redis.hset(`${p}:incident:${created.id}`, 'scopeApps', '[prod/auth');
    const error = await store.get(created.id).catch((e: unknown) => e);
    expect(isRollcallError(error, 'stored_record_invalid')).toBe(true);
    expect((error as Error).message).toContain('scopeApps: not JSON');
  });
});

describe('incident lists', () => {
  it('leave a malformed incident out of open() and recent() and log it, keeping the good ones', async () => {
    const p = `${prefix}-lists`;
    const warnings: unknown[] = [];
    const store = new IncidentStore(redis, p, { warn: (o) => warnings.push(o) });
    const good = await store.create(declared);
    const bad = await store.create({ ...declared, title: 'db down' });
    await redis.hset(`${p}:incident:${bad.id}`, 'severity', 'sev-one');
    expect((await store.open()).map((i) => i.id)).toEqual([good.id]);
    expect((await store.recent()).map((i) => i.id)).toEqual([good.id]);
    expect(warnings).toEqual([
      expect.objectContaining({ incident: bad.id }),
      expect.objectContaining({ incident: bad.id }),
    ]);
  });

  it('find those closed since a time by when they closed, however long ago they were declared; a reopened one leaves that list', async () => {
    const store = new IncidentStore(redis, `${prefix}-closed`);
    const old = await store.create({ ...declared, declaredAt: new Date(Date.now() - 30 * 86_400_000).toISOString() });
    const recent = await store.create(declared);
    const earlier = await store.create(declared);
    await store.update(earlier.id, { state: 'closed', closedAt: new Date(Date.now() - 2 * 86_400_000).toISOString() });
    const from = Date.now() - 86_400_000;
    await store.update(old.id, { state: 'closed', closedAt: new Date(Date.now() - 3_600_000).toISOString() });
    await store.update(recent.id, { state: 'closed', closedAt: new Date().toISOString() });
    expect((await store.closedSince(from)).map((i) => i.id)).toEqual([old.id, recent.id]);
    await store.update(old.id, { state: 'investigating', closedAt: undefined });
    expect((await store.closedSince(from)).map((i) => i.id)).toEqual([recent.id]);
  });
});

describe('the change log reading the audit stream', () => {
  it('leaves a malformed audit entry out of the changes and logs it, keeping the good ones', async () => {
    const p = `${prefix}-changes`;
    const warnings: unknown[] = [];
    const audit = new AuditLog(redis, p);
    const log = new ChangeLog(redis, p, undefined, { warn: (o) => warnings.push(o) });
    const since = Date.now() - 1000;
    await audit.record({ kind: 'argocd.sync', who: 'U1', target: 'prod/auth-service-us1', result: 'accepted' });
    const bad = (await redis.xadd(audit.key, '*', 'kind', 'argocd.sync', 'who', 'U2', 'at', 'yesterday-ish')) as string;
    const changes = await log.read(since);
    expect(changes).toHaveLength(1);
    expect(changes[0].at).not.toBe('yesterday-ish');
    expect(warnings).toEqual([expect.objectContaining({ entry: bad, err: expect.stringContaining('at: not a time') })]);
  });
});
