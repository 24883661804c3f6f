import { performance } from 'node:perf_hooks';
import type { Application } from '../infra/argocd/types.js';
import { clusterIndex, clusterNameOf } from '../infra/argocd/objects.js';
import type { SimFaults } from './faults.js';
import type { ScenarioBehaviour } from './scenarios/behaviour.js';
import { AppTable, type InstanceStore, type SimState, type StoreChange } from './store.js';
import {
  FAILING_TRAFFIC,
  HEALTHY_TRAFFIC,
  NO_TRAFFIC,
  runningRevision,
  withChange,
  type TrafficProfile,
} from './traffic.js';

/**
 * `GET /metrics`: what each app's own pods would export, in Prometheus' text exposition format 0.0.4, so a
 * real Prometheus can scrape the simulator and metric checks have something true to judge. Per app (every
 * Application of every instance), labelled `app` (metadata.name), `cluster` (the Argo CD cluster name, by the
 * same rule as the fleet's `FleetApp.cluster`) and `namespace` (destination namespace):
 *
 * - `http_requests_total{code="200"|"500"}`, a counter;
 * - `http_request_duration_seconds`, a histogram with the Go client's default buckets;
 * - `app_revision_info{revision}` 1: the commit the app runs (its last synced revision, not its target).
 *
 * Traffic follows the revision each app runs (traffic.ts): healthy by default, mostly errors while Degraded or
 * crash-looping, and whatever the scenario says a revision does (`ScenarioBehaviour.traffic`). A change to an
 * app settles the counters under its old behaviour first, so a finished sync switches behaviour at that moment.
 *
 * Counters advance with wall-clock monotonic time, not the simulator's clock: Prometheus stamps samples with its
 * own clock and rate() divides by it, so requests per second stay requests per second whether the simulator runs
 * at --speed 10 or a test's manual clock stands still. They are deterministic (no randomness: fractional requests
 * carry over to the next scrape) and never go down, since Prometheus reads a drop as a counter reset.
 */

/** The Go client's default histogram buckets (seconds). */
export const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

/** What the checks `rollcall sim --write-config` and the demo write query, keyed by check name. */
export const SIM_CHECKS = {
  'error-rate': {
    description: 'Share of requests answered 5xx',
    query:
      'sum(rate(http_requests_total{app="{{app}}",cluster="{{cluster}}",code=~"5.."}[{{window}}]))' +
      ' / sum(rate(http_requests_total{app="{{app}}",cluster="{{cluster}}"}[{{window}}]))',
    failAbove: 0.05,
    window: '1m',
  },
  'latency-p99': {
    description: '99th percentile request latency, seconds',
    query:
      'histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{app="{{app}}",cluster="{{cluster}}"}[{{window}}])))',
    failAbove: 0.3,
    window: '1m',
  },
} as const;

export type SimCheckName = keyof typeof SIM_CHECKS;

/** z of the 99th percentile of a standard normal distribution. */
const Z99 = 2.3263478740408408;

interface CompiledProfile {
  requestsPerSecond: number;
  errorRatio: number;
  /** Share of requests at or under each of LATENCY_BUCKETS. */
  bucketShares: number[];
  meanSeconds: number;
}

interface AppSeries {
  labels: { app: string; cluster: string; namespace: string };
  revision: string;
  profile: CompiledProfile;
  /** Monotonic ms up to which the counters are settled. */
  settledAt: number;
  /** Fractional requests not yet counted. */
  pending: number;
  requests: number;
  errorShare: number;
  errors: number;
  buckets: number[];
  sumSeconds: number;
}

export interface SimMetricsOptions {
  behaviour?: ScenarioBehaviour;
  faults: Pick<SimFaults, 'isCrashLooping'>;
  /** Monotonic milliseconds (tests pass their own). @defaultValue performance.now */
  monotonicMs?: () => number;
}

export class SimMetrics {
  private readonly series = new Map<string, AppSeries>();
  private readonly now: () => number;
  private readonly clusterNames = new Map<string, Map<string, string>>();
  private readonly listeners: { store: InstanceStore; listener: (c: StoreChange<Application>) => void }[] = [];

