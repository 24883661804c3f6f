import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dispatch } from '../../src/commands/index.js';
import { suggest } from '../../src/core/suggest.js';
import type { CommandContext, Services } from '../../src/commands/registry.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { startEngine, type EngineHandle } from '../../src/domain/runbooks/engine.js';
import { loadScenario } from '../../src/sim/scenarios/index.js';
import { cleanPrefix, testConfig, testPrefix } from '../runbooks/fake-argo.js';

// seed-outage: 540 apps on 12 clusters, the fleet of the outage a pasted megabyte once froze for a minute.
const { fixture } = loadScenario('seed-outage');
const fleet = StaticFleet.fromObjects(fixture.instances);
const names = fleet.apps().map((a) => a.app.metadata.name);

let engine: EngineHandle;
let ctx: CommandContext;
const prefix = testPrefix();

beforeAll(async () => {
  const services: Services = {
    config: testConfig(
      { operators: ['U_OP'] },
      fixture.instances.map((i) => i.name),
    ),
    fleet,
    argocd: new Map(),
  };
  engine = await startEngine(services, { role: 'bot', redisUrl: process.env.REDIS_URL!, prefix });
  services.runs = engine.runs;
  services.audit = engine.runs.audit;
  ctx = { services, user: 'U_OP', surface: 'terminal' };
});
afterAll(async () => {
  await engine?.stop();
  await cleanPrefix(process.env.REDIS_URL!, prefix);
});

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - started };
}

describe('bounded cost of what users type', () => {
  it('answers a 4 MB `sync` argument at once with command_too_long, on a 540-app fleet', async () => {
    expect(names.length).toBe(540);
    const { value: reply, ms } = await timed(() => dispatch(`sync ${'a'.repeat(4 * 1024 * 1024)}`, ctx));
    expect(reply.error).toMatchObject({
      code: 'command_too_long',
      message: expect.stringContaining('rollcall reads at most 4,000'),
    });
    expect(reply.command).toBe('sync');
    expect(ms).toBeLessThan(1000);
  });

  it('answers the longest allowed `sync` argument that matches nothing in well under a second, still with the closest names when there are any', async () => {
    const { value: reply, ms } = await timed(() => dispatch(`sync ${'auth-config-prod-us-east-1x'.repeat(140)}`, ctx));
    expect(reply.error?.code).toBe('unknown_target');
    expect(ms).toBeLessThan(500);
    const typo = await dispatch('sync auth-confg-prod-us-east-1', ctx);
    expect(typo.error).toMatchObject({ code: 'unknown_target' });
    expect(JSON.stringify(typo.error)).toContain('auth-config-prod-us-east-1');
  });

  it('keeps suggestions O(small): a 10,000-character word against 5,400 names takes milliseconds', () => {
    const many = Array.from({ length: 10 }, (_, i) => names.map((n) => `${n}-${i}`)).flat();
    const word = 'auth-service-prod-eu1'.repeat(500);
    const longStarted = performance.now();
    expect(suggest(word, many)).toEqual([]);
    expect(performance.now() - longStarted).toBeLessThan(100);
    // A word of 40 characters, within reach of every name by length, is still cheap.
    const started = performance.now();
    suggest('payments-service-prod-us1-canary-tier-xx', many);
    expect(performance.now() - started).toBeLessThan(300);
  });
});
