import { isActive, type AlertRecord } from '../domain/alerts/lifecycle.js';
import { evaluateAlertRules, shortRevision, type ExpectedStall } from '../domain/alerts/rules.js';
import type { AlertStore } from '../domain/alerts/store.js';
import { parseDuration } from '../infra/config/schema.js';
import { alertHeading } from '../infra/config/rule-catalog.js';
import { AuditLog } from '../domain/audit/audit-log.js';
import { absoluteTime, formatDuration, mention, plural, TONE_EMOJI, when } from '../core/format.js';
import { CommandError, checkOptions, checkPositional } from './parse.js';
import { type CommandContext, type CommandSpec } from './registry.js';
import type { ReplyBlock, ReplyButton } from '../core/reply.js';
import type { ReplyOf } from './replies.js';
import type { AlertJson } from './reply-data.js';
export type { AlertJson } from './reply-data.js';

export function alertJson(a: AlertRecord): AlertJson {
  return {
    id: a.id,
    rule: a.rule,
    state: a.state as AlertJson['state'],
    instance: a.instance,
    ...(a.appSet ? { appSet: a.appSet } : {}),
    ...(a.step !== undefined ? { step: a.step } : {}),
    ...(a.revision ? { revision: a.revision } : {}),
    apps: a.apps.length ? a.apps : a.app ? [a.app] : [],
    since: a.since,
    updatedAt: a.updatedAt,
    ...(a.resolvesAt && a.clearedAt ? { clearedAt: a.clearedAt, resolvesAt: a.resolvesAt } : {}),
  };
}

/** `Stuck rollout step: progressive-infra step 3 (infra)`. */
export function alertTitle(a: AlertRecord): string {
  const what = a.appSet ?? a.app ?? a.instance;
  const step = a.step !== undefined ? ` step ${a.step}` : '';
  const where = a.appSet || a.app ? ` (${a.instance})` : '';
  return `${alertHeading(a.rule)}: ${what}${step}${where}`;
}

/** An active alert whose condition is gone: it is about to resolve. */
const clearing = (a: AlertRecord): a is AlertRecord & { clearedAt: string; resolvesAt: string } =>
  isActive(a) && !!a.clearedAt && !!a.resolvesAt;

function stateLine(a: AlertRecord, now: Date): string {
  if (clearing(a))
    return `${TONE_EMOJI.ok} *Clearing*: not seen since ${when(a.clearedAt, now)}; resolves at ${absoluteTime(a.resolvesAt)} unless it comes back.`;
  switch (a.state) {
    case 'resolved':
      return `${TONE_EMOJI.ok} *Resolved*${a.resolvedAt ? ` ${when(a.resolvedAt, now)}` : ''}: ${
        a.superseded
          ? 'these apps recovered; other apps of the group now have the problem, in a new alert.'
          : 'the condition cleared.'
      }`;
    case 'acked':
      return `:eyes: *Acknowledged* by ${mention(a.ackedBy ?? 'someone')}.`;
    case 'snoozed':
      return `:zzz: *Snoozed* by ${mention(a.snoozedBy ?? 'someone')} until ${a.snoozedUntil ? absoluteTime(a.snoozedUntil) : 'further notice'}.`;
    default:
      return `${a.severity === 'critical' ? TONE_EMOJI.error : TONE_EMOJI.warn} *Firing* since ${when(a.firedAt ?? a.since, now)}.`;
  }
}

/** The state an alert is listed with: its lifecycle state, or clearing. */
function stateWord(a: AlertRecord): string {
  return clearing(a) ? 'clearing' : a.state;
}

/** The scope an incident declared from this alert covers, as the `incident start` command text. */
export function declareIncidentCommand(a: AlertRecord): string {
  const scope = a.appSet ? ` appset=${a.appSet}` : a.app ? ` app=${a.app}` : '';
  return `incident start ${alertTitle(a).replace(/[()"]/g, '')}${scope} instance=${a.instance} alert=${a.id}`;
}

