import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createClients } from '../../src/infra/argocd/client.js';
import { dispatch } from '../../src/commands/index.js';
import { configSchema } from '../../src/infra/config/schema.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { FleetMirror } from '../../src/fleet/mirror.js';
import type { Services } from '../../src/commands/registry.js';
import type { Fixture } from '../../src/sim/fixture-types.js';
import type { SimServer } from '../../src/sim/server.js';
import { renderText } from '../../src/views/text.js';
import { simFault, startTestSim, simClients } from '../support/sim.js';
import { NOW, eastApps, eastClusters } from './fixtures.js';
import { errorData, okAnswer } from '../support/replies.js';

/** The answer's budget for live reads in these tests: short, so the tests are quick, but a real wait. */
const BUDGET_MS = 300;
/** What the simulator holds its answer back by: ten budgets, so an answer that waited for it cannot pass. */
const SLOW_MS = 3000;

// In an incident Argo CD's API is the first thing to slow down: answers come from the mirror within the budget,
// saying the live part was cut and how old the mirror's data is; what only a live read can answer stays an error.
describe('answers when Argo CD is slow or down', () => {
  let sim: SimServer;
  const fixture: Fixture = {
    instances: [{ name: 'east', applications: structuredClone(eastApps), clusters: eastClusters }],
  };

  beforeAll(async () => {
    sim = await startTestSim({ fixture, frozen: true });
  });
  afterEach(async () => {
    await simFault(sim, { kind: 'clear' });
  });
  afterAll(async () => {
    await sim?.stop();
  });

  const east = () => sim.instances.find((i) => i.name === 'east')!;

  /** What the Argo CD client logged of its calls: how each ended. */
  const calls: { msg: string; path?: string; code?: string }[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void calls.push(JSON.parse(line)) });

  function services() {
    const config = configSchema.parse({
      instances: [{ name: 'east', url: east().url, token: east().token, timeout: 10_000 }],
      answers: { budget: BUDGET_MS },
    });
    const fleet = StaticFleet.fromObjects([
      { name: 'east', applications: structuredClone(eastApps), clusters: eastClusters },
    ]);
    return {
      config,
      fleet,
      argocd: createClients(config, { retry: { retries: 0, baseMs: 10, maxMs: 10 }, logger }),
      now: () => NOW,
    };
  }

  const ask = (text: string, svc = services()) => dispatch(text, { services: svc, user: 'U1', surface: 'terminal' });

  /** The same Get rollcall sends, sent by the test: it settles only when the simulator answers. */
  function rawGet(path: string): { settled: () => boolean; done: Promise<unknown> } {
    let settled = false;
    const done = fetch(`${east().url}${path}`, { headers: { authorization: `Bearer ${east().token}` } })
      .catch(() => undefined)
      .finally(() => (settled = true));
    return { settled: () => settled, done };
  }

  it("answers `app` from the mirror before the slow Get returns, saying the live part was cut and the mirror's age", async () => {
    await simFault(sim, { kind: 'latency', ms: SLOW_MS, path: '/api/v1/applications/auth-prod-us1' });
    const raw = rawGet('/api/v1/applications/auth-prod-us1');
    const reply = okAnswer(await ask('app auth-prod-us1'), 'app');
    // The simulator is still holding the same Get back: the answer did not wait for Argo CD.
    expect(raw.settled()).toBe(false);
    expect(reply.data.app.live).toBe(false);
    expect(reply.data.app.name).toBe('auth-prod-us1');
    expect(renderText(reply)).toContain(
      "⚠ Argo CD instance east did not answer within 0.3s; from the mirror, kept current by Argo CD's watch. Shown without resource health.",
    );
    // rollcall's Get was aborted at the cut, not left waiting on a slow Argo CD: it ended while the sim still held it.
    await expect
      .poll(() => calls.find((c) => c.path === '/applications/auth-prod-us1' && c.msg === 'argocd call failed'))
      .toMatchObject({ code: 'ERR_CANCELED' });
    expect(raw.settled()).toBe(false);
  });

  it('shares one budget across the live reads of an answer: once spent, later reads are not waited on', async () => {
    // Only the Get is slow; the revision metadata that follows would answer at once, but the budget is gone.
    await simFault(sim, { kind: 'latency', ms: SLOW_MS, path: '/api/v1/applications/auth-prod-us1' });
    const before = calls.length;
    const reply = okAnswer(await ask('history auth-prod-us1'), 'history');
    const text = renderText(reply);
    expect(reply.data.live).toBe(false);
    expect(reply.data.history.length).toBeGreaterThan(0);
    expect(text).toContain('did not answer within 0.3s; from the mirror');
    expect(text).toMatch(
      /Commit details of \d+ revisions were not read: Argo CD did not answer within this answer's budget\./,
    );
    // Not sent at all: a spent budget starts no read.
    expect(calls.slice(before).filter((c) => c.path?.includes('/metadata'))).toEqual([]);
  });

  it('answers `app` at once with the live read when Argo CD is quick, the same budget in force', async () => {
    const reply = okAnswer(await ask('app auth-prod-us1'), 'app');
    expect(reply.data.app.live).toBe(true);
    expect(renderText(reply)).not.toContain('did not answer');
  });

  it('fails `diff` as a timeout when only a live read can answer it: never an empty diff', async () => {
    await simFault(sim, { kind: 'latency', ms: SLOW_MS, match: 'managed-resources' });
    const reply = await ask('diff auth-prod-us1');
    expect(reply.ok).toBe(false);
    errorData(reply);
    expect(reply.error).toMatchObject({
      code: 'argocd_timeout',
      message:
        "Argo CD instance east: no answer within 0.3s, this answer's budget for its live reads; try again, or check the instance's health.",
    });
  });

  it('fails `diff` with Argo CD’s own error when it answers 503 within the budget', async () => {
    await simFault(sim, { kind: 'http5xx', status: 503, match: 'managed-resources' });
    const reply = await ask('diff auth-prod-us1');
    expect(reply.ok).toBe(false);
    expect(reply.error?.code).toMatch(/^argocd_/);
    expect(reply.error?.code).not.toBe('argocd_timeout');
  });

  it('falls back to the mirror when the Get answers 503, saying why and how old the copy is', async () => {
    await simFault(sim, { kind: 'http5xx', status: 503, path: '/api/v1/applications/auth-prod-us1' });
    const reply = okAnswer(await ask('app auth-prod-us1'), 'app');
    expect(reply.data.app.live).toBe(false);
    expect(renderText(reply)).toMatch(
      /⚠ Live lookup on east failed \(.+\); showing rollcall's last copy, from the mirror, kept current by Argo CD's watch, without resource health\./,
    );
  });
});

