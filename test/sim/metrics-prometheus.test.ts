import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PrivatePrometheus } from '../../src/infra/prometheus-server.js';
import { SIM_CHECKS } from '../../src/sim/metrics.js';
import { releaseCommit } from '../../src/sim/scenarios/canary-regression.js';
import type { SimServer } from '../../src/sim/server.js';
import { prometheusAvailable, startTestPrometheus } from '../support/prometheus.js';
import { startTestSim } from '../support/sim.js';

/** The check's query for one app, its placeholders filled as the check evaluator fills them. */
function checkQuery(check: keyof typeof SIM_CHECKS, app: string, cluster: string): string {
  const query = SIM_CHECKS[check].query
    .replaceAll('{{app}}', app)
    .replaceAll('{{cluster}}', cluster)
    .replaceAll('{{window}}', SIM_CHECKS[check].window);
  expect(query).not.toContain('{{');
  return query;
}

interface VectorAnswer {
  status: string;
  data: { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] };
}

describe.skipIf(!prometheusAvailable)('a real Prometheus scraping the simulator (canary-regression)', () => {
  let sim: SimServer;
  let prometheus: PrivatePrometheus;

  const query = async (promql: string): Promise<VectorAnswer['data']['result']> => {
    const res = await fetch(`${prometheus.url}/api/v1/query?query=${encodeURIComponent(promql)}`);
    const body = (await res.json()) as VectorAnswer;
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body.data.resultType).toBe('vector');
    return body.data.result;
  };
  /** The error-rate check's value for an app, once Prometheus has two samples of it in the window. */
  const errorRate = async (app: string, cluster: string): Promise<number | undefined> => {
    const [first] = await query(checkQuery('error-rate', app, cluster));
    return first ? Number(first.value[1]) : undefined;
  };
  const sync = async (app: string) => {
    const inst = sim.instances[0];
    const res = await fetch(`${inst.url}/api/v1/applications/${app}/sync`, {
      method: 'POST',
      headers: { authorization: `Bearer ${inst.token}` },
      body: '{}',
    });
    expect(res.status).toBe(200);
  };
  /** Moves the simulator's clock through its own API, as a test drives it. */
  const advance = async (ms: number) => {
    const res = await fetch(`${sim.url}/_sim/advance`, { method: 'POST', body: JSON.stringify({ ms }) });
    expect(res.status).toBe(200);
  };
  const appStatus = async (app: string) => {
    const inst = sim.instances[0];
    const res = await fetch(`${inst.url}/api/v1/applications/${app}`, {
      headers: { authorization: `Bearer ${inst.token}` },
    });
    return ((await res.json()) as { status: { sync: { status: string }; health: { status: string } } }).status;
  };

  beforeAll(async () => {
    sim = await startTestSim({ scenario: 'canary-regression' });
    prometheus = await startTestPrometheus([{ url: sim.url }]);
  }, 60_000);
  afterAll(async () => {
    await prometheus?.stop();
    await sim?.stop();
  });

  it('reads the error-rate check above 0.2 for a synced checkout, under 0.05 for a synced payments and an unsynced checkout', async () => {
    await sync('checkout-prod-ca-central-1');
    await sync('payments-prod-ca-central-1');
    await advance(30_000);
    for (const app of ['checkout-prod-ca-central-1', 'payments-prod-ca-central-1'])
      expect(await appStatus(app)).toMatchObject({ sync: { status: 'Synced' }, health: { status: 'Healthy' } });

    // Scraped every second; the 1m window fills with the new release's samples within seconds.
    await expect
      .poll(() => errorRate('checkout-prod-ca-central-1', 'prod-ca-central-1'), { timeout: 25_000, interval: 500 })
      .toBeGreaterThan(0.2);
    const payments = await errorRate('payments-prod-ca-central-1', 'prod-ca-central-1');
    const unsynced = await errorRate('checkout-prod-eu-west-1', 'prod-eu-west-1');
    expect(payments).toBeDefined();
    expect(payments!).toBeLessThan(0.05);
    expect(unsynced).toBeDefined();
    expect(unsynced!).toBeLessThan(0.05);
    // Another app on the same cluster, or the same app on another cluster, is not selected.
    expect(await errorRate('checkout-prod-ca-central-1', 'prod-eu-west-1')).toBeUndefined();

    const revisions = await query('app_revision_info{app=~"checkout-prod-(ca-central|eu-west)-1"}');
    expect(Object.fromEntries(revisions.map((r) => [r.metric.app, r.metric.revision]))).toEqual({
      'checkout-prod-ca-central-1': releaseCommit('checkout', 'v1.9.0'),
      'checkout-prod-eu-west-1': releaseCommit('checkout', 'v1.8.0'),
    });
    // The latency check sees the new release too: p99 over 300 ms on the synced checkout, under it elsewhere.
    // The 1m window still holds the old release's samples for a while, and the quantile crosses later than the
    // error ratio does, so it is polled as well.
    const p99 = async () => {
      const [first] = await query(checkQuery('latency-p99', 'checkout-prod-ca-central-1', 'prod-ca-central-1'));
      return first ? Number(first.value[1]) : undefined;
    };
    await expect.poll(p99, { timeout: 25_000, interval: 500 }).toBeGreaterThan(0.3);
    const [p99Payments] = await query(checkQuery('latency-p99', 'payments-prod-ca-central-1', 'prod-ca-central-1'));
    expect(Number(p99Payments.value[1])).toBeLessThan(0.3);
  }, 90_000);
});