  constructor(
    private readonly state: SimState,
    private readonly opts: SimMetricsOptions,
  ) {
    this.now = opts.monotonicMs ?? (() => performance.now());
    const t = this.now();
    for (const store of state.instances.values()) {
      for (const app of store.apps.values()) this.update(store, app, t);
      const listener = (change: StoreChange<Application>) => this.onChange(store, change);
      store.events.on('app', listener);
      this.listeners.push({ store, listener });
    }
  }

  stop(): void {
    for (const { store, listener } of this.listeners) store.events.off('app', listener);
    this.listeners.length = 0;
  }

  /** The exposition of every app's series, counted up to now. */
  exposition(): string {
    const t = this.now();
    this.clusterNames.clear();
    for (const store of this.state.instances.values())
      for (const app of store.apps.values()) this.update(store, app, t);
    return render(this.series.values());
  }

  private onChange(store: InstanceStore, change: StoreChange<Application>): void {
    const t = this.now();
    if (change.type === 'DELETED') {
      this.series.delete(seriesKey(store, change.object));
      return;
    }
    this.update(store, change.object, t);
  }

  /** Settles the app's counters up to `t` under the behaviour it had, then takes on the one it has now. */
  private update(store: InstanceStore, app: Application, t: number): void {
    const key = seriesKey(store, app);
    const labels = {
      app: app.metadata.name,
      cluster: clusterNameOf(app, this.clusterIndexOf(store)),
      namespace: app.spec.destination?.namespace ?? '',
    };
    const running = runningRevision(app);
    const profile = compile(this.profileOf(store, app, running));
    let s = this.series.get(key);
    if (s) settle(s, t);
    // Another cluster or namespace is another series: it starts from zero rather than inheriting counts.
    if (!s || labelsKey(s.labels) !== labelsKey(labels)) {
      s = {
        labels,
        revision: '',
        profile,
        settledAt: t,
        pending: 0,
        requests: 0,
        errorShare: 0,
        errors: 0,
        buckets: LATENCY_BUCKETS.map(() => 0),
        sumSeconds: 0,
      };
      this.series.set(key, s);
    }
    s.revision = running?.revision ?? 'unknown';
    s.profile = profile;
  }

  private profileOf(store: InstanceStore, app: Application, running: ReturnType<typeof runningRevision>) {
    const health = app.status?.health?.status;
    if (health === 'Missing') return NO_TRAFFIC;
    const crashLooping = this.opts.faults.isCrashLooping(store.name, store.apps.refOf(app)) && health !== 'Healthy';
    if (health === 'Degraded' || crashLooping) return FAILING_TRAFFIC;
    return withChange(HEALTHY_TRAFFIC, this.opts.behaviour?.traffic?.(store.name, app, running));
  }

  private clusterIndexOf(store: InstanceStore): Map<string, string> {
    let index = this.clusterNames.get(store.name);
    if (!index) this.clusterNames.set(store.name, (index = clusterIndex([...store.clusters.values()])));
    return index;
  }
}

function seriesKey(store: InstanceStore, app: Application): string {
  return `${store.name}\u0000${AppTable.keyOf(app)}`;
}

function labelsKey(l: AppSeries['labels']): string {
  return `${l.app}\u0000${l.cluster}\u0000${l.namespace}`;
}

/**
 * Counts the whole requests served since the series was last settled. Errors are the running share of the
 * requests counted (floored), so both counters are whole numbers, add up to the total, and never go down.
 */
function settle(s: AppSeries, t: number): void {
  const elapsedS = (t - s.settledAt) / 1000;
  s.settledAt = Math.max(s.settledAt, t);
  if (!(elapsedS > 0)) return;
  s.pending += s.profile.requestsPerSecond * elapsedS;
  const n = Math.floor(s.pending);
  if (n <= 0) return;
  s.pending -= n;
  s.requests += n;
  s.errorShare += n * s.profile.errorRatio;
  s.errors = Math.min(s.requests, Math.floor(s.errorShare));
  for (let i = 0; i < s.buckets.length; i++) s.buckets[i] += n * s.profile.bucketShares[i];
  s.sumSeconds += n * s.profile.meanSeconds;
}

