import { canOperate, canRead, isAdmin } from '../core/access.js';
import type { AnyCommandSpec, CommandContext, ParsedCommand } from './registry.js';
import { commandText } from './parse.js';
import type { DispatchReply } from './replies.js';

/**
 * How long a finished answer keeps serving the same question at the same mirror version. The mirror is not all
 * such an answer reads (`status` shows freezes from Redis, and the time since things happened), so an answer is
 * shared with a crowd asking at once, never for long after.
 */
export const SHARED_ANSWER_MS = 2000;
/** Questions remembered at once: a crowd asks a handful of different ones. */
const MAX_SHARED = 64;

interface Shared {
  /** The mirror's version when the computation started: it holds at least what the mirror held then. */
  version: number;
  /** When the answer was finished (services.now, ms); undefined while it is being computed. */
  doneAt?: number;
  answer: Promise<DispatchReply>;
}

/** Per Services object: one per process, and a test's own services never see another test's answers. */
const memos = new WeakMap<object, Map<string, Shared>>();

/**
 * Everything a shared command's answer depends on besides the mirror: the command as parsed, the surface (it pages
 * differently) and what the asker may do. Two people with the same permissions asking the same thing get the same
 * answer; someone who may do more or less never gets theirs.
 */
function keyOf(cmd: ParsedCommand, spec: AnyCommandSpec, ctx: CommandContext): string {
  const config = ctx.services.config;
  const may = [canRead(ctx.user, config), canOperate(ctx.user, config), isAdmin(ctx.user, config)]
    .map((b) => (b ? '1' : '0'))
    .join('');
  return [spec.name, commandText({ ...cmd, command: spec.name }), ctx.surface, may].join('\u0000');
}

/**
 * Runs `spec` for a command whose answer depends only on what it is asked, the fleet mirror, the config and the
 * clock (`sharedAnswer`): while the same question is being answered for someone with the same permissions, or was
 * answered less than SHARED_ANSWER_MS ago, from the mirror as it was when the asker asked or later
 * (`askedAtVersion`), that answer is used instead of computing it again. A crowd asking `status` mid-incident costs
 * one computation, not one each, even while the mirror takes in a sync's events between their requests; no one gets
 * an answer computed before a change they could have seen. Each asker gets their own copy of the reply's top level,
 * which dispatch stamps with pages and warnings.
 */
export async function sharedAnswer(
  spec: AnyCommandSpec,
  cmd: ParsedCommand,
  ctx: CommandContext,
): Promise<DispatchReply> {
  const services = ctx.services;
  let memo = memos.get(services);
  if (!memo) memos.set(services, (memo = new Map()));
  const key = keyOf(cmd, spec, ctx);
  const version = services.fleet.version();
  const asked = ctx.askedAtVersion ?? version;
  const now = (services.now?.() ?? new Date()).getTime();
  let shared = memo.get(key);
  const fresh =
    shared &&
    shared.version >= asked &&
    (shared.doneAt === undefined || (now >= shared.doneAt && now - shared.doneAt < SHARED_ANSWER_MS));
  if (!shared || !fresh) {
    const entry: Shared = { version, answer: spec.run(cmd, ctx) };
    shared = entry;
    memo.delete(key);
    memo.set(key, entry);
    if (memo.size > MAX_SHARED) memo.delete(memo.keys().next().value!);
    // A failed answer (a typo's "did you mean", a broken upstream) is not kept: the next asker tries again.
    entry.answer.then(
      () => (entry.doneAt = (services.now?.() ?? new Date()).getTime()),
      () => memo.get(key) === entry && memo.delete(key),
    );
  }
  return copyTop(await shared.answer);
}

/** dispatch stamps pages, warnings and the user's text on the top level of a reply; the blocks' contents it leaves alone. */
function copyTop(reply: DispatchReply): DispatchReply {
  return {
    ...reply,
    data: { ...reply.data },
    blocks: [...reply.blocks],
    ...(reply.error ? { error: { ...reply.error } } : {}),
    ...(reply.userText ? { userText: [...reply.userText] } : {}),
  } as DispatchReply;
}
