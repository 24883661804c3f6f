import { afterEach, describe, expect, it } from 'vitest';
import { FleetMirror } from '../../src/fleet/mirror.js';
import type { SimServer } from '../../src/sim/server.js';
import { startTestSim, simClients } from '../support/sim.js';

let sim: SimServer | undefined;
let mirror: FleetMirror | undefined;

afterEach(async () => {
  await mirror?.stop();
  await sim?.stop();
  mirror = sim = undefined;
});

async function start(enrichLimit?: number) {
  sim = await startTestSim({ scenario: 'seed-outage' });
  const clients = simClients(sim);
  mirror = new FleetMirror(
    clients,
    sim.instances.map((i) => ({ name: i.name })),
    { enrichLimit },
  );
  await mirror.start();
  return mirror;
}

const crashLooping = (m: FleetMirror) => m.apps().filter((a) => a.app.metadata.name.startsWith('auth-service-'));
const resourceMessages = (m: FleetMirror) =>
  crashLooping(m).flatMap((a) => (a.app.status?.resources ?? []).map((r) => r.health?.message).filter(Boolean));

describe('mirror resource health', () => {
  it('fills in the resource health List leaves out, for the unhealthy apps only', async () => {
    const m = await start();
    expect(crashLooping(m)).toHaveLength(12);
    await expect.poll(() => resourceMessages(m).length, { timeout: 10_000 }).toBeGreaterThanOrEqual(12);
    expect(resourceMessages(m).join('\n')).toMatch(/back-off/);
    const healthy = m.apps().filter((a) => a.app.status?.health?.status === 'Healthy');
    expect(healthy.every((a) => (a.app.status?.resources ?? []).every((r) => r.health === undefined))).toBe(true);
  });

  it('has the resource health when start() resolves: the first answer is as complete as later ones', async () => {
    const m = await start();
    expect(resourceMessages(m)).toHaveLength(12);
    expect(resourceMessages(m).every((msg) => /back-off/.test(msg!))).toBe(true);
  });

  it('keeps List data as it is when enrichment is off', async () => {
    const m = await start(0);
    await new Promise((r) => setTimeout(r, 300));
    expect(resourceMessages(m)).toEqual([]);
  });
});
