import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ArgoApi } from '../../src/infra/argocd/api.js';
import type { Services } from '../../src/commands/registry.js';
import { startPrivateRedis, type PrivateRedis } from '../../src/infra/redis-server.js';
import { startEngine } from '../../src/domain/runbooks/engine.js';
import { loadRunbooks, SHIPPED_RUNBOOKS_DIR } from '../../src/domain/runbooks/loader.js';
import { FakeArgo, LiveFleet, testConfig } from './fake-argo.js';
import { FAST } from './harness.js';

let cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
  cleanup = [];
});

function capture() {
  const lines: { level: string; msg: string }[] = [];
  const at = (level: string) => (_o: unknown, msg?: string) => void lines.push({ level, msg: msg ?? '' });
  return { lines, logger: { info: at('info'), warn: at('warn'), error: at('error') } };
}

describe('trouble is visible in the logs', () => {
  it(
    'logs Redis loss once and its recovery once, whatever the reconnect attempts in between (worker and queue included)',
    { timeout: 60_000 },
    async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-redis-trouble-'));
      cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
      let redis: PrivateRedis = await startPrivateRedis({ persistent: true, dir });
      cleanup.push(() => redis.stop());
      const fleet = new LiveFleet(['argo-test']);
      const services: Services = {
        config: testConfig(),
        fleet,
        argocd: new Map([['argo-test', new FakeArgo('argo-test', fleet) as unknown as ArgoApi]]),
      };
      const { lines, logger } = capture();
      const engine = await startEngine(services, {
        role: 'all',
        redisUrl: redis.url,
        prefix: 'trouble',
        runbooks: loadRunbooks(SHIPPED_RUNBOOKS_DIR),
        ...FAST,
        logger,
      });
      cleanup.push(() => engine.stop());
      expect(engine.redisHealthy()).toBe(true);

      await redis.stop();
      await expect.poll(() => engine.redisHealthy(), { timeout: 5000 }).toBe(false);
      await new Promise((r) => setTimeout(r, 2500)); // many reconnect attempts
      redis = await startPrivateRedis({ persistent: true, dir, port: redis.port });
      await expect.poll(() => engine.redisHealthy(), { timeout: 10_000 }).toBe(true);
      await new Promise((r) => setTimeout(r, 500));

      const lost = lines.filter((l) => l.msg.startsWith('Redis unreachable'));
      expect(lost).toHaveLength(1);
      expect(lost[0]).toMatchObject({ level: 'error', msg: expect.stringContaining('no Argo CD sync is sent') });
      expect(lines.filter((l) => l.msg.startsWith('Redis reachable again'))).toHaveLength(1);
      // Connection errors of BullMQ's own connections are the same outage, not one warning per retry.
      expect(lines.filter((l) => /runbook (worker|queue) error/.test(l.msg))).toEqual([]);
    },
  );
});
