import { afterEach, describe, expect, it } from 'vitest';
import { dispatch } from '../../src/commands/index.js';
import type { Services } from '../../src/commands/registry.js';
import { configSchema } from '../../src/infra/config/schema.js';
import { FleetMirror } from '../../src/fleet/mirror.js';
import type { SimServer } from '../../src/sim/server.js';
import { simFault, startTestSim, simClients } from '../support/sim.js';

let sim: SimServer | undefined;
let mirror: FleetMirror | undefined;

afterEach(async () => {
  await mirror?.stop();
  await sim?.stop();
  mirror = sim = undefined;
});

const T0 = Date.parse('2030-03-04T10:00:00Z');
const minutes = (n: number) => n * 60_000;

async function start() {
  sim = await startTestSim({ fixture: 'sim-multi-instance.json', keepAliveMs: 50 });
  const clients = simClients(sim, { timeout: 2000, retries: 1, keepAliveMs: 200 });
  const clock = { now: new Date(T0) };
  mirror = new FleetMirror(clients, [], { relistDelayMs: 20, retryMs: 50, now: () => clock.now });
  await mirror.start();
  const services: Services = {
    config: configSchema.parse({ instances: sim.instances.map((i) => ({ name: i.name, url: i.url, token: i.token })) }),
    fleet: mirror,
    argocd: clients,
    now: () => clock.now,
  };
  return { mirror, clock, services };
}

const prodHealth = (m: FleetMirror) => m.health().find((h) => h.instance === 'prod')!;

describe('FleetMirror when Argo CD answers a list with what is not its JSON', () => {
  it('keeps the last good state of the instance, and every answer says why and how old that state is', async () => {
    const { mirror, clock, services } = await start();
    const before = mirror
      .apps()
      .filter((a) => a.instance === 'prod')
      .map((a) => a.app.metadata.name)
      .sort();
    expect(before.length).toBeGreaterThan(0);

    // From now on prod's application list comes back cut short (a proxy); the stream drops, 4 minutes in.
    clock.now = new Date(T0 + minutes(4));
    await simFault(sim!, {
      instance: 'prod',
      kind: 'badBody',
      truncateAt: 22,
      path: '/api/v1/applications',
      method: 'GET',
    });
    await simFault(sim!, { instance: 'prod', kind: 'dropStreams' });
    await expect.poll(() => prodHealth(mirror).errorCode, { timeout: 5000 }).toBe('argocd_bad_response');

    const health = prodHealth(mirror);
    expect(health).toMatchObject({ synced: false, dataAsOf: new Date(T0 + minutes(4)).toISOString() });
    expect(health.error).toContain(
      'Argo CD instance prod answered GET /applications with a body that is not what Argo CD sends (not JSON)',
    );
    expect(health.error).toContain('`{"metadata":{"resource`');
    // Not an empty instance: what was listed before stays.
    expect(
      mirror
        .apps()
        .filter((a) => a.instance === 'prod')
        .map((a) => a.app.metadata.name)
        .sort(),
    ).toEqual(before);
    expect(prodHealth(mirror).synced).toBe(false);

    clock.now = new Date(T0 + minutes(10));
    const reply = await dispatch('status', { services, user: 'U1', surface: 'terminal' });
    expect(reply.ok).toBe(true);
    const warning = (reply.data.warnings as string[])[0];
    expect(warning).toMatch(
      /^Not in sync with Argo CD instance prod \(Argo CD instance prod answered GET \/applications with a body/,
    );
    expect(warning).toContain('showing its data from 6m ago): this answer may be incomplete or stale.');
    expect(reply.data.unsyncedInstances).toEqual([
      expect.objectContaining({
        instance: 'prod',
        code: 'argocd_bad_response',
        dataAsOf: new Date(T0 + minutes(4)).toISOString(),
      }),
    ]);
    expect(reply.blocks.some((b) => b.kind === 'context' && b.text === `:warning: ${warning}`)).toBe(true);

    // Once Argo CD answers properly again, the retried relist brings the instance back in sync.
    await simFault(sim!, { instance: 'prod', kind: 'clear' });
    await expect.poll(() => prodHealth(mirror).synced, { timeout: 5000 }).toBe(true);
    expect(prodHealth(mirror).error).toBeUndefined();
  });

  it('skips an application Argo CD lists as null, and says so in every answer', async () => {
    const { mirror, services } = await start();
    const listed = (await (
      await fetch(`${sim!.instances.find((i) => i.name === 'staging')!.url}/api/v1/applications`, {
        headers: { authorization: `Bearer ${sim!.instances.find((i) => i.name === 'staging')!.token}` },
      })
    ).json()) as { metadata: unknown; items: unknown[] };
    const body = JSON.stringify({ ...listed, items: [null, ...listed.items] });
    await simFault(sim!, { instance: 'staging', kind: 'badBody', body, path: '/api/v1/applications', method: 'GET' });
    await simFault(sim!, { instance: 'staging', kind: 'dropStreams' });
    const note = 'Argo CD instance staging listed an application with no data (null); skipped it';
    await expect
      .poll(() => mirror.health().find((h) => h.instance === 'staging')?.warnings, { timeout: 5000 })
      .toEqual([note]);
    await expect
      .poll(() => mirror.health().find((h) => h.instance === 'staging')?.synced, { timeout: 5000 })
      .toBe(true);
    expect(mirror.apps().filter((a) => a.instance === 'staging')).toHaveLength(listed.items.length);

    const reply = await dispatch('status', { services, user: 'U1', surface: 'terminal' });
    expect(reply.ok).toBe(true);
    expect(reply.data.warnings).toEqual([`${note}.`]);
    expect(reply.blocks.some((b) => b.kind === 'context' && b.text === `:warning: ${note}.`)).toBe(true);
  });
});
