/**
 * Verified waves: what metric checks cost a bulk sync, through the real runbook engine on Redis, the shipped
 * bulk-sync runbook, the real Argo CD client and mirror against the simulator (its own process), and a real
 * private Prometheus scraping the simulator's /metrics.
 * - gate → verdict: per wave, from the moment its last app is Synced and Healthy (seen by the mirror) to the
 *   check's first verdict on the wave (the CheckService's answer, observed at its boundary). Target: at most one
 *   scrape interval + 1 s.
 * - overhead: the seed-outage fleet (540 apps, three waves) synced with and without `check=` (no bake), wall
 *   time side by side. Target: ≤ 1.05× the run without checks.
 * The simulator's per-app sync and health times are fixed, so both runs do the same Argo CD work.
 */
import { ensureRedis } from '../src/infra/redis-server.js';
import { startPrivatePrometheus, type PrivatePrometheus } from '../src/infra/prometheus-server.js';
import { startEngine } from '../src/domain/runbooks/engine.js';
import { loadRunbooks, SHIPPED_RUNBOOKS_DIR } from '../src/domain/runbooks/loader.js';
import { CheckService, type CheckVerdict } from '../src/domain/checks/index.js';
import type { FleetApp } from '../src/fleet/model.js';
import type { Services } from '../src/commands/registry.js';
import {
  buildMirror,
  cleanPrefix,
  header,
  isMain,
  loadLine,
  machineLine,
  ms,
  simConfig,
  startSimChild,
  table,
} from './lib.js';

const CHECKS_YAML = (prometheusUrl: string, scrapeS: number) => `
prometheus:
  url: ${prometheusUrl}
  scrapeInterval: ${scrapeS}s
checks:
  error-rate:
    query: sum(rate(http_requests_total{app="{{app}}",cluster="{{cluster}}",code=~"5.."}[{{window}}])) / sum(rate(http_requests_total{app="{{app}}",cluster="{{cluster}}"}[{{window}}]))
    failAbove: 0.05
    window: 1m
  traffic:
    query: sum(rate(http_requests_total{app="{{app}}",cluster="{{cluster}}"}[{{window}}]))
    failBelow: 0.1
    window: 1m
`;

interface SyncRun {
  wallMs: number;
  status: string;
  error?: string;
  /** Per wave: last app Healthy → first verdict of the check on that wave's apps (ms). */
  gateToVerdict: number[];
  queries: number;
}

/** One bulk sync to its end, timing waves' gates (mirror events) and check verdicts (CheckService answers). */
async function syncOnce(opts: {
  scenario: 'seed-outage' | 'canary-regression';
  params: Record<string, string>;
  scrapeS: number;
  speed: number;
  syncDurationMs: number;
  healthSettleMs: number;
  withChecks: boolean;
}): Promise<SyncRun> {
  const redis = await ensureRedis();
  const sim = await startSimChild({
    kind: 'scenario',
    name: opts.scenario,
    speed: opts.speed,
    syncDurationMs: opts.syncDurationMs,
    healthSettleMs: opts.healthSettleMs,
  });
  let prometheus: PrivatePrometheus | undefined;
  const prefix = `rollcall-bench-${Math.random().toString(36).slice(2, 8)}`;
  try {
    prometheus = await startPrivatePrometheus({ targets: [{ url: sim.url }], scrapeIntervalS: opts.scrapeS });
    await prometheus.waitForScrape();
    const config = simConfig(
      sim,
      `redis:\n  url: ${redis.url}\n  prefix: ${prefix}\n${CHECKS_YAML(prometheus.url, opts.scrapeS)}`,
    );
    const bot = await buildMirror(config);
    const checks = new CheckService(config);
    const verdictsAt: { at: number; apps: Set<string> }[] = [];
    let queries = 0;
    // Observed at its boundary: the service answers as it would, the bench notes when and for which apps.
    const observed: CheckService = Object.create(checks);
    observed.evaluateMany = async (
      names: string[],
      apps: FleetApp[],
      o?: Parameters<CheckService['evaluateMany']>[2],
    ) => {
      const out: CheckVerdict[] = await checks.evaluateMany(names, apps, o);
      queries += out.length;
      verdictsAt.push({
        at: performance.now(),
        apps: new Set(apps.map((a) => `${a.instance}/${a.app.metadata.name}`)),
      });
      return out;
    };
    observed.evaluate = async (name, app, o) => {
      const v = await checks.evaluate(name, app, o);
      queries++;
      verdictsAt.push({ at: performance.now(), apps: new Set([`${app.instance}/${app.app.metadata.name}`]) });
      return v;
    };
    const services: Services = { config, fleet: bot.mirror, argocd: bot.argocd, now: () => new Date() };
    if (opts.withChecks) services.checks = observed;
    const healthyAt = new Map<string, number>();
    bot.mirror.subscribe((e) => {
      if (!('app' in e)) return;
      const st = e.app.app.status;
      const key = `${e.app.instance}/${e.app.app.metadata.name}`;
      if (st?.operationState?.phase === 'Succeeded' && st.sync?.status === 'Synced' && st.health?.status === 'Healthy')
        if (!healthyAt.has(key)) healthyAt.set(key, performance.now());
    });
    const engine = await startEngine(services, {
      role: 'all',
      redisUrl: redis.url,
      prefix,
      runbooks: loadRunbooks(SHIPPED_RUNBOOKS_DIR),
    });
    services.runs = engine.runs;
    try {
      const run = await engine.runs.start({
        runbook: 'bulk-sync',
        params: opts.params,
        user: 'U_BENCH',
        surface: 'terminal',
      });
      if (run.status !== 'awaiting-confirmation') throw new Error(`preview ended ${run.status}: ${run.error ?? ''}`);
      const waves = (run.preview?.data as { waves: { apps: { instance: string; app: string }[] }[] }).waves;
      healthyAt.clear();
      const t = performance.now();
      await engine.runs.confirm(run.id, 'U_BENCH');
      const end = await engine.runs.waitForEnd(run.id, 600_000);
      const wallMs = performance.now() - t;
      const gateToVerdict: number[] = [];
      for (const w of waves) {
        const keys = w.apps.map((a) => `${a.instance}/${a.app}`);
        const gate = Math.max(...keys.map((k) => healthyAt.get(k) ?? NaN));
        const verdict = verdictsAt.find((v) => v.at >= gate && keys.some((k) => v.apps.has(k)));
        if (opts.withChecks && Number.isFinite(gate) && verdict) gateToVerdict.push(verdict.at - gate);
      }
      return { wallMs, status: end.status, error: end.error, gateToVerdict, queries };
    } finally {
      await engine.stop();
      await bot.mirror.stop();
    }
  } finally {
    await prometheus?.stop();
    await sim.stop();
    await cleanPrefix(redis.url, prefix).catch(() => {});
    await redis.stop();
  }
}

