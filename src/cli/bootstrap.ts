import type { ArgoApi } from '../argocd/api.js';
import { createClients } from '../argocd/client.js';
import { setDisplayTimeZone } from '../core/format.js';
import type { RollcallConfig } from '../config/schema.js';
import { FleetMirror } from '../fleet/mirror.js';
import type { Services } from '../commands/registry.js';
import type { Notifier } from '../core/notifier.js';
import { startEngine } from '../runbooks/engine.js';
import type { Redis } from 'ioredis';
import { closeRedis, createRedis } from '../jobs/redis.js';
import { startSchedules, type Schedules } from '../jobs/schedules.js';
import { createKubeClients } from '../kube/clients.js';
import { PauseStore } from '../runbooks/rollout-pause.js';
import type { Logger } from '../log.js';

export interface Runtime {
  services: Services;
  mirror: FleetMirror;
  clients: Map<string, ArgoApi>;
  /** Starts the runbook engine (Redis) on demand; read-only use never needs Redis. */
  /** `schedules` (default: any role but bot) runs the schedules of rollcall.yaml here; a one-shot `ask` does not. */
  enableRuns(opts: { role: 'all' | 'bot' | 'worker'; redisUrl: string; schedules?: boolean }): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Builds what every surface shares: one Argo CD client per instance, the live mirror of the
 * fleet (list + watch), and — when asked — the runbook engine. Slack, the terminal, schedules and
 * workers all go through these same objects.
 */
export async function startRuntime(config: RollcallConfig, opts: { logger: Logger; notifier?: Notifier }): Promise<Runtime> {
  setDisplayTimeZone(config.display.timeZone);
  const clients = createClients(config) as Map<string, ArgoApi>;
  const mirror = new FleetMirror(
    clients,
    config.instances.map((i) => ({ name: i.name, uiUrl: i.uiUrl ?? i.url })),
    { logger: opts.logger },
  );
  await mirror.start();
  const services: Services = { config, fleet: mirror, argocd: clients, notifier: opts.notifier, now: () => new Date() };
  if (config.kube.clusters.length) services.kube = await createKubeClients(config);
  let engine: Awaited<ReturnType<typeof startEngine>> | undefined;
  let pausesRedis: Redis | undefined;
  let schedules: Schedules | undefined;
  return {
    services,
    mirror,
    clients,
    async enableRuns({ role, redisUrl, schedules: withSchedules = role !== 'bot' }) {
      if (engine) return;
      engine = await startEngine(services, { role, redisUrl, prefix: config.redis.prefix });
      services.runs = engine.runs;
      pausesRedis = createRedis(redisUrl);
      services.pauses = new PauseStore(pausesRedis, config.redis.prefix);
      // Schedules tick where steps run; BullMQ makes one job of each tick however many workers there are.
      if (withSchedules && config.sealedSecrets.schedules.length) {
        schedules = await startSchedules({ config, runs: engine.runs, redisUrl, prefix: config.redis.prefix, logger: opts.logger });
      }
    },
    async stop() {
      await schedules?.stop();
      await engine?.stop();
      if (pausesRedis) await closeRedis(pausesRedis);
      await mirror.stop();
    },
  };
}
