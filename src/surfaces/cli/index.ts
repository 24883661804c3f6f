import { readFileSync } from 'node:fs';
import { Argument, Command, CommanderError } from 'commander';
import { packageFile } from '../../core/package-files.js';
import { COMPLETION_SHELLS, type CompletionShell } from './completion.js';
import { ConfigError, formatProblem, loadConfig, redactConfig } from '../../infra/config/load.js';
import { errorReply, replyJson } from '../../core/reply.js';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, exitCodeFor, type ErrorCode } from '../../core/error-codes.js';
import { RollcallError } from '../../core/errors.js';
import { terminalIdentity } from '../../core/identity.js';
import { typedDuration } from '../../core/format.js';
import type { PrometheusConfig, RollcallConfig } from '../../infra/config/schema.js';
import { createLogger } from '../../infra/log.js';

/** The version in package.json, the one the installed package and the image carry. */
function packageVersion(): string {
  return (JSON.parse(readFileSync(packageFile('package.json'), 'utf8')) as { version: string }).version;
}

function fail(message: string, code = EXIT_USAGE): never {
  process.stderr.write(`rollcall: ${message}\n`);
  process.exit(code);
}

/**
 * `rollcall ask ... --json` promises one JSON object on stdout, failures included: a bad option, a bad
 * config or a crash are answered in the same shape as a failed command. Read from argv because
 * commander has not parsed it yet when these happen.
 */
function askJsonOf(argv: string[]): { command: string } | undefined {
  const args = argv.slice(2);
  if (args[0] !== 'ask' || !args.includes('--json')) return undefined;
  const withValue = new Set(['--config', '--as', '--out']);
  for (let i = 1; i < args.length; i++) {
    if (args[i] === '--') return { command: firstWord(args[i + 1]) };
    if (withValue.has(args[i])) i++;
    else if (!args[i].startsWith('-')) return { command: firstWord(args[i]) };
  }
  return { command: 'ask' };
}

/** An error of a system call (ENOENT, EACCES, EADDRINUSE ...): Node names the call and the path in its message. */
function isSystemError(error: unknown): error is NodeJS.ErrnoException {
  return (
    error instanceof Error &&
    typeof (error as NodeJS.ErrnoException).syscall === 'string' &&
    typeof (error as NodeJS.ErrnoException).code === 'string'
  );
}

function firstWord(text: string | undefined): string {
  return text?.trim().split(/\s+/)[0] || 'ask';
}

function printJsonFailure(command: string, code: ErrorCode, message: string): void {
  process.stdout.write(`${JSON.stringify(replyJson(errorReply(command, code, message)))}\n`);
}

function loadOrExit(file?: string, askJson?: { command: string }) {
  try {
    return loadConfig(file);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      if (askJson) printJsonFailure(askJson.command, error.code, error.message);
      process.exit(EXIT_USAGE);
    }
    throw error;
  }
}

/** `rollcall sim`: a bad fixture or scenario is a usage error. */
async function serveSim(opts: {
  scenario?: string;
  fixture?: string;
  port: string;
  speed: string;
  frozen?: boolean;
  writeConfig?: string;
}): Promise<void> {
  if (opts.scenario && opts.fixture) fail('use --scenario or --fixture, not both');
  const port = Number(opts.port);
  const speed = Number(opts.speed);
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`--port must be 0..65535 (got "${opts.port}")`);
  if (!(speed > 0)) fail(`--speed must be a positive number (got "${opts.speed}")`);
  const { runSimCommand } = await import('../../sim/cli.js');
  const { FixtureError } = await import('../../sim/fixture.js');
  const { ScenarioError } = await import('../../sim/scenarios/index.js');
  const { prometheusForSimulator } = await import('./sim-prometheus.js');
  const simulatorPrometheus = async (server: { url: string }) => {
    const found = await prometheusForSimulator(server.url);
    // Not an endpoint: stdout keeps one line per endpoint, for whoever reads them.
    if (found.off) process.stderr.write(`rollcall sim: ${found.off}\n`);
    return found.prometheus;
  };
  await runSimCommand({
    scenario: opts.scenario ?? (opts.fixture ? undefined : 'seed-outage'),
    fixture: opts.fixture,
    port,
    speed,
    frozen: !!opts.frozen,
    writeConfig: opts.writeConfig,
    // The written config's operator is whom `rollcall ask` will act as: the same rule, decided once.
    operator: terminalIdentity().self,
    // The written config is what queries a Prometheus: without one, none is started.
    prometheus: opts.writeConfig ? simulatorPrometheus : undefined,
  }).catch((error) => {
    // A bad fixture is a usage error: its message names every problem by path; a stack adds nothing.
    if (error instanceof FixtureError || error instanceof ScenarioError) fail(error.message);
    throw error;
  });
}

