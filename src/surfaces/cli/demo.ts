import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { parseConfig, redactUrlPassword } from '../../infra/config/load.js';
import { dispatch, runAction } from '../../commands/index.js';
import { findAction, type CommandContext } from '../../commands/registry.js';
import type { Reply, ReplyButton } from '../../core/reply.js';
import { isClusterUrl } from '../../infra/config/schema.js';
import { ensureRedis, RedisUnavailableError, type RedisHandle } from '../../infra/redis-server.js';
import { closeRedis, createRedis, keyBase, probeRedis, redisUnreachableMessage, scanKeys } from '../../infra/redis.js';
import { RollcallError } from '../../core/errors.js';
import { createLogger } from '../../infra/log.js';
import { loadScenario, ScenarioError, type Scenario } from '../../sim/scenarios/index.js';
import { simConfigYaml, type SimServer } from '../../sim/cli.js';
import { kubeconfigYaml } from '../../sim/kube/kubeconfig.js';
import { startSimServer } from '../../sim/server.js';
import { renderText } from '../../views/text.js';
import { startRuntime, type Runtime } from './bootstrap.js';
import { prometheusForSimulator, SIM_SCRAPE_INTERVAL_S, type SimulatorPrometheus } from './sim-prometheus.js';
import { TerminalNotifier } from './terminal-notifier.js';
import { writeReplyFiles } from './reply-files.js';

const DEMO_USER = 'U0DEMO';
/** The demo's one conversation: commands are typed in it, and runs and alerts print to it. */
const DEMO_CHANNEL = 'demo';
/** The second person of the demo: approves what U0DEMO requested (`as oncall-2 runs approve ID`). */
const SECOND_USER = 'oncall-2';

/** The scenarios the demo offers, each with what to type first. */
export const DEMO_SCENARIOS: Record<string, string[]> = {
  'seed-outage': [
    'status',
    'status auth-*',
    'app auth-service-prod-eu-west-1',
    'incident start auth-service crash-looping scope=auth-service-*',
    'sync auth-config-* prune=true',
    'incident report INC-1   (Markdown and chart, written where said below)',
    'help',
  ],
  'progressive-infra': [
    'status',
    'rollout progressive-infra',
    'plan progressive-infra',
    'diagnose',
    'clusters',
    'help',
  ],
  'sealed-secrets-migration': [
    'clusters',
    'run backup-sealed-secrets-keys cluster=prod-old',
    'run restore-sealed-secrets-keys to=prod-new from=prod-old',
    `as ${SECOND_USER} runs approve <run id>   (a second person approves the restore)`,
    'runs',
    'audit',
  ],
  'canary-regression': [
    'status',
    'status -l service=checkout',
    'sync -l tier=canary',
    'app checkout-prod-ca-central-1',
    'runs',
    'help',
  ],
  'canary-rollouts': [
    'rollouts',
    'rollouts storefront',
    'app storefront-prod-eu-west-1',
    'actions storefront-prod-us-east-1',
    'actions search-prod-us-east-1',
    'help',
  ],
};

/**
 * A prefix no other process uses: the demo's queues, runs and audit are its own even on a Redis shared with
 * a real rollcall, so no other deployment's worker runs a demo step and the demo's worker runs nobody else's.
 */
export function demoPrefix(): string {
  return `rollcall-demo-${process.pid}-${randomBytes(3).toString('hex')}`;
}

async function forgetPrefix(url: string, prefix: string): Promise<void> {
  const redis = createRedis(url, { maxRetriesPerRequest: 1, connectionName: 'demo-cleanup' });
  try {
    // One UNLINK per key: a Cluster refuses one command over keys of several slots.
    for await (const keys of scanKeys(redis, `${keyBase(prefix)}*`))
      await Promise.all(keys.map((key) => redis.unlink(key)));
  } finally {
    await closeRedis(redis);
  }
}

type Say = (s: string) => void;

/** What the demo started, as far as it got: stopped on exit or when starting fails. */
interface DemoParts {
  sim?: SimServer;
  /** The Prometheus the demo's checks query, when there is one. */
  prometheus?: SimulatorPrometheus;
  runtime?: Runtime;
  /** Folder of the demo's kubeconfig. */
  scratch?: string;
}

