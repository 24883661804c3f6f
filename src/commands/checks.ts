import { TONE_EMOJI, code, formatCount, plural, typedDuration } from '../core/format.js';
import type { ReplyBlock, ReplyItem, Tone } from '../core/reply.js';
import { thresholdOf, type CheckService, type CheckVerdict } from '../domain/checks/index.js';
import { CommandError, SELECTOR_OPTIONS, checkOptions, checkPositional, commandText } from './parse.js';
import type { CommandContext, CommandSpec, ParsedCommand } from './registry.js';
import type { ReplyOf } from './replies.js';
import type { CheckListing } from './reply-data.js';
import { assertSelects } from './runbooks.js';

const CHECK_USAGE = 'check NAME[,NAME] <app|glob ...> [-l selector] [cluster=X] [project=X] [appset=X] [instance=X]';
const CHECKS_USAGE = 'checks';

/**
 * One query per app per check: more than this is a fleet-wide sweep that would keep Prometheus busy for
 * minutes while on-call waits; narrowing the selection says the same thing faster.
 */
const MAX_QUERIES = 1000;

function checksOf(ctx: CommandContext, command: string): CheckService {
  const checks = ctx.services.checks;
  if (!checks)
    throw new CommandError(
      'not_configured',
      `\`${command}\` needs metric checks: add \`prometheus: {url: ...}\` and \`checks:\` to rollcall.yaml (\`help check\` shows one).`,
    );
  return checks;
}

const STATUS_ORDER: CheckVerdict['status'][] = ['fail', 'inconclusive', 'pass'];
const STATUS_TONE: Record<CheckVerdict['status'], Tone> = { fail: 'error', inconclusive: 'unknown', pass: 'ok' };
const STATUS_TITLE: Record<CheckVerdict['status'], string> = {
  fail: 'Failing',
  inconclusive: 'Inconclusive (no verdict: never read as a pass)',
  pass: 'Passing',
};

function verdictItem(v: CheckVerdict, multiInstance: boolean, multiCheck: boolean): ReplyItem {
  const where = multiInstance ? `${v.instance}/${v.cluster}` : v.cluster;
  return {
    // A judgement's reason starts with the check's name; a failure to judge names it only when several ran.
    text: `*${v.app}* (${where})${multiCheck && !v.reason.startsWith(`${v.check} `) ? ` · ${v.check}` : ''} · ${v.reason}`,
    tone: STATUS_TONE[v.status],
    ...(v.status === 'pass' ? {} : { detail: code(v.query) }),
    // A passing verdict needs no graph at 3 a.m.; the JSON keeps every link.
    ...(v.link && v.status !== 'pass' ? { url: v.link } : {}),
  };
}

function summaryBlock(counts: Record<CheckVerdict['status'], number>, total: number): ReplyBlock {
  const tone: Tone = counts.fail ? 'error' : counts.inconclusive ? 'warn' : 'ok';
  const parts = [
    counts.fail && `${formatCount(counts.fail)} failing`,
    counts.inconclusive && `${formatCount(counts.inconclusive)} inconclusive`,
    counts.pass && `${formatCount(counts.pass)} passing`,
  ].filter(Boolean);
  return {
    kind: 'text',
    text: `${TONE_EMOJI[tone]} *${parts.join(', ')}* of ${plural(total, 'verdict')}.`,
    tone,
  };
}

async function runCheck(cmd: ParsedCommand, ctx: CommandContext): Promise<ReplyOf<'check'>> {
  checkOptions(cmd, SELECTOR_OPTIONS, CHECK_USAGE);
  const [namesWord, ...targets] = cmd.positional;
  const narrowed = SELECTOR_OPTIONS.some((k) => k !== 'instance' && cmd.options[k] !== undefined);
  if (!namesWord || (!targets.length && !narrowed))
    throw new CommandError(
      'usage',
      `Check what, on which apps? Usage: ${CHECK_USAGE}, e.g. \`check error-rate checkout-*\`. \`checks\` lists the checks.`,
    );
  const service = checksOf(ctx, 'check');
  const names = [...new Set(namesWord.split(',').filter(Boolean))];
  for (const name of names) service.check(name);
  const apps = assertSelects({ ...cmd, positional: targets }, ctx, 'check');
  if (apps.length * names.length > MAX_QUERIES)
    throw new CommandError(
      'usage',
      `That is ${formatCount(apps.length * names.length)} queries (${plural(names.length, 'check')} × ${plural(apps.length, 'app')}); rollcall runs at most ${formatCount(MAX_QUERIES)} at a time. Narrow the selection (cluster=, -l, a glob).`,
    );
  const verdicts = await service.evaluateMany(names, apps);
  const counts = { pass: 0, fail: 0, inconclusive: 0 };
  for (const v of verdicts) counts[v.status]++;
  const multiInstance = ctx.services.fleet.instances().length > 1;
  const scope = commandText({ ...cmd, command: 'check', positional: targets }).replace(/^check ?/, '');
  const title = `Check ${names.join(', ')} on ${scope}`;
  const blocks: ReplyBlock[] = [{ kind: 'header', text: title }, summaryBlock(counts, verdicts.length)];
  for (const status of STATUS_ORDER) {
    const group = verdicts.filter((v) => v.status === status);
    if (group.length)
      blocks.push({
        kind: 'list',
        title: STATUS_TITLE[status],
        items: group.map((v) => verdictItem(v, multiInstance, names.length > 1)),
        total: group.length,
      });
  }
  blocks.push({ kind: 'context', text: `Judged now by Prometheus; each line links to its query's graph.` });
  blocks.push({ kind: 'actions', buttons: [{ label: 'Check again', command: commandText(cmd) }] });
  return { ok: true, command: 'check', title, data: { checks: names, verdicts, counts }, blocks };
}

