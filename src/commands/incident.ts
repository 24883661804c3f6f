import { alertImpactSince } from '../domain/alerts/rules.js';
import { AlertNotFoundError } from '../domain/alerts/store.js';
import { buildReport, incidentJson, keyTimeline } from '../domain/incidents/report.js';
import { renderIncidentChart } from '../domain/incidents/chart.js';
import { isIncidentId, type IncidentAnalysis, type IncidentService } from '../domain/incidents/service.js';
import { INCIDENT_STATES, type Incident, type IncidentStatus } from '../domain/incidents/store.js';
import { TIMELINE_KINDS, timelineJson, type TimelineEntry, type TimelineKind } from '../domain/incidents/timeline.js';
import { formatDuration, mention, plural, truncate } from '../core/format.js';
import { CommandError, parseCommand, selectorFromCommand } from './parse.js';
import { unfreezeQuestion } from './freeze.js';
import type { ActionSpec, CommandContext, CommandSpec, ParsedCommand } from './registry.js';
import { RollcallError, replyFromError } from '../core/errors.js';
import type { Reply, ReplyBlock, ReplyItem, Tone } from '../core/reply.js';
import type { IncidentCommand, IncidentData, IncidentVerb, ReplyOf } from './replies.js';

const USAGE =
  'incident start TITLE... [sev=1..4] [scope=SELECTOR] | note [ID] TEXT | status [ID] investigating|identified|mitigated|monitoring [TEXT] | sev [ID] N | lead [ID] @user | set [ID] impact=TIME | show [ID] | timeline [ID] [kind=...] | report [ID] | close [ID] [SUMMARY] | reopen [ID]';
const SUBCOMMANDS = [
  'start',
  'declare',
  'note',
  'status',
  'sev',
  'severity',
  'lead',
  'set',
  'show',
  'timeline',
  'report',
  'close',
  'reopen',
];
/** Entries per page of `incident timeline`: one list block each, within Slack's 50 blocks and 3000 characters. */
export const TIMELINE_PAGE = 25;
/** Thread messages one `incident timeline` posts at most; the report carries the rest. */
const MAX_THREAD_PAGES = 20;

function service(ctx: CommandContext): IncidentService {
  if (!ctx.services.incidents) {
    throw new CommandError(
      'redis_unavailable',
      'Incidents live in Redis, and this process has no Redis connection: set redis.url (or REDIS_URL) and use `rollcall ask` or `rollcall start`.',
    );
  }
  return ctx.services.incidents;
}

/** Words of the original text after the first `skip` words, as typed (quotes and `=` kept). */
function restOf(raw: string, skip: number): string {
  let rest = raw.replace(/^\s*\/\S+\s+/, '').trim();
  for (let i = 0; i < skip; i++) rest = rest.replace(/^\S+\s*/, '');
  return rest.trim();
}

