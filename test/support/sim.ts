import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Fixture } from '../../src/sim/fixture-types.js';
import { loadFixture } from '../../src/sim/fixture.js';
import { loadScenario, type ScenarioBehaviour } from '../../src/sim/scenarios/index.js';
import { startSimServer, type SimServer } from '../../src/sim/server.js';
import type { SimOperation } from '../../src/sim/store.js';
import { ArgoClient } from '../../src/infra/argocd/client.js';
import { instanceSchema } from '../../src/infra/config/schema.js';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures');

export interface TestSimOptions {
  /** A Fixture object, or a file name under test/fixtures (e.g. 'sim-multi-instance.json') or a path. */
  fixture?: Fixture | string;
  /** A built-in scenario (src/sim/scenarios), e.g. 'progressive-infra'. */
  scenario?: string;
  /** Time moves only through server.controller.advance(ms). @defaultValue true unless `speed` is given */
  manual?: boolean;
  speed?: number;
  frozen?: boolean;
  keepAliveMs?: number;
  watchResume?: 'argocd' | 'replay';
  watchAnswer?: 'first-message' | 'at-once';
}

export function fixturePath(name: string): string {
  return path.isAbsolute(name) || name.includes('/') ? path.resolve(name) : path.join(FIXTURES, name);
}

/** Starts a simulator on a free port for a test; call `stop()` in afterAll/afterEach. */
export async function startTestSim(opts: TestSimOptions = {}): Promise<SimServer> {
  let fixture: Fixture;
  let behaviour: ScenarioBehaviour | undefined;
  // Fixtures loaded here are ours alone; an object the test passed in is copied.
  const adoptFixture = typeof opts.fixture !== 'object';
  if (opts.scenario) {
    ({ fixture, behaviour } = loadScenario(opts.scenario));
  } else if (typeof opts.fixture === 'string') fixture = loadFixture(fixturePath(opts.fixture));
  else fixture = opts.fixture ?? loadFixture(fixturePath('sim-multi-instance.json'));
  return startSimServer({
    fixture,
    adoptFixture,
    port: 0,
    manual: opts.manual ?? opts.speed === undefined,
    speed: opts.speed,
    frozen: opts.frozen,
    keepAliveMs: opts.keepAliveMs,
    watchResume: opts.watchResume,
    watchAnswer: opts.watchAnswer,
    scenarioBehaviour: behaviour,
  });
}

/** Every mutating call the simulator received, optionally for one instance. */
export async function simOperations(server: SimServer, instance?: string): Promise<SimOperation[]> {
  const res = await fetch(
    `${server.url}/_sim/operations${instance ? `?instance=${encodeURIComponent(instance)}` : ''}`,
  );
  return (await res.json()) as SimOperation[];
}

export async function clearSimOperations(server: SimServer): Promise<void> {
  await fetch(`${server.url}/_sim/operations`, { method: 'DELETE' });
}

/** POST /_sim/faults. */
export async function simFault(server: SimServer, fault: Record<string, unknown>): Promise<Response> {
  return fetch(`${server.url}/_sim/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(fault),
  });
}

/**
 * One Argo CD client per simulator instance, by name. `fast`: the timeout, and retries and watch reconnects in
 * milliseconds, so a test that makes the simulator fail does not wait out production backoffs.
 */
export function simClients(
  server: Pick<SimServer, 'instances'>,
  fast?: { timeout: number; retries: number; keepAliveMs: number },
): Map<string, ArgoClient> {
  return new Map(
    server.instances.map((i) => {
      const cfg = instanceSchema.parse({ name: i.name, url: i.url, token: i.token, timeout: fast?.timeout });
      const opts = fast && {
        retry: { retries: fast.retries, baseMs: 5, maxMs: 20 },
        watch: { keepAliveMs: fast.keepAliveMs, backoff: { baseMs: 10, maxMs: 50 } },
      };
      return [i.name, new ArgoClient(cfg, opts)];
    }),
  );
}