/** The prompt of the demo's terminal: `busy` while a typed command runs. */
interface DemoPrompt {
  rl?: readline.Interface;
  busy: boolean;
}

/**
 * `rollcall demo`: the simulator, Redis (a private one when none is running) and the bot in one
 * terminal. You type what you would type after /argo in Slack.
 */
export async function demo(opts: {
  scenario: string;
  speed: number;
  input?: NodeJS.ReadableStream;
  output?: NodeJS.WritableStream;
  /** Keep the demo's Redis keys on exit (tests read them). @defaultValue false */
  keepState?: boolean;
  /**
   * Where the files an answer comes with (an incident report and its chart) are written; a command typed with
   * `--out DIR` writes them there instead. @defaultValue `rollcall-demo-files` in the OS temp folder, kept after exit
   */
  out?: string;
  /** Called once the demo is ready, with what it runs on. */
  onReady?(info: { prefix: string; redisUrl: string; simUrl: string; prometheusUrl?: string }): void;
  /**
   * Metric checks: $PROMETHEUS_URL, else a private `prometheus` when the binary exists. False leaves them off
   * without looking. @defaultValue true
   */
  prometheus?: boolean;
}): Promise<void> {
  const output = opts.output ?? process.stdout;
  const say = (s: string) => output.write(s.endsWith('\n') ? s : `${s}\n`);
  const color = output === process.stdout && process.stdout.isTTY;

  const scenario = loadDemoScenario(opts.scenario);
  const { redis, prefix } = await startDemoRedis(say);
  const prompt: DemoPrompt = { busy: true };
  const parts: DemoParts = {};
  let cleaning: Promise<void> | undefined;
  const cleanup = () =>
    (cleaning ??= (async () => {
      await parts.runtime?.stop().catch(() => {});
      await parts.prometheus?.stop().catch(() => {});
      await parts.sim?.stop().catch(() => {});
      if (!redis.owned && !opts.keepState) await forgetPrefix(redis.url, prefix).catch(() => {});
      await redis.stop().catch(() => {});
      if (parts.scratch) rmSync(parts.scratch, { recursive: true, force: true });
    })());
  // Killed rather than told "exit": the private servers and their temp dirs go all the same.
  const onSignal = () => void cleanup().finally(() => process.exit(0));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    let sim: SimServer;
    let runtime: Runtime;
    try {
      ({ sim, runtime } = await startDemoStack(parts, {
        scenario,
        speed: opts.speed,
        redisUrl: redis.url,
        prefix,
        prometheus: opts.prometheus !== false,
        say,
        sayAsync: printAbovePrompt(prompt, output, say, color),
      }));
    } catch (error) {
      await cleanup();
      throw error;
    }
    const out = opts.out ?? path.join(tmpdir(), 'rollcall-demo-files');
    introduce(say, { scenario: opts.scenario, speed: opts.speed, sim, runtime, out });
    opts.onReady?.({ prefix, redisUrl: redis.url, simUrl: sim.url, prometheusUrl: parts.prometheus?.url });
    await answerCommands(runtime, prompt, {
      input: opts.input ?? process.stdin,
      output,
      say,
      color,
      out,
    });
    await cleanup();
    say('bye');
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

function loadDemoScenario(name: string): Scenario {
  try {
    return loadScenario(name);
  } catch (error) {
    if (error instanceof ScenarioError)
      throw new RollcallError('unknown_scenario', `${error.message.replace(/, or pass --fixture FILE$/, '')}`);
    throw error;
  }
}

/** A reachable Redis and the demo's own key prefix on it, said on the terminal. */
async function startDemoRedis(say: Say): Promise<{ redis: RedisHandle; prefix: string }> {
  let redis: RedisHandle;
  try {
    redis = await ensureRedis();
  } catch (error) {
    if (error instanceof RedisUnavailableError) throw new RollcallError('redis_unavailable', error.message);
    throw error;
  }
  const down = await probeRedis(redis.url);
  if (down) {
    await redis.stop();
    throw new RollcallError('redis_unavailable', redisUnreachableMessage(redis.url, down));
  }
  // On a Redis Cluster every key of one deployment must share a hash slot: the braces make the prefix its hash tag.
  const prefix = isClusterUrl(redis.url) ? `{${demoPrefix()}}` : demoPrefix();
  say(
    redis.owned
      ? `Redis: a private redis-server at ${redis.url}, stopped on exit`
      : `Redis: ${redactUrlPassword(redis.url)}, with this demo's own key prefix "${prefix}" (nothing else reads or runs it; removed on exit)`,
  );
  return { redis, prefix };
}

/**
 * A run's progress and summary arrive while the prompt waits for the next command: they print above
 * it, and the prompt is drawn again (with what was typed so far) so the terminal still reads "argo> ".
 */
function printAbovePrompt(prompt: DemoPrompt, output: NodeJS.WritableStream, say: Say, color: boolean): Say {
  return (s: string) => {
    const rl = prompt.rl;
    if (!rl || prompt.busy) return say(s);
    if (color) {
      readline.clearLine(output, 0);
      readline.cursorTo(output, 0);
    }
    say(s);
    rl.prompt(true);
  };
}

/** The simulator of the scenario and the bot on it, with runs and alerts; recorded in `parts` as each starts. */
async function startDemoStack(
  parts: DemoParts,
  opts: {
    scenario: Scenario;
    speed: number;
    redisUrl: string;
    prefix: string;
    prometheus: boolean;
    say: Say;
    sayAsync: Say;
  },
): Promise<{ sim: SimServer; runtime: Runtime }> {
  const sim = await startSimServer({
    fixture: opts.scenario.fixture,
    port: 0,
    speed: opts.speed,
    scenarioBehaviour: opts.scenario.behaviour,
  });
  parts.sim = sim;
  if (opts.prometheus) parts.prometheus = await startDemoPrometheus(sim, opts.say);
  let kubeconfig: string | undefined;
  if (sim.kube.length) {
    // The sealed-secrets runbooks reach the simulated clusters through a kubeconfig, as they would a real one.
    parts.scratch = mkdtempSync(path.join(tmpdir(), 'rollcall-demo-'));
    kubeconfig = path.join(parts.scratch, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      kubeconfigYaml(
        sim.kube.map((k) => ({ name: k.cluster, server: k.url, token: k.token })),
        sim.kubeCaPem,
      ),
      { mode: 0o600 },
    );
  }
  const prometheus = parts.prometheus && {
    url: parts.prometheus.url,
    scrapeIntervalS: parts.prometheus.scrapeIntervalS,
    checks: ['error-rate' as const, 'latency-p99' as const],
  };
  const yaml =
    simConfigYaml(sim, { redisUrl: opts.redisUrl, redisPrefix: opts.prefix, kubeconfig, prometheus }) +
    `\naccess:\n  groups: { oncall: ['${DEMO_USER}', '${SECOND_USER}'] }\n  operators: ['group:oncall']\n  admins: ['${DEMO_USER}']\n` +
    // Alerts print here as they fire. The scenario's problems are there before the demo starts: no hold-down,
    // so the first evaluation (before the prompt) fires them instead of leaving them pending for 30 s.
    `alerts:\n  channel: ${DEMO_CHANNEL}\n  holdDown: 0s\n`;
  const config = parseConfig(yaml, 'demo');
  const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'warn' });
  const runtime = await startRuntime(config, { logger, notifier: new TerminalNotifier(opts.sayAsync, true) });
  parts.runtime = runtime;
  // As `rollcall start` does, without its config schedules and digests (the demo has none to tick).
  await runtime.enableRuns({ role: 'all', redisUrl: opts.redisUrl, schedules: false, alerts: true });
  await runtime.alerts?.idle();
  return { sim, runtime };
}

