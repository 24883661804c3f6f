/**
 * Issue 4: bulk sync of the seed-outage fleet (540 apps on 12 clusters) through the real runbook engine
 * (BullMQ on Redis), the shipped bulk-sync runbook, the real Argo CD client and fleet mirror against the
 * simulator, and the Slack live message through SlackNotifier and a fake Slack Web API. Every app has the
 * same simulated sync time and health settle, so the ideal wall time is known.
 */
import { WebClient } from '@slack/web-api';
import { ensureRedis } from '../src/infra/redis-server.js';
import { RUN_INFO_NAME } from '../src/domain/runbooks/actions/bulk-sync.js';
import { startEngine } from '../src/domain/runbooks/engine.js';
import { loadRunbooks, SHIPPED_RUNBOOKS_DIR } from '../src/domain/runbooks/loader.js';
import type { Run } from '../src/domain/runbooks/run-store.js';
import type { Services } from '../src/commands/registry.js';
import { SlackNotifier } from '../src/surfaces/slack/notifier.js';
import type { SimOperation } from '../src/sim/store.js';
import { startFakeSlack } from '../test/support/fake-slack.js';
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
  stats,
  table,
} from './lib.js';

export interface BulkSyncOptions {
  concurrency: number;
  /** The bulk-sync `waves` param (ordered globs; the rest is the last wave). */
  waves: string;
  /** Simulated ms per app: sync attempt, then health settle (the gate is healthy). */
  syncDurationMs: number;
  healthSettleMs: number;
  speed: number;
}

export const DEFAULTS: BulkSyncOptions = {
  concurrency: 40,
  waves: 'auth-config-*;auth-service-*',
  syncDurationMs: 5000,
  healthSettleMs: 5000,
  speed: 5,
};

export interface BulkSyncResult {
  opts: BulkSyncOptions;
  apps: number;
  waveSizes: number[];
  perAppMs: number;
  idealMs: number;
  previewMs: number;
  wallMs: number;
  status: string;
  previewCalls: Record<string, number>;
  runCalls: Record<string, number>;
  syncPostsPerApp: { min: number; max: number; apps: number };
  /** POST /sync start → mirror sees Succeeded+Synced+Healthy; sync call answer time; last completion → next POST start. */
  timeline: {
    appTime: ReturnType<typeof stats>;
    syncAnswer: ReturnType<typeof stats>;
    reaction: ReturnType<typeof stats>;
  };
  slack: { posts: number; updates: number; minGapMs: number; maxIn2s: number; rateLimited: number };
}

const CHANNEL = 'C0BENCH';

