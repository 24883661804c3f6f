import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { okAnswer } from '../support/replies.js';
import { dispatch } from '../../src/commands/index.js';
import { CheckService } from '../../src/domain/checks/index.js';
import type { Services } from '../../src/commands/registry.js';
import { renderText } from '../../src/views/text.js';
import { startRecordingServer, type RecordingServer } from '../support/recording-server.js';
import { ctx, services, twoInstanceFleet } from './fixtures.js';

/**
 * A scripted Prometheus: each app's error rate is fixed; `auth-prod-us1`'s query is refused as Prometheus
 * refuses a query it cannot execute.
 */
const RATES: Record<string, string> = { 'web-prod-us1': '0.004', 'web-prod-eu1': '0.31', 'auth-prod-us2': '0.02' };

describe('check and checks', () => {
  let prometheus: RecordingServer;

  beforeAll(async () => {
    prometheus = await startRecordingServer();
    prometheus.on('GET', '/api/v1/query', (req) => {
      const app = /app="([^"]+)"/.exec(req.query.get('query') ?? '')?.[1] ?? '';
      if (app === 'auth-prod-us1')
        return {
          status: 422,
          body: { status: 'error', errorType: 'execution', error: 'many-to-many matching not allowed' },
        };
      const value = RATES[app];
      return {
        body: {
          status: 'success',
          data: { resultType: 'vector', result: value ? [{ metric: { app }, value: [1764943200, value] }] : [] },
        },
      };
    });
  });
  afterAll(() => prometheus.stop());

  function withChecks(): Services {
    const s = services(
      twoInstanceFleet(),
      {},
      {
        prometheus: { url: prometheus.url, uiUrl: 'https://prom.example.com' },
        checks: {
          'error-rate': {
            query: 'sum(rate(errors{app="{{app}}"}[{{window}}]))',
            failAbove: 0.05,
            window: '2m',
            description: 'share of 5xx answers',
          },
          latency: { query: 'p99{app="{{app}}",cluster="{{cluster}}"}', failAbove: 0.5, noData: 'pass' },
        },
      },
    );
    s.checks = new CheckService(s.config);
    return s;
  }

  it('answers failing apps first with value, threshold and link, then passing ones; --json carries every verdict', async () => {
    const reply = okAnswer(await dispatch('check error-rate web-*', ctx(withChecks())), 'check');
    expect(reply.ok).toBe(true);
    expect(reply.data.counts).toEqual({ pass: 1, fail: 1, inconclusive: 0 });
    const query = 'sum(rate(errors{app="web-prod-eu1"}[2m]))';
    expect(reply.data.verdicts.find((v) => v.app === 'web-prod-eu1')).toEqual({
      check: 'error-rate',
      instance: 'west',
      app: 'web-prod-eu1',
      cluster: 'prod-eu1',
      status: 'fail',
      value: 0.31,
      threshold: 0.05,
      failWhen: 'above',
      query,
      link: `https://prom.example.com/graph?g0.expr=${encodeURIComponent(query)}&g0.tab=0`,
      reason: 'error-rate 0.31 > 0.05 (fail above)',
      series: 1,
    });
    const lists = reply.blocks.filter((b) => b.kind === 'list');
    expect(lists.map((b) => [b.title, b.items.map((i) => i.text)])).toEqual([
      ['Failing', ['*web-prod-eu1* (west/prod-eu1) · error-rate 0.31 > 0.05 (fail above)']],
      ['Passing', ['*web-prod-us1* (east/prod-us1) · error-rate 0.004 ≤ 0.05']],
    ]);
    const text = renderText(reply);
    expect(text.indexOf('web-prod-eu1')).toBeLessThan(text.indexOf('web-prod-us1'));
    expect(text).toContain(`https://prom.example.com/graph?g0.expr=${encodeURIComponent(query)}`);
  });

  it('puts a Prometheus refusal under inconclusive with its text, never under passing', async () => {
    const reply = okAnswer(await dispatch('check error-rate,latency auth-*', ctx(withChecks())), 'check');
    expect(reply.data.checks).toEqual(['error-rate', 'latency']);
    // auth-prod-us1 exists on both instances; its query is refused on both.
    expect(reply.data.verdicts.map((v) => `${v.check} ${v.instance}/${v.app} ${v.status}`)).toEqual([
      'error-rate east/auth-prod-us1 inconclusive',
      'error-rate east/auth-prod-us2 pass',
      'error-rate west/auth-prod-us1 inconclusive',
      'latency east/auth-prod-us1 inconclusive',
      'latency east/auth-prod-us2 pass',
      'latency west/auth-prod-us1 inconclusive',
    ]);
    const inconclusive = reply.data.verdicts.find((v) => v.status === 'inconclusive')!;
    expect(inconclusive.reason).toMatch(/rejected the query: many-to-many matching not allowed$/);
    const lists = reply.blocks.filter((b) => b.kind === 'list');
    expect(lists.map((b) => b.title)).toEqual(['Inconclusive (no verdict: never read as a pass)', 'Passing']);
  });

  it('refuses an unknown check with the closest name, before asking Prometheus', async () => {
    const before = prometheus.requests.length;
    const reply = await dispatch('check eror-rate web-*', ctx(withChecks()));
    expect(reply.error).toMatchObject({ code: 'unknown_check', suggestions: ['error-rate'] });
    expect(reply.error!.message).toBe('No check named `eror-rate`. Configured checks: `error-rate`, `latency`.');
    expect(prometheus.requests.length).toBe(before);
  });

  it('needs a check and a selection, and a selection that matches', async () => {
    expect((await dispatch('check error-rate', ctx(withChecks()))).error?.code).toBe('usage');
    expect((await dispatch('check', ctx(withChecks()))).error?.code).toBe('usage');
    const none = await dispatch('check error-rate nothing-*', ctx(withChecks()));
    expect(none.error).toMatchObject({ code: 'unknown_target' });
    expect(none.error!.message).toContain('nothing to check');
  });

  it('says how to configure checks when there are none', async () => {
    const reply = await dispatch('check error-rate web-*', ctx(services(twoInstanceFleet())));
    expect(reply.error?.code).toBe('not_configured');
    expect(reply.error!.message).toContain('add `prometheus: {url: ...}` and `checks:` to rollcall.yaml');
  });

  it('`checks` lists every configured check with its threshold, window, noData and Prometheus', async () => {
    const reply = okAnswer(await dispatch('checks', ctx(withChecks())), 'checks');
    expect(reply.data.checks).toEqual([
      {
        name: 'error-rate',
        query: 'sum(rate(errors{app="{{app}}"}[{{window}}]))',
        failWhen: 'above',
        threshold: 0.05,
        window: 120_000,
        noData: 'fail',
        description: 'share of 5xx answers',
      },
      {
        name: 'latency',
        query: 'p99{app="{{app}}",cluster="{{cluster}}"}',
        failWhen: 'above',
        threshold: 0.5,
        window: 60_000,
        noData: 'pass',
        description: null,
      },
    ]);
    expect(reply.data.prometheus).toEqual([
      { url: prometheus.url, uiUrl: 'https://prom.example.com', configPath: 'prometheus', instances: ['*'] },
    ]);
    expect(renderText(reply)).toContain('error-rate · fails above 0.05 · window 2m · no data: fail');
    const none = await dispatch('checks', ctx(services(twoInstanceFleet())));
    expect(none.ok).toBe(true);
    expect(renderText(none)).toContain('No metric checks are configured');
  });
});
