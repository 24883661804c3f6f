import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CheckService,
  formatValue,
  graphLink,
  judge,
  rangeStepS,
  type Observation,
} from '../../src/domain/checks/index.js';
import { configSchema, type CheckConfig } from '../../src/infra/config/schema.js';
import { RollcallError } from '../../src/core/errors.js';
import type { FleetApp } from '../../src/fleet/model.js';
import { app } from '../commands/fixtures.js';
import { startRecordingServer, type RecordingServer } from '../support/recording-server.js';

const check = (c: Partial<CheckConfig>): CheckConfig => ({
  query: 'x',
  window: 60_000,
  noData: 'fail',
  ...c,
});
const obs = (...values: number[]): Observation[] => values.map((value, i) => ({ value, at: i * 1000, metric: {} }));

describe('judge', () => {
  it('fails above the threshold, with the value and the rule in one line', () => {
    expect(judge('error-rate', check({ failAbove: 0.05 }), obs(0.3133), { series: 1 })).toEqual({
      status: 'fail',
      value: 0.3133,
      reason: 'error-rate 0.313 > 0.05 (fail above)',
      series: 1,
    });
  });

  it('passes at or under a failAbove threshold', () => {
    expect(judge('error-rate', check({ failAbove: 0.05 }), obs(0.004), { series: 1 }).reason).toBe(
      'error-rate 0.004 ≤ 0.05',
    );
    expect(judge('error-rate', check({ failAbove: 0.05 }), obs(0.05), { series: 1 }).status).toBe('pass');
  });

  it('fails below a failBelow threshold and passes at it', () => {
    expect(judge('success', check({ failBelow: 0.95 }), obs(0.8), { series: 1 })).toMatchObject({
      status: 'fail',
      reason: 'success 0.8 < 0.95 (fail below)',
    });
    expect(judge('success', check({ failBelow: 0.95 }), obs(0.95), { series: 1 }).reason).toBe('success 0.95 ≥ 0.95');
  });

  it('lets the worst of several series decide: the highest for failAbove, the lowest for failBelow', () => {
    const values = obs(0.01, 0.4, 0.02);
    expect(judge('e', check({ failAbove: 0.05 }), values, { series: 3 })).toMatchObject({
      status: 'fail',
      value: 0.4,
      reason: 'e 0.4 > 0.05 (fail above; worst of 3 series)',
    });
    expect(judge('s', check({ failBelow: 0.005 }), values, { series: 3 })).toMatchObject({
      status: 'pass',
      value: 0.01,
      reason: 's 0.01 ≥ 0.005 (worst of 3 series)',
    });
  });

  it('reads +Inf as above any threshold', () => {
    expect(judge('latency', check({ failAbove: 2 }), obs(Infinity), { series: 1 })).toMatchObject({
      status: 'fail',
      reason: 'latency +Inf > 2 (fail above)',
    });
  });

  it('skips NaN samples (a ratio over no traffic) and judges the rest', () => {
    expect(judge('e', check({ failAbove: 0.05 }), obs(NaN, 0.5, NaN), { series: 3 })).toMatchObject({
      status: 'fail',
      value: 0.5,
    });
  });

  it.each(['fail', 'pass', 'inconclusive'] as const)('no series at all is no data, decided by noData: %s', (noData) => {
    expect(judge('e', check({ failAbove: 0.05, noData }), [], { series: 0 })).toEqual({
      status: noData,
      reason: `no data: the query returned no series (noData: ${noData})`,
      series: 0,
      noData: true,
    });
  });

  it('only NaN samples are no data too, and fail by default', () => {
    expect(judge('e', check({ failAbove: 0.05 }), obs(NaN, NaN), { series: 2 })).toEqual({
      status: 'fail',
      reason: 'no data: all 2 series have only NaN samples (noData: fail)',
      series: 2,
      noData: true,
    });
  });

  it('says a range was judged by its worst point', () => {
    const range = { from: 0, to: 300_000 };
    expect(judge('e', check({ failAbove: 0.05 }), obs(0, 0, 0.2), { series: 1, range }).reason).toMatch(
      /^e 0\.2 > 0\.05 \(fail above; worst over 5m, at 00:00:02\)$/,
    );
  });

  it('shows more digits when rounding would make value and threshold read the same', () => {
    expect(judge('e', check({ failAbove: 0.05 }), obs(0.050001), { series: 1 }).reason).toBe(
      'e 0.050001 > 0.05 (fail above)',
    );
    expect([formatValue(1234.56), formatValue(-Infinity), formatValue(0.000012345)]).toEqual([
      '1235',
      '-Inf',
      '0.0000123',
    ]);
  });
});

