import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterIndex, clusterNameOf } from '../../src/fleet/model.js';
import type { Application } from '../../src/infra/argocd/types.js';
import { LATENCY_BUCKETS } from '../../src/sim/metrics.js';
import { releaseCommit } from '../../src/sim/scenarios/canary-regression.js';
import { loadScenario } from '../../src/sim/scenarios/index.js';
import { startSimServer, type SimServer } from '../../src/sim/server.js';

// ---------- A strict reader of the text exposition format 0.0.4 ----------

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}
interface Exposition {
  types: Map<string, string>;
  help: Map<string, string>;
  samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const SUFFIXES: Record<string, string[]> = { histogram: ['_bucket', '_sum', '_count'], counter: [''], gauge: [''] };

function familyOf(name: string, types: Map<string, string>): string | undefined {
  for (const [family, type] of types)
    for (const suffix of SUFFIXES[type] ?? ['']) if (name === family + suffix) return family;
  return undefined;
}

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 0;
  while (i < text.length) {
    const eq = text.indexOf('=', i);
    const name = text.slice(i, eq);
    if (eq < 0 || !LABEL_NAME.test(name) || text[eq + 1] !== '"') throw new Error(`bad label at ${i}: ${line}`);
    let value = '';
    let j = eq + 2;
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] === '\\') {
        const next = text[++j];
        if (next === 'n') value += '\n';
        else if (next === '\\' || next === '"') value += next;
        else throw new Error(`bad escape \\${next}: ${line}`);
      } else if (text[j] === '\n') throw new Error(`raw newline in a label value: ${line}`);
      else value += text[j];
    }
    if (j >= text.length) throw new Error(`unterminated label value: ${line}`);
    if (name in labels) throw new Error(`label ${name} twice: ${line}`);
    labels[name] = value;
    i = j + 1;
    if (i < text.length) {
      if (text[i] !== ',') throw new Error(`expected , at ${i}: ${line}`);
      i++;
    }
  }
  return labels;
}

