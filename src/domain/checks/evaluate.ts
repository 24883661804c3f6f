import { mapConcurrent } from '../../core/concurrency.js';
import { RollcallError } from '../../core/errors.js';
import { suggest } from '../../core/suggest.js';
import type { CheckConfig, PrometheusConfig, RollcallConfig } from '../../infra/config/schema.js';
import { redactUrlPassword } from '../../infra/config/load.js';
import { PrometheusClient, type PrometheusQueries } from '../../infra/prometheus/client.js';
import { isPrometheusError } from '../../infra/prometheus/errors.js';
import type { FleetApp } from '../../fleet/model.js';
import { CheckRenderError, renderCheckQuery, subjectOf } from './render.js';
import { graphLink, judge, rangeStepS, thresholdOf, type CheckVerdict, type Observation } from './verdict.js';

export type { CheckVerdict } from './verdict.js';

/** When to judge: now (or `at`, epoch ms) with an instant query, or the worst of a range (a bake). */
export interface EvaluateOptions {
  at?: number;
  range?: { from: number; to: number };
  /**
   * The window (ms) rendered as `{{window}}`, instead of the check's own: a wave watched for a few seconds is
   * judged over what followed it, not over a window mostly filled by the revision it replaced. A range's first
   * point is then this long after its start.
   * @defaultValue the check's `window`
   */
  window?: number;
}

/** The config a CheckService reads: the checks and the Prometheus of each instance. */
export type ChecksConfig = Pick<RollcallConfig, 'checks' | 'prometheus' | 'instances'>;

export interface CheckServiceOptions {
  /** Builds the client of one Prometheus; default PrometheusClient. */
  clientFor?: (cfg: PrometheusConfig, configPath: string) => PrometheusQueries;
  /** Queries in flight at once across an evaluateMany. @defaultValue 8 */
  concurrency?: number;
}

/** A configured Prometheus and the instances whose apps it judges (`*`: every instance without its own). */
export interface PrometheusTarget {
  url: string;
  uiUrl?: string;
  /** Where it is configured: `prometheus` or `instances[east].prometheus`. */
  configPath: string;
  instances: string[];
}

interface Resolved {
  client: PrometheusQueries;
  cfg: PrometheusConfig;
}

/**
 * Named metric checks (config `checks`) judged per app against the Prometheus that sees the app's cluster:
 * its instance's `prometheus`, else the top-level one, with one client per distinct Prometheus. A verdict
 * never passes for want of an answer: a Prometheus that fails is `inconclusive`, whatever `noData` says.
 */
export class CheckService {
  private readonly checks: Readonly<Record<string, CheckConfig>>;
  private readonly byInstance = new Map<string, Resolved>();
  private readonly fallback?: Resolved;
  private readonly concurrency: number;
  readonly targets: readonly PrometheusTarget[];

  constructor(config: ChecksConfig, opts: CheckServiceOptions = {}) {
    this.checks = config.checks;
    this.concurrency = opts.concurrency ?? 8;
    const clientFor = opts.clientFor ?? ((cfg, configPath) => new PrometheusClient(cfg, { configPath }));
    const clients = new Map<string, Resolved & { target: PrometheusTarget }>();
    const resolve = (cfg: PrometheusConfig, configPath: string, instance: string): Resolved => {
      // Identical settings (the same server, credentials and timeout) share one client and one connection pool.
      const key = JSON.stringify(cfg);
      let found = clients.get(key);
      if (!found) {
        const target = {
          url: redactUrlPassword(cfg.url),
          uiUrl: cfg.uiUrl && redactUrlPassword(cfg.uiUrl),
          configPath,
          instances: [],
        };
        found = { client: clientFor(cfg, configPath), cfg, target };
        clients.set(key, found);
      }
      found.target.instances.push(instance);
      return found;
    };
    if (config.prometheus) this.fallback = resolve(config.prometheus, 'prometheus', '*');
    for (const instance of config.instances) {
      if (instance.prometheus)
        this.byInstance.set(
          instance.name,
          resolve(instance.prometheus, `instances[${instance.name}].prometheus`, instance.name),
        );
    }
    this.targets = [...clients.values()].map((c) => c.target);
  }

  /**
   * How often the Prometheus that judges `instance`'s apps scrapes them (config `scrapeInterval`): the first
   * sample of a new revision exists one interval after it runs. Undefined when no Prometheus serves it.
   */
  scrapeIntervalOf(instance: string): number | undefined {
    return (this.byInstance.get(instance) ?? this.fallback)?.cfg.scrapeInterval;
  }