/** One alert as its Slack message (and `alerts show`): edited in place for its whole life. */
export function alertReply(a: AlertRecord, now: Date = new Date()): ReplyOf<'alert'> {
  const resolved = a.state === 'resolved';
  const title = `${resolved ? 'Resolved — ' : ''}${alertTitle(a)}`;
  const blocks: ReplyBlock[] = [
    { kind: 'header', text: title },
    {
      kind: 'text',
      text: stateLine(a, now),
      tone: resolved || clearing(a) ? 'ok' : a.state === 'firing' ? 'error' : 'info',
    },
    {
      kind: 'text',
      text: a.summary,
      tone: resolved || clearing(a) ? 'info' : a.severity === 'critical' ? 'error' : 'warn',
    },
  ];
  const fields = [
    { label: 'Instance', value: a.instance },
    ...(a.appSet ? [{ label: 'ApplicationSet', value: a.appSet }] : []),
    ...(a.step !== undefined ? [{ label: 'Step', value: String(a.step) }] : []),
    ...(a.revision ? [{ label: 'Revision', value: `\`${shortRevision(a.revision)}\`` }] : []),
    { label: 'Began', value: when(a.since, now) },
    ...(a.apps.length ? [{ label: 'Apps', value: String(a.apps.length) }] : []),
  ];
  blocks.push({ kind: 'fields', fields });
  if (a.details.length)
    blocks.push({
      kind: 'list',
      items: a.details.slice(0, 20).map((d) => ({ text: d, tone: resolved || clearing(a) ? 'ok' : 'error' })),
      total: a.details.length,
    });
  const notes = [`Alert \`${a.id}\` · rule \`${a.rule}\``];
  if (a.flaps) notes.push(`flapping: cleared and came back ${plural(a.flaps, 'time')}; held until it stays clear`);
  if (a.incident) notes.push(`part of incident ${a.incident.id}`);
  blocks.push({ kind: 'context', text: notes.join(' · ') });
  if (!resolved) {
    const buttons: ReplyButton[] = [];
    if (a.state !== 'acked') buttons.push({ label: 'Ack', command: `alert ack ${a.id}`, style: 'primary' });
    buttons.push(
      { label: 'Snooze 1h', command: `alert snooze ${a.id} 1h` },
      { label: 'Snooze 4h', command: `alert snooze ${a.id} 4h` },
    );
    if (!a.incident) buttons.push({ label: 'Declare incident', command: declareIncidentCommand(a), style: 'danger' });
    if (a.rule === 'stuck-step' && a.appSet) {
      buttons.push(
        { label: 'Pause rollout', command: `pause ${a.appSet} instance=${a.instance}` },
        { label: 'Show rollout', command: `rollout ${a.appSet} instance=${a.instance}` },
      );
    }
    blocks.push({ kind: 'actions', buttons });
  }
  return { ok: true, command: 'alert', title, data: { alert: alertJson(a) }, blocks };
}

/** "worse" follow-up in the alert's thread: the one re-notification an alert makes. */
export function alertWorseReply(a: AlertRecord): ReplyOf<'alert'> {
  const text = `${TONE_EMOJI.error} Worse: ${a.summary} Now ${plural(a.apps.length, 'app')}${a.severity === 'critical' ? ', critical' : ''}.`;
  return {
    ok: true,
    command: 'alert',
    title: alertTitle(a),
    data: { alert: alertJson(a) },
    blocks: [{ kind: 'text', text, tone: 'error' }],
  };
}

function requireStore(ctx: CommandContext, command: string): AlertStore {
  const store = ctx.services.alerts;
  if (!store)
    throw new CommandError(
      'redis_unavailable',
      `\`${command}\` reads alert state from Redis, which this process has no connection to.`,
    );
  return store;
}

const LIST_USAGE = 'alerts [all] [instance=X]';

async function listAlerts(
  positional: string[],
  options: Record<string, string>,
  ctx: CommandContext,
): Promise<ReplyOf<'alerts'>> {
  const store = requireStore(ctx, 'alerts');
  const now = ctx.services.now?.() ?? new Date();
  const all = positional[0] === 'all';
  const stored = (await store.all()).filter(
    (a) => a.state !== 'pending' && (!options.instance || a.instance === options.instance),
  );
  const active = stored.filter(isActive);
  const resolved = stored.filter((a) => a.state === 'resolved');
  const shown = all ? stored : [...active, ...resolved.slice(0, 10)];
  // Expected stalls are said, not alerted: worked out from the mirror as the rules see it.
  const expected: ExpectedStall[] = evaluateAlertRules({
    fleet: ctx.services.fleet,
    now,
    config: ctx.services.config.alerts,
  }).expected.filter((e) => !options.instance || e.instance === options.instance);
  const title = active.length ? `${plural(active.length, 'active alert')}` : 'No active alerts';
  const blocks: ReplyBlock[] = [{ kind: 'header', text: title }];
  if (!active.length) blocks.push({ kind: 'text', text: `${TONE_EMOJI.ok} Nothing is firing.`, tone: 'ok' });
  const item = (a: AlertRecord) => ({
    text: `\`${a.id}\` ${alertTitle(a)} — ${stateWord(a)}${a.apps.length ? `, ${plural(a.apps.length, 'app')}` : ''}`,
    tone:
      a.state === 'resolved' || clearing(a)
        ? ('ok' as const)
        : a.state === 'firing'
          ? ('error' as const)
          : ('info' as const),
    detail: `${a.summary} Began ${when(a.since, now)}.`,
  });
  if (active.length) blocks.push({ kind: 'list', title: 'Active', items: active.map(item) });
  const recent = shown.filter((a) => a.state === 'resolved');
  if (recent.length)
    blocks.push({ kind: 'list', title: 'Recently resolved', items: recent.map(item), total: resolved.length });
  if (expected.length) {
    blocks.push({
      kind: 'list',
      title: 'Expected stalls (not alerted)',
      items: expected.map((e) => ({
        text: e.message,
        tone: 'info' as const,
        detail: e.apps.length ? e.apps.join(', ') : undefined,
      })),
    });
  }
  return {
    ok: true,
    command: 'alerts',
    title,
    data: { alerts: shown.map(alertJson), expected },
    blocks,
  };
}