/** The Prometheus servers and metric checks of a (redacted) config, a line each. */
function checkLines(config: RollcallConfig): string[] {
  const auth = (p: PrometheusConfig) =>
    p.token ? ' token=***' : p.basicAuth ? ` basicAuth=${p.basicAuth.username}:***` : '';
  const lines: string[] = [];
  const scrape = (p: PrometheusConfig) => ` scrapeInterval=${typedDuration(p.scrapeInterval)}`;
  if (config.prometheus)
    lines.push(`prometheus ${config.prometheus.url}${auth(config.prometheus)}${scrape(config.prometheus)}`);
  for (const i of config.instances)
    if (i.prometheus)
      lines.push(`prometheus ${i.prometheus.url}${auth(i.prometheus)}${scrape(i.prometheus)} (instance ${i.name})`);
  for (const [name, c] of Object.entries(config.checks)) {
    const threshold = c.failAbove !== undefined ? `failAbove ${c.failAbove}` : `failBelow ${c.failBelow}`;
    lines.push(`check ${name} ${threshold} window=${typedDuration(c.window)} noData=${c.noData}`);
  }
  return lines;
}

/** `rollcall config check`: the config summarised with secrets masked, or every problem with its path. */
function checkConfig(positional: string | undefined, opts: { config?: string }): void {
  if (positional && opts.config && positional !== opts.config)
    fail(`config check got two files, ${positional} and --config ${opts.config}: give one.`, EXIT_USAGE);
  try {
    const { config, file } = loadConfig(positional ?? opts.config);
    const summary = redactConfig(config) as typeof config;
    process.stdout.write(`${file}: ok\n`);
    for (const i of summary.instances) process.stdout.write(`  argocd ${i.name} ${i.url} token=${i.token}\n`);
    for (const c of summary.kube.clusters)
      process.stdout.write(
        `  kube ${c.name} ${c.inCluster ? 'in-cluster' : `${c.kubeconfig}${c.context ? ` (${c.context})` : ''}`}\n`,
      );
    process.stdout.write(
      `  slack ${summary.slack ? `${summary.slack.mode} mode` : 'not configured (terminal only)'}\n`,
    );
    process.stdout.write(`  redis ${summary.redis.url} prefix=${summary.redis.prefix}\n`);
    for (const line of checkLines(summary)) process.stdout.write(`  ${line}\n`);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.file}: ${error.problems.length} problem(s)\n`);
    for (const p of error.problems) process.stderr.write(`  ${formatProblem(p)}\n`);
    process.exitCode = EXIT_USAGE;
  }
}

/** `rollcall ask`: one chat command from the terminal; `askJson` makes a bad config a JSON failure too. */
function registerAsk(program: Command, askJson: { command: string } | undefined): void {
  program
    .command('ask')
    .description('run one chat command, exactly as /argo would in Slack')
    .argument('<command text>', 'e.g. "status", "rollout progressive-infra", "sync auth-config-* prune=true"')
    .option('--config <file>', 'config file (else $ROLLCALL_CONFIG, else ./rollcall.yaml)')
    .option('--json', 'print one JSON object {ok, command, title, data, error?}')
    .option(
      '--as <user>',
      'act as this user (only where access.terminal.allowActAs is true); default $ROLLCALL_USER, else $USER, else the OS account',
    )
    .option('--yes', 'answer the confirmation of a runbook')
    .option('--wait', 'wait for a queued run to finish and print its final state')
    .option('--out <dir>', 'write the files an answer comes with (incident report: DIR/ID.md and DIR/ID.png)')
    .action(async (text: string, opts) => {
      const { ask, askHelp } = await import('./ask.js');
      const helped = await askHelp(text, { json: !!opts.json, as: opts.as });
      if (helped !== undefined) return void (process.exitCode = helped);
      const { config } = loadOrExit(opts.config, askJson);
      process.exitCode = await ask(config, text, {
        json: !!opts.json,
        as: opts.as,
        yes: !!opts.yes,
        wait: !!opts.wait,
        out: opts.out,
      });
    });
}

function registerCompletion(program: Command): void {
  program
    .command('completion')
    .description('print a shell completion script: commands, options and the chat verbs of `ask`')
    .addArgument(new Argument('<shell>', 'the shell to complete in').choices(COMPLETION_SHELLS))
    .action(async (shell: CompletionShell) => {
      const { completionScript, completionWords } = await import('./completion.js');
      // The chat commands register themselves when their modules load.
      await import('../../commands/index.js');
      const { allCommands } = await import('../../commands/registry.js');
      process.stdout.write(
        completionScript(
          shell,
          completionWords(
            program,
            allCommands().map((c) => c.name),
          ),
        ),
      );
    });
}

function registerStart(program: Command): void {
  program
    .command('start')
    .description('run the bot: Slack, queries, runbook workers, schedules, /healthz')
    .option('--config <file>', 'config file')
    .option('--role <role>', 'all | bot | worker', 'all')
    .action(async (opts) => {
      if (!['all', 'bot', 'worker'].includes(opts.role)) fail(`--role must be all, bot or worker (got "${opts.role}")`);
      const { config } = loadOrExit(opts.config);
      const { start } = await import('./start.js');
      await start(config, opts.role);
    });
}

function registerDemo(program: Command): void {
  program
    .command('demo')
    .description('try rollcall on the built-in simulator: no Slack, no cluster needed')
    .option(
      '--scenario <name>',
      'seed-outage | progressive-infra | sealed-secrets-migration | canary-regression | canary-rollouts',
      'seed-outage',
    )
    .option(
      '--speed <x>',
      'how many times faster syncs, health changes and pauses run (timestamps stay the time of day)',
      '10',
    )
    .option('--out <dir>', 'where answers write their files (incident report: DIR/ID.md and DIR/ID.png)')
    .action(async (opts) => {
      const speed = Number(opts.speed);
      if (!(speed > 0)) fail(`--speed must be a positive number (got "${opts.speed}")`);
      const { demo } = await import('./demo.js');
      await demo({ scenario: opts.scenario, speed, out: opts.out });
    });
}

function registerSim(program: Command): void {
  program
    .command('sim')
    .description('serve the fleet simulator (fake Argo CD API and Kubernetes API subset)')
    .option(
      '--scenario <name>',
      'built-in scenario: seed-outage | progressive-infra | sealed-secrets-migration | canary-regression | canary-rollouts',
    )
    .option('--fixture <file>', 'fixture JSON file')
    .option('--port <n>', 'port (0 = a free one)', '0')
    .option(
      '--speed <x>',
      'how many times faster syncs, health changes and pauses run (timestamps stay the time of day)',
      '1',
    )
    .option('--frozen', 'serve the fixture as-is: no controller progress')
    .option(
      '--write-config <file>',
      'write a complete rollcall.yaml pointing at the simulator (with prometheus and an error-rate check when a Prometheus scrapes it: $PROMETHEUS_URL, else a private one)',
    )
    .action(serveSim);
}

function registerInit(program: Command): void {
  program
    .command('init')
    .description('write a commented rollcall.yaml to start from (never overwrites)')
    .argument('[file]', 'where to write it', 'rollcall.yaml')
    .action(async (file: string) => {
      const { initConfig } = await import('./init.js');
      const written = initConfig(file);
      process.stdout.write(
        `wrote ${written}: set ARGOCD_TOKEN (and the Slack tokens once you add a slack section), then \`rollcall config check ${file}\`\n`,
      );
    });
}