export const checkCommand: CommandSpec<'check'> = {
  name: 'check',
  summary: 'Judge apps by metric checks now (Prometheus): failing first, with value, threshold and a link',
  usage: CHECK_USAGE,
  help: [
    'Examples:',
    '`check error-rate checkout-*` — one check on every checkout app',
    '`check error-rate,latency-p99 -l team=payments cluster=prod-eu1`',
    'A check is a PromQL query in rollcall.yaml with the app as placeholders, and one threshold:',
    '`checks: {error-rate: {query: \'sum(rate(http_requests_total{app="{{app}}",code=~"5.."}[{{window}}])) / sum(rate(http_requests_total{app="{{app}}"}[{{window}}]))\', failAbove: 0.05, window: 2m}}`',
    'Several series: the worst decides. No data fails unless the check says `noData: pass` or `inconclusive`; a Prometheus that does not answer is inconclusive, never a pass.',
  ].join('\n'),
  readOnly: true,
  run: runCheck,
};

function listing(name: string, c: ReturnType<CheckService['check']>): CheckListing {
  const { threshold, failWhen } = thresholdOf(c);
  return {
    name,
    query: c.query,
    failWhen,
    threshold,
    window: c.window,
    noData: c.noData,
    description: c.description ?? null,
  };
}

/** Whose apps a Prometheus judges: `*` stands for every instance that names none of its own. */
function servedBy(instances: readonly string[]): string {
  const named = instances.filter((i) => i !== '*');
  const parts = [
    ...(instances.includes('*') ? ['every instance without its own'] : []),
    ...(named.length ? [`instance${named.length > 1 ? 's' : ''} ${named.join(', ')}`] : []),
  ];
  return parts.join(', and ');
}

async function runChecks(cmd: ParsedCommand, ctx: CommandContext): Promise<ReplyOf<'checks'>> {
  checkOptions(cmd, [], CHECKS_USAGE);
  checkPositional(cmd, 0, CHECKS_USAGE);
  const service = ctx.services.checks;
  const checks = service ? service.names().map((n) => listing(n, service.check(n))) : [];
  const prometheus = service ? [...service.targets] : [];
  const blocks: ReplyBlock[] = [{ kind: 'header', text: 'Metric checks' }];
  if (!checks.length) {
    blocks.push({
      kind: 'text',
      text: 'No metric checks are configured: add `prometheus: {url: ...}` and `checks:` to rollcall.yaml (`help check` shows one).',
      tone: 'info',
    });
  } else {
    blocks.push({
      kind: 'list',
      items: checks.map((c) => ({
        text: `*${c.name}* · fails ${c.failWhen} ${c.threshold} · window ${typedDuration(c.window)} · no data: ${c.noData}`,
        detail: `${c.description ? `${c.description}\n` : ''}${code(c.query)}`,
      })),
    });
    blocks.push({
      kind: 'context',
      text: `Prometheus: ${prometheus.map((p) => `${p.url} (${servedBy(p.instances)})`).join('; ')}. Run one: ${code(`check ${checks[0].name} APP`)}`,
    });
  }
  return { ok: true, command: 'checks', title: 'Metric checks', data: { checks, prometheus }, blocks };
}

export const checksCommand: CommandSpec<'checks'> = {
  name: 'checks',
  summary: 'The metric checks rollcall.yaml configures: query, threshold, window, what no data means',
  usage: CHECKS_USAGE,
  readOnly: true,
  run: runChecks,
};
