import { createClients } from '../../src/infra/argocd/client.js';
import type { Services } from '../../src/commands/registry.js';
import { configSchema } from '../../src/infra/config/schema.js';
import { FleetMirror } from '../../src/fleet/mirror.js';

/** A rollcall wired to the simulator as the chaos suite runs it: real clients, real mirror (list + watch). */
export async function chaosServices(instances: { name: string; url: string; token: string }[]) {
  const timeout = Number(process.env.ARGO_TIMEOUT_MS ?? 3000);
  const rateLimit = { max: Number(process.env.RATE_MAX ?? 400), per: Number(process.env.RATE_PER_MS ?? 1000) };
  const config = configSchema.parse({
    instances: instances.map((i) => ({ name: i.name, url: i.url, token: i.token, timeout, rateLimit })),
    access: { operators: ['U_OP'], admins: ['U_ADMIN'] },
  });
  const clients = createClients(config, { retry: { retries: 4, baseMs: 100, maxMs: 1000, retryAfterCapMs: 2000 } });
  const fleet = new FleetMirror(
    clients,
    config.instances.map((i) => ({ name: i.name })),
    { relistDelayMs: 100, retryMs: 300 },
  );
  await fleet.start();
  const services: Services = { config, fleet, argocd: clients };
  return { config, fleet, services, clients };
}
