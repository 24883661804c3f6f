import { afterEach, describe, expect, it } from 'vitest';
import { startHttpServer } from '../../src/http/server.js';
import { StaticFleet } from '../../src/fleet/model.js';

const fleet = StaticFleet.fromObjects([
  { name: 'prod', applications: [{ metadata: { name: 'a' }, spec: { project: 'default', destination: { name: 'c1' } } }] },
]);

describe('health endpoints', () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => close?.());

  it('is live always, ready only once every instance is mirrored, and exports fleet metrics', async () => {
    let synced = false;
    const server = await startHttpServer({ port: 0, fleet, health: { mirrorHealth: () => [{ instance: 'prod', synced }] } });
    close = server.close;
    const base = `http://127.0.0.1:${server.port}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const notReady = await fetch(`${base}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toMatchObject({ ready: false, instances: [{ instance: 'prod', synced: false }] });
    synced = true;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toContain('rollcall_fleet_apps{instance="prod"} 1');
  });
});