/** The Prometheus the demo's checks query, said on the terminal; none (and why) when there is none. */
async function startDemoPrometheus(sim: SimServer, say: Say): Promise<SimulatorPrometheus | undefined> {
  const { prometheus, off } = await prometheusForSimulator(sim.url);
  if (!prometheus) {
    say(off);
    return undefined;
  }
  say(
    prometheus.owned
      ? `prometheus ${prometheus.url} (a private one scraping the simulator every ${SIM_SCRAPE_INTERVAL_S} s, stopped on exit; checks error-rate and latency-p99)`
      : `prometheus ${prometheus.url} (from PROMETHEUS_URL; it must scrape ${sim.url}/metrics; checks error-rate and latency-p99)`,
  );
  return prometheus;
}

/** A folder the demo cannot write to is said in the answer, and the demo goes on. */
function writeFilesOrSay(reply: Reply, out: string): void {
  try {
    writeReplyFiles(reply, out);
  } catch (error) {
    reply.blocks.push({
      kind: 'context',
      text: `Could not write ${reply.files!.map((f) => f.name).join(' and ')} to ${out} (${(error as Error).message}): add --out DIR to the command to write them elsewhere.`,
    });
  }
}

/** What the demo runs on, and what to type. */
function introduce(
  say: Say,
  about: { scenario: string; speed: number; sim: SimServer; runtime: Runtime; out: string },
): void {
  const { sim, runtime } = about;
  const apps = runtime.services.fleet.apps().length;
  say(
    `rollcall demo — simulator scenario "${about.scenario}" at ${sim.url} (${apps} apps${sim.kube.length ? `, clusters ${sim.kube.map((k) => k.cluster).join(', ')}` : ''}, syncs and health changes x${about.speed} faster, times of day as they are)`,
  );
  if (runtime.services.config.sealedSecrets.backup) {
    const b = runtime.services.config.sealedSecrets.backup;
    say(`Key backups go to namespace ${b.namespace} on cluster ${b.cluster}.`);
  }
  say(`Type what you would type after /argo in Slack. Try these:`);
  for (const hint of DEMO_SCENARIOS[about.scenario] ?? DEMO_SCENARIOS['seed-outage']) say(`  ${hint}`);
  say(
    `Buttons show as [1] [2] ...: type the number to press one. "as USER <command>" acts as someone else. "exit" quits.`,
  );
  say(`Files an answer comes with (incident report INC-n: Markdown and chart) are written to ${about.out}.\n`);
}

