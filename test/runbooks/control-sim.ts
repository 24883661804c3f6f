import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { createClients } from '../../src/infra/argocd/client.js';
import '../../src/commands/index.js';
import type { CommandContext, Services } from '../../src/commands/registry.js';
import type { Notifier } from '../../src/core/notifier.js';
import { configSchema } from '../../src/infra/config/schema.js';
import { FleetMirror } from '../../src/fleet/mirror.js';
import { createKubeClients } from '../../src/infra/kube/clients.js';
import { startEngine, type EngineHandle, type RunService } from '../../src/domain/runbooks/engine.js';
import { loadRunbooks, SHIPPED_RUNBOOKS_DIR } from '../../src/domain/runbooks/loader.js';
import { PauseStore } from '../../src/domain/runbooks/rollout-pause.js';
import { FreezeStore } from '../../src/domain/runbooks/freeze.js';
import { CheckService } from '../../src/domain/checks/index.js';
import { GuardStore } from '../../src/domain/guards/index.js';
import { RegressionStore } from '../../src/domain/checks/regressions.js';
import type { Fixture } from '../../src/sim/fixture-types.js';
import { kubeconfigYaml } from '../../src/sim/kube/kubeconfig.js';
import type { SimServer } from '../../src/sim/server.js';
import { startTestSim } from '../support/sim.js';
import { cleanPrefix, testPrefix } from './fake-argo.js';
import { FAST } from './harness.js';

export interface ControlSim {
  sim: SimServer;
  services: Services;
  runs: RunService;
  engine: EngineHandle;
  prefix: string;
  redis: Redis;
  ctx(user: string): CommandContext;
  close(): Promise<void>;
}

/**
 * rollcall wired to a running simulator for the pause and sealed-secrets runbooks: real Argo CD
 * client and mirror, Kubernetes clients through a kubeconfig for every simulated cluster, the
 * engine and the pause store on real Redis under a fresh prefix. Operators: U_OP, U_OP2; admin: U_ADMIN.
 */
export async function startControlSim(
  opts: {
    fixture?: Fixture;
    scenario?: string;
    logger?: Logger;
    notifier?: Notifier;
    backup?: boolean;
    /** Config sections merged in (`prometheus`, `checks`): checks configured get a CheckService. */
    config?: Record<string, unknown>;
    /** Called with the simulator before the config is built (to start a Prometheus scraping it). */
    beforeConfig?: (sim: SimServer) => Promise<Record<string, unknown>>;
    /** The simulator's clock runs this many times real time (syncs finish); without it the clock stands still. */
    speed?: number;
  } = {},
): Promise<ControlSim> {
  const cleanup: (() => Promise<unknown>)[] = [];
  const close = async () => {
    for (const c of cleanup.reverse()) await c().catch(() => {});
  };
  try {
    const sim = await startTestSim({
      fixture: opts.fixture,
      scenario: opts.scenario,
      ...(opts.speed ? { speed: opts.speed } : { manual: true }),
    });
    cleanup.push(() => sim.stop());
    let kube: Record<string, unknown> = {};
    if (sim.kube.length) {
      const file = path.join(mkdtempSync(path.join(tmpdir(), 'rollcall-control-')), 'kubeconfig');
      writeFileSync(
        file,
        kubeconfigYaml(
          sim.kube.map((k) => ({ name: k.cluster, server: k.url, token: k.token })),
          sim.kubeCaPem,
        ),
      );
      kube = { kube: { clusters: sim.kube.map((k) => ({ name: k.cluster, kubeconfig: file, context: k.cluster })) } };
    }
    const fromSim = (await opts.beforeConfig?.(sim)) ?? {};
    const config = configSchema.parse({
      ...opts.config,
      ...fromSim,
      instances: sim.instances.map((i) => ({
        name: i.name,
        url: i.url,
        token: i.token,
        timeout: 5000,
        rateLimit: { max: 200, per: 1000 },
      })),
      access: { operators: ['U_OP', 'U_OP2'], admins: ['U_ADMIN'] },
      ...kube,
      ...(opts.backup !== false && sim.kube.some((k) => k.cluster === 'ops')
        ? { sealedSecrets: { backup: { cluster: 'ops', namespace: 'sealed-secrets-backup' } } }
        : {}),
    });
    const clients = createClients(config, { logger: opts.logger, retry: { retries: 3, baseMs: 50, maxMs: 200 } });
    const fleet = new FleetMirror(
      clients,
      config.instances.map((i) => ({ name: i.name })),
      { logger: opts.logger, relistDelayMs: 50, retryMs: 200 },
    );
    await fleet.start();
    cleanup.push(() => fleet.stop());
    const redisUrl = process.env.REDIS_URL!;
    const prefix = testPrefix();
    cleanup.push(() => cleanPrefix(redisUrl, prefix));
    const redis = new Redis(redisUrl);
    cleanup.push(() => redis.quit());
    const services: Services = {
      config,
      fleet,
      argocd: clients,
      notifier: opts.notifier,
      kube: config.kube.clusters.length ? await createKubeClients(config) : undefined,
      pauses: new PauseStore(redis, prefix),
      freezes: new FreezeStore(redis, prefix),
      guards: new GuardStore(redis, prefix),
      regressions: new RegressionStore(redis, prefix),
      checks: Object.keys(config.checks).length ? new CheckService(config) : undefined,
    };
    const engine = await startEngine(services, {
      role: 'all',
      redisUrl,
      prefix,
      runbooks: loadRunbooks(SHIPPED_RUNBOOKS_DIR),
      ...FAST,
      logger: opts.logger,
    });
    cleanup.push(() => engine.stop());
    services.runs = engine.runs;
    services.audit = engine.runs.audit;
    return {
      sim,
      services,
      runs: engine.runs,
      engine,
      prefix,
      redis,
      ctx: (user) => ({ services, user, surface: 'terminal', channel: 'C_ONCALL', assumeYes: true }),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** An object as a person compares it: without status and the counters the API server bumps. */
export function comparable<T extends { metadata: { resourceVersion?: string; generation?: number } }>(
  obj: T | undefined,
): unknown {
  if (!obj) return obj;
  const copy = structuredClone(obj) as T & { status?: unknown };
  delete copy.status;
  delete copy.metadata.resourceVersion;
  delete copy.metadata.generation;
  return copy;
}

/** Polls until `predicate` holds (the mirror follows the simulator through its watch stream). */
export async function eventually(
  predicate: () => boolean | Promise<boolean>,
  timeoutMs = 5000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