describe('graphLink and rangeStepS', () => {
  it("links to Prometheus' graph of the query, over the range when one was judged, without URL credentials", () => {
    const q = 'sum(rate(x{app="a b"}[1m]))';
    expect(graphLink('https://user:pw@prom.example.com/sub/', q, {})).toBe(
      `https://prom.example.com/sub/graph?g0.expr=${encodeURIComponent(q)}&g0.tab=0`,
    );
    expect(
      graphLink('http://prom:9090', 'x', {
        range: { from: Date.UTC(2026, 11, 5, 14, 0), to: Date.UTC(2026, 11, 5, 14, 5) },
      }),
    ).toBe('http://prom:9090/graph?g0.expr=x&g0.tab=0&g0.range_input=5m&g0.end_input=2026-12-05%2014%3A05%3A00');
  });

  it('steps a quarter window, at least 1 s, and under 11,000 points', () => {
    expect(rangeStepS(60_000, 0, 600_000)).toBe(15);
    expect(rangeStepS(2000, 0, 60_000)).toBe(1);
    expect(rangeStepS(60_000, 0, 7 * 86_400_000)).toBe(55);
  });
});

describe('CheckService', () => {
  let east: RecordingServer;
  let shared: RecordingServer;
  const fleetApp = (name: string, instance: string, labels?: Record<string, string>): FleetApp => ({
    instance,
    cluster: `${name}-cluster`,
    app: app({ name, clusterName: `${name}-cluster`, labels }),
  });
  /** Answers each query with one sample whose value is the number in its `v="..."` matcher. */
  const echo = (server: RecordingServer, delayMs = 0) =>
    server.on('GET', '/api/v1/query', (req) => ({
      delayMs,
      body: {
        status: 'success',
        data: {
          resultType: 'vector',
          result: [{ metric: {}, value: [1, /v="([^"]+)"/.exec(req.query.get('query') ?? '')?.[1] ?? 'NaN'] }],
        },
      },
    }));

  beforeAll(async () => {
    east = await startRecordingServer();
    shared = await startRecordingServer();
  });
  afterAll(async () => {
    await east.stop();
    await shared.stop();
  });

  const service = (concurrency?: number) =>
    new CheckService(
      configSchema.parse({
        instances: [
          { name: 'east', url: 'http://east.example', token: 't', prometheus: { url: east.url } },
          { name: 'west', url: 'http://west.example', token: 't' },
          {
            name: 'north',
            url: 'http://north.example',
            token: 't',
            prometheus: { url: shared.url, uiUrl: 'https://prom-ui.example' },
          },
        ],
        prometheus: { url: shared.url, uiUrl: 'https://prom-ui.example' },
        checks: {
          'error-rate': { query: 'x{v="{{labels.v}}"}', failAbove: 0.05 },
          'success-rate': { query: 'y{v="{{labels.v}}"}', failBelow: 0.9 },
        },
      }),
      { concurrency },
    );

  it('asks the Prometheus of the app instance, else the top-level one; identical settings share a client', async () => {
    echo(east);
    echo(shared);
    const checks = service();
    east.requests.length = 0;
    shared.requests.length = 0;
    await checks.evaluate('error-rate', fleetApp('a', 'east', { v: '0.1' }));
    await checks.evaluate('error-rate', fleetApp('b', 'west', { v: '0.2' }));
    await checks.evaluate('error-rate', fleetApp('c', 'north', { v: '0.3' }));
    expect(east.requests.map((r) => r.query.get('query'))).toEqual(['x{v="0.1"}']);
    expect(shared.requests.map((r) => r.query.get('query'))).toEqual(['x{v="0.2"}', 'x{v="0.3"}']);
    expect(checks.targets.map((t) => [t.configPath, t.instances])).toEqual([
      ['prometheus', ['*', 'north']],
      ['instances[east].prometheus', ['east']],
    ]);
  });

  it('builds a verdict with the rendered query and a link to the UI URL', async () => {
    echo(shared);
    const verdict = await service().evaluate('error-rate', fleetApp('b', 'west', { v: '0.2' }));
    expect(verdict).toEqual({
      check: 'error-rate',
      instance: 'west',
      app: 'b',
      cluster: 'b-cluster',
      status: 'fail',
      value: 0.2,
      threshold: 0.05,
      failWhen: 'above',
      query: 'x{v="0.2"}',
      link: `https://prom-ui.example/graph?g0.expr=${encodeURIComponent('x{v="0.2"}')}&g0.tab=0`,
      reason: 'error-rate 0.2 > 0.05 (fail above)',
      series: 1,
    });
  });

  it('refuses an unknown check by name with the closest one, before asking Prometheus', async () => {
    shared.requests.length = 0;
    const checks = service();
    await expect(checks.evaluate('eror-rate', fleetApp('b', 'west', { v: '1' }))).rejects.toMatchObject({
      code: 'unknown_check',
      suggestions: ['error-rate'],
    });
    await expect(
      checks.evaluateMany(['error-rate', 'nope'], [fleetApp('b', 'west', { v: '1' })]),
    ).rejects.toBeInstanceOf(RollcallError);
    expect(shared.requests).toEqual([]);
  });

  it('makes an app without the label an inconclusive verdict naming it, without a query', async () => {
    shared.requests.length = 0;
    const verdict = await service().evaluate('error-rate', fleetApp('b', 'west'));
    expect(verdict).toMatchObject({
      status: 'inconclusive',
      query: 'x{v="{{labels.v}}"}',
      reason: 'Check error-rate: app b (west/b-cluster) has no label `v` for {{labels.v}}.',
    });
    expect(shared.requests).toEqual([]);
  });

  it('judges a range from one window after its start, so the bake sees only what followed the wave', async () => {
    shared.on('GET', '/api/v1/query_range', {
      body: {
        status: 'success',
        data: {
          resultType: 'matrix',
          result: [
            {
              metric: { pod: 'p1' },
              values: [
                [1000.5, '0.01'],
                [1015.5, '0.2'],
                [1030.5, '0.02'],
              ],
            },
          ],
        },
      },
    });
    const checks = service();
    const from = 1_000_000;
    const verdict = await checks.evaluate('error-rate', fleetApp('b', 'west', { v: '1' }), {
      range: { from, to: from + 600_000 },
    });
    const [req] = shared.requestsTo('/api/v1/query_range').slice(-1);
    // The window is 1m: the first point is at from + 60s; a quarter window is the step.
    expect([req.query.get('start'), req.query.get('end'), req.query.get('step')]).toEqual(['1060', '1600', '15']);
    expect(verdict).toMatchObject({ status: 'fail', value: 0.2, series: 1 });
    expect(verdict.reason).toBe('error-rate 0.2 > 0.05 (fail above; worst over 10m, at 00:16:55)');
    expect(verdict.link).toContain('&g0.range_input=10m&g0.end_input=1970-01-01%2000%3A26%3A40');
    // A range shorter than the window is judged at its end.
    await checks.evaluate('error-rate', fleetApp('b', 'west', { v: '1' }), { range: { from, to: from + 30_000 } });
    const [short] = shared.requestsTo('/api/v1/query_range').slice(-1);
    expect([short.query.get('start'), short.query.get('end')]).toEqual(['1030', '1030']);
  });

  it('renders a given window instead of the check window, and starts a range one such window after its start', async () => {
    const checks = new CheckService(
      configSchema.parse({
        instances: [{ name: 'west', url: 'http://west.example', token: 't' }],
        prometheus: { url: shared.url, scrapeInterval: '5s' },
        checks: { rate: { query: 'rate(x{app="{{app}}"}[{{window}}])', failAbove: 1, window: '1m' } },
      }),
    );
    expect(checks.scrapeIntervalOf('west')).toBe(5000);
    expect(checks.scrapeIntervalOf('elsewhere')).toBe(5000);
    shared.requests.length = 0;
    echo(shared);
    const instant = await checks.evaluate('rate', fleetApp('b', 'west'), { at: 1_000_000, window: 12_500 });
    expect(instant.query).toBe('rate(x{app="b"}[12s500ms])');
    expect(shared.requestsTo('/api/v1/query')[0].query.get('query')).toBe('rate(x{app="b"}[12s500ms])');
    const from = 1_000_000;
    await checks.evaluate('rate', fleetApp('b', 'west'), { range: { from, to: from + 30_000 }, window: 10_000 });
    const [req] = shared.requestsTo('/api/v1/query_range').slice(-1);
    // First point one 10 s window after the start, stepped a quarter of it (rounded up to whole seconds).
    expect([req.query.get('query'), req.query.get('start'), req.query.get('end'), req.query.get('step')]).toEqual([
      'rate(x{app="b"}[10s])',
      '1010',
      '1030',
      '3',
    ]);
    await expect(checks.evaluate('rate', fleetApp('b', 'west'), { window: 0 })).rejects.toBeInstanceOf(RangeError);
  });

  it('evaluates every check for every app, in order, with at most `concurrency` queries in flight', async () => {
    let inFlight = 0;
    let most = 0;
    shared.on('GET', '/api/v1/query', (req) => {
      inFlight++;
      most = Math.max(most, inFlight);
      setTimeout(() => inFlight--, 40);
      return {
        delayMs: 40,
        body: {
          status: 'success',
          data: {
            resultType: 'vector',
            result: [{ metric: {}, value: [1, /v="([^"]+)"/.exec(req.query.get('query')!)![1]] }],
          },
        },
      };
    });
    const apps = Array.from({ length: 6 }, (_, i) => fleetApp(`app${i}`, 'west', { v: String(i / 10) }));
    const verdicts = await service(3).evaluateMany(['error-rate', 'success-rate'], apps);
    expect(verdicts.map((v) => `${v.check}:${v.app}:${v.status}`)).toEqual([
      ...apps.map((a, i) => `error-rate:${a.app.metadata.name}:${i / 10 > 0.05 ? 'fail' : 'pass'}`),
      ...apps.map((a, i) => `success-rate:${a.app.metadata.name}:${i / 10 < 0.9 ? 'fail' : 'pass'}`),
    ]);
    expect(most).toBe(3);
  });
});
