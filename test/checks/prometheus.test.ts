import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CheckService, type CheckVerdict } from '../../src/domain/checks/index.js';
import { configSchema } from '../../src/infra/config/schema.js';
import type { PrivatePrometheus } from '../../src/infra/prometheus-server.js';
import type { FleetApp } from '../../src/fleet/model.js';
import { app } from '../commands/fixtures.js';
import { prometheusAvailable, startTestPrometheus } from '../support/prometheus.js';

/**
 * Metric checks against a real Prometheus (Debian's 2.42) scraping, every second, an exposition server whose
 * numbers the test sets: counters that a ticker advances, and gauges it sets outright.
 */

/** Series text (`name{labels}`) to its value, served in Prometheus' text exposition format. */
const series = new Map<string, number>();
const exposition = () => [...series].map(([s, v]) => `${s} ${v}`).join('\n') + '\n';
/** A label value in the exposition format: backslash, quote and line break escaped. */
const labelValue = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Evaluates until `done` holds (Prometheus needs a scrape or two to see a change), or fails with the last verdict. */
async function until(
  evaluate: () => Promise<CheckVerdict>,
  done: (v: CheckVerdict) => boolean,
  timeoutMs = 15_000,
): Promise<CheckVerdict> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const verdict = await evaluate();
    if (done(verdict)) return verdict;
    if (Date.now() > deadline) throw new Error(`still ${JSON.stringify(verdict)}`);
    await sleep(250);
  }
}

const fleetApp = (name: string, cluster: string, labels?: Record<string, string>): FleetApp => ({
  instance: 'east',
  cluster,
  app: app({ name, clusterName: cluster, labels }),
});

const ERROR_RATE =
  'sum(rate(test_http_errors_total{app="{{app}}",cluster="{{cluster}}"}[{{window}}])) / ' +
  'sum(rate(test_http_requests_total{app="{{app}}",cluster="{{cluster}}"}[{{window}}]))';

