import type { RollcallConfig } from '../../infra/config/schema.js';
import { findCommand, type CommandContext } from '../../commands/registry.js';
import type { RunService } from '../../domain/runbooks/engine.js';
import { isTerminal, type RunStatus } from '../../domain/runbooks/run-store.js';
import { errorReply, replyJson, type Reply } from '../../core/reply.js';
import { runOf } from '../../commands/replies.js';
import { redactUrlPassword } from '../../infra/config/load.js';
import { EXIT_OK, exitCodeFor } from '../../core/error-codes.js';
import { terminalIdentity } from '../../core/identity.js';
import {
  closeRedis,
  configuredRedisUrl,
  createRedis,
  probeRedis,
  READ_ONLY_WITHOUT_REDIS,
  redisUnreachableMessage,
} from '../../infra/redis.js';
import { AuditLog, withAuditOrigin } from '../../domain/audit/audit-log.js';
import { createLogger } from '../../infra/log.js';
import { renderText } from '../../views/text.js';
import { startRuntime } from './bootstrap.js';
import { TerminalNotifier } from './terminal-notifier.js';
import { offerReplyFiles, writeReplyFiles } from './reply-files.js';

export interface AskOptions {
  json: boolean;
  /** `--as`: act as this user (only where access.terminal.allowActAs allows it). */
  as?: string;
  yes: boolean;
  wait: boolean;
  /** `--out DIR`: where files that come with the answer (a report, its chart) are written. */
  out?: string;
}

/** `--as` someone other than yourself, refused by the config: audited (when Redis answers), then answered. */
async function refuseActAs(
  config: RollcallConfig,
  text: string,
  as: string,
  who: { self: string; osUser: string },
): Promise<Reply> {
  const command = text.trim().split(/\s+/)[0] || 'ask';
  let message = `\`--as ${as}\` is off in this config: acting as another user is allowed only with access.terminal.allowActAs: true (then one person could request and approve a run alone). You are ${who.self}; run it without --as, or ask ${as} to.`;
  const redisUrl = configuredRedisUrl(config);
  const down = await probeRedis(redisUrl);
  if (down)
    message += ` This refusal is not in the audit log: Redis at ${redactUrlPassword(redisUrl)} is unreachable (${down}).`;
  else {
    const redis = createRedis(redisUrl, { maxRetriesPerRequest: 1 });
    try {
      await withAuditOrigin({ surface: 'terminal', osUser: who.osUser }, () =>
        new AuditLog(redis, config.redis.prefix).record({
          kind: 'run.refused',
          who: who.self,
          target: 'act-as',
          result: 'forbidden',
          message,
          params: { as, command: text },
        }),
      );
    } finally {
      await closeRedis(redis);
    }
  }
  return errorReply(command, 'forbidden', message);
}

/** The exit code of an answer: its error code's exit class (core/errors.ts), 0 when it succeeded. */
function exitCodeOf(reply: Reply): number {
  return reply.ok ? EXIT_OK : exitCodeFor(reply.error?.code ?? 'internal');
}

/**
 * A run left queued by `ask` without --wait: says whether a worker will pick it up, and how to follow it.
 * With no worker connected the run is queued, not running: "confirmed" is not "done", so the answer
 * becomes a failure (`no_worker`) that the JSON and the exit code both say.
 */
async function sayWhoRunsIt(reply: Reply, runs: RunService | undefined, say: (line: string) => void): Promise<Reply> {
  const run = runOf(reply);
  if (!runs || !run?.id || run.status !== 'running') return reply;
  const workers = await runs.workersOnline().catch(() => 0);
  if (workers) {
    say(`${run.id} is queued for ${workers} rollcall worker(s). Follow it: rollcall ask "runs show ${run.id}"`);
    return reply;
  }
  const message = `${run.id} is queued, no worker: no rollcall worker is connected to this Redis, so nothing runs it yet (it starts when one does: rollcall start). To run it from this terminal instead: rollcall ask "runs wait ${run.id}" --wait`;
  say(message);
  return { ...reply, ok: false, error: { code: 'no_worker', message } };
}

/** A run state `--wait` has nothing more to wait for: it ended, it is paused, or it waits for its requester's Confirm. */
function nothingToWaitFor(status: RunStatus): boolean {
  return isTerminal(status) || status === 'paused' || status === 'awaiting-confirmation';
}

/**
 * `rollcall ask help [COMMAND]` needs no config: it is answered from the command list before any config,
 * Argo CD or Redis is looked for. Undefined when the text asks for something else.
 */
export async function askHelp(text: string, opts: Pick<AskOptions, 'json' | 'as'>): Promise<number | undefined> {
  const { answerHelp } = await import('../../commands/index.js');
  const reply = answerHelp(text, {
    user: opts.as ?? terminalIdentity().self,
    surface: 'terminal',
    channel: 'terminal',
  });
  if (!reply) return undefined;
  const shown = opts.json ? JSON.stringify(replyJson(reply)) : renderText(reply, { color: process.stdout.isTTY });
  process.stdout.write(shown.endsWith('\n') ? shown : `${shown}\n`);
  return exitCodeOf(reply);
}