export async function runVerifyBench(): Promise<void> {
  header('verified waves: check verdict latency and the cost of checks on a bulk sync');
  console.log(`  ${machineLine()}`);

  const latencyRows: (string | number)[][] = [
    ['scrape interval', 'waves', 'gate → verdict ms (each wave)', 'max', 'target (≤ scrape + 1 s)', 'run'],
  ];
  for (const scrapeS of [1, 5]) {
    const r = await syncOnce({
      scenario: 'canary-regression',
      params: {
        selector: 'payments-*',
        waves: 'tier=canary;tier=low-traffic;tier=high-traffic',
        check: 'error-rate',
        concurrency: '10',
      },
      scrapeS,
      speed: 5,
      syncDurationMs: 5000,
      healthSettleMs: 5000,
      withChecks: true,
    });
    const max = Math.max(...r.gateToVerdict);
    latencyRows.push([
      `${scrapeS} s`,
      r.gateToVerdict.length,
      r.gateToVerdict.map((x) => ms(x)).join(', '),
      ms(max),
      max <= scrapeS * 1000 + 1000 ? 'met' : 'NOT met',
      `${r.status}${r.error ? `: ${r.error.slice(0, 60)}` : ''}`,
    ]);
  }
  table(latencyRows);
  console.log(`  ${loadLine()}`);

  const params = {
    selector: '*',
    prune: 'true',
    includeSynced: 'true',
    concurrency: '40',
    waves: 'auth-config-*;auth-service-*',
  };
  const common = {
    scenario: 'seed-outage' as const,
    scrapeS: 1,
    speed: 5,
    syncDurationMs: 20_000,
    healthSettleMs: 10_000,
  };
  const without = await syncOnce({ ...common, params, withChecks: false });
  const withChecks = await syncOnce({ ...common, params: { ...params, check: 'traffic' }, withChecks: true });
  const ratio = withChecks.wallMs / without.wallMs;
  table([
    ['540-app bulk sync, 3 waves, no bake', 'wall s', 'status', 'check queries', 'vs without', 'target (≤ 1.05×)'],
    ['without checks', (without.wallMs / 1000).toFixed(1), without.status, 0, '1.00×', ''],
    [
      'check=traffic (Prometheus scraping every 1 s)',
      (withChecks.wallMs / 1000).toFixed(1),
      withChecks.status,
      withChecks.queries,
      `${ratio.toFixed(2)}×`,
      ratio <= 1.05 ? 'met' : 'NOT met',
    ],
  ]);
  console.log(`  ${loadLine()}`);
}

if (isMain(import.meta.url)) {
  await runVerifyBench();
  process.exit(0);
}
