import { diagnoseAppSet } from '../fleet/diagnose.js';
import { buildRolloutPlan } from '../fleet/rollout.js';
import { isRollingSync } from '../fleet/rollingsync.js';
import { TONE_EMOJI, code, formatCount, plural } from '../core/format.js';
import { type CommandContext, type ParsedCommand, type CommandSpec } from './registry.js';
import type { ReplyBlock, ReplyItem } from '../core/reply.js';
import type { ReplyOf } from './replies.js';
import {
  concurrencyMeaning,
  diagnoseOptions,
  findAppSet,
  findingsBlock,
  findingHeadline,
  heldByBlock,
  noRolloutReply,
  pausedBlock,
  targetName,
} from './rollout.js';

const USAGE = 'plan APPSET [instance=X]';
const NAMES_SHOWN = 12;

function names(list: string[]): string {
  return (
    list.slice(0, NAMES_SHOWN).map(code).join(', ') +
    (list.length > NAMES_SHOWN ? ` and ${formatCount(list.length - NAMES_SHOWN)} more` : '')
  );
}

function stepsPhrase(steps: number[]): string {
  if (steps.length === 1) return `in step ${steps[0]}`;
  return `in steps ${steps.join(', ')}, each step only after every app of the earlier steps is Healthy`;
}

export async function runPlan(cmd: ParsedCommand, ctx: CommandContext): Promise<ReplyOf<'plan'>> {
  const name = targetName(cmd, USAGE, 'plan progressive-infra');
  const fleet = ctx.services.fleet;
  const target = findAppSet(fleet, name, cmd.options.instance, 'plan');
  const title = `Plan for ${name}${fleet.instances().length > 1 ? ` (${target.instance})` : ''}`;
  const opts = diagnoseOptions(ctx);
  if (!isRollingSync(target.appSet)) {
    const reply = noRolloutReply('plan', fleet, target, title, diagnoseAppSet(fleet, target, opts));
    return {
      ...reply,
      data: {
        appSet: reply.data.appSet,
        instance: reply.data.instance,
        strategy: reply.data.strategy,
        rollingSync: false,
        steps: [],
        unmatched: [],
        findings: reply.data.findings,
      },
    };
  }
  const plan = buildRolloutPlan(fleet, target, opts);

  const blocks: ReplyBlock[] = [{ kind: 'header', text: title }];
  const paused = pausedBlock(target, opts.now);
  if (paused) blocks.push(paused);
  // Manual gates (maxConcurrent 0) are not synced by RollingSync: count them apart, or the headline promises what will not happen.
  const pending = plan.steps.filter((s) => s.remaining.length);
  const automatic = pending.filter((s) => s.maxConcurrent !== 0);
  const gated = pending.filter((s) => s.maxConcurrent === 0);
  const toSync = automatic.reduce((n, s) => n + s.remaining.length, 0);
  const toHandSync = gated.reduce((n, s) => n + s.remaining.length, 0);
  const gateText = gated.length
    ? `${toSync ? ' ' : ''}${gated.length === 1 ? `Step ${gated[0].step} is a manual gate` : `Steps ${gated.map((s) => s.step).join(', ')} are manual gates`}: ` +
      `${plural(toHandSync, 'app')} wait${toHandSync === 1 ? 's' : ''} for a hand sync, and no later step starts until ${toHandSync === 1 ? 'it is' : 'they are'} Healthy.`
    : '';
  // A step held by failing apps syncs nothing more until they are fixed: that leads, before what would follow.
  const stuck = plan.findings.find((f) => f.rule === 'stuck-step');
  if (stuck)
    blocks.push({
      kind: 'text',
      text: `${TONE_EMOJI.error} *Blocked:* ${findingHeadline(stuck.message).replace(/\.$/, '')}. Nothing below happens until ${stuck.step !== undefined ? `step ${stuck.step}'s` : 'its'} failing apps are fixed.`,
      tone: 'error',
    });
  blocks.push({
    kind: 'text',
    text: pending.length
      ? `${toSync ? TONE_EMOJI.progress : TONE_EMOJI.warn} ${toSync ? `${stuck ? 'Once unblocked, ' : 'From here '}RollingSync will sync ${plural(toSync, 'app')} ${stepsPhrase(automatic.map((s) => s.step))}.` : ''}${gateText}`
      : `${TONE_EMOJI.ok} Nothing left to sync: every app in a step is Healthy.`,
    tone: !pending.length ? 'ok' : toSync ? 'progress' : 'warn',
  });
  const items: ReplyItem[] = plan.steps.map((s) => {
    const meaning = s.meaning || concurrencyMeaning(s.maxConcurrent);
    const gate =
      s.maxConcurrent === 0 && s.remaining.length
        ? ' — RollingSync syncs none of them; the rollout waits until someone syncs them by hand'
        : '';
    const head = `*Step ${s.step}* · ${meaning} · ${s.apps.length ? `${plural(s.apps.length, 'app')}, ${formatCount(s.remaining.length)} to sync` : 'matches no app'}${gate}`;
    return {
      text: head,
      tone: !s.apps.length ? 'warn' : s.remaining.length ? (s.maxConcurrent === 0 ? 'warn' : 'progress') : 'ok',
      detail: s.remaining.length
        ? `to sync: ${names(s.remaining)}`
        : s.apps.length
          ? `all Healthy: ${names(s.apps)}`
          : undefined,
    };
  });
  if (plan.heldBy) blocks.push(heldByBlock(plan.heldBy));
  blocks.push({ kind: 'list', title: 'Steps in order', items });
  if (plan.unmatched.length) {
    blocks.push({
      kind: 'text',
      text: `${TONE_EMOJI.warn} *Never synced by RollingSync* (in no step, ${formatCount(plan.unmatched.length)}): ${names(plan.unmatched)}. Sync them by hand or add a step that matches their labels.`,
      tone: 'warn',
    });
  }
  const findings = findingsBlock(plan.findings);
  if (findings) blocks.push(findings);
  const suffix = fleet.appSetsNamed(name).length > 1 ? ` instance=${target.instance}` : '';
  blocks.push({
    kind: 'actions',
    buttons: [
      { label: 'Show rollout', command: `rollout ${name}${suffix}` },
      { label: 'Refresh', command: `plan ${name}${suffix}` },
    ],
  });
  return { ok: true, command: 'plan', title, data: { ...plan }, blocks };
}

export const planCommand: CommandSpec<'plan'> = {
  name: 'plan',
  summary: 'What RollingSync will do from here: steps in order, apps per step, how many at a time, apps never synced',
  usage: USAGE,
  help: ['Examples:', '`plan progressive-infra`', '`plan platform instance=argocd-eu`'].join('\n'),
  readOnly: true,
  sharedAnswer: true,
  run: runPlan,
};
