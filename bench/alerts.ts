/**
 * Alert rules and digests on the 10,000-app mirror: what one sweep of every rule costs (the pure
 * evaluation, then the whole sweep with each group's compare-and-set in Redis), and how long a digest
 * takes to build and render as Block Kit.
 */
import { AlertManager } from '../src/domain/alerts/manager.js';
import { evaluateAlertRules } from '../src/domain/alerts/rules.js';
import { AlertStore } from '../src/domain/alerts/store.js';
import { composeDigest } from '../src/domain/alerts/digest.js';
import { digestReply } from '../src/commands/digest.js';
import { closeRedis, createRedis } from '../src/infra/redis.js';
import { renderBlocks } from '../src/views/blocks.js';
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
  type BotFleet,
} from './lib.js';

const RUNS = 50;
const WARMUP = 5;

export async function runAlertsBench(shared?: BotFleet): Promise<void> {
  header(`alert rules and digests on the 10,000-app mirror, ${RUNS} runs each after ${WARMUP} warm-up runs`);
  console.log(`  ${machineLine()}`);
  const sim = shared ? undefined : await startSimChild({ kind: 'fleet', apps: 10_000, clusters: 200 });
  const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  const prefix = `rollcall-bench-${Math.random().toString(36).slice(2, 8)}`;
  try {
    const bot = shared ?? (await buildMirror(simConfig(sim!)));
    const config = { ...bot.config, alerts: { ...bot.config.alerts, holdDown: 0 } };
    const now = () => new Date();
    const store = new AlertStore(redis, prefix);
    const manager = new AlertManager({ fleet: bot.mirror, config, store, now });
    const services = { config, fleet: bot.mirror, argocd: bot.argocd, now, alerts: store };

    const time = async (fn: () => unknown | Promise<unknown>) => {
      for (let i = 0; i < WARMUP; i++) await fn();
      const samples: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const t = performance.now();
        await fn();
        samples.push(performance.now() - t);
      }
      return stats(samples);
    };
    const evaluation = evaluateAlertRules({ fleet: bot.mirror, now: now(), config: config.alerts });
    const apps = evaluation.conditions.reduce((n, c) => n + c.apps.length, 0);
    const rules = await time(() => evaluateAlertRules({ fleet: bot.mirror, now: now(), config: config.alerts }));
    const sweep = await time(() => manager.sweep());
    const digest = await composeDigest(services, undefined, now());
    const build = await time(() => composeDigest(services, undefined, now()));
    const render = await time(async () =>
      renderBlocks(digestReply(await composeDigest(services, undefined, now()), 'digest')),
    );
    table([
      ['what', 'covers', 'p50 ms', 'p95 ms', 'max ms'],
      [
        'rules: evaluate every rule (pure)',
        `${bot.mirror.apps().length} apps → ${evaluation.conditions.length} groups, ${apps} apps`,
        ms(rules.p50),
        ms(rules.p95),
        ms(rules.max),
      ],
      [
        'sweep: rules + lifecycle CAS in Redis',
        `${evaluation.conditions.length} groups`,
        ms(sweep.p50),
        ms(sweep.p95),
        ms(sweep.max),
      ],
      ['digest: build', `${digest.attention.length} attention items`, ms(build.p50), ms(build.p95), ms(build.max)],
      ['digest: build + Block Kit', '', ms(render.p50), ms(render.p95), ms(render.max)],
    ]);
    console.log(`  (${loadLine()})`);
    if (!shared) await bot.mirror.stop();
  } finally {
    await cleanPrefix(redis, prefix);
    await closeRedis(redis);
    await sim?.stop();
  }
}

if (isMain(import.meta.url)) {
  runAlertsBench()
    .then(() => process.exit(0))
    .catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
}