export const alertsCommand: CommandSpec<'alerts'> = {
  name: 'alerts',
  summary:
    'Active and recently resolved alerts (stuck steps, failed syncs, Degraded after sync ...), and the stalls that are expected',
  usage: LIST_USAGE,
  help: 'One alert per problem: apps failing the same way in one ApplicationSet, step and revision are one alert. `alerts all` lists every resolved one kept.',
  readOnly: true,
  usesRuns: true,
  async run(cmd, ctx) {
    checkOptions(cmd, ['instance'], LIST_USAGE);
    checkPositional(cmd, 1, LIST_USAGE);
    if (cmd.positional[0] && cmd.positional[0] !== 'all')
      throw new CommandError(
        'usage',
        `Usage: ${LIST_USAGE}. To act on one alert: \`alert ack ID\`, \`alert snooze ID 1h\`.`,
      );
    return listAlerts(cmd.positional, cmd.options, ctx);
  },
};

const ALERT_USAGE = 'alert ack ID | alert snooze ID 1h|4h|DURATION | alert show ID';

export const alertCommand: CommandSpec<'alert'> = {
  name: 'alert',
  summary: 'Acknowledge or snooze one alert (the buttons on its message run these)',
  usage: ALERT_USAGE,
  readOnly: false,
  usesRuns: true,
  async run(cmd, ctx) {
    checkOptions(cmd, [], ALERT_USAGE);
    const [verb, id, duration] = cmd.positional;
    const store = requireStore(ctx, 'alert');
    const now = ctx.services.now?.() ?? new Date();
    if (!verb || !id || !['ack', 'snooze', 'show'].includes(verb))
      throw new CommandError('usage', `Usage: ${ALERT_USAGE}.`);
    if (verb === 'show') {
      const found = await store.byId(id);
      if (!found) throw await store.notFound(id);
      return alertReply(found, now);
    }
    const audit = new AuditLog(store.redis, ctx.services.config.redis.prefix);
    const current = await store.byId(id);
    if (!current) throw await store.notFound(id);
    if (current.state === 'resolved' || current.state === 'pending') {
      throw new CommandError('alert_not_active', `Alert ${id} is ${current.state}: there is nothing to ${verb}.`);
    }
    if (verb === 'ack') {
      const after = await store.change(id, { kind: 'ack', by: ctx.user }, now);
      await audit.record({
        kind: 'alert.ack',
        who: ctx.user,
        target: `alert/${id}`,
        params: { rule: after.rule, instance: after.instance, appSet: after.appSet },
        result: 'ok',
      });
      return {
        ok: true,
        command: 'alert',
        title: `Acknowledged ${id}`,
        data: { alert: alertJson(after) },
        blocks: [
          { kind: 'text', text: `:eyes: ${mention(ctx.user)} acknowledged ${alertTitle(after)}.`, tone: 'info' },
        ],
      };
    }
    if (!duration) throw new CommandError('usage', `Snooze for how long? e.g. \`alert snooze ${id} 1h\`.`);
    const ms = parseDuration(duration);
    if (!ms || ms > 7 * 86_400_000)
      throw new CommandError(
        'usage',
        `\`${duration}\` is not a snooze duration: give one such as 1h or 4h (at most 7d).`,
      );
    const after = await store.change(id, { kind: 'snooze', by: ctx.user, untilMs: now.getTime() + ms }, now);
    await audit.record({
      kind: 'alert.snooze',
      who: ctx.user,
      target: `alert/${id}`,
      params: { for: duration, until: after.snoozedUntil, rule: after.rule },
      result: 'ok',
    });
    return {
      ok: true,
      command: 'alert',
      title: `Snoozed ${id}`,
      data: { alert: alertJson(after) },
      blocks: [
        {
          kind: 'text',
          text: `:zzz: ${mention(ctx.user)} snoozed ${alertTitle(after)} for ${formatDuration(ms)} (until ${absoluteTime(after.snoozedUntil!)}).`,
          tone: 'info',
        },
      ],
    };
  },
};
