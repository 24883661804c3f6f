import http from 'node:http';
import { collectDefaultMetrics, Gauge } from 'prom-client';
import type { FleetView } from '../../fleet/model.js';
import { metricsRegistry } from '../../infra/metrics.js';

/** What the change recorder of this process has done (ChangeRecorder.stats). */
export interface RecorderStatsSource {
  stats(): { recorded: number; duplicates: number; events: number; pending: number; failures: number };
}

const RECORDER_METRICS = [
  'rollcall_changes_recorded_total',
  'rollcall_changes_duplicate_total',
  'rollcall_change_recorder_events_total',
  'rollcall_change_recorder_failures_total',
  'rollcall_change_recorder_pending',
];

export interface HealthSource {
  /** Undefined when Redis answers a PING, else why not. Every role needs Redis: queues, runs, audit. */
  redis(): Promise<string | undefined>;
  /** Bot roles only: whether Slack can reach us (HTTP receiver listening, or the Socket Mode link open). */
  slack?(): boolean;
  /** Recent runbook runs by state, for `rollcall_runs`; absent where no run store is reachable. */
  runsByState?(): Promise<Record<string, number>>;
}

export interface HttpServer {
  port: number;
  close(): Promise<void>;
}

let defaultMetricsCollected = false;

type Registry = ReturnType<typeof metricsRegistry>;

/** The mirror's gauges: applications per instance, whether each instance is followed, and its watch lag. */
function registerFleetMetrics(registry: Registry, fleet: FleetView, now: () => number): void {
  new Gauge({
    name: 'rollcall_fleet_apps',
    help: 'Applications in the mirror, by instance',
    labelNames: ['instance'],
    registers: [registry],
    collect() {
      this.reset();
      const counts = new Map<string, number>();
      for (const a of fleet.apps()) counts.set(a.instance, (counts.get(a.instance) ?? 0) + 1);
      for (const [instance, n] of counts) this.set({ instance }, n);
    },
  });
  new Gauge({
    name: 'rollcall_argocd_instance_up',
    help: '1 when the mirror follows the instance (listed and watching), else 0',
    labelNames: ['instance'],
    registers: [registry],
    collect() {
      this.reset();
      for (const i of fleet.health()) this.set({ instance: i.instance }, i.synced ? 1 : 0);
    },
  });
  new Gauge({
    name: 'rollcall_mirror_lag_seconds',
    help: 'Seconds since the last watch event from the instance (a quiet fleet grows this too; alert with instance_up)',
    labelNames: ['instance'],
    registers: [registry],
    collect() {
      this.reset();
      for (const i of fleet.health())
        if (i.lastEventAt) this.set({ instance: i.instance }, Math.max(0, (now() - Date.parse(i.lastEventAt)) / 1000));
    },
  });
}

function registerRunsMetric(registry: Registry, health: HealthSource): void {
  new Gauge({
    name: 'rollcall_runs',
    help: 'Runbook runs by state, among the most recent ones (a stuck awaiting-approval or paused count is worth an alert)',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      this.reset();
      const counts = await health.runsByState?.().catch(() => undefined);
      for (const [state, n] of Object.entries(counts ?? {})) this.set({ state }, n);
    },
  });
}

function registerRecorderMetrics(registry: Registry, recorder: RecorderStatsSource): void {
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

/** A fresh registry of this server's metrics: the ones of an earlier server in this process are replaced. */
function registerMetrics(
  registry: Registry,
  opts: { fleet: FleetView; health: HealthSource; now: () => number; recorder?: RecorderStatsSource },
): void {
  if (!defaultMetricsCollected) collectDefaultMetrics({ register: registry });
  defaultMetricsCollected = true;
  for (const name of [
    'rollcall_fleet_apps',
    'rollcall_argocd_instance_up',
    'rollcall_mirror_lag_seconds',
    'rollcall_runs',
    ...RECORDER_METRICS,
  ])
    registry.removeSingleMetric(name);
  registerFleetMetrics(registry, opts.fleet, opts.now);
  registerRunsMetric(registry, opts.health);
  if (opts.recorder) registerRecorderMetrics(registry, opts.recorder);
}

async function readiness(health: HealthSource) {
  const redisError = await health.redis().catch((error: Error) => error.message);
  const slack = health.slack ? health.slack() : undefined;
  const ready = !redisError && slack !== false;
  return {
    ready,
    redis: redisError ? { ok: false, error: redisError } : { ok: true },
    ...(slack === undefined ? {} : { slack: { connected: slack } }),
  };
}

function handler(registry: Registry, fleet: FleetView, health: HealthSource): http.RequestListener {
  return async (req, res) => {
    const url = req.url?.split('?')[0];
    const json = (status: number, body: unknown) =>
      void res.writeHead(status, { 'content-type': 'application/json' }).end(`${JSON.stringify(body)}\n`);
    if (url === '/healthz') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
    if (url === '/readyz') {
      const state = await readiness(health);
      return json(state.ready ? 200 : 503, state);
    }
    if (url === '/status') return json(200, { ...(await readiness(health)), instances: fleet.health() });
    if (url === '/metrics') {
      res.writeHead(200, { 'content-type': registry.contentType });
      return void res.end(await registry.metrics());
    }
    res.writeHead(404).end();
  };
}

/**
 * /healthz: the process is alive (the event loop answers). /readyz: it can serve: Redis answers and, for
 * a bot, Slack is connected. An Argo CD instance being down is exactly when on-call needs the bot, so the
 * state of each instance never touches readiness: it goes to /status and /metrics
 * (`rollcall_argocd_instance_up`, `rollcall_mirror_lag_seconds`).
 */
export async function startHttpServer(opts: {
  port: number;
  fleet: FleetView;
  health: HealthSource;
  now?: () => number;
  recorder?: RecorderStatsSource;
}): Promise<HttpServer> {
  const registry = metricsRegistry();
  registerMetrics(registry, { ...opts, now: opts.now ?? Date.now });
  const server = http.createServer(handler(registry, opts.fleet, opts.health));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : opts.port,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
