/**
 * Issue 3: warm answer latency on the 10,000-app mirror. p50/p95/max of `status`, `status <glob>` and
 * `rollout <RollingSync appset>` through dispatch() (parse, permission check, command), and the same
 * plus the Block Kit rendering Slack gets.
 */
import { dispatch } from '../src/commands/index.js';
import type { CommandContext } from '../src/commands/registry.js';
import { isRollingSync } from '../src/fleet/rollingsync.js';
import { renderBlocks } from '../src/views/blocks.js';
import { FreezeStore } from '../src/domain/runbooks/freeze.js';
import { closeRedis, createRedis } from '../src/infra/redis.js';
import {
  buildMirror,
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

const RUNS = 200;
const WARMUP = 10;
const TARGET_MS = 100;

export interface QueryResult {
  command: string;
  coldMs: number;
  answer: ReturnType<typeof stats>;
  withBlocks: ReturnType<typeof stats>;
  size: string;
}

/**
 * Services as the bot has them: with its freeze store in Redis (`status` reads rollcall's freezes there, one
 * HGETALL); without one `status` reads the selected apps' AppProjects live, as a one-shot `rollcall ask` does.
 */
export function benchContext(bot: BotFleet, freezes?: FreezeStore): CommandContext {
  return {
    services: { config: bot.config, fleet: bot.mirror, argocd: bot.argocd, now: () => new Date(), freezes },
    user: 'U_BENCH',
    surface: 'slack',
  };
}

/** The bot's freeze store on this machine's Redis, under a prefix of its own (nothing is written to it). */
export function benchFreezes(): { freezes: FreezeStore; close: () => Promise<void> } {
  const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  const prefix = `rollcall-bench-${Math.random().toString(36).slice(2, 8)}`;
  return { freezes: new FreezeStore(redis, prefix), close: () => closeRedis(redis) };
}

export function pickRollingSyncAppSet(bot: BotFleet): string {
  const appSet = bot.mirror
    .appSets()
    .find((s) => s.appSet.spec?.strategy?.type === 'RollingSync' && isRollingSync(s.appSet));
  if (!appSet) throw new Error('the generated fleet has no RollingSync ApplicationSet');
  return appSet.appSet.metadata.name;
}

export async function measure(
  ctx: CommandContext,
  command: string,
  describe: (data: unknown) => string,
  runs = RUNS,
): Promise<QueryResult> {
  // Askers sharing one Services share answers at the same mirror version (src/commands/shared-answers.ts): each
  // run gets services of its own, so every run computes its answer, as the first asker of a crowd does.
  const fresh = (): CommandContext => ({ ...ctx, services: { ...ctx.services } });
  let t = performance.now();
  const first = await dispatch(command, fresh());
  const coldMs = performance.now() - t;
  if (!first.ok) throw new Error(`${command}: ${JSON.stringify(first.error)}`);
  for (let i = 0; i < WARMUP; i++) renderBlocks(await dispatch(command, fresh()));
  const answer: number[] = [];
  const withBlocks: number[] = [];
  for (let i = 0; i < runs; i++) {
    const asker = fresh();
    t = performance.now();
    const reply = await dispatch(command, asker);
    const answered = performance.now();
    renderBlocks(reply);
    const rendered = performance.now();
    answer.push(answered - t);
    withBlocks.push(rendered - t);
  }
  return { command, coldMs, answer: stats(answer), withBlocks: stats(withBlocks), size: describe(first.data) };
}

export async function runQueriesBench(shared?: BotFleet): Promise<QueryResult[]> {
  header(`warm answers on the 10,000-app mirror, ${RUNS} runs each (target p95 well under ${TARGET_MS} ms)`);
  console.log(`  ${machineLine()}`);
  const sim = shared ? undefined : await startSimChild({ kind: 'fleet', apps: 10_000, clusters: 200 });
  try {
    const bot = shared ?? (await buildMirror(simConfig(sim!)));
    const store = benchFreezes();
    const ctx = benchContext(bot, store.freezes);
    const appSet = pickRollingSyncAppSet(bot);
    const results: QueryResult[] = [];
    results.push(await measure(ctx, 'status', (d) => `${(d as { total: { apps: number } }).total.apps} apps`));
    results.push(await measure(ctx, 'status auth-*', (d) => `${(d as { total: { apps: number } }).total.apps} apps`));
    results.push(
      await measure(ctx, `rollout ${appSet}`, (d) => {
        const r = d as { steps: { apps: unknown[] }[] };
        return `${r.steps.length} steps, ${r.steps.reduce((n, s) => n + s.apps.length, 0)} apps`;
      }),
    );
    table([
      [
        'command',
        'covers',
        'cold ms',
        'p50 ms',
        'p95 ms',
        'max ms',
        '+blocks p50',
        '+blocks p95',
        '+blocks max',
        `p95 < ${TARGET_MS}`,
      ],
      ...results.map((r) => [
        r.command,
        r.size,
        ms(r.coldMs),
        ms(r.answer.p50),
        ms(r.answer.p95),
        ms(r.answer.max),
        ms(r.withBlocks.p50),
        ms(r.withBlocks.p95),
        ms(r.withBlocks.max),
        r.withBlocks.p95 < TARGET_MS ? 'yes' : 'NO',
      ]),
    ]);
    console.log(`  (${loadLine()})`);
    await store.close();
    if (!shared) await bot.mirror.stop();
    return results;
  } finally {
    await sim?.stop();
  }
}

if (isMain(import.meta.url)) {
  runQueriesBench().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
