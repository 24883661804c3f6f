import type { RollcallConfig } from '../config/schema.js';
import { dispatch, parseCommand } from '../commands/index.js';
import { findCommand, type CommandContext } from '../commands/registry.js';
import type { RunService } from '../runbooks/engine.js';
import { errorReply, replyJson, type Reply } from '../commands/reply.js';
import { redactUrlPassword } from '../config/load.js';
import { probeRedis } from '../jobs/redis.js';
import { createLogger } from '../log.js';
import { renderText } from '../views/text.js';
import { startRuntime } from './bootstrap.js';
import { TerminalNotifier } from './terminal-notifier.js';

// A malformed selector is bad input like a bad option (exit 2); a well-formed one that matches nothing is a failed command (1).
const USAGE_CODES = new Set(['usage', 'unknown_command', 'invalid_params', 'unknown_param', 'invalid_selector']);

export interface AskOptions {
  json: boolean;
  user: string;
  yes: boolean;
  wait: boolean;
}

const EXIT_USAGE = 2;

function exitCodeOf(reply: Reply): number {
  if (reply.ok) return 0;
  return USAGE_CODES.has(reply.error?.code ?? '') ? EXIT_USAGE : 1;
}

/** A run left queued by `ask` without --wait: say whether a worker will pick it up, and how to follow it. */
async function sayWhoRunsIt(reply: Reply, runs: RunService | undefined, say: (line: string) => void): Promise<void> {
  const run = (reply.data as { run?: { id?: string; status?: string } }).run;
  if (!runs || !run?.id || run.status !== 'running') return;
  const workers = await runs.workersOnline().catch(() => 0);
  say(
    workers
      ? `${run.id} is queued for ${workers} rollcall worker(s). Follow it: rollcall ask "runs show ${run.id}"`
      : `${run.id} is queued, but no rollcall worker is connected to this Redis: it starts when one does (rollcall start). To run it from this terminal instead: rollcall ask "runs wait ${run.id}" --wait`,
  );
}

/** `rollcall ask`: one chat command through the same parser, permission checks and handlers as Slack. */
export async function ask(config: RollcallConfig, text: string, opts: AskOptions): Promise<number> {
  const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'warn' });
  const out = (s: string) => process.stdout.write(s.endsWith('\n') ? s : `${s}\n`);
  // In --json mode stdout carries exactly one JSON object; progress goes to stderr.
  const notifier = new TerminalNotifier(opts.json ? (s) => process.stderr.write(`${s}\n`) : out);
  const runtime = await startRuntime(config, { logger, notifier });
  try {
    let usesRuns = false;
    try {
      usesRuns = !!findCommand(parseCommand(text).command)?.usesRuns;
    } catch {}
    if (usesRuns) {
      const redisUrl = process.env.REDIS_URL ?? config.redis.url;
      const down = await probeRedis(redisUrl);
      if (down) {
        const reply = errorReply(
          parseCommand(text).command,
          'redis_unavailable',
          `Cannot reach Redis at ${redactUrlPassword(redisUrl)} (${down}). Runbooks, runs and the audit log live in Redis: start redis-server, or point redis.url / REDIS_URL at yours.`,
        );
        out(opts.json ? JSON.stringify(replyJson(reply)) : renderText(reply, { color: process.stdout.isTTY }));
        return EXIT_USAGE;
      }
      // Only --wait runs steps here; otherwise a queued run is left to the workers (`rollcall start`)
      // and ask returns at once instead of holding the terminal until the run ends.
      await runtime.enableRuns({ role: opts.wait ? 'all' : 'bot', redisUrl, schedules: false });
    }

    const ctx: CommandContext = { services: runtime.services, user: opts.user, surface: 'terminal', assumeYes: opts.yes, channel: 'terminal' };
    let reply = await dispatch(text, ctx);
    const runId = typeof reply.data.runId === 'string' ? reply.data.runId : undefined;
    if (opts.wait && runId && reply.ok) {
      if (!opts.json) out(renderText(reply, { color: process.stdout.isTTY }));
      const command = reply.command;
      reply = await dispatch(`runs wait ${runId}`, ctx);
      // The answer to `ask "sync ..." --wait` is the sync's final state: it keeps the command asked.
      reply.command = command;
    }
    out(opts.json ? JSON.stringify(replyJson(reply)) : renderText(reply, { color: process.stdout.isTTY }));
    if (usesRuns && !opts.wait) await sayWhoRunsIt(reply, runtime.services.runs as RunService | undefined, (s) => process.stderr.write(`${s}\n`));
    return exitCodeOf(reply);
  } finally {
    await runtime.stop();
    logger.flush();
  }
}
