import { Counter, Histogram, Registry } from 'prom-client';

/**
 * The Prometheus metrics every layer records into, served at /metrics by `rollcall start`. The names are a
 * contract: deploy/grafana/rollcall-dashboard.json queries exactly these, and a test holds the two together.
 * Recording is cheap and needs nothing running, so a one-shot `ask` records into a registry nobody reads.
 */
export const metricsRegistry = new Registry();

const registers = [metricsRegistry];

/** Chat commands (Slack, terminal, buttons) by command name and result (`ok` or the error code). */
export const commandsTotal = new Counter({
  name: 'rollcall_commands_total',
  help: 'Chat commands handled, by command and result (ok or the error code)',
  labelNames: ['command', 'result'],
  registers,
});

export const commandDuration = new Histogram({
  name: 'rollcall_command_duration_seconds',
  help: 'Time to answer a chat command, by command and result',
  labelNames: ['command', 'result'],
  buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10],
  registers,
});

/** Slack must see an ack within 3 s: the histogram's 3 s bucket is the one to alert on. */
export const slackAckDuration = new Histogram({
  name: 'rollcall_slack_ack_seconds',
  help: 'Time from a Slack request arriving to its ack',
  labelNames: ['surface'],
  buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5],
  registers,
});

export const slackRateLimitedTotal = new Counter({
  name: 'rollcall_slack_rate_limited_total',
  help: 'Slack Web API calls answered 429, by method',
  labelNames: ['method'],
  registers,
});

export const runsRefusedTotal = new Counter({
  name: 'rollcall_runs_refused_total',
  help: 'Runs a worker refused to execute, by reason',
  labelNames: ['reason'],
  registers,
});

/** Every Argo CD API call by instance and HTTP status (`error` when no response came back). */
export const argocdRequestsTotal = new Counter({
  name: 'rollcall_argocd_requests_total',
  help: 'Argo CD API calls, by instance, method and HTTP status code (error = no response)',
  labelNames: ['instance', 'method', 'code'],
  registers,
});

export const argocdRequestDuration = new Histogram({
  name: 'rollcall_argocd_request_duration_seconds',
  help: 'Argo CD API call latency, by instance',
  labelNames: ['instance'],
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers,
});

export const mirrorResyncsTotal = new Counter({
  name: 'rollcall_mirror_resyncs_total',
  help: 'Full relists of an instance after its watch stream broke',
  labelNames: ['instance'],
  registers,
});

export const redisErrorsTotal = new Counter({
  name: 'rollcall_redis_errors_total',
  help: 'Redis connection errors (refused, reset, timeout), by connection',
  labelNames: ['connection'],
  registers,
});

/** Seconds since `start` (a `process.hrtime.bigint()` reading). */
export function secondsSince(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/** The label for an Argo CD call's outcome: the HTTP status, or `error` when no response came back. */
export function statusLabel(status: number | undefined): string {
  return status ? String(status) : 'error';
}
