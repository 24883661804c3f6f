import type { RollcallConfig } from '../config/schema.js';
import { dispatch, parseCommand } from '../commands/index.js';
import { findCommand, type CommandContext } from '../commands/registry.js';
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
      await runtime.enableRuns({ role: 'all', redisUrl });
    }

    const ctx: CommandContext = { services: runtime.services, user: opts.user, surface: 'terminal', assumeYes: opts.yes, channel: 'terminal' };
    let reply = await dispatch(text, ctx);
    const runId = typeof reply.data.runId === 'string' ? reply.data.runId : undefined;
    if (opts.wait && runId && reply.ok) {
      if (!opts.json) out(renderText(reply, { color: process.stdout.isTTY }));
      reply = await dispatch(`runs wait ${runId}`, ctx);
    }
    out(opts.json ? JSON.stringify(replyJson(reply)) : renderText(reply, { color: process.stdout.isTTY }));
    return exitCodeOf(reply);
  } finally {
    await runtime.stop();
    logger.flush();
  }
}
