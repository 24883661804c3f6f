import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClients } from '../../src/infra/argocd/client.js';
import type { AppDetail } from '../../src/commands/app.js';
import { dispatch } from '../../src/commands/index.js';
import { configSchema } from '../../src/infra/config/schema.js';
import { StaticFleet } from '../../src/fleet/model.js';
import type { Fixture } from '../../src/sim/fixture-types.js';
import type { SimServer } from '../../src/sim/server.js';
import { renderText } from '../../src/views/text.js';
import { startTestSim } from '../support/sim.js';
import { NOW, eastApps, eastClusters } from './fixtures.js';
import { okAnswer } from '../support/replies.js';

// The mirror holds List copies, which carry no resource health in Argo CD 3.x; `app` reads the app
// with a Get from the (simulated) Argo CD to show the unhealthy resource's message.
describe('app against the simulator', () => {
  let sim: SimServer;
  const fixture: Fixture = {
    instances: [{ name: 'east', applications: structuredClone(eastApps), clusters: eastClusters }],
  };

  beforeAll(async () => {
    sim = await startTestSim({ fixture, frozen: true });
  });
  afterAll(async () => {
    await sim?.stop();
  });

  function services(mirrorCopy: boolean, url?: string) {
    const instance = sim.instances.find((i) => i.name === 'east')!;
    const config = configSchema.parse({
      instances: [{ name: 'east', url: url ?? instance.url, token: instance.token, timeout: 2000 }],
    });
    // What the mirror would hold: the List shape, without resource health.
    const apps = structuredClone(eastApps).map((a) => {
      if (mirrorCopy && a.status?.resources) for (const r of a.status.resources) delete r.health;
      return a;
    });
    const fleet = StaticFleet.fromObjects([{ name: 'east', applications: apps, clusters: eastClusters }]);
    return {
      config,
      fleet,
      argocd: createClients(config, { retry: { retries: 0, baseMs: 10, maxMs: 10 } }),
      now: () => NOW,
    };
  }

  it('shows resource health from a live Get that the mirror copy lacks', async () => {
    const reply = okAnswer(
      await dispatch('app auth-prod-us1', { services: services(true), user: 'U1', surface: 'terminal' }),
      'app',
    );
    const d = reply.data.app;
    expect(d.live).toBe(true);
    expect(d.unhealthyResources).toEqual([
      expect.objectContaining({
        kind: 'Deployment',
        name: 'auth',
        health: 'Degraded',
        message: 'Deployment "auth" exceeded its progress deadline',
      }),
    ]);
  });

  // ListResourceEvents (server/application/application.go) with resourceUID/resourceName/resourceNamespace
  // of a tree node: the crash loop's BackOff is recorded on the Pod, under the Degraded Deployment.
  it('shows the recent warning events of the failing resources, read per tree node from the events API', async () => {
    const reply = okAnswer(
      await dispatch('app auth-prod-us1', { services: services(true), user: 'U1', surface: 'terminal' }),
      'app',
    );
    const d = reply.data.app as AppDetail & {
      warningEvents: { kind: string; reason: string; count: number; message: string }[];
    };
    expect(d.warningEvents).toEqual([
      expect.objectContaining({
        kind: 'Pod',
        reason: 'BackOff',
        count: 31,
        message: expect.stringMatching(/^Back-off restarting failed container auth in pod auth-/),
      }),
    ]);
    const text = renderText(reply);
    expect(text).toContain('Recent warning events');
    expect(text).toMatch(/Pod\/auth-\S+ · BackOff ×31/);
    const ops = (await (await fetch(`${sim.url}/_sim/operations`)).json()) as unknown[];
    expect(ops).toEqual([]);
  });

  it('asks for no events for a healthy app', async () => {
    const healthy = eastApps.find((a) => a.status?.health?.status === 'Healthy')!;
    const reply = okAnswer(
      await dispatch(`app ${healthy.metadata.name}`, { services: services(true), user: 'U1', surface: 'terminal' }),
      'app',
    );
    expect(reply.data.app.warningEvents).toEqual([]);
    expect(renderText(reply)).not.toContain('Recent warning events');
  });

  it("falls back to the mirror's copy when Argo CD does not answer, and says so", async () => {
    const reply = okAnswer(
      await dispatch('app auth-prod-us1', {
        services: services(true, 'http://127.0.0.1:9/i/east'),
        user: 'U1',
        surface: 'terminal',
      }),
      'app',
    );
    expect(reply.data.app.live).toBe(false);
    expect(renderText(reply)).toMatch(
      /⚠ Live lookup on east failed \(.+\); showing rollcall's last copy, from the mirror, kept current by Argo CD's watch, without resource health\./,
    );
  });
});