function stripQuotes(text: string): string {
  const m = /^(["'])(.*)\1$/s.exec(text);
  return m ? m[2] : text;
}

const SEVERITY = /^[1-4]$/;

function parseSeverity(value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const v = value.replace(/^sev/i, '');
  if (!SEVERITY.test(v)) throw new CommandError('usage', `sev= is 1 (worst) to 4 (got "${value}").`);
  return Number(v);
}

const STATE_TONE: Record<string, Tone> = {
  investigating: 'error',
  identified: 'warn',
  mitigated: 'progress',
  monitoring: 'progress',
  closed: 'ok',
};

function duration(fromIso: string | null, toMs: number): string {
  return fromIso ? formatDuration(toMs - Date.parse(fromIso)) : '—';
}

/** The header message: what everyone in the channel needs at a glance, kept current in place. */
export function headerReply(
  analysis: IncidentAnalysis,
  suggestion: string | undefined,
  nowMs: number,
): ReplyOf<'incident'> {
  const { incident, metrics, blastRadius } = analysis;
  const end = incident.closedAt ? Date.parse(incident.closedAt) : nowMs;
  const blocks: ReplyBlock[] = [
    { kind: 'header', text: truncate(`${incident.id} · SEV${incident.severity} · ${incident.title}`, 150) },
    {
      kind: 'fields',
      fields: [
        { label: 'State', value: incident.state },
        { label: 'Severity', value: `SEV${incident.severity}` },
        { label: 'Lead', value: incident.lead ? mention(incident.lead) : '—' },
        { label: 'Scope', value: incident.scope ? `\`${incident.scope}\`` : 'the whole fleet' },
        {
          label: 'Blast radius',
          value: `${plural(blastRadius.apps, 'app')} on ${plural(blastRadius.clusters, 'cluster')} (peak ${blastRadius.peakUnhealthy} unhealthy)`,
        },
        { label: 'Impact for', value: duration(metrics.impactStart, end) },
        { label: 'Declared', value: `${duration(incident.declaredAt, end)} ago by ${mention(incident.declaredBy)}` },
        {
          label: 'TTD / TTA / TTM',
          value: [metrics.ttd, metrics.tta, metrics.ttm]
            .map((s) => (s === null ? '—' : formatDuration(s * 1000)))
            .join(' / '),
        },
      ],
    },
  ];
  if (suggestion) blocks.push({ kind: 'text', text: `:bulb: ${suggestion}`, tone: 'info' });
  for (const w of metrics.warnings) blocks.push({ kind: 'context', text: `:warning: ${w}` });
  return {
    ok: true,
    command: 'incident',
    title: `${incident.id} ${incident.title}`,
    data: { id: incident.id, incident: incidentJson(incident), metrics, blastRadius },
    blocks,
  };
}

function entryItem(e: TimelineEntry): ReplyItem {
  const tone: Tone | undefined = e.change?.bad
    ? 'error'
    : e.kind === 'health' && e.change?.to === 'Healthy'
      ? 'ok'
      : e.source === 'human'
        ? 'info'
        : undefined;
  return { text: `\`${e.at.slice(11, 19)}\` ${truncate(e.text, 280)}`, ...(tone ? { tone } : {}) };
}

/**
 * The freezes declared in the incident are not lifted by its close: rollcall asks, with a button that runs
 * `unfreeze`, in the incident's thread (and in the answer to whoever closed it).
 */
async function askToUnfreeze(ctx: CommandContext, incident: Incident): Promise<ReplyBlock[]> {
  const freezes = await ctx.services.freezes?.ofIncident(incident.id).catch(() => []);
  const blocks = unfreezeQuestion(incident.id, freezes ?? [], ctx.services.now?.() ?? new Date());
  const header = incident.header;
  const inThread = header && ctx.channel === header.channel && ctx.threadTs === header.ts;
  if (blocks.length && header && ctx.services.notifier && !inThread) {
    const question = {
      ok: true,
      command: 'incident close',
      title: `${incident.id}: unfreeze?`,
      data: { id: incident.id },
      blocks,
    };
    await ctx.services.notifier.post({ channel: header.channel, threadTs: header.ts }, question).catch(() => undefined);
  }
  return blocks;
}

/** Keeps the Slack header current after a change: post it once, then update in place. */
async function refreshHeader(ctx: CommandContext, svc: IncidentService, incident: Incident): Promise<void> {
  const notifier = ctx.services.notifier;
  if (!notifier || !incident.header) return;
  const analysis = await svc.analyse(incident);
  await notifier
    .update(incident.header, headerReply(analysis, svc.mitigationSuggestion(analysis), Date.now()))
    .catch(() => undefined);
}

async function runStart(cmd: ParsedCommand, ctx: CommandContext, skip: number): Promise<ReplyOf<'incident start'>> {
  const svc = service(ctx);
  // app= and alert= come from an alert's "Declare incident" button.
  const allowed = ['sev', 'severity', 'scope', 'selector', 'cluster', 'appset', 'project', 'instance', 'app', 'alert'];
  const unknown = Object.keys(cmd.options).filter((k) => !allowed.includes(k));
  if (unknown.length)
    throw new CommandError(
      'usage',
      `\`incident start\` does not take ${unknown.map((k) => `${k}=`).join(', ')}. Usage: incident start TITLE... [sev=1..4] [scope=SELECTOR].`,
    );
  const title = cmd.positional.slice(skip).join(' ').trim();
  if (!title)
    throw new CommandError(
      'usage',
      'An incident needs a title: `incident start auth-service crash-looping on prod sev=1 scope=auth-service-*`.',
    );
  const severity = parseSeverity(cmd.options.sev ?? cmd.options.severity, 2);
  // scope= holds a selection in the chat grammar (`auth-*`, `-l team=identity`, `appset=auth-service`); other selector options add to it.
  const scopeParts = [
    cmd.options.scope ? stripQuotes(cmd.options.scope) : '',
    cmd.options.app ?? '',
    ...['selector', 'cluster', 'appset', 'project', 'instance']
      .filter((k) => cmd.options[k])
      .map((k) => (k === 'selector' ? `-l ${cmd.options[k]}` : `${k}=${cmd.options[k]}`)),
  ].filter(Boolean);
  let scope: { text: string; selector: ReturnType<typeof selectorFromCommand> } | undefined;
  if (scopeParts.length) {
    const text = scopeParts.join(' ');
    const selector = selectorFromCommand(parseCommand(`scope ${text}`));
    if (!Object.keys(selector).length)
      throw new CommandError(
        'usage',
        `scope= needs apps: a name or glob (\`scope=auth-service-*\`), a label selector (\`scope="-l team=identity"\`) or \`scope=appset=auth-service\`.`,
      );
    scope = { text, selector };
  }
  const alert = cmd.options.alert ? await ctx.services.alerts?.byId(cmd.options.alert) : undefined;
  if (cmd.options.alert && !alert)
    throw ctx.services.alerts
      ? await ctx.services.alerts.notFound(cmd.options.alert)
      : new AlertNotFoundError(cmd.options.alert);
  const incident = await svc.declare({ title, severity, ...(scope ? { scope } : {}), by: ctx.user });
  // Declared from an alert: the alert is when the incident was detected.
  if (alert) {
    const impactSince = alertImpactSince(alert);
    await svc.recordAlertOn(incident.id, {
      id: `${alert.id}/fired`,
      at: alert.firedAt ?? alert.since,
      text: `alert fired (${alert.severity}): ${alert.summary}`,
      ...(impactSince ? { impactSince } : {}),
    });
  }
  const analysis = await svc.analyse(incident);
  const reply: ReplyOf<'incident start'> = {
    ...headerReply(analysis, undefined, Date.now()),
    command: 'incident start',
    title: `${incident.id} declared`,
  };
  reply.blocks.push({
    kind: 'context',
    text: `Timeline backfilled from ${formatDuration(incident.lookbackMs)} before now; \`incident note ${incident.id} TEXT\` adds to it, \`incident report ${incident.id}\` writes the report.`,
  });

  if (ctx.surface === 'slack' && ctx.services.notifier && ctx.channel) {
    let channel = ctx.channel;
    const incidentsConfig = ctx.services.config.incidents;
    if (incidentsConfig?.createChannel && ctx.services.notifier.createChannel) {
      const slug = title
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, '-')
        .replace(/^-|-$/g, '')
        .slice(0, 40);
      try {
        channel = await ctx.services.notifier.createChannel(
          `${incidentsConfig.channelPrefix}-${incident.n}-${slug}`.slice(0, 80),
          [ctx.user],
        );
        await svc.store.update(incident.id, { channel });
      } catch (error) {
        reply.blocks.push({
          kind: 'context',
          text: `:warning: Could not create the incident channel: ${(error as Error).message}. The header stays here.`,
        });
        channel = ctx.channel;
      }
    }
    const header = await ctx.services.notifier.post({ channel }, headerReply(analysis, undefined, Date.now()));
    await svc.store.update(incident.id, { header: { channel: header.channel, ts: header.ts } });
    reply.data.header = { channel: header.channel, ts: header.ts };
  }
  reply.data.id = incident.id;
  return reply;
}

/** The ID if the first word after the subcommand is one; the incident resolved either way. */
async function target(
  cmd: ParsedCommand,
  ctx: CommandContext,
  at: number,
): Promise<{ incident: Incident; used: number }> {
  const word = cmd.positional[at];
  const named = isIncidentId(word);
  const incident = await service(ctx).resolve(named ? word : undefined, {
    channel: ctx.channel,
    threadTs: ctx.threadTs,
  });
  return { incident, used: named ? 1 : 0 };
}

function done<C extends IncidentVerb>(
  incident: Incident,
  command: C,
  text: string,
  data: Record<string, unknown> = {},
): Reply<C, IncidentData> {
  return {
    ok: true,
    command,
    title: `${incident.id} ${command.replace(/^incident /, '')}`,
    data: { id: incident.id, incident: incidentJson(incident), ...data },
    blocks: [{ kind: 'text', text, tone: STATE_TONE[incident.state] ?? 'info' }],
  };
}

async function runIncident(cmd: ParsedCommand, ctx: CommandContext): Promise<ReplyOf<IncidentCommand>> {
  const svc = service(ctx);
  let sub = (cmd.positional[0] ?? 'show').toLowerCase();
  let skip = 1;
  if (isIncidentId(sub)) {
    // `incident INC-3` is `incident show INC-3`.
    sub = 'show';
    skip = 0;
  } else if (!SUBCOMMANDS.includes(sub)) {
    throw new CommandError(
      'usage',
      `\`incident ${cmd.positional[0]}\`: no such subcommand. Usage: ${USAGE}.`,
      SUBCOMMANDS.filter((s) => s.startsWith(sub.slice(0, 2))),
    );
  }
  if (sub === 'start' || sub === 'declare') return runStart(cmd, ctx, 1);

  const { incident, used } = await target(cmd, ctx, skip);
  const after = skip + used;
  const now = Date.now();
  switch (sub) {
    case 'note': {
      const text = restOf(cmd.raw, 2 + used);
      await svc.note(incident, stripQuotes(text), ctx.user);
      await refreshHeader(ctx, svc, incident);
      return done(incident, 'incident note', `:memo: Noted on ${incident.id}: ${truncate(stripQuotes(text), 500)}`);
    }
    case 'status': {
      const state = cmd.positional[after]?.toLowerCase();
      if (!state || !INCIDENT_STATES.includes(state as IncidentStatus)) {
        throw new CommandError(
          'usage',
          `\`incident status\` takes one of ${INCIDENT_STATES.join(', ')}${state ? ` (got "${state}")` : ''}. To close, use \`incident close ${incident.id} [SUMMARY]\`.`,
        );
      }
      const text = stripQuotes(restOf(cmd.raw, 3 + used));
      const updated = await svc.setStatus(incident, state as IncidentStatus, ctx.user, text || undefined);
      await refreshHeader(ctx, svc, updated);
      return done(updated, 'incident status', `${incident.id} is now *${state}*${text ? `: ${text}` : ''}.`);
    }
    case 'sev':
    case 'severity': {
      const given = cmd.positional[after] ?? cmd.options.sev;
      if (given === undefined)
        throw new CommandError('usage', `\`incident sev ${incident.id} N\`: N is 1 (worst) to 4.`);
      const severity = parseSeverity(given, 2);
      const updated = await svc.setSeverity(incident, severity, ctx.user);
      await refreshHeader(ctx, svc, updated);
      return done(updated, 'incident sev', `${incident.id} is now SEV${severity}.`);
    }
    case 'lead': {
      const raw = cmd.positional[after];
      const lead = raw?.replace(/^<@([A-Z0-9]+)(\|[^>]*)?>$/, '$1').replace(/^@/, '');
      if (!lead) throw new CommandError('usage', `\`incident lead ${incident.id} @user\`: who leads it?`);
      const updated = await svc.setLead(incident, lead, ctx.user);
      await refreshHeader(ctx, svc, updated);
      return done(updated, 'incident lead', `${mention(lead)} leads ${incident.id}.`);
    }
    case 'set': {
      const impact = cmd.options.impact;
      const unknown = Object.keys(cmd.options).filter((k) => k !== 'impact');
      if (!impact || unknown.length)
        throw new CommandError(
          'usage',
          `\`incident set ${incident.id} impact=TIME\` (an ISO time such as 2026-12-04T14:02:00Z, or HH:MM UTC today).`,
        );
      const at = parseImpactTime(impact, now);
      const updated = await svc.setImpact(incident, at, ctx.user);
      await refreshHeader(ctx, svc, updated);
      return done(updated, 'incident set', `Impact on ${incident.id} started at ${at} (override).`);
    }
    case 'close': {
      const summary = stripQuotes(restOf(cmd.raw, 2 + used));
      const closed = await svc.close(incident, ctx.user, summary || undefined);
      await refreshHeader(ctx, svc, closed);
      const reply = done(
        closed,
        'incident close',
        `:white_check_mark: ${incident.id} closed${summary ? `: ${summary}` : ''}. \`incident report ${incident.id}\` writes the report.`,
      );
      reply.blocks.push(...(await askToUnfreeze(ctx, closed)));
      return reply;
    }
    case 'reopen': {
      const reopened = await svc.reopen(incident, ctx.user);
      await refreshHeader(ctx, svc, reopened);
      return done(reopened, 'incident reopen', `${incident.id} is open again (investigating).`);
    }
    case 'timeline':
      return runTimeline(cmd, ctx, svc, incident);
    case 'report':
      return runReport(ctx, svc, incident);
    default: {
      const analysis = await svc.analyse(incident);
      const reply: ReplyOf<'incident show'> = {
        ...headerReply(analysis, svc.mitigationSuggestion(analysis), now),
        command: 'incident show',
      };
      const key = keyTimeline(analysis.timeline).slice(-15);
      if (key.length) reply.blocks.push({ kind: 'list', title: 'Key timeline', items: key.map(entryItem) });
      reply.blocks.push({
        kind: 'actions',
        buttons: [
          { label: 'Timeline', command: `incident timeline ${incident.id}` },
          { label: 'Report', command: `incident report ${incident.id}` },
        ],
      });
      reply.data = {
        ...reply.data,
        suggestion: svc.mitigationSuggestion(analysis) ?? null,
        timeline: key.map(timelineJson),
      };
      return reply;
    }
  }
}

/** `impact=`: an ISO time or HH:MM in UTC (the last such time not after now), as an ISO time. */
function parseImpactTime(text: string, nowMs: number): string {
  const hhmm = /^(\d{1,2}):(\d{2})$/.exec(text);
  if (hhmm) {
    const d = new Date(nowMs);
    d.setUTCHours(Number(hhmm[1]), Number(hhmm[2]), 0, 0);
    if (d.getTime() > nowMs) d.setUTCDate(d.getUTCDate() - 1);
    return d.toISOString();
  }
  const t = Date.parse(text);
  if (Number.isNaN(t))
    throw new CommandError(
      'usage',
      `impact= takes an ISO time (2026-12-04T14:02:00Z) or HH:MM in UTC (got "${text}").`,
    );
  if (t > nowMs) throw new CommandError('usage', `impact=${text} is in the future.`);
  return new Date(t).toISOString();
}

async function runTimeline(
  cmd: ParsedCommand,
  ctx: CommandContext,
  svc: IncidentService,
  incident: Incident,
): Promise<ReplyOf<'incident timeline'>> {
  const kinds = cmd.options.kind?.split(',').map((k) => k.trim());
  const bad = kinds?.find((k) => !TIMELINE_KINDS.includes(k as TimelineKind));
  if (bad !== undefined)
    throw new CommandError('usage', `kind= is one of ${TIMELINE_KINDS.join(', ')} (got "${bad}").`);
  const all = await svc.timeline(incident);
  const entries = kinds ? all.filter((e) => kinds.includes(e.kind)) : all;
  const title = `${incident.id} timeline${kinds ? ` (${kinds.join(', ')})` : ''}`;
  const blocks: ReplyBlock[] = [{ kind: 'header', text: truncate(`${title}: ${incident.title}`, 150) }];
  // One list: the views paginate it (Slack: 25 items a page, Next/Previous buttons).
  blocks.push({ kind: 'list', items: entries.map(entryItem), total: entries.length });
  blocks.push({ kind: 'context', text: `${plural(entries.length, 'entry', 'entries')}, oldest first. Times UTC.` });
  const reply: ReplyOf<'incident timeline'> = {
    ok: true,
    command: 'incident timeline',
    title,
    data: { id: incident.id, timeline: entries.map(timelineJson) },
    blocks,
  };
  // In Slack the whole timeline goes to the incident's thread, a message per page of TIMELINE_PAGE
  // entries (each well inside 50 blocks and 3000 characters a section); the asker gets the first page.
  if (ctx.surface === 'slack' && ctx.services.notifier && incident.header) {
    const pages = Math.max(1, Math.ceil(entries.length / TIMELINE_PAGE));
    const shown = Math.min(pages, MAX_THREAD_PAGES);
    for (let page = 0; page < shown; page++) {
      const items = entries.slice(page * TIMELINE_PAGE, (page + 1) * TIMELINE_PAGE).map(entryItem);
      const pageReply: Reply = {
        ok: true,
        command: 'incident timeline',
        title: `${title} ${page + 1}/${pages}`,
        data: {},
        blocks: [
          { kind: 'header', text: truncate(`${title} · page ${page + 1} of ${pages}`, 150) },
          { kind: 'list', items },
          ...(page === shown - 1 && shown < pages
            ? [
                {
                  kind: 'context' as const,
                  text: `${plural(entries.length - shown * TIMELINE_PAGE, 'more entry', 'more entries')}: \`incident report ${incident.id}\` has the full timeline.`,
                },
              ]
            : []),
        ],
      };
      await ctx.services.notifier
        .post({ channel: incident.header.channel, threadTs: incident.header.ts }, pageReply)
        .catch(() => undefined);
    }
    reply.blocks.push({ kind: 'context', text: `Posted to the incident's thread (${plural(shown, 'message')}).` });
  }
  return reply;
}

async function runReport(
  ctx: CommandContext,
  svc: IncidentService,
  incident: Incident,
): Promise<ReplyOf<'incident report'>> {
  const analysis = await svc.analyse(incident);
  const report = buildReport(analysis, ctx.services.fleet);
  const chart = await renderIncidentChart(report.chart);
  const { metrics, blastRadius } = analysis;
  const files = [
    { name: `${incident.id}.md`, title: `${incident.id} post-incident report`, content: Buffer.from(report.markdown) },
    { name: `${incident.id}.png`, title: `${incident.id} apps by health`, content: chart.png },
  ];
  const blocks: ReplyBlock[] = [
    { kind: 'header', text: truncate(`${incident.id} report: ${incident.title}`, 150) },
    {
      kind: 'fields',
      fields: [
        {
          label: 'Blast radius',
          value: `${plural(blastRadius.apps, 'app')} on ${plural(blastRadius.clusters, 'cluster')}`,
        },
        { label: 'Peak unhealthy', value: String(blastRadius.peakUnhealthy) },
        { label: 'Unhealthy app-minutes', value: String(blastRadius.unhealthyAppMinutes) },
        {
          label: 'TTD / TTA',
          value: [metrics.ttd, metrics.tta].map((s) => (s === null ? '—' : formatDuration(s * 1000))).join(' / '),
        },
        {
          label: 'TTM / TTR',
          value: [metrics.ttm, metrics.ttr].map((s) => (s === null ? '—' : formatDuration(s * 1000))).join(' / '),
        },
        { label: 'Timeline', value: plural(analysis.timeline.length, 'entry', 'entries') },
      ],
    },
  ];
  for (const w of metrics.warnings) blocks.push({ kind: 'context', text: `:warning: ${w}` });
  if (!chart.textDrawn)
    blocks.push({
      kind: 'context',
      text: `:warning: The chart has no text: rollcall found no font on this machine. Install DejaVu Sans (fonts-dejavu-core on Debian, font-dejavu on Alpine) and ask again.`,
    });
  const notifier = ctx.services.notifier;
  if (ctx.surface === 'slack' && notifier?.upload) {
    const where = incident.header
      ? { channel: incident.header.channel, threadTs: incident.header.ts }
      : ctx.channel
        ? { channel: ctx.channel, ...(ctx.threadTs ? { threadTs: ctx.threadTs } : {}) }
        : undefined;
    if (where) {
      await notifier.upload(where, files, `${incident.id} post-incident report`);
      blocks.push({
        kind: 'context',
        text: `Report and chart uploaded to ${incident.header ? "the incident's thread" : 'this channel'}.`,
      });
    }
  }
  return {
    ok: true,
    command: 'incident report',
    title: `${incident.id} report`,
    data: { ...report.data, files: null },
    blocks,
    files,
  };
}

async function runIncidents(_cmd: ParsedCommand, ctx: CommandContext): Promise<ReplyOf<'incidents'>> {
  const svc = service(ctx);
  const [open, recent] = await Promise.all([svc.open(), svc.recent(10)]);
  const closed = recent.filter((i) => i.state === 'closed');
  const item = (i: Incident): ReplyItem => ({
    text: `*${i.id}* SEV${i.severity} · ${i.state} · ${i.title}`,
    tone: STATE_TONE[i.state],
    detail: `declared ${i.declaredAt.slice(0, 16).replace('T', ' ')} UTC by ${mention(i.declaredBy)}${i.scope ? ` · scope \`${i.scope}\`` : ''}${i.closedAt ? ` · closed ${i.closedAt.slice(0, 16).replace('T', ' ')}` : ''}`,
  });
  const blocks: ReplyBlock[] = [{ kind: 'header', text: 'Incidents' }];
  blocks.push(
    open.length
      ? { kind: 'list', title: 'Open', items: open.map(item) }
      : { kind: 'text', text: 'No incident is open.', tone: 'ok' },
  );
  if (closed.length) blocks.push({ kind: 'list', title: 'Recently closed', items: closed.map(item) });
  return {
    ok: true,
    command: 'incidents',
    title: 'Incidents',
    data: { open: open.map(incidentJson), recent: recent.map(incidentJson) },
    blocks,
  };
}

export const incidentCommand: CommandSpec<IncidentCommand> = {
  name: 'incident',
  aliases: ['inc'],
  summary: 'Declare and run an incident: notes, status, severity, lead, the timeline rollcall recorded, the report',
  usage: USAGE,
  help: [
    'Examples:',
    '`incident start auth-service crash-looping sev=1 scope=auth-service-*`',
    '`incident note rolled back auth-config on us-east-1`',
    '`incident status mitigated`',
    '`incident timeline kind=deploy,health`',
    '`incident close bad session flags in auth-config`',
    '`incident report INC-3`',
    'Without an ID, the incident of this channel (or the only open one) is meant.',
  ].join('\n'),
  readOnly: true,
  usesRedis: true,
  run: runIncident,
};

/** A Slack message's ts is its time: seconds since the epoch, with a per-channel sequence as the fraction. */
function slackTsToIso(ts: string): string {
  const seconds = Number(ts.split('.')[0]);
  if (!Number.isFinite(seconds) || seconds <= 0)
    throw new CommandError('invalid_params', `not a Slack message ts: "${ts}"`);
  return new Date(seconds * 1000 + Number(`0.${ts.split('.')[1] ?? '0'}`) * 1000).toISOString();
}

/**
 * "Add to incident timeline" on a Slack message: the message's own time and author go on the
 * timeline, once however many times (or processes) it is added.
 */
export const incidentNoteMessageAction: ActionSpec = {
  name: 'incident.note-message',
  async run(value, ctx) {
    try {
      return await noteMessage(value, ctx);
    } catch (error) {
      // A shortcut has no dispatch around it to turn a refusal into an answer.
      if (error instanceof RollcallError) return replyFromError('incident note', error);
      throw error;
    }
  },
};

async function noteMessage(value: string, ctx: CommandContext): Promise<ReplyOf<'incident note'>> {
  const svc = service(ctx);
  const message = JSON.parse(value) as {
    channel: string;
    ts: string;
    threadTs?: string;
    author: string;
    text: string;
  };
  if (!message.text.trim())
    throw new CommandError('invalid_params', 'That message has no text to put on the timeline.');
  const incident = await svc.resolve(undefined, { channel: message.channel, threadTs: message.threadTs });
  const added = await svc.note(incident, message.text, message.author, {
    at: slackTsToIso(message.ts),
    dedupeKey: `slack:${message.channel}/${message.ts}`,
    ref: `${message.channel}/${message.ts}`,
  });
  if (added) await refreshHeader(ctx, svc, incident);
  const text = added
    ? `:memo: Added to ${incident.id}'s timeline: ${mention(message.author)}'s message of ${slackTsToIso(message.ts).slice(11, 19)} UTC.`
    : `That message is already on ${incident.id}'s timeline.`;
  return done(incident, 'incident note', text, { added });
}

export const declareCommand: CommandSpec<'incident start'> = {
  name: 'declare',
  summary: 'Same as `incident start` (and answers as it)',
  usage: 'declare TITLE... [sev=1..4] [scope=SELECTOR]',
  readOnly: true,
  usesRedis: true,
  run: (cmd, ctx) => runStart(cmd, ctx, 0),
};

export const incidentsCommand: CommandSpec<'incidents'> = {
  name: 'incidents',
  summary: 'Open and recent incidents',
  usage: 'incidents',
  readOnly: true,
  usesRedis: true,
  run: runIncidents,
};