/** The prompt: each line typed is a command (or a button's number), answered until "exit" or the input ends. */
async function answerCommands(
  runtime: Runtime,
  prompt: DemoPrompt,
  term: { input: NodeJS.ReadableStream; output: NodeJS.WritableStream; say: Say; color: boolean; out: string },
): Promise<void> {
  const { say, color } = term;
  const contextOf = (user: string): CommandContext => ({
    services: runtime.services,
    user,
    surface: 'terminal',
    channel: DEMO_CHANNEL,
  });
  let buttons: ReplyButton[] = [];
  const show = (reply: Reply) => {
    say(renderText(reply, { color, actions: 'omit' }));
    buttons = reply.blocks.flatMap((b) => (b.kind === 'actions' ? b.buttons.filter((x) => x.action || x.command) : []));
    if (buttons.length) say(buttons.map((b, i) => `[${i + 1}] ${b.label}`).join('  '));
  };

  const rl = readline.createInterface({ input: term.input, output: term.output, prompt: 'argo> ', terminal: color });
  prompt.rl = rl;
  prompt.busy = false;
  rl.prompt();
  for await (const line of rl) {
    prompt.busy = true;
    let text = line.trim().replace(/^\/argo\s+/, '');
    if (text === 'exit' || text === 'quit') break;
    // `--out DIR` as `rollcall ask` takes it: the demo's answers go through the same parser, which has no --out.
    let out = term.out;
    const outOption = /\s--out(?:=|\s+)(\S+)\s*$/.exec(text);
    if (outOption) {
      out = outOption[1].replace(/^~(?=\/|$)/, homedir());
      text = text.slice(0, outOption.index).trim();
    }
    let user = DEMO_USER;
    const actingAs = /^as\s+(\S+)\s+(.+)$/.exec(text);
    if (actingAs) [, user, text] = actingAs;
    if (text) {
      const ctx = contextOf(user);
      const pressed = /^\d+$/.test(text) ? buttons[Number(text) - 1] : undefined;
      if (pressed?.action) {
        const action = findAction(pressed.action);
        const reply = action && (await runAction(action, pressed.value ?? '', ctx));
        if (reply) show(reply);
      } else {
        const reply = await dispatch(pressed?.command ?? text, ctx);
        if (reply.files?.length) writeFilesOrSay(reply, out);
        show(reply);
      }
    }
    prompt.busy = false;
    rl.prompt();
  }
  prompt.busy = true;
  rl.close();
}