/** Throws on anything Prometheus' text parser would reject or that 0.0.4 leaves undefined. */
function parseExposition(text: string): Exposition {
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  const out: Exposition = { types: new Map(), help: new Map(), samples: [] };
  const seen = new Set<string>();
  const closed = new Set<string>();
  let current: string | undefined;
  for (const line of text.slice(0, -1).split('\n')) {
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (meta) {
      const [, kind, name, rest] = meta;
      if (!METRIC_NAME.test(name)) throw new Error(`bad metric name: ${line}`);
      const map = kind === 'HELP' ? out.help : out.types;
      if (map.has(name)) throw new Error(`second ${kind} for ${name}`);
      if (kind === 'TYPE' && !['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest))
        throw new Error(`bad type: ${line}`);
      if (kind === 'TYPE' && out.samples.some((s) => familyOf(s.name, new Map([[name, rest]]))))
        throw new Error(`TYPE after samples of ${name}`);
      map.set(name, rest);
      continue;
    }
    if (line.startsWith('#') || line === '') throw new Error(`unexpected line: ${JSON.stringify(line)}`);
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`bad sample line: ${line}`);
    const [, name, labelText = '', valueText] = m;
    const value = valueText === '+Inf' ? Infinity : valueText === '-Inf' ? -Infinity : Number(valueText);
    if (Number.isNaN(value) && valueText !== 'NaN') throw new Error(`bad value: ${line}`);
    const family = familyOf(name, out.types);
    if (!family) throw new Error(`sample of an undeclared family: ${line}`);
    // A family's samples are one block: Prometheus rejects a family that comes back.
    if (family !== current) {
      if (closed.has(family)) throw new Error(`family ${family} split in two blocks`);
      if (current) closed.add(current);
      current = family;
    }
    const labels = parseLabels(labelText, line);
    const key = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    if (seen.has(key)) throw new Error(`duplicate series: ${line}`);
    seen.add(key);
    out.samples.push({ name, labels, value });
  }
  return out;
}

// ---------- The simulator's series ----------

const NOW = new Date('2026-03-01T03:00:00Z');

/** Reads one app's series out of an exposition. */
function appSeries(x: Exposition, app: string) {
  const of = (name: string) => x.samples.filter((s) => s.name === name && s.labels.app === app);
  const requests = (code: string) => of('http_requests_total').find((s) => s.labels.code === code)?.value ?? NaN;
  return {
    ok: requests('200'),
    errors: requests('500'),
    buckets: of('http_request_duration_seconds_bucket').map((s) => [s.labels.le, s.value] as const),
    count: of('http_request_duration_seconds_count')[0]?.value ?? NaN,
    sum: of('http_request_duration_seconds_sum')[0]?.value ?? NaN,
    revision: of('app_revision_info').map((s) => s.labels.revision),
    labels: of('app_revision_info')[0]?.labels,
  };
}

/** Every counter-like sample's key and value, to compare scrapes. */
function counterValues(x: Exposition): Map<string, number> {
  return new Map(
    x.samples
      .filter((s) => s.name !== 'app_revision_info')
      .map((s) => [`${s.name}${JSON.stringify(s.labels)}`, s.value] as const),
  );
}

describe('GET /metrics (canary-regression)', () => {
  let sim: SimServer;
  /** The monotonic clock the metrics count by: moved by the test only. */
  let mono = 0;

  const scrape = async (): Promise<Exposition> => {
    const res = await fetch(`${sim.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    return parseExposition(await res.text());
  };
  const syncThroughApi = async (app: string) => {
    const inst = sim.instances[0];
    const res = await fetch(`${inst.url}/api/v1/applications/${app}/sync`, {
      method: 'POST',
      headers: { authorization: `Bearer ${inst.token}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(200);
  };
  const synced = (name: string) => {
    const app = sim.state.instance('prod')!.apps.get(name)!;
    return app.status?.sync?.status === 'Synced' && app.status.operationState?.phase === 'Succeeded';
  };

  beforeAll(async () => {
    const { fixture, behaviour } = loadScenario('canary-regression', { now: NOW });
    sim = await startSimServer({
      fixture,
      adoptFixture: true,
      manual: true,
      scenarioBehaviour: behaviour,
      metricsClock: () => mono,
    });
  });
  afterAll(() => sim.stop());

  it('is a well-formed exposition: HELP and TYPE once per family, cumulative buckets, +Inf equal to _count', async () => {
    mono += 10_000;
    const x = await scrape();
    expect(Object.fromEntries(x.types)).toEqual({
      http_requests_total: 'counter',
      http_request_duration_seconds: 'histogram',
      app_revision_info: 'gauge',
    });
    expect([...x.help.keys()].sort()).toEqual([...x.types.keys()].sort());
    const apps = sim.state.instance('prod')!.apps;
    expect(apps.size).toBe(24);
    for (const app of apps.values()) {
      const s = appSeries(x, app.metadata.name);
      expect(s.buckets.map(([le]) => le)).toEqual([...LATENCY_BUCKETS.map(String), '+Inf']);
      for (let i = 1; i < s.buckets.length; i++) expect(s.buckets[i][1]).toBeGreaterThanOrEqual(s.buckets[i - 1][1]);
      expect(s.buckets.at(-1)![1]).toBe(s.count);
      expect(s.ok + s.errors).toBe(s.count);
      expect(s.count).toBeGreaterThan(0);
      expect(s.sum).toBeGreaterThan(0);
      expect(s.revision).toHaveLength(1);
    }
  });

  it("labels each app's series with the fleet's cluster name, whether the app names its cluster or its server URL", async () => {
    const x = await scrape();
    const store = sim.state.instance('prod')!;
    const index = clusterIndex([...store.clusters.values()]);
    const byServer = [...store.apps.values()].filter((a) => a.spec.destination.server);
    const byName = [...store.apps.values()].filter((a) => a.spec.destination.name);
    expect(byServer.length).toBe(12);
    expect(byName.length).toBe(12);
    for (const app of store.apps.values()) {
      expect(appSeries(x, app.metadata.name).labels).toEqual({
        app: app.metadata.name,
        cluster: clusterNameOf(app, index),
        namespace: app.spec.destination.namespace,
        revision: expect.any(String),
      });
    }
    // By server URL or by name, the label is the cluster's name: what a check's {{cluster}} becomes.
    expect(appSeries(x, 'checkout-prod-us-east-1').labels.cluster).toBe('prod-us-east-1');
    expect(appSeries(x, 'payments-prod-us-east-1').labels.cluster).toBe('prod-us-east-1');
  });

  it('counts 5 requests a second on the canary and 40 on a high-traffic cluster, by the monotonic clock alone', async () => {
    const before = await scrape();
    // Simulated time passing does not make requests: only the monotonic clock does.
    sim.controller.advance(60_000);
    const still = await scrape();
    expect(counterValues(still)).toEqual(counterValues(before));
    mono += 10_000;
    const after = await scrape();
    const served = (x: Exposition, app: string) => appSeries(x, app).count;
    expect(served(after, 'checkout-prod-ca-central-1') - served(before, 'checkout-prod-ca-central-1')).toBe(50);
    expect(served(after, 'checkout-prod-us-east-1') - served(before, 'checkout-prod-us-east-1')).toBe(400);
  });

  it("switches checkout to ~30% 500s once its sync to v1.9.0 finishes, while payments' new release stays under 1%", async () => {
    const before = await scrape();
    expect(appSeries(before, 'checkout-prod-eu-west-1').revision).toEqual([releaseCommit('checkout', 'v1.8.0')]);
    await syncThroughApi('checkout-prod-eu-west-1');
    await syncThroughApi('payments-prod-eu-west-1');
    // A sync still running changes nothing: the old release serves until the sync completes.
    sim.controller.advance(1000);
    mono += 10_000;
    const running = await scrape();
    const share = (a: Exposition, b: Exposition, app: string) => {
      const [x, y] = [appSeries(a, app), appSeries(b, app)];
      return (y.errors - x.errors) / (y.count - x.count);
    };
    expect(share(before, running, 'checkout-prod-eu-west-1')).toBeLessThan(0.01);
    expect(sim.controller.advanceUntil(() => synced('checkout-prod-eu-west-1'), 60_000)).toBe(true);
    expect(sim.controller.advanceUntil(() => synced('payments-prod-eu-west-1'), 60_000)).toBe(true);
    // Healthy in Argo CD all the same.
    sim.controller.advance(30_000);
    expect(sim.state.instance('prod')!.apps.get('checkout-prod-eu-west-1')!.status?.health?.status).toBe('Healthy');

    const t1 = await scrape();
    mono += 60_000;
    const t2 = await scrape();
    expect(share(t1, t2, 'checkout-prod-eu-west-1')).toBeCloseTo(0.3, 2);
    expect(share(t1, t2, 'payments-prod-eu-west-1')).toBeLessThan(0.01);
    expect(share(t1, t2, 'checkout-prod-eu-west-2')).toBeLessThan(0.01);
    expect(appSeries(t2, 'checkout-prod-eu-west-1').revision).toEqual([releaseCommit('checkout', 'v1.9.0')]);
    expect(appSeries(t2, 'checkout-prod-eu-west-2').revision).toEqual([releaseCommit('checkout', 'v1.8.0')]);
    expect(appSeries(t2, 'payments-prod-eu-west-1').revision).toEqual([releaseCommit('payments', 'v3.5.0')]);
    // Slower too: most of the new release's requests take longer than 100 ms.
    const slow = (x: Exposition, app: string) => appSeries(x, app).buckets.find(([le]) => le === '0.1')![1];
    const served = appSeries(t2, 'checkout-prod-eu-west-1').count - appSeries(t1, 'checkout-prod-eu-west-1').count;
    expect((slow(t2, 'checkout-prod-eu-west-1') - slow(t1, 'checkout-prod-eu-west-1')) / served).toBeLessThan(0.5);
    // The running image follows the synced release.
    const app: Application = sim.state.instance('prod')!.apps.get('checkout-prod-eu-west-1')!;
    expect(app.status?.summary?.images).toEqual(['registry.example.com/commerce/checkout:v1.9.0']);
  });

  it('never lets a counter go down across syncs, rollbacks and scrapes', async () => {
    let last = counterValues(await scrape());
    const check = async () => {
      const now = counterValues(await scrape());
      for (const [key, value] of last) expect(now.get(key), key).toBeGreaterThanOrEqual(value);
      last = now;
    };
    for (const app of ['checkout-prod-ap-southeast-1', 'checkout-prod-sa-east-1', 'payments-prod-sa-east-1']) {
      await syncThroughApi(app);
      for (let i = 0; i < 8; i++) {
        mono += 333;
        sim.controller.advance(1000);
        await check();
      }
    }
    // Back to v1.8.0: the rollback's sync switches checkout back to healthy traffic, counters still only grow.
    const inst = sim.instances[0];
    const app = sim.state.instance('prod')!.apps.get('checkout-prod-ap-southeast-1')!;
    const res = await fetch(`${inst.url}/api/v1/applications/checkout-prod-ap-southeast-1/rollback`, {
      method: 'POST',
      headers: { authorization: `Bearer ${inst.token}` },
      body: JSON.stringify({ id: app.status!.history!.at(-2)!.id }),
    });
    expect(res.status).toBe(200);
    for (let i = 0; i < 10; i++) {
      mono += 777;
      sim.controller.advance(1000);
      await check();
    }
    const t1 = await scrape();
    mono += 60_000;
    const t2 = await scrape();
    const a = appSeries(t1, 'checkout-prod-ap-southeast-1');
    const b = appSeries(t2, 'checkout-prod-ap-southeast-1');
    expect(b.revision).toEqual([releaseCommit('checkout', 'v1.8.0')]);
    expect((b.errors - a.errors) / (b.count - a.count)).toBeLessThan(0.01);
  });

  it('answers 405 to anything but GET and HEAD', async () => {
    const res = await fetch(`${sim.url}/metrics`, { method: 'POST', body: '' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    const head = await fetch(`${sim.url}/metrics`, { method: 'HEAD' });
    expect(head.status).toBe(200);
  });
});

describe('GET /metrics (seed-outage)', () => {
  let sim: SimServer;
  let mono = 0;
  beforeAll(async () => {
    const { fixture, behaviour } = loadScenario('seed-outage', { now: NOW });
    sim = await startSimServer({
      fixture,
      adoptFixture: true,
      manual: true,
      scenarioBehaviour: behaviour,
      metricsClock: () => mono,
    });
  });
  afterAll(() => sim.stop());

  it('serves 20 requests a second per app, nearly all failing on the crash-looping auth-service, healthy elsewhere', async () => {
    const t1 = parseExposition(await (await fetch(`${sim.url}/metrics`)).text());
    mono += 10_000;
    const t2 = parseExposition(await (await fetch(`${sim.url}/metrics`)).text());
    const delta = (app: string) => {
      const [a, b] = [appSeries(t1, app), appSeries(t2, app)];
      return { count: b.count - a.count, errors: b.errors - a.errors };
    };
    expect(new Set(t2.samples.map((s) => s.labels.app)).size).toBe(540);
    expect(delta('auth-service-prod-eu-west-1').count).toBe(200);
    expect(delta('auth-service-prod-eu-west-1').errors).toBeGreaterThan(180);
    expect(delta('cart-prod-eu-west-1')).toEqual({ count: 200, errors: 1 });
    // Fixing auth-config (sync with prune) brings auth-service back, and its errors with it.
    const inst = sim.instances[0];
    const res = await fetch(`${inst.url}/api/v1/applications/auth-config-prod-eu-west-1/sync`, {
      method: 'POST',
      headers: { authorization: `Bearer ${inst.token}` },
      body: JSON.stringify({ prune: true }),
    });
    expect(res.status).toBe(200);
    const healthy = () =>
      sim.state.instance('prod')!.apps.get('auth-service-prod-eu-west-1')!.status?.health?.status === 'Healthy';
    expect(sim.controller.advanceUntil(healthy, 120_000)).toBe(true);
    const t3 = parseExposition(await (await fetch(`${sim.url}/metrics`)).text());
    mono += 10_000;
    const t4 = parseExposition(await (await fetch(`${sim.url}/metrics`)).text());
    const [a, b] = [appSeries(t3, 'auth-service-prod-eu-west-1'), appSeries(t4, 'auth-service-prod-eu-west-1')];
    expect(b.errors - a.errors).toBe(1);
    expect(b.count - a.count).toBe(200);
  });
});

describe('the strict exposition reader', () => {
  it('rejects what Prometheus rejects', () => {
    const head = '# TYPE x counter\n';
    expect(() => parseExposition(`${head}x{a="1"} 1\nx{a="1"} 2\n`)).toThrow(/duplicate series/);
    expect(() => parseExposition('y 1\n')).toThrow(/undeclared family/);
    expect(() => parseExposition(`${head}x{a="1} 1\n`)).toThrow();
    expect(() => parseExposition(`${head}x{a="\\q"} 1\n`)).toThrow(/bad escape/);
    expect(() => parseExposition(`${head}# TYPE y gauge\nx 1\ny 1\nx{b="2"} 1\n`)).toThrow(/split in two blocks/);
    expect(() => parseExposition(`${head}x 1`)).toThrow(/newline/);
    expect(parseExposition(`${head}x{a="q\\"\\\\\\n"} 1.5\n`).samples[0]).toEqual({
      name: 'x',
      labels: { a: 'q"\\\n' },
      value: 1.5,
    });
  });
});
