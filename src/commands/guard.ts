// `guard APPSET check=NAME`: rollcall watches a RollingSync rollout against metric checks and pauses it when
// the apps a step updated fail one; `guards` lists them, `unguard` removes one.
import { RollcallError } from '../core/errors.js';
import { errorReply, type ReplyItem } from '../core/reply.js';
import { plural, when } from '../core/format.js';
import { suggest } from '../core/suggest.js';
import { isRollingSync } from '../fleet/rollingsync.js';
import { guardKey, guardedRollout, type Guard } from '../domain/guards/index.js';
import { assertMayRun } from '../domain/runbooks/index.js';
import type { CommandContext, CommandSpec, ParsedCommand } from './registry.js';
import { checkOptions, CommandError } from './parse.js';
import type { ReplyOf } from './replies.js';
import { findAppSet } from './rollout.js';

const ON_FAIL = ['pause', 'notify'] as const;
const GUARD_OPTIONS = ['check', 'onFail', 'instance'];

function storeOf(ctx: CommandContext, command: string) {
  const store = ctx.services.guards;
  if (!store)
    throw new RollcallError(
      'runs_unavailable',
      `Guards are kept in Redis, and this process has none (set redis.url in rollcall.yaml or REDIS_URL): \`${command}\` cannot run.`,
    );
  return store;
}

/** The checks named by `check=a,b`, each one configured (CheckService refuses a typo with the closest names). */
function checkNames(cmd: ParsedCommand, ctx: CommandContext): string[] {
  const configured = Object.keys(ctx.services.config.checks);
  const names = (cmd.options.check ?? '')
    .split(',')
    .map((c) => c.trim())
    .filter(Boolean);
  if (!names.length)
    throw new CommandError(
      'usage',
      `Guard with which check? e.g. \`guard ${cmd.positional[0] ?? 'APPSET'} check=${configured[0] ?? 'error-rate'}\`. ${
        configured.length
          ? `Configured: ${configured.join(', ')}.`
          : 'No checks are configured (rollcall.yaml `checks:`).'
      }`,
    );
  // The check service's own refusal: unknown_check with the closest configured names.
  for (const name of names) ctx.services.checks?.check(name);
  return [...new Set(names)];
}

function onFailOf(cmd: ParsedCommand): Guard['onFail'] {
  const value = cmd.options.onFail ?? 'pause';
  if ((ON_FAIL as readonly string[]).includes(value)) return value as Guard['onFail'];
  throw new CommandError(
    'invalid_params',
    `onFail is \`pause\` or \`notify\`, not \`${value}\`.`,
    suggest(value, ON_FAIL),
  );
}