export async function runBulkSyncBench(opts: BulkSyncOptions = DEFAULTS): Promise<BulkSyncResult> {
  header(
    `bulk sync of the seed-outage fleet through the runbook engine (targets: ≤ 1.15× ideal, ≤ 2 Argo CD calls per app, ≤ 1 Slack update per 2 s)`,
  );
  console.log(`  ${machineLine()}`);
  const redis = await ensureRedis();
  const sim = await startSimChild({
    kind: 'scenario',
    name: 'seed-outage',
    speed: opts.speed,
    syncDurationMs: opts.syncDurationMs,
    healthSettleMs: opts.healthSettleMs,
  });
  const fake = await startFakeSlack();
  const prefix = `rollcall-bench-${Math.random().toString(36).slice(2, 8)}`;
  const config = simConfig(sim, `redis:\n  url: ${redis.url}\n  prefix: ${prefix}\n`);
  const bot = await buildMirror(config);
  // As startSlack builds its notifier: a client that hands 429s back so updates coalesce while waiting.
  const notifier = new SlackNotifier(
    new WebClient('xoxb-bench-token', { slackApiUrl: fake.apiUrl, rejectRateLimitedCalls: true }),
  );
  const services: Services = { config, fleet: bot.mirror, argocd: bot.argocd, notifier, now: () => new Date() };
  const engine = await startEngine(services, {
    role: 'all',
    redisUrl: redis.url,
    prefix,
    runbooks: loadRunbooks(SHIPPED_RUNBOOKS_DIR),
  });
  services.runs = engine.runs;
  try {
    const apps = bot.mirror.apps().length;
    bot.counter.reset();
    let t = performance.now();
    const run = await engine.runs.start({
      runbook: 'bulk-sync',
      params: {
        selector: '*',
        prune: 'true',
        includeSynced: 'true',
        concurrency: String(opts.concurrency),
        waves: opts.waves,
      },
      user: 'U_BENCH',
      channel: CHANNEL,
      surface: 'slack',
    });
    const previewMs = performance.now() - t;
    if (run.status !== 'awaiting-confirmation')
      throw new Error(`bulk-sync preview ended ${run.status}: ${run.error ?? ''}`);
    const plan = run.preview?.data as { waves: { name: string; apps: unknown[] }[] } | undefined;
    const waveSizes = plan?.waves.map((w) => w.apps.length) ?? [];
    const previewCalls = bot.counter.byMethod();
    bot.counter.reset();
    await fetch(`${sim.url}/_sim/operations`, { method: 'DELETE' });
    fake.reset();

    // Timeline per app: sync POST start and answer (client side), then when the mirror saw it Synced+Healthy.
    const posted = new Map<string, { at: number; answeredAt?: number }>();
    const healthyAt = new Map<string, number>();
    bot.counter.onCall = (instance, method, args, startedAt, result) => {
      if (method !== 'sync') return;
      const key = `${instance}/${(args[0] as { name: string }).name}`;
      const entry = { at: startedAt } as { at: number; answeredAt?: number };
      posted.set(key, entry);
      void (result as Promise<unknown>).then(() => (entry.answeredAt = performance.now())).catch(() => {});
    };
    bot.mirror.subscribe((e) => {
      if (!('app' in e)) return;
      const key = `${e.app.instance}/${e.app.app.metadata.name}`;
      const st = e.app.app.status;
      if (
        posted.has(key) &&
        !healthyAt.has(key) &&
        st?.operationState?.phase === 'Succeeded' &&
        st.operationState.operation?.info?.some((i) => i.name === RUN_INFO_NAME) &&
        st.sync?.status === 'Synced' &&
        st.health?.status === 'Healthy'
      )
        healthyAt.set(key, performance.now());
    });
    t = performance.now();
    await engine.runs.confirm(run.id, 'U_BENCH', { channel: CHANNEL });
    const end: Run = await engine.runs.waitForEnd(run.id, 240_000);
    const wallMs = performance.now() - t;
    await notifier.flush();
    const runCalls = bot.counter.byMethod();

    const perAppMs = (opts.syncDurationMs + opts.healthSettleMs) / opts.speed;
    const idealMs = waveSizes.reduce((n, size) => n + Math.ceil(size / opts.concurrency), 0) * perAppMs;

    const ops = (await (await fetch(`${sim.url}/_sim/operations`)).json()) as SimOperation[];
    const perApp = new Map<string, number>();
    for (const o of ops)
      if (o.method === 'POST' && o.path.endsWith('/sync'))
        perApp.set(`${o.instance}/${o.app}`, (perApp.get(`${o.instance}/${o.app}`) ?? 0) + 1);
    const counts = [...perApp.values()];

    const updates = fake.callsTo('chat.update').map((c) => c.at);
    const gaps = updates.slice(1).map((at, i) => at - updates[i]);
    let maxIn2s = 0;
    for (let i = 0; i < updates.length; i++)
      maxIn2s = Math.max(maxIn2s, updates.filter((at) => at >= updates[i] && at < updates[i] + 2000).length);

    const appTimes = [...posted].filter(([k]) => healthyAt.has(k)).map(([k, p]) => healthyAt.get(k)! - p.at);
    const answerTimes = [...posted.values()].filter((p) => p.answeredAt).map((p) => p.answeredAt! - p.at);
    // Slot turnaround: app i+C in a wave starts when app i of that wave is done; the gap is the bot's reaction.
    const starts = [...posted.values()].map((p) => p.at).sort((a, b) => a - b);
    const dones = [...healthyAt.values()].sort((a, b) => a - b);
    const reactions: number[] = [];
    for (const s0 of starts) {
      const before = dones.filter((d) => d <= s0);
      if (before.length) reactions.push(s0 - before[before.length - 1]);
    }
    const timeline = { appTime: stats(appTimes), syncAnswer: stats(answerTimes), reaction: stats(reactions) };
    const result: BulkSyncResult = {
      opts,
      apps,
      waveSizes,
      perAppMs,
      idealMs,
      previewMs,
      wallMs,
      status: end.status,
      timeline,
      previewCalls,
      runCalls,
      syncPostsPerApp: {
        min: counts.length ? Math.min(...counts) : 0,
        max: counts.length ? Math.max(...counts) : 0,
        apps: perApp.size,
      },
      slack: {
        posts: fake.callsTo('chat.postMessage').length,
        updates: updates.length,
        minGapMs: gaps.length ? Math.min(...gaps) : NaN,
        maxIn2s,
        rateLimited: fake.calls.filter((c) => c.rateLimited).length,
      },
    };
    print(result, end);
    return result;
  } finally {
    await engine.stop().catch(() => {});
    await bot.mirror.stop();
    await fake.stop();
    await sim.stop();
    await cleanPrefix(redis.url, prefix);
    await redis.stop();
  }
}

