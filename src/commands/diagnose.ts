import { SEVERITY_RANK, diagnoseAppSet, diagnoseFleet, type Finding } from '../fleet/diagnose.js';
import { alertsSchema } from '../infra/config/schema.js';
import { FLEET_RULES, diagnoseFleetWide } from '../fleet/rules/index.js';
import { TONE_EMOJI, plural } from '../core/format.js';
import { booleanOption, checkOptions, checkPositional } from './parse.js';
import { type CommandContext, type ParsedCommand, type CommandSpec } from './registry.js';
import type { ReplyBlock, ReplyButton } from '../core/reply.js';
import type { ReplyOf } from './replies.js';
import { DETAIL_MEANING, diagnoseOptions, findAppSet, findingsBlock, noRolloutReply } from './rollout.js';
import { unknownTarget } from './suggest.js';

const USAGE = 'diagnose [APPSET] [instance=X] [detail=true]';

function summaryText(findings: Finding[], scope: string): ReplyBlock {
  if (!findings.length) return { kind: 'text', text: `${TONE_EMOJI.ok} No findings for ${scope}.`, tone: 'ok' };
  const critical = findings.filter((f) => f.severity === 'critical').length;
  const warnings = findings.filter((f) => f.severity === 'warning').length;
  const tone = critical ? 'error' : warnings ? 'warn' : 'info';
  const counts = [
    critical && `${critical} critical`,
    warnings && plural(warnings, 'warning'),
    findings.length - critical - warnings && `${findings.length - critical - warnings} info`,
  ]
    .filter(Boolean)
    .join(', ');
  return {
    kind: 'text',
    text: `${TONE_EMOJI[tone]} *${plural(findings.length, 'finding')}* for ${scope}: ${counts}.`,
    tone,
  };
}

export async function runDiagnose(cmd: ParsedCommand, ctx: CommandContext): Promise<ReplyOf<'diagnose'>> {
  checkOptions(cmd, ['instance', 'detail'], USAGE);
  checkPositional(cmd, 1, USAGE);
  const detail = booleanOption(cmd, 'detail', DETAIL_MEANING);
  // The same question with everything: a button in Slack, a command to type in a terminal.
  const detailButton = (command: string): ReplyButton[] =>
    detail ? [] : [{ label: 'Show detail', command: `${command} detail=true` }];
  const fleet = ctx.services.fleet;
  const opts = diagnoseOptions(ctx);
  const name = cmd.positional[0];
  const multiInstance = fleet.instances().length > 1;

  if (name) {
    const target = findAppSet(fleet, name, cmd.options.instance, 'diagnose');
    const title = `Diagnosis of ${name}${multiInstance ? ` (${target.instance})` : ''}`;
    if (target.appSet.spec?.strategy?.type !== 'RollingSync') {
      const reply = noRolloutReply('diagnose', fleet, target, title);
      return { ...reply, data: { appSet: name, instance: target.instance, findings: [] } };
    }
    const findings = diagnoseAppSet(fleet, target, opts).map((f) => ({
      ...f,
      appSet: f.appSet ?? name,
      instance: f.instance ?? target.instance,
    }));
    const blocks: ReplyBlock[] = [{ kind: 'header', text: title }, summaryText(findings, `\`${name}\``)];
    const list = findingsBlock(findings, { max: 30, detail });
    if (list) blocks.push(list);
    const suffix = fleet.appSetsNamed(name).length > 1 ? ` instance=${target.instance}` : '';
    blocks.push({
      kind: 'actions',
      buttons: [
        ...(findings.length ? detailButton(`diagnose ${name}${suffix}`) : []),
        { label: 'Show rollout', command: `rollout ${name}${suffix}` },
        { label: 'Plan', command: `plan ${name}${suffix}` },
      ],
    });
    return {
      ok: true,
      command: 'diagnose',
      title,
      data: { appSet: name, instance: target.instance, findings },
      blocks,
    };
  }

  const instance = cmd.options.instance;
  if (instance && !fleet.instances().includes(instance)) throw unknownTarget(fleet, instance, 'instance');
  // Same scope as diagnoseFleet: strategy type RollingSync, with or without steps.
  const rolling = fleet
    .appSets()
    .filter((s) => s.appSet.spec?.strategy?.type === 'RollingSync' && (!instance || s.instance === instance));
  const findings = [
    ...diagnoseFleet(fleet, opts),
    ...diagnoseFleetWide(fleet, opts.now, ctx.services.config?.alerts ?? alertsSchema.parse({})),
  ]
    .filter((f) => !instance || f.instance === instance)
    .sort((a, b) => SEVERITY_RANK[a.severity] - SEVERITY_RANK[b.severity]);
  const scope = rolling.length ? plural(rolling.length, 'RollingSync appset') : 'the fleet';
  const title = `Diagnosis of ${scope}${instance ? ` on ${instance}` : ''}`;
  const blocks: ReplyBlock[] = [{ kind: 'header', text: title }];
  if (!rolling.length && !findings.length) {
    blocks.push({
      kind: 'text',
      text: `${TONE_EMOJI.info} No ApplicationSet uses RollingSync${instance ? ` on ${instance}` : ''}: there is no progressive sync to diagnose.`,
      tone: 'info',
    });
  } else {
    blocks.push(summaryText(findings, scope));
    const list = findingsBlock(findings, { withAppSet: true, max: 30, detail });
    if (list) blocks.push(list);
    const worst = new Map<string, string>();
    for (const f of findings) {
      if (f.severity !== 'critical' || !f.appSet || worst.size >= 3) continue;
      const ambiguous = fleet.appSetsNamed(f.appSet).length > 1 && f.instance;
      worst.set(`${f.instance}/${f.appSet}`, `rollout ${f.appSet}${ambiguous ? ` instance=${f.instance}` : ''}`);
    }
    const buttons = [
      ...(findings.length ? detailButton(`diagnose${instance ? ` instance=${instance}` : ''}`) : []),
      ...[...worst.values()].map((command) => ({ label: `Show ${command}`, command })),
    ];
    if (buttons.length) blocks.push({ kind: 'actions', buttons });
  }
  return { ok: true, command: 'diagnose', title, data: { appSets: rolling.length, findings }, blocks };
}

export const diagnoseCommand: CommandSpec<'diagnose'> = {
  name: 'diagnose',
  aliases: ['diag', 'why'],
  summary:
    'Findings on RollingSync appsets and on apps down (Degraded or Missing): a stable rule id, a severity, the Argo CD behaviour behind it and the fix',
  usage: USAGE,
  help: [
    'Examples:',
    '`diagnose` — every appset with RollingSync',
    '`diagnose progressive-infra`',
    "`diagnose detail=true` — each finding whole: the per-app messages, why, and the whole fix (by default: what is wrong and the fix's first step)",
    "Rules (RollingSync appsets, and apps down: Degraded after their sync, with the revision, or down longer than app-degraded's `after`):",
    ...FLEET_RULES.filter((r) => r.appSet || r.diagnoseFleet).map((r) => `\`${r.meta.id}\` — ${r.meta.title}`),
  ].join('\n'),
  readOnly: true,
  // Rules over the mirror, the config and the clock: a crowd asking mid-incident costs one pass.
  sharedAnswer: true,
  run: runDiagnose,
};