// The real mirror, its watch broken by an Argo CD that answers 503: what it holds is as old as the break, and an
// answer whose live read is cut says so with that age.
describe('answers when Argo CD is down and the mirror is stale', () => {
  let sim: SimServer | undefined;
  let mirror: FleetMirror | undefined;
  afterEach(async () => {
    await mirror?.stop();
    await sim?.stop();
    mirror = sim = undefined;
  });

  it("says the mirror's age in the cut line and in the answer's warning", async () => {
    sim = await startTestSim({ fixture: 'sim-multi-instance.json', keepAliveMs: 50 });
    const clients = simClients(sim, { timeout: 10_000, retries: 0, keepAliveMs: 200 });
    const clock = { now: new Date(NOW) };
    mirror = new FleetMirror(clients, [], { relistDelayMs: 20, retryMs: 50, now: () => clock.now });
    await mirror.start();
    const services: Services = {
      config: configSchema.parse({
        instances: sim.instances.map((i) => ({ name: i.name, url: i.url, token: i.token })),
        answers: { budget: BUDGET_MS },
      }),
      fleet: mirror,
      argocd: clients,
      now: () => clock.now,
    };
    const name = mirror.apps().find((a) => a.instance === 'prod')!.app.metadata.name;

    // prod's lists answer 503 and its streams drop: the watch is broken from NOW on.
    await simFault(sim, { instance: 'prod', kind: 'http5xx', status: 503, path: '/api/v1/applications' });
    await simFault(sim, { instance: 'prod', kind: 'dropStreams' });
    const prod = () => mirror!.health().find((h) => h.instance === 'prod')!;
    await expect.poll(() => prod().synced, { timeout: 5000 }).toBe(false);
    expect(prod().dataAsOf).toBe(NOW.toISOString());

    // 40 s later the app's own Get is slow.
    clock.now = new Date(NOW.getTime() + 40_000);
    await simFault(sim, { instance: 'prod', kind: 'latency', ms: SLOW_MS, path: `/api/v1/applications/${name}` });
    const reply = okAnswer(await dispatch(`app ${name}`, { services, user: 'U1', surface: 'terminal' }), 'app');
    expect(reply.data.app.live).toBe(false);
    const text = renderText(reply);
    expect(text).toContain(
      'Argo CD instance prod did not answer within 0.3s; from the mirror, 40s old (its watch of prod is broken).',
    );
    expect(text).toMatch(/Not in sync with Argo CD instance prod \(.+; showing its data from 40s ago\)/);
  });
});