function fmtCalls(calls: Record<string, number>): string {
  return (
    Object.entries(calls)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k}×${v}`)
      .join(' ') || 'none'
  );
}

function print(r: BulkSyncResult, end: Run): void {
  const ratio = r.wallMs / r.idealMs;
  const perAppCalls = Object.entries(r.runCalls)
    .filter(([m]) => !m.startsWith('watch'))
    .reduce((n, [, v]) => n + v, 0);
  const synced = r.syncPostsPerApp.apps;
  console.log(
    `  ${r.apps} apps · waves ${r.waveSizes.join(' → ')} · concurrency ${r.opts.concurrency} · per app ${r.opts.syncDurationMs / 1000}s sync + ${r.opts.healthSettleMs / 1000}s settle simulated at speed ${r.opts.speed} = ${ms(r.perAppMs)} ms real · gate healthy`,
  );
  table([
    ['measure', 'value', 'target', 'met'],
    ['run status', end.status, 'succeeded', end.status === 'succeeded' ? 'yes' : 'NO'],
    ['preview (start → awaiting confirmation) ms', ms(r.previewMs), '', ''],
    ['ideal ms (Σ waves ceil(apps/C) × per-app)', ms(r.idealMs), '', ''],
    ['wall ms (confirm → run ended)', ms(r.wallMs), '', ''],
    ['wall / ideal', ratio.toFixed(3), '≤ 1.15', ratio <= 1.15 ? 'yes' : 'NO'],
    [
      'apps synced (sim operation log)',
      `${synced} (POST /sync per app min ${r.syncPostsPerApp.min} max ${r.syncPostsPerApp.max})`,
      `${r.waveSizes.reduce((a, b) => a + b, 0)}, each once`,
      synced === r.waveSizes.reduce((a, b) => a + b, 0) && r.syncPostsPerApp.max === 1 ? 'yes' : 'NO',
    ],
    [
      'Argo CD calls per app during the run (no watch)',
      (perAppCalls / Math.max(1, synced)).toFixed(2),
      '≤ 2',
      perAppCalls / Math.max(1, synced) <= 2 ? 'yes' : 'NO',
    ],
    ['Slack chat.postMessage / chat.update', `${r.slack.posts} / ${r.slack.updates}`, '', ''],
    ['Slack min gap between updates ms', ms(r.slack.minGapMs), '≥ 2000', !(r.slack.minGapMs < 2000) ? 'yes' : 'NO'],
    ['Slack max updates in any 2 s', r.slack.maxIn2s, '≤ 1', r.slack.maxIn2s <= 1 ? 'yes' : 'NO'],
  ]);
  const tl = (x: ReturnType<typeof stats>) => `p50 ${ms(x.p50)} p95 ${ms(x.p95)} max ${ms(x.max)} ms`;
  console.log(
    `  per app, POST /sync → mirror sees it Healthy: ${tl(r.timeline.appTime)} (simulated ideal ${ms(r.perAppMs)})`,
  );
  console.log(
    `  sync call answered: ${tl(r.timeline.syncAnswer)} · completion → next POST (bot reaction): ${tl(r.timeline.reaction)}`,
  );
  console.log(`  Argo CD calls, preview: ${fmtCalls(r.previewCalls)}`);
  console.log(`  Argo CD calls, run:     ${fmtCalls(r.runCalls)}`);
  if (end.status !== 'succeeded') console.log(`  run error: ${end.error ?? JSON.stringify(end.steps).slice(0, 400)}`);
  console.log(`  (${loadLine()})`);
}

if (isMain(import.meta.url)) {
  runBulkSyncBench()
    .then(() => process.exit(0))
    .catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
}