/** `rollcall ask`: one chat command through the same parser, permission checks and handlers as Slack. */
export async function ask(config: RollcallConfig, text: string, opts: AskOptions): Promise<number> {
  const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'warn' });
  const out = (s: string) => process.stdout.write(s.endsWith('\n') ? s : `${s}\n`);
  const who = terminalIdentity();
  const actAs = opts.as !== undefined && opts.as !== who.self;
  if (actAs && !config.access.terminal.allowActAs) {
    const reply = await refuseActAs(config, text, opts.as!, who);
    out(opts.json ? JSON.stringify(replyJson(reply)) : renderText(reply, { color: process.stdout.isTTY }));
    return exitCodeOf(reply);
  }
  // In --json mode stdout carries exactly one JSON object; progress goes to stderr.
  const notifier = new TerminalNotifier(opts.json ? (s) => process.stderr.write(`${s}\n`) : out);
  // The fleet's list requests go out first; the command modules load while Argo CD answers them. One answer
  // needs the lists only; a run followed here with --wait needs the fleet kept current while it runs.
  const [runtime, { dispatch, parseCommand }] = await Promise.all([
    startRuntime(config, { logger, notifier, follow: opts.wait }),
    import('../../commands/index.js'),
  ]);
  try {
    let needs: boolean | 'optional' = false;
    let recordsChanges = false;
    try {
      const spec = findCommand(parseCommand(text).command);
      needs = spec?.usesRedis ? true : (spec?.usesRuns ?? false);
      recordsChanges = !!spec?.usesRedis;
    } catch {}
    const usesRuns = needs !== false;
    if (usesRuns) {
      const redisUrl = configuredRedisUrl(config);
      const down = await probeRedis(redisUrl);
      if (down && needs === true) {
        const reply = errorReply(
          parseCommand(text).command,
          'redis_unavailable',
          `${redisUnreachableMessage(redisUrl, down)} ${READ_ONLY_WITHOUT_REDIS}`,
        );
        out(opts.json ? JSON.stringify(replyJson(reply)) : renderText(reply, { color: process.stdout.isTTY }));
        return exitCodeOf(reply);
      }
      // Only --wait runs steps here; otherwise a queued run is left to the workers (`rollcall start`)
      // and ask returns at once instead of holding the terminal until the run ends.
      // Change-log readers first add what Argo CD knows now (deduplicated against what workers recorded),
      // so `changes` answers even where no `rollcall start` runs. --wait executes its own run's steps
      // (exclusive: never another run's, nor with this terminal's config for someone else's).
      if (!down && needs === true) {
        await runtime.enableRuns({
          role: opts.wait ? 'all' : 'bot',
          redisUrl,
          schedules: false,
          recorder: recordsChanges,
          exclusive: opts.wait,
        });
        await runtime.recorder?.backfilled;
      }
      // A command that only says more with Redis still answers when the rest cannot start.
      else if (!down)
        await runtime
          .enableRuns({ role: 'bot', redisUrl, schedules: false, recorder: false })
          .catch((err) => logger.warn({ err: (err as Error).message }, 'answering without Redis'));
    }

    const ctx: CommandContext = {
      services: runtime.services,
      user: opts.as ?? who.self,
      surface: 'terminal',
      osUser: who.osUser,
      ...(actAs ? { actAs: true } : {}),
      assumeYes: opts.yes,
      channel: 'terminal',
    };
    // `runs wait ID --wait` (what ask says to do with a run no worker picks up) runs that run here: it is
    // adopted before the wait, or the wait would be for a worker that never comes.
    if (opts.wait) {
      try {
        const asked = parseCommand(text);
        if (asked.command === 'runs' && ['wait', 'show'].includes(asked.positional[0]) && asked.positional[1])
          runtime.adoptRun(asked.positional[1]);
      } catch {}
    }
    let reply = await dispatch(text, ctx);
    const runId = runOf(reply)?.id;
    // `runs wait ID --wait` has waited already: its answer is the final state, printed once.
    if (opts.wait && runId && reply.ok && !nothingToWaitFor(runOf(reply)!.status)) {
      runtime.adoptRun(runId);
      if (!opts.json) out(renderText(reply, { color: process.stdout.isTTY }));
      const command = reply.command;
      reply = await dispatch(`runs wait ${runId}`, ctx);
      // The answer to `ask "sync ..." --wait` is the sync's final state: it keeps the command asked.
      reply.command = command;
    }
    if (reply.files?.length) {
      if (opts.out) writeReplyFiles(reply, opts.out);
      else offerReplyFiles(reply, `add --out DIR to write them (rollcall ask ${JSON.stringify(text)} --out DIR)`);
    }
    const answer =
      usesRuns && !opts.wait
        ? await sayWhoRunsIt(reply, runtime.services.runs, (s) => process.stderr.write(`${s}\n`))
        : reply;
    // The text shows the run as it is (queued); the no-worker line on stderr says why that is not success.
    out(opts.json ? JSON.stringify(replyJson(answer)) : renderText(reply, { color: process.stdout.isTTY }));
    return exitCodeOf(answer);
  } finally {
    await runtime.stop();
    logger.flush();
  }
}
