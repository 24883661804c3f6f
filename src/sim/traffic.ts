import type { Application, ApplicationSource } from '../infra/argocd/types.js';

/**
 * The traffic an app serves, as its metrics show it: a steady request rate, the share of those requests
 * that fail (answered 500), and a log-normal latency given by its median and 99th percentile.
 */
export interface TrafficProfile {
  requestsPerSecond: number;
  /** 0..1: the share of requests answered 500. */
  errorRatio: number;
  /** Seconds. */
  latency: { p50: number; p99: number };
}

/** A scenario's change to the default: only what differs. */
export type TrafficChange = Partial<Omit<TrafficProfile, 'latency'>> & { latency?: Partial<TrafficProfile['latency']> };

/** Every app of every scenario, unless its scenario or its health says otherwise: a few errors, p99 well under 300 ms. */
export const HEALTHY_TRAFFIC: TrafficProfile = {
  requestsPerSecond: 20,
  errorRatio: 0.005,
  latency: { p50: 0.045, p99: 0.16 },
};

/**
 * A Degraded or crash-looping workload: the load balancer still routes to it, and nearly every request fails
 * fast (no ready endpoint, connection refused).
 */
export const FAILING_TRAFFIC: TrafficProfile = {
  requestsPerSecond: 20,
  errorRatio: 0.97,
  latency: { p50: 0.004, p99: 0.02 },
};

/** An app whose workload is Missing runs no pods: it serves nothing. */
export const NO_TRAFFIC: TrafficProfile = { ...HEALTHY_TRAFFIC, requestsPerSecond: 0 };

export function withChange(base: TrafficProfile, change: TrafficChange | undefined): TrafficProfile {
  if (!change) return base;
  return { ...base, ...change, latency: { ...base.latency, ...change.latency } };
}

/** The revision an app runs: what its last sync deployed, with the source it deployed from. */
export interface RunningRevision {
  /** The commit (several sources: their commits joined with ","). */
  revision: string;
  source?: ApplicationSource;
  sources?: ApplicationSource[];
}

/**
 * What the cluster runs is what the last sync applied, not what the app's target resolves to now: an
 * OutOfSync app still runs its old revision. Argo CD records each full sync in `status.history` (the last
 * entry is the latest); an app without history that reports Synced runs its target.
 */
export function runningRevision(app: Application): RunningRevision | undefined {
  const last = app.status?.history?.at(-1);
  if (last) {
    const revision = last.revision ?? last.revisions?.join(',');
    if (revision) return { revision, source: last.source, sources: last.sources };
  }
  const op = app.status?.operationState;
  const result = op?.syncResult;
  if (op?.phase === 'Succeeded' && !op.operation.sync?.dryRun && result) {
    const revision = result.revision ?? result.revisions?.join(',');
    if (revision) return { revision, source: result.source, sources: result.sources };
  }
  const sync = app.status?.sync;
  const revision = sync?.revision ?? sync?.revisions?.join(',');
  if (sync?.status === 'Synced' && revision) return { revision, source: app.spec.source, sources: app.spec.sources };
  return undefined;
}
