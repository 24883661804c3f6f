import { createRequire } from 'node:module';
import type { Counter, CounterConfiguration, Histogram, HistogramConfiguration, Registry } from 'prom-client';

/**
 * The Prometheus metrics every layer records into, served at /metrics by `rollcall start`. The names are a
 * contract: deploy/grafana/rollcall-dashboard.json queries exactly these, and a test holds the two together.
 * Recording begins when a process first asks for the registry (`rollcall start` does before anything else);
 * until then a record goes nowhere, so a one-shot `ask`, which nobody scrapes, never loads prom-client.
 */
type Labels = Record<string, string | number>;

interface Lazy {
  bind(prom: typeof import('prom-client'), registry: Registry): void;
}

const lazies: Lazy[] = [];
let registry: Registry | undefined;

/** The registry /metrics serves; the first call loads prom-client and starts every metric recording. */
export function metricsRegistry(): Registry {
  if (registry) return registry;
  const prom = createRequire(import.meta.url)('prom-client') as typeof import('prom-client');
  registry = new prom.Registry();
  for (const m of lazies) m.bind(prom, registry);
  return registry;
}

class LazyCounter implements Lazy {
  private real?: Counter;
  constructor(private readonly spec: Omit<CounterConfiguration<string>, 'registers'>) {
    lazies.push(this);
  }
  bind(prom: typeof import('prom-client'), to: Registry): void {
    this.real = new prom.Counter({ ...this.spec, registers: [to] });
  }
  inc(labels: Labels, value = 1): void {
    this.real?.inc(labels, value);
  }
}

class LazyHistogram implements Lazy {
  private real?: Histogram;
  constructor(private readonly spec: Omit<HistogramConfiguration<string>, 'registers'>) {
    lazies.push(this);
  }
  bind(prom: typeof import('prom-client'), to: Registry): void {
    this.real = new prom.Histogram({ ...this.spec, registers: [to] });
  }
  observe(labels: Labels, value: number): void {
    this.real?.observe(labels, value);
  }
}

/** Chat commands (Slack, terminal, buttons) by command name and result (`ok` or the error code). */
export const commandsTotal = new LazyCounter({
  name: 'rollcall_commands_total',
  help: 'Chat commands handled, by command and result (ok or the error code)',
  labelNames: ['command', 'result'],
});

export const commandDuration = new LazyHistogram({
  name: 'rollcall_command_duration_seconds',
  help: 'Time to answer a chat command, by command and result',
  labelNames: ['command', 'result'],
  buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10],
});

/** Slack must see an ack within 3 s: the histogram's 3 s bucket is the one to alert on. */
export const slackAckDuration = new LazyHistogram({
  name: 'rollcall_slack_ack_seconds',
  help: 'Time from a Slack request arriving to its ack',
  labelNames: ['surface'],
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5],
});

export const slackRateLimitedTotal = new LazyCounter({
  name: 'rollcall_slack_rate_limited_total',
  help: 'Slack Web API calls answered 429, by method',
  labelNames: ['method'],
});

export const runsRefusedTotal = new LazyCounter({
  name: 'rollcall_runs_refused_total',
  help: 'Runs a worker refused to execute, by reason',
  labelNames: ['reason'],
});

/** Every Argo CD API call by instance and HTTP status (`error` when no response came back). */
export const argocdRequestsTotal = new LazyCounter({
  name: 'rollcall_argocd_requests_total',
  help: 'Argo CD API calls, by instance, method and HTTP status code (error = no response)',
  labelNames: ['instance', 'method', 'code'],
});

export const argocdRequestDuration = new LazyHistogram({
  name: 'rollcall_argocd_request_duration_seconds',
  help: 'Argo CD API call latency, by instance',
  labelNames: ['instance'],
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
});

export const mirrorResyncsTotal = new LazyCounter({
  name: 'rollcall_mirror_resyncs_total',
  help: 'Full relists of an instance after its watch stream broke',
  labelNames: ['instance'],
});

export const redisErrorsTotal = new LazyCounter({
  name: 'rollcall_redis_errors_total',
  help: 'Redis connection errors (refused, reset, timeout), by connection',
  labelNames: ['connection'],
});

/** Seconds since `start` (a `process.hrtime.bigint()` reading). */
export function secondsSince(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/** The label for an Argo CD call's outcome: the HTTP status, or `error` when no response came back. */
export function statusLabel(status: number | undefined): string {
  return status ? String(status) : 'error';
}
