import http from 'node:http';
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { FleetView } from '../fleet/model.js';

/** What the change recorder of this process has done (ChangeRecorder.stats). */
export interface RecorderStatsSource {
  stats(): { recorded: number; duplicates: number; events: number; pending: number; failures: number };
}

export interface HealthSource {
  /** Per-instance mirror state; ready when every instance has synced once. */
  mirrorHealth(): { instance: string; synced: boolean; error?: string }[];
  redisOk?(): Promise<boolean>;
}

/** /healthz (process alive), /readyz (mirror synced, Redis answers), /metrics (Prometheus). */
export async function startHttpServer(opts: {
  port: number;
  fleet: FleetView;
  health: HealthSource;
  recorder?: RecorderStatsSource;
}): Promise<{ port: number; close(): Promise<void> }> {
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

  const recorder = opts.recorder;
  if (recorder) {
    // Counters read at scrape time from the recorder's own totals.
    const counter = (name: string, help: string, read: (s: ReturnType<RecorderStatsSource['stats']>) => number) =>
      new Gauge({
        name,
        help,
        registers: [registry],
        collect() {
          this.set(read(recorder.stats()));
        },
      });
    counter(
      'rollcall_changes_recorded_total',
      'Fleet changes this process appended to the change log',
      (s) => s.recorded,
    );
    counter(
      'rollcall_changes_duplicate_total',
      'Fleet changes another process (or a backfill) had already recorded',
      (s) => s.duplicates,
    );
    counter('rollcall_change_recorder_events_total', 'Fleet events the change recorder saw', (s) => s.events);
    counter(
      'rollcall_change_recorder_failures_total',
      'Change records that could not be written (offered again on the next backfill)',
      (s) => s.failures,
    );
    counter('rollcall_change_recorder_pending', 'Change records waiting to be written', (s) => s.pending);
  }

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
