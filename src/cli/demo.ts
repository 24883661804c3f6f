import readline from 'node:readline';
import { parseConfig } from '../config/load.js';
import { dispatch, runAction } from '../commands/index.js';
import { findAction, type CommandContext } from '../commands/registry.js';
import type { Reply, ReplyButton } from '../core/reply.js';
import { ensureRedis, RedisUnavailableError } from '../dev/redis-server.js';
import { createLogger } from '../log.js';
import { loadScenario } from '../sim/scenarios/index.js';
import { simConfigYaml, type SimServer } from '../sim/cli.js';
import { startSimServer } from '../sim/server.js';
import { renderText } from '../views/text.js';
import { startRuntime } from './bootstrap.js';
import { TerminalNotifier } from './terminal-notifier.js';

const DEMO_USER = 'U0DEMO';

const HINTS: Record<string, string[]> = {
  'seed-outage': ['status', 'status auth-*', 'app auth-service-prod-eu-west-1', 'sync auth-config-* prune=true', 'runs', 'help'],
  'progressive-infra': ['status', 'rollout progressive-infra', 'plan progressive-infra', 'diagnose', 'clusters', 'help'],
};

/**
 * `rollcall demo`: the simulator, Redis (a private one when none is running) and the bot in one
 * terminal. You type what you would type after /argo in Slack.
 */
export async function demo(opts: { scenario: string; speed: number; input?: NodeJS.ReadableStream; output?: NodeJS.WritableStream }): Promise<void> {
  const output = opts.output ?? process.stdout;
  const say = (s: string) => output.write(s.endsWith('\n') ? s : `${s}\n`);
  const color = output === process.stdout && process.stdout.isTTY;
  // Before anything starts: a mistyped scenario is answered at once, with nothing to clean up.
  const scenario = loadScenario(opts.scenario);
  let redis;
  try {
    redis = await ensureRedis();
  } catch (error) {
    if (error instanceof RedisUnavailableError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  if (redis.owned) say(`started a private redis-server at ${redis.url} (stopped on exit)`);

  let sim: SimServer | undefined;
  let runtime: Awaited<ReturnType<typeof startRuntime>> | undefined;
  const cleanup = async () => {
    await runtime?.stop().catch(() => {});
    await sim?.stop().catch(() => {});
    await redis.stop().catch(() => {});
  };
  try {
    sim = await startSimServer({ fixture: scenario.fixture, port: 0, speed: opts.speed, scenarioBehaviour: scenario.behaviour });
    const yaml = simConfigYaml(sim, { redisUrl: redis.url }) + `\naccess:\n  admins: ['${DEMO_USER}']\n`;
    const config = parseConfig(yaml, 'demo');
    const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'warn' });
    runtime = await startRuntime(config, { logger, notifier: new TerminalNotifier(say, true) });
    await runtime.enableRuns({ role: 'all', redisUrl: redis.url, schedules: false });
  } catch (error) {
    await cleanup();
    throw error;
  }

  const apps = runtime.services.fleet.apps().length;
  say(`rollcall demo — simulator scenario "${opts.scenario}" at ${sim.url} (${apps} apps, time x${opts.speed})`);
  say(`Type what you would type after /argo in Slack. Try these:`);
  for (const hint of HINTS[opts.scenario] ?? HINTS['seed-outage']) say(`  ${hint}`);
  say(`Buttons show as [1] [2] ...: type the number to press one. "exit" quits.\n`);

  const ctx: CommandContext = { services: runtime.services, user: DEMO_USER, surface: 'terminal', channel: 'demo' };
  let buttons: ReplyButton[] = [];
  const show = (reply: Reply) => {
    say(renderText(reply, { color, actions: 'omit' }));
    buttons = reply.blocks.flatMap((b) => (b.kind === 'actions' ? b.buttons.filter((x) => x.action || x.command) : []));
    if (buttons.length) say(buttons.map((b, i) => `[${i + 1}] ${b.label}`).join('  '));
  };

  const rl = readline.createInterface({ input: opts.input ?? process.stdin, output, prompt: 'argo> ', terminal: color });
  rl.prompt();
  for await (const line of rl) {
    const text = line.trim().replace(/^\/argo\s+/, '');
    if (text === 'exit' || text === 'quit') break;
    if (text) {
      const pressed = /^\d+$/.test(text) ? buttons[Number(text) - 1] : undefined;
      if (pressed?.action) {
        const action = findAction(pressed.action);
        const reply = action && (await runAction(action, pressed.value ?? '', ctx));
        if (reply) show(reply);
      } else {
        show(await dispatch(pressed?.command ?? text, ctx));
      }
    }
    rl.prompt();
  }
  rl.close();
  await cleanup();
  say('bye');
}