function compile(p: TrafficProfile): CompiledProfile {
  const mu = Math.log(p.latency.p50);
  const sigma = Math.max((Math.log(p.latency.p99) - mu) / Z99, 1e-6);
  return {
    requestsPerSecond: Math.max(0, p.requestsPerSecond),
    errorRatio: Math.min(1, Math.max(0, p.errorRatio)),
    bucketShares: LATENCY_BUCKETS.map((le) => normalCdf((Math.log(le) - mu) / sigma)),
    meanSeconds: Math.exp(mu + (sigma * sigma) / 2),
  };
}

/** Φ(x) through erf (Abramowitz and Stegun 7.1.26, error under 1.5e-7): deterministic and plenty for shares. */
function normalCdf(x: number): number {
  const z = Math.abs(x) / Math.SQRT2;
  const t = 1 / (1 + 0.3275911 * z);
  const poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  const erf = 1 - poly * Math.exp(-z * z);
  return x >= 0 ? (1 + erf) / 2 : (1 - erf) / 2;
}

// ---------- Exposition format 0.0.4 ----------

const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

function labelText(labels: Record<string, string>): string {
  return `{${Object.entries(labels)
    .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
    .join(',')}}`;
}

/** Rounded down to the microsecond: a sum that only grows still only grows. */
const formatSeconds = (s: number) => String(Math.floor(s * 1e6) / 1e6);

/** One label set's series, as exported. */
interface Exported {
  labels: AppSeries['labels'];
  requests: number;
  errors: number;
  buckets: number[];
  sumSeconds: number;
  revisions: string[];
}

/**
 * Apps with the same app, cluster and namespace (one app in two instances' fixtures) are exported as one series:
 * an exposition must not repeat a label set, or Prometheus rejects the whole scrape.
 */
function exported(series: Iterable<AppSeries>): Exported[] {
  const byLabels = new Map<string, Exported>();
  for (const s of series) {
    const key = labelsKey(s.labels);
    let e = byLabels.get(key);
    if (!e) {
      e = {
        labels: s.labels,
        requests: 0,
        errors: 0,
        buckets: LATENCY_BUCKETS.map(() => 0),
        sumSeconds: 0,
        revisions: [],
      };
      byLabels.set(key, e);
    }
    e.requests += s.requests;
    e.errors += s.errors;
    e.sumSeconds += s.sumSeconds;
    s.buckets.forEach((b, i) => (e.buckets[i] += b));
    if (!e.revisions.includes(s.revision)) e.revisions.push(s.revision);
  }
  return [...byLabels.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, e]) => e);
}

function render(series: Iterable<AppSeries>): string {
  const all = exported(series);
  const lines: string[] = [
    '# HELP http_requests_total HTTP requests the app served, by status code.',
    '# TYPE http_requests_total counter',
  ];
  for (const e of all) {
    lines.push(`http_requests_total${labelText({ ...e.labels, code: '200' })} ${e.requests - e.errors}`);
    lines.push(`http_requests_total${labelText({ ...e.labels, code: '500' })} ${e.errors}`);
  }
  lines.push(
    '# HELP http_request_duration_seconds Time the app took to answer HTTP requests.',
    '# TYPE http_request_duration_seconds histogram',
  );
  for (const e of all) {
    LATENCY_BUCKETS.forEach((le, i) =>
      lines.push(
        `http_request_duration_seconds_bucket${labelText({ ...e.labels, le: String(le) })} ${Math.min(e.requests, Math.floor(e.buckets[i]))}`,
      ),
    );
    lines.push(`http_request_duration_seconds_bucket${labelText({ ...e.labels, le: '+Inf' })} ${e.requests}`);
    lines.push(`http_request_duration_seconds_sum${labelText(e.labels)} ${formatSeconds(e.sumSeconds)}`);
    lines.push(`http_request_duration_seconds_count${labelText(e.labels)} ${e.requests}`);
  }
  lines.push(
    '# HELP app_revision_info The revision the app runs: the commit its last sync deployed.',
    '# TYPE app_revision_info gauge',
  );
  for (const e of all)
    for (const revision of e.revisions) lines.push(`app_revision_info${labelText({ ...e.labels, revision })} 1`);
  return `${lines.join('\n')}\n`;
}
