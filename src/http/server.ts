import http from 'node:http';
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { FleetView } from '../fleet/model.js';

export interface HealthSource {
  /** Per-instance mirror state; ready when every instance has synced once. */
  mirrorHealth(): { instance: string; synced: boolean; error?: string }[];
  redisOk?(): Promise<boolean>;
}

/** /healthz (process alive), /readyz (mirror synced, Redis answers), /metrics (Prometheus). */
export async function startHttpServer(opts: { port: number; fleet: FleetView; health: HealthSource }): Promise<{ port: number; close(): Promise<void> }> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  new Gauge({
    name: 'rollcall_fleet_apps',
    help: 'Applications in the mirror, by instance',
    labelNames: ['instance'],
    registers: [registry],
    collect() {
      this.reset();
      const counts = new Map<string, number>();
      for (const a of opts.fleet.apps()) counts.set(a.instance, (counts.get(a.instance) ?? 0) + 1);
      for (const [instance, n] of counts) this.set({ instance }, n);
    },
  });

  const server = http.createServer(async (req, res) => {
    const url = req.url?.split('?')[0];
    if (url === '/healthz') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
    if (url === '/readyz') {
      const instances = opts.health.mirrorHealth();
      const redis = opts.health.redisOk ? await opts.health.redisOk().catch(() => false) : true;
      const ready = redis && instances.every((i) => i.synced);
      res.writeHead(ready ? 200 : 503, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ ready, redis, instances }));
    }
    if (url === '/metrics') {
      res.writeHead(200, { 'content-type': registry.contentType });
      return void res.end(await registry.metrics());
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(opts.port, resolve));
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : opts.port,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