describe.skipIf(!prometheusAvailable)('checks against a real Prometheus', () => {
  let exporter: http.Server;
  let ticker: NodeJS.Timeout;
  let prometheus: PrivatePrometheus;
  let checks: CheckService;

  beforeAll(async () => {
    // Traffic: checkout-good errs 1 in 100 requests, checkout-bad 30 in 100; idle sees no requests at all.
    const counters = {
      'test_http_requests_total{app="checkout-good",cluster="prod-eu1"}': 100,
      'test_http_errors_total{app="checkout-good",cluster="prod-eu1"}': 1,
      'test_http_requests_total{app="checkout-bad",cluster="prod-eu1"}': 100,
      'test_http_errors_total{app="checkout-bad",cluster="prod-eu1"}': 30,
    };
    for (const s of Object.keys(counters)) series.set(s, 0);
    series.set('test_idle_total{app="idle"}', 7);
    series.set('test_success_ratio{app="payments"}', 0.8);
    series.set('test_latency_seconds{app="search",pod="p1"}', 0.1);
    series.set('test_latency_seconds{app="search",pod="p2"}', 0.9);
    series.set('test_latency_seconds{app="search",pod="p3"}', 0.4);
    series.set('test_queue_depth{app="spiky"}', 0);
    series.set(`test_team_budget{team="${labelValue('a"b\\c')}"}`, 0.7);
    series.set('test_team_budget{team="x"}', 100);
    ticker = setInterval(() => {
      for (const [s, step] of Object.entries(counters)) series.set(s, series.get(s)! + step);
    }, 250);
    exporter = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
      res.end(exposition());
    });
    await new Promise<void>((r) => exporter.listen(0, '127.0.0.1', r));
    prometheus = await startTestPrometheus([{ url: `http://127.0.0.1:${(exporter.address() as AddressInfo).port}` }]);
    const query = (q: string, failAbove: number, extra: Record<string, unknown> = {}) => ({
      query: q,
      failAbove,
      window: '2s',
      ...extra,
    });
    checks = new CheckService(
      configSchema.parse({
        instances: [{ name: 'east', url: 'http://argocd.example', token: 't' }],
        prometheus: { url: prometheus.url, timeout: '3s' },
        checks: {
          'error-rate': { query: ERROR_RATE, failAbove: 0.05, window: '5s' },
          'success-ratio': { query: 'test_success_ratio{app="{{app}}"}', failBelow: 0.95, window: '2s' },
          latency: query('test_latency_seconds{app="{{app}}"}', 0.5),
          'queue-depth': query('test_queue_depth{app="{{app}}"}', 2),
          absent: query('test_never_exported{app="{{app}}"}', 1),
          'absent-ok': query('test_never_exported{app="{{app}}"}', 1, { noData: 'pass' }),
          'absent-unsure': query('test_never_exported{app="{{app}}"}', 1, { noData: 'inconclusive' }),
          'idle-ratio': query(
            'rate(test_idle_total{app="{{app}}"}[{{window}}]) / rate(test_idle_total{app="{{app}}"}[{{window}}])',
            0.05,
          ),
          budget: query('test_team_budget{team="{{labels.team}}"}', 1, { noData: 'pass' }),
          unparsable: query('sum by (app test_queue_depth{app="{{app}}"})', 1),
        },
      }),
    );
  }, 60_000);

  afterAll(async () => {
    clearInterval(ticker);
    await prometheus?.stop();
    exporter?.closeAllConnections();
    await new Promise((r) => exporter?.close(r));
  });

  it('passes an app whose error rate is under failAbove and fails one over it, with value, threshold and link', async () => {
    const hasData = (v: CheckVerdict) => v.value !== undefined;
    const good = await until(() => checks.evaluate('error-rate', fleetApp('checkout-good', 'prod-eu1')), hasData);
    const bad = await until(() => checks.evaluate('error-rate', fleetApp('checkout-bad', 'prod-eu1')), hasData);
    expect(good).toMatchObject({ status: 'pass', threshold: 0.05, failWhen: 'above', series: 1 });
    // rate() over constant increments: the exact ratio, up to float rounding.
    expect(good.value).toBeCloseTo(0.01, 9);
    expect(good.reason).toBe('error-rate 0.01 ≤ 0.05');
    expect(bad).toMatchObject({ status: 'fail', reason: 'error-rate 0.3 > 0.05 (fail above)' });
    expect(bad.value).toBeCloseTo(0.3, 9);
    expect(bad.query).toBe(
      ERROR_RATE.replace(/\{\{app\}\}/g, 'checkout-bad')
        .replace(/\{\{cluster\}\}/g, 'prod-eu1')
        .replace(/\{\{window\}\}/g, '5s'),
    );
    expect(bad.link).toBe(`${prometheus.url}/graph?g0.expr=${encodeURIComponent(bad.query)}&g0.tab=0`);
  });

  it('fails a value under failBelow', async () => {
    const verdict = await checks.evaluate('success-ratio', fleetApp('payments', 'prod-eu1'));
    expect(verdict).toMatchObject({
      status: 'fail',
      value: 0.8,
      failWhen: 'below',
      reason: 'success-ratio 0.8 < 0.95 (fail below)',
    });
  });

  it('lets the worst of several series decide, and says how many there were', async () => {
    const verdict = await checks.evaluate('latency', fleetApp('search', 'prod-eu1'));
    expect(verdict).toMatchObject({
      status: 'fail',
      value: 0.9,
      series: 3,
      reason: 'latency 0.9 > 0.5 (fail above; worst of 3 series)',
    });
  });

  it('catches over a range a spike that an instant query at its end misses', async () => {
    const spiky = fleetApp('spiky', 'prod-eu1');
    const from = Date.now();
    // The range's first point is one window (2s) after `from`: the spike comes after it, and lasts 3 scrapes.
    await sleep(2500);
    series.set('test_queue_depth{app="spiky"}', 5);
    await until(
      () => checks.evaluate('queue-depth', spiky),
      (v) => v.value === 5,
    );
    await sleep(2000);
    series.set('test_queue_depth{app="spiky"}', 0);
    await until(
      () => checks.evaluate('queue-depth', spiky),
      (v) => v.value === 0,
    );
    const to = Date.now();
    const instant = await checks.evaluate('queue-depth', spiky, { at: to });
    const range = await checks.evaluate('queue-depth', spiky, { range: { from, to } });
    expect(instant).toMatchObject({ status: 'pass', value: 0 });
    expect(range).toMatchObject({ status: 'fail', value: 5, series: 1 });
    expect(range.reason).toMatch(/^queue-depth 5 > 2 \(fail above; worst over \d+s, at \d\d:\d\d:\d\d\)$/);
    expect(range.link).toContain('&g0.range_input=');
  }, 40_000);

  it('judges no data by noData: fail by default, pass or inconclusive when the check says so', async () => {
    const someApp = fleetApp('checkout-good', 'prod-eu1');
    const [absent, ok, unsure] = await checks.evaluateMany(['absent', 'absent-ok', 'absent-unsure'], [someApp]);
    expect(absent).toMatchObject({ status: 'fail', series: 0 });
    expect(absent.reason).toBe('no data: the query returned no series (noData: fail)');
    expect(absent.value).toBeUndefined();
    expect(ok).toMatchObject({ status: 'pass', reason: 'no data: the query returned no series (noData: pass)' });
    expect(unsure).toMatchObject({ status: 'inconclusive' });
  });

  it('reads a ratio over no traffic (NaN) as no data, which fails', async () => {
    const verdict = await until(
      () => checks.evaluate('idle-ratio', fleetApp('idle', 'prod-eu1')),
      (v) => (v.series ?? 0) > 0,
    );
    expect(verdict).toMatchObject({
      status: 'fail',
      reason: 'no data: its one series has only NaN samples (noData: fail)',
    });
  });

  it('keeps a label value one PromQL string: quotes and backslashes select the series that has them, nothing else', async () => {
    const quoted = await checks.evaluate('budget', fleetApp('ledger', 'prod-eu1', { team: 'a"b\\c' }));
    expect(quoted).toMatchObject({ status: 'pass', value: 0.7, series: 1 });
    // Unescaped, this label would end the string and add `or vector(100)`, failing the check at 100.
    const hostile = await checks.evaluate('budget', fleetApp('ledger', 'prod-eu1', { team: 'x"} or vector(100) #' }));
    expect(hostile.query).toBe('test_team_budget{team="x\\"} or vector(100) #"}');
    expect(hostile).toMatchObject({ status: 'pass', series: 0 });
    expect(hostile.value).toBeUndefined();
  });

  it("is inconclusive with Prometheus' own text when it cannot parse the query", async () => {
    const verdict = await checks.evaluate('unparsable', fleetApp('spiky', 'prod-eu1'));
    expect(verdict.status).toBe('inconclusive');
    expect(verdict.reason).toMatch(/^Prometheus at 127\.0\.0\.1:\d+ rejected the query: .*parse error/);
  });

  it('is inconclusive, never a pass, once Prometheus stops mid-test, whatever noData says', async () => {
    const good = fleetApp('checkout-good', 'prod-eu1');
    expect((await checks.evaluate('error-rate', good)).status).toBe('pass');
    await prometheus.stop();
    const from = Date.now() - 10_000;
    const verdicts = [
      await checks.evaluate('error-rate', good),
      await checks.evaluate('absent-ok', good),
      await checks.evaluate('error-rate', good, { range: { from, to: Date.now() } }),
    ];
    for (const v of verdicts) {
      expect(v.status).toBe('inconclusive');
      expect(v.value).toBeUndefined();
      // A kept-alive connection from before the stop ends in ECONNRESET, a new one is refused: both are unreachable.
      expect(v.reason).toMatch(
        new RegExp(
          `^Cannot reach Prometheus at 127\\.0\\.0\\.1:${prometheus.port}: (ECONNREFUSED|ECONNRESET)\\. Check prometheus\\.url and the network path\\.$`,
        ),
      );
    }
  });
});