export const guardCommand: CommandSpec<'guard'> = {
  name: 'guard',
  summary: 'Watch a RollingSync rollout against metric checks; pause it when a step fails one',
  usage: 'guard <appset> check=NAME[,NAME] [onFail=pause|notify] [instance=X]',
  help:
    'Every sweep, rollcall evaluates the checks on the apps the rollout has updated (progressive status Progressing or ' +
    'Healthy). When one fails, it pauses the rollout with `pause` (in the name of whoever set the guard), says which apps ' +
    'and values, and records it. The guard stays until `unguard`; `guards` lists them.',
  usesRuns: true,
  readOnly: false,
  async run(cmd, ctx): Promise<ReplyOf<'guard'>> {
    checkOptions(cmd, GUARD_OPTIONS, guardCommand.usage);
    const name = cmd.positional[0];
    if (!name || cmd.positional.length > 1)
      throw new CommandError('usage', `Guard one ApplicationSet: \`${guardCommand.usage}\`.`);
    const store = storeOf(ctx, 'guard');
    const checks = checkNames(cmd, ctx);
    const onFail = onFailOf(cmd);
    const target = findAppSet(ctx.services.fleet, name, cmd.options.instance, 'guard');
    if (!isRollingSync(target.appSet))
      throw new CommandError(
        'invalid_params',
        `\`${name}\` has no RollingSync strategy: nothing steps, so there is nothing for a guard to pause. Verify a sync instead: \`sync ${name}-* check=${checks[0]}\`.`,
      );
    if (!ctx.services.checks)
      throw new CommandError(
        'invalid_params',
        'No Prometheus is configured (rollcall.yaml `prometheus.url`): checks cannot run.',
      );
    if (onFail === 'pause') {
      const runbook = ctx.services.runs?.runbooks().find((r) => r.name === 'pause-rollout');
      if (!runbook)
        throw new CommandError('unknown_runbook', 'The pause-rollout runbook is not loaded: a guard cannot pause.');
      assertMayRun(ctx.user, runbook, ctx.services.config);
    }
    const guard: Guard = {
      instance: target.instance,
      appSet: name,
      checks,
      onFail,
      createdBy: ctx.user,
      createdAt: new Date().toISOString(),
      ...(ctx.channel ? { channel: ctx.channel } : {}),
      ...(ctx.threadTs ? { threadTs: ctx.threadTs } : {}),
    };
    const rollout = guardedRollout(ctx.services.fleet, guard);
    const verdicts = rollout?.updated.length ? await ctx.services.checks.evaluateMany(checks, rollout.updated) : [];
    await store.put(guard);
    await ctx.services.audit?.record({
      kind: 'guard.set',
      who: ctx.user,
      target: guardKey(guard),
      params: { checks, onFail },
      result: 'ok',
    });
    const failing = verdicts.filter((v) => v.status === 'fail');
    const inconclusive = verdicts.filter((v) => v.status === 'inconclusive');
    const now = !rollout?.updated.length
      ? 'The rollout has updated no app yet: the first check runs when a step syncs one.'
      : `Now: ${plural(rollout.updated.length, 'updated app')}, ${failing.length} failing, ${inconclusive.length} inconclusive${failing.length ? ' — the next sweep will act on them' : ''}.`;
    return {
      ok: true,
      command: 'guard',
      title: `Guarding ${name}`,
      data: { guard, verdicts },
      blocks: [
        {
          kind: 'text',
          tone: failing.length ? 'warn' : 'ok',
          text: `:shield: Guarding \`${name}\` (${target.instance}) with ${checks.map((c) => `\`${c}\``).join(', ')}: when an app a step updated fails, rollcall will ${onFail === 'pause' ? 'pause the rollout' : 'say so here'}. ${now}`,
        },
        ...(failing.length || inconclusive.length
          ? [
              {
                kind: 'list' as const,
                items: [...failing, ...inconclusive].slice(0, 10).map((v): ReplyItem => ({
                  text: `*${v.app}* (${v.cluster}) · ${v.check}: ${v.reason}`,
                  tone: v.status === 'fail' ? 'error' : 'warn',
                })),
                total: failing.length + inconclusive.length,
              },
            ]
          : []),
        { kind: 'context', text: '`guards` lists guards; `unguard` removes this one.' },
      ],
    };
  },
};

export const guardsCommand: CommandSpec<'guards'> = {
  name: 'guards',
  summary: 'The RollingSync rollouts rollcall guards with metric checks, and their last sweep',
  usage: 'guards',
  usesRuns: true,
  readOnly: true,
  async run(_cmd, ctx): Promise<ReplyOf<'guards'>> {
    const guards = await storeOf(ctx, 'guards').list();
    const now = new Date();
    const item = (g: Guard): ReplyItem => ({
      text: `*${g.appSet}* (${g.instance}) · ${g.checks.join(', ')} · on fail: ${g.onFail} · set by ${g.createdBy} ${when(g.createdAt, now)}`,
      tone: g.last?.failing ? 'error' : g.last?.inconclusive ? 'warn' : 'ok',
      detail: g.last
        ? `last checked ${when(g.last.at, now)}: ${plural(g.last.apps, 'updated app')}, ${g.last.failing} failing, ${g.last.inconclusive} inconclusive${g.last.note ? ` (${g.last.note})` : ''}`
        : 'not checked yet',
    });
    return {
      ok: true,
      command: 'guards',
      title: guards.length ? `${plural(guards.length, 'guard')}` : 'No guards',
      data: { guards },
      blocks: guards.length
        ? [{ kind: 'list', title: 'Guarded rollouts', items: guards.map(item), total: guards.length }]
        : [{ kind: 'text', text: 'No rollout is guarded. `guard APPSET check=NAME` sets one.', tone: 'info' }],
    };
  },
};

export const unguardCommand: CommandSpec<'unguard'> = {
  name: 'unguard',
  summary: 'Stop guarding a RollingSync rollout',
  usage: 'unguard <appset> [instance=X]',
  usesRuns: true,
  readOnly: false,
  async run(cmd, ctx): Promise<ReplyOf<'unguard'>> {
    checkOptions(cmd, ['instance'], unguardCommand.usage);
    const name = cmd.positional[0];
    if (!name)
      return errorReply('unguard', 'usage', `Unguard what? \`${unguardCommand.usage}\`.`) as ReplyOf<'unguard'>;
    const store = storeOf(ctx, 'unguard');
    const guards = (await store.list()).filter(
      (g) => g.appSet === name && (!cmd.options.instance || g.instance === cmd.options.instance),
    );
    if (guards.length !== 1)
      throw new CommandError(
        guards.length ? 'ambiguous_target' : 'unknown_target',
        guards.length
          ? `\`${name}\` is guarded on ${guards.map((g) => g.instance).join(', ')}: add instance=NAME.`
          : `\`${name}\` is not guarded.`,
        guards.length
          ? guards.map((g) => `unguard ${name} instance=${g.instance}`)
          : suggest(
              name,
              (await store.list()).map((g) => g.appSet),
            ).map((s) => `unguard ${s}`),
      );
    const [guard] = guards;
    await store.remove(guard.instance, guard.appSet);
    await ctx.services.audit?.record({ kind: 'guard.remove', who: ctx.user, target: guardKey(guard), result: 'ok' });
    return {
      ok: true,
      command: 'unguard',
      title: `No longer guarding ${name}`,
      data: { guard },
      blocks: [{ kind: 'text', text: `No longer guarding \`${name}\` (${guard.instance}).`, tone: 'ok' }],
    };
  },
};