function registerConfig(program: Command): void {
  const configCmd = program.command('config').description('configuration');
  configCmd
    .command('check')
    .description('validate the config file and print a summary (secrets masked)')
    .argument('[file]', 'config file (the same as --config)')
    .option('--config <file>', 'config file')
    .action(checkConfig);
}

function registerRunbooks(program: Command): void {
  const runbooksCmd = program.command('runbooks').description('runbook definitions');
  runbooksCmd
    .command('validate')
    .description('validate runbook files (errors name the file and line)')
    .argument('[dir]', 'directory of runbook YAML files', 'runbooks')
    .action(async (dir: string) => {
      const { validateRunbooks } = await import('../../domain/runbooks/loader.js');
      const result = validateRunbooks(dir);
      process.stdout.write(result.report + '\n');
      process.exitCode = result.problems.length ? EXIT_USAGE : EXIT_OK;
    });
}

/** What a failure of parsing or of a command prints, and the exit code it ends the process with. */
function handleCliError(error: unknown, askJson: { command: string } | undefined): never {
  if (error instanceof CommanderError) {
    if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.exitCode === 0)
      process.exit(EXIT_OK);
    if (askJson) {
      const option = /unknown option '(.*)'/s.exec(error.message)?.[1] ?? '';
      const dashed =
        error.code === 'commander.unknownOption' && (!option.startsWith('--') || /\s/.test(option))
          ? ' A command text that starts with "-" goes after --: rollcall ask --json -- "-x ...".'
          : '';
      printJsonFailure(
        askJson.command,
        'usage',
        `${error.message.replace(/^error: /, '')}.${dashed} Usage: rollcall ask "<command text>" [--config FILE] [--json] [--as USER] [--yes] [--wait] [--out DIR]`,
      );
    }
    process.exit(EXIT_USAGE);
  }
  // A RollcallError is the user's to act on (a bad option, an unreachable Redis): its message is the
  // whole answer, in one line. So is an error of the operating system (a file that cannot be written,
  // a port in use). Only a bug gets its stack logged.
  if (error instanceof RollcallError && error.code !== 'internal' && error.code !== 'internal_error') {
    if (askJson) printJsonFailure(askJson.command, error.code, error.message);
    fail(error.message, exitCodeFor(error.code));
  }
  if (isSystemError(error)) {
    if (askJson) printJsonFailure(askJson.command, 'internal', error.message);
    fail(error.message, EXIT_FAILED);
  }
  const logger = createLogger({ level: 'error' });
  logger.error({ err: error }, 'rollcall failed');
  process.stderr.write(`rollcall: ${(error as Error).message}\n`);
  if (askJson)
    printJsonFailure(askJson.command, 'internal', `rollcall failed unexpectedly: ${(error as Error).message}`);
  process.exit(EXIT_FAILED);
}

export async function runCli(argv: string[]): Promise<void> {
  const askJson = askJsonOf(argv);
  const program = new Command('rollcall')
    .description('ChatOps for on-call engineers running Argo CD across many Kubernetes clusters')
    .version(packageVersion(), '-V, --version', 'print the rollcall version')
    .showHelpAfterError()
    .exitOverride();
  registerAsk(program, askJson);
  registerCompletion(program);
  registerStart(program);
  registerDemo(program);
  registerSim(program);
  registerInit(program);
  registerConfig(program);
  registerRunbooks(program);
  try {
    await program.parseAsync(argv);
  } catch (error) {
    handleCliError(error, askJson);
  }
}