  /** The configured check names, in config order. */
  names(): string[] {
    return Object.keys(this.checks);
  }

  /** A check by name; an unknown name is `unknown_check` with the closest names. */
  check(name: string): CheckConfig {
    const found = Object.hasOwn(this.checks, name) ? this.checks[name] : undefined;
    if (found) return found;
    const known = this.names();
    throw new RollcallError(
      'unknown_check',
      `No check named \`${name}\`. ${known.length ? `Configured checks: ${known.map((n) => `\`${n}\``).join(', ')}.` : 'No checks are configured (config `checks`).'}`,
      { suggestions: suggest(name, known, 3) },
    );
  }

  /** Judges one app by one check. Throws only for an unknown check; every other failure is in the verdict. */
  async evaluate(checkName: string, app: FleetApp, opts: EvaluateOptions = {}): Promise<CheckVerdict> {
    const check = this.check(checkName);
    if (opts.window !== undefined && !(opts.window > 0 && Number.isFinite(opts.window)))
      throw new RangeError(`a check's window must be a positive duration in ms (got ${opts.window})`);
    const { threshold, failWhen } = thresholdOf(check);
    const base = { check: checkName, instance: app.instance, app: app.app.metadata.name, cluster: app.cluster };
    const target = this.byInstance.get(app.instance) ?? this.fallback;
    const inconclusive = (query: string, reason: string, link = ''): CheckVerdict => ({
      ...base,
      status: 'inconclusive',
      threshold,
      failWhen,
      query,
      link,
      reason,
    });
    if (!target) return inconclusive(check.query, `no Prometheus is configured for instance ${app.instance}`);
    let query: string;
    try {
      query = renderCheckQuery(checkName, check.query, subjectOf(app), opts.window ?? check.window);
    } catch (error) {
      if (error instanceof CheckRenderError) return inconclusive(check.query, error.message);
      throw error;
    }
    const link = graphLink(target.cfg.uiUrl ?? target.cfg.url, query, opts);
    try {
      const judged = opts.range
        ? await this.judgeRange(checkName, check, target.client, query, opts.range, opts.window ?? check.window)
        : await this.judgeInstant(checkName, check, target.client, query, opts.at);
      return { ...base, ...judged, threshold, failWhen, query, link };
    } catch (error) {
      if (isPrometheusError(error)) return inconclusive(query, error.message, link);
      throw error;
    }
  }

  /**
   * Every check for every app, one query each, at most `concurrency` in flight; verdicts in the order of
   * `names` then `apps`. Unknown names are refused before any query.
   */
  async evaluateMany(
    names: readonly string[],
    apps: readonly FleetApp[],
    opts: EvaluateOptions = {},
  ): Promise<CheckVerdict[]> {
    for (const name of names) this.check(name);
    const pairs = names.flatMap((name) => apps.map((app) => ({ name, app })));
    return mapConcurrent(pairs, this.concurrency, ({ name, app }) => this.evaluate(name, app, opts));
  }

  private async judgeInstant(
    name: string,
    check: CheckConfig,
    client: PrometheusQueries,
    query: string,
    at: number | undefined,
  ) {
    const answer = await client.query(query, at);
    const observations: Observation[] = answer.samples.map((s) => ({ value: s.value, at: s.at, metric: s.metric }));
    return judge(name, check, observations, { series: answer.samples.length });
  }

  /**
   * The worst point over [from, to]. The first point is one window after `from`, so every window judged lies
   * inside the range: a bake judges what happened after the wave, not the revision it replaced.
   */
  private async judgeRange(
    name: string,
    check: CheckConfig,
    client: PrometheusQueries,
    query: string,
    range: { from: number; to: number },
    window: number,
  ) {
    if (!(range.to >= range.from))
      throw new RangeError(`a check's range must end after it starts (got ${range.from}..${range.to})`);
    const start = Math.min(range.from + window, range.to);
    const answer = await client.queryRange(query, start, range.to, rangeStepS(window, range.from, range.to));
    const observations: Observation[] = answer.series.flatMap((s) =>
      s.points.map((p) => ({ value: p.value, at: p.at, metric: s.metric })),
    );
    return judge(name, check, observations, { series: answer.series.length, range });
  }
}
