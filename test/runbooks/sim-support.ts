import { createClients } from '../../src/infra/argocd/client.js';
import type { Services } from '../../src/commands/registry.js';
import type { Notifier } from '../../src/core/notifier.js';
import { configSchema, type RollcallConfig } from '../../src/infra/config/schema.js';
import { FleetMirror } from '../../src/fleet/mirror.js';
import type { SimServer } from '../../src/sim/server.js';

/** A rollcall wired to a running simulator: real client, real mirror (list + watch). */
export async function servicesForSim(
  sim: SimServer,
  extra: {
    access?: Partial<RollcallConfig['access']>;
    rateLimit?: { max: number; per: number };
    notifier?: Notifier;
  } = {},
) {
  const config = configSchema.parse({
    instances: sim.instances.map((i) => ({
      name: i.name,
      url: i.url,
      token: i.token,
      timeout: 5000,
      rateLimit: extra.rateLimit ?? { max: 200, per: 1000 },
    })),
    access: { operators: ['U_OP'], admins: ['U_ADMIN'], ...extra.access },
  });
  const clients = createClients(config, { retry: { retries: 6, baseMs: 50, maxMs: 400, retryAfterCapMs: 500 } });
  const fleet = new FleetMirror(
    clients,
    config.instances.map((i) => ({ name: i.name })),
    { relistDelayMs: 50, retryMs: 200 },
  );
  await fleet.start();
  const services: Services = { config, fleet, argocd: clients, notifier: extra.notifier };
  return { config, fleet, services, clients };
}
