import { inspect } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { freePort } from '../../src/infra/redis-server.js';
import { PrometheusClient } from '../../src/infra/prometheus/client.js';
import { PrometheusError } from '../../src/infra/prometheus/errors.js';
import { configSchema, type PrometheusConfig } from '../../src/infra/config/schema.js';
import { startRecordingServer, type RecordingServer } from '../support/recording-server.js';

const TOKEN = 'prom-secret-token-5f3a9c';

function promConfig(url: string, extra: Record<string, unknown> = {}): PrometheusConfig {
  return configSchema.parse({
    instances: [{ name: 'east', url: 'http://argocd.example', token: 't' }],
    prometheus: { url, timeout: '2s', ...extra },
  }).prometheus!;
}

/** A scripted 200 answer with an instant vector. */
const vector = (...samples: { metric?: Record<string, string>; value: [number, string] }[]) => ({
  body: {
    status: 'success',
    data: { resultType: 'vector', result: samples.map((s) => ({ metric: s.metric ?? {}, value: s.value })) },
  },
});

/** The PrometheusError a call fails with (the test fails if it does not). */
async function failure(call: Promise<unknown>): Promise<PrometheusError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PrometheusError);
  return error as PrometheusError;
}

describe('PrometheusClient', () => {
  let server: RecordingServer;
  let client: PrometheusClient;
  let host: string;

  beforeAll(async () => {
    server = await startRecordingServer();
    host = new URL(server.url).host;
  });
  afterAll(() => server.stop());
  beforeEach(() => {
    server.requests.length = 0;
    client = new PrometheusClient(promConfig(server.url, { token: TOKEN }));
  });

  describe('answers', () => {
    it('reads an instant vector: labels, the time in ms, and values written as strings, NaN and +Inf included', async () => {
      client = new PrometheusClient(promConfig(`${server.url}/prom/`, { token: TOKEN }));
      server.on(
        'GET',
        '/prom/api/v1/query',
        vector(
          { metric: { app: 'a', pod: 'p1' }, value: [1764936000.5, '0.31'] },
          { metric: { app: 'a', pod: 'p2' }, value: [1764936000.5, 'NaN'] },
          { metric: { app: 'a', pod: 'p3' }, value: [1764936000.5, '+Inf'] },
          { metric: { app: 'a', pod: 'p4' }, value: [1764936000.5, '-1e-3'] },
        ),
      );
      const answer = await client.query('up{app="a"}', 1764936000500);
      expect(answer.resultType).toBe('vector');
      expect(answer.samples.map((s) => [s.metric.pod, s.at, s.value])).toEqual([
        ['p1', 1764936000500, 0.31],
        ['p2', 1764936000500, NaN],
        ['p3', 1764936000500, Infinity],
        ['p4', 1764936000500, -0.001],
      ]);
      const [req] = server.requestsTo('/prom/api/v1/query');
      expect(req.query.get('query')).toBe('up{app="a"}');
      expect(req.query.get('time')).toBe('1764936000.5');
      // Prometheus gives up when rollcall stops waiting (2s here).
      expect(req.query.get('timeout')).toBe('2s');
      expect(req.headers.authorization).toBe(`Bearer ${TOKEN}`);
    });

    it('reads a scalar as one sample without labels', async () => {
      server.on('GET', '/api/v1/query', {
        body: { status: 'success', data: { resultType: 'scalar', result: [1, '2'] } },
      });
      const answer = await client.query('1+1');
      expect(answer).toEqual({ resultType: 'scalar', samples: [{ metric: {}, at: 1000, value: 2 }], warnings: [] });
      expect(server.requestsTo('/api/v1/query')[0].query.has('time')).toBe(false);
    });

    it('reads a range query as a matrix and sends start, end and step', async () => {
      server.on('GET', '/api/v1/query_range', {
        body: {
          status: 'success',
          warnings: ['partial answer'],
          data: {
            resultType: 'matrix',
            result: [
              {
                metric: { app: 'a' },
                values: [
                  [100, '1'],
                  [101, '5'],
                ],
              },
            ],
          },
        },
      });
      const answer = await client.queryRange('x', 100_000, 101_000, 1);
      expect(answer).toEqual({
        series: [
          {
            metric: { app: 'a' },
            points: [
              { at: 100_000, value: 1 },
              { at: 101_000, value: 5 },
            ],
          },
        ],
        warnings: ['partial answer'],
      });
      const [req] = server.requestsTo('/api/v1/query_range');
      expect([req.query.get('start'), req.query.get('end'), req.query.get('step')]).toEqual(['100', '101', '1']);
    });

    it('sends basic auth when configured instead of a token', async () => {
      client = new PrometheusClient(promConfig(server.url, { basicAuth: { username: 'rollcall', password: 'pw:1' } }));
      server.on('GET', '/api/v1/query', vector());
      await client.query('up');
      expect(server.requestsTo('/api/v1/query')[0].headers.authorization).toBe(
        `Basic ${Buffer.from('rollcall:pw:1').toString('base64')}`,
      );
    });
  });

  describe('a 2xx that is not what Prometheus promises is prometheus_bad_response, never "no data"', () => {
    const cases: [string, unknown, RegExp][] = [
      ['an HTML page', '<html><body>Welcome to nginx</body></html>', /not JSON.*Welcome to nginx/],
      ['JSON cut short', '{"status":"success","data":{"resultType":"vector","result":[{"met', /not JSON/],
      ['an empty body', '', /\(not JSON\); it is empty/],
      ['JSON without the envelope', { result: [] }, /status: .*success/],
      ['a success without data', { status: 'success' }, /data: /],
      [
        'a sample value that is a number, not a string',
        { status: 'success', data: { resultType: 'vector', result: [{ metric: {}, value: [1, 0.5] }] } },
        /data\.result\[0\]\.value\[1\]: expected string/,
      ],
      [
        'a sample value that is no number at all',
        { status: 'success', data: { resultType: 'vector', result: [{ metric: {}, value: [1, 'lots'] }] } },
        /data\.result\[0\]\.value\[1\]: expected a number written as a string/,
      ],
      [
        'a resultType Prometheus does not have',
        { status: 'success', data: { resultType: 'table', result: [] } },
        /"table" is none of vector, scalar, matrix, string/,
      ],
    ];
    it.each(cases)('%s', async (_name, body, message) => {
      server.on('GET', '/api/v1/query', { body });
      const error = await failure(client.query('up'));
      expect(error.code).toBe('prometheus_bad_response');
      expect(error.message).toMatch(message);
      expect(error.message).toContain(`Prometheus at ${host}`);
    });

    it('a range query answered with a vector: the resultType it did not ask for', async () => {
      server.on('GET', '/api/v1/query_range', vector({ value: [1, '1'] }));
      const error = await failure(client.queryRange('x', 0, 10_000, 1));
      expect(error.code).toBe('prometheus_bad_response');
      expect(error.message).toContain('a range query answers a matrix, not "vector"');
    });

    it('quotes the body without a credential a proxy echoes back', async () => {
      server.on('GET', '/api/v1/query', { body: `<html>denied for Authorization: Bearer ${TOKEN}</html>` });
      const error = await failure(client.query('up'));
      expect(error.message).toContain('Bearer [redacted]');
      expect(error.message).not.toContain(TOKEN);
    });
  });

  describe('errors Prometheus names', () => {
    it('a PromQL parse error (400 bad_data) is prometheus_query_error with Prometheus own text', async () => {
      const said = '1:5: parse error: unclosed left parenthesis';
      server.on('GET', '/api/v1/query', { status: 400, body: { status: 'error', errorType: 'bad_data', error: said } });
      const error = await failure(client.query('sum('));
      expect(error.code).toBe('prometheus_query_error');
      expect(error.message).toBe(`Prometheus at ${host} rejected the query: ${said}`);
      expect(error.prometheusMessage).toBe(said);
    });

    it('a query that cannot execute (422 execution) is prometheus_query_error', async () => {
      const said = 'found duplicate series for the match group';
      server.on('GET', '/api/v1/query', {
        status: 422,
        body: { status: 'error', errorType: 'execution', error: said },
      });
      const error = await failure(client.query('a / b'));
      expect(error.code).toBe('prometheus_query_error');
      expect(error.message).toContain(said);
    });

    it('an instant query that returns a range vector or a string is the query at fault, not Prometheus', async () => {
      server.on(
        'GET',
        '/api/v1/query',
        { body: { status: 'success', data: { resultType: 'matrix', result: [] } } },
        { body: { status: 'success', data: { resultType: 'string', result: [1, 'x'] } } },
      );
      expect((await failure(client.query('up[5m]'))).message).toMatch(/range vector .*not a number/);
      expect((await failure(client.query('"x"'))).code).toBe('prometheus_query_error');
    });

    it('native histograms are refused as no number', async () => {
      server.on('GET', '/api/v1/query', {
        body: { status: 'success', data: { resultType: 'vector', result: [{ metric: {}, histogram: [1, {}] }] } },
      });
      const error = await failure(client.query('h'));
      expect(error.code).toBe('prometheus_query_error');
      expect(error.message).toContain('histogram_quantile');
    });

    it('a query timeout inside Prometheus (503 timeout) is prometheus_unreachable with its text', async () => {
      server.on('GET', '/api/v1/query', {
        status: 503,
        body: { status: 'error', errorType: 'timeout', error: 'query timed out in expression evaluation' },
      });
      const error = await failure(client.query('up'));
      expect(error.code).toBe('prometheus_unreachable');
      expect(error.message).toBe(
        `Prometheus at ${host} failed the query (HTTP 503, timeout): query timed out in expression evaluation`,
      );
    });

    it.each([401, 403])('HTTP %i is prometheus_unauthorized, naming the config keys and never the token', async (s) => {
      server.on('GET', '/api/v1/query', { status: s, body: 'Unauthorized' });
      const error = await failure(client.query('up'));
      expect(error.code).toBe('prometheus_unauthorized');
      expect(error.message).toContain('prometheus.token or prometheus.basicAuth');
      for (const text of [error.message, JSON.stringify(error), inspect(error, { depth: 5 })])
        expect(text).not.toContain(TOKEN);
    });

    it('a proxy page with HTTP 500 or 502 is prometheus_unreachable quoting it', async () => {
      server.on('GET', '/api/v1/query', { status: 502, body: '<html>502 Bad Gateway</html>' });
      const error = await failure(client.query('up'));
      expect(error.code).toBe('prometheus_unreachable');
      expect(error.message).toBe(
        `Prometheus at ${host} answered /api/v1/query with HTTP 502 (\`<html>502 Bad Gateway</html>\`).`,
      );
    });

    it('a 404 says the URL (or its path prefix) is wrong', async () => {
      server.on('GET', '/api/v1/query', { status: 404, body: '404 page not found' });
      const error = await failure(client.query('up'));
      expect(error.code).toBe('prometheus_unreachable');
      expect(error.message).toContain('check prometheus.url (include a path prefix');
    });
  });

  describe('a Prometheus that does not answer', () => {
    it('a slow answer times out as prometheus_unreachable naming host:port and the timeout key', async () => {
      client = new PrometheusClient(promConfig(server.url, { timeout: '300ms' }), {
        configPath: 'instances[east].prometheus',
      });
      server.on('GET', '/api/v1/query', { delayMs: 1500, body: vector() });
      const started = Date.now();
      const error = await failure(client.query('up'));
      expect(Date.now() - started).toBeLessThan(1400);
      expect(error.code).toBe('prometheus_unreachable');
      expect(error.message).toBe(
        `Prometheus at ${host} did not answer /api/v1/query within 300ms (instances[east].prometheus.timeout).`,
      );
    });

    it('a refused connection is prometheus_unreachable naming host:port', async () => {
      const port = await freePort();
      client = new PrometheusClient(promConfig(`http://127.0.0.1:${port}`, { token: TOKEN }));
      const error = await failure(client.query('up'));
      expect(error.code).toBe('prometheus_unreachable');
      expect(error.message).toBe(
        `Cannot reach Prometheus at 127.0.0.1:${port}: ECONNREFUSED. Check prometheus.url and the network path.`,
      );
      expect(inspect(error, { depth: 5 })).not.toContain(TOKEN);
    });

    it('a connection reset mid-answer is prometheus_unreachable', async () => {
      server.on('GET', '/api/v1/query', { reset: true });
      expect((await failure(client.query('up'))).code).toBe('prometheus_unreachable');
    });

    it('names the default port of an https URL', () => {
      expect(new PrometheusClient(promConfig('https://prom.example.com/sub')).server).toBe('prom.example.com:443');
    });
  });
});
