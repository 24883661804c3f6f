import { plural } from '../../../../core/format.js';
import type { ReplyBlock, ReplyItem } from '../../../../core/reply.js';
import type { ActionPreview, PreviewContext } from '../types.js';
import {
  planRolloutAction,
  rolloutActionInput,
  type PlannedRollout,
  type RolloutActionInput,
  type RolloutActionPlan,
  type SkippedRollout,
} from './plan.js';
import { expectedText, whereItStands } from './verbs.js';

const SHOWN = 20;
const literal = (s: string) => `\`${s.replace(/`/g, "'")}\``;

const rolloutItem = (r: PlannedRollout, multiInstance: boolean): ReplyItem => ({
  text: `${r.app} · Rollout ${r.name} · ${whereItStands(r.before)}`,
  detail: `${multiInstance ? `${r.instance}/` : ''}${r.cluster} · offered now`,
});

const skippedItem = (s: SkippedRollout, multiInstance: boolean): ReplyItem => ({
  text: `${s.app} · Rollout ${s.name}${s.before ? ` · ${whereItStands(s.before)}` : ''}`,
  detail: `${multiInstance ? `${s.instance}/` : ''}${s.cluster} · skipped: ${s.reason}`,
  tone: 'warn',
});

function previewBlocks(input: RolloutActionInput, plan: RolloutActionPlan, multiInstance: boolean): ReplyBlock[] {
  const count = plan.waves.reduce((n, w) => n + w.rollouts.length, 0);
  const strategies = new Set(plan.waves.flatMap((w) => w.rollouts.map((r) => r.before.strategy)));
  const expected = [...strategies].map((s) => expectedText(plan.action, s)).join(' / ');
  const blocks: ReplyBlock[] = [
    {
      kind: 'fields',
      fields: [
        { label: 'Argo CD action', value: `${literal(plan.action)} on ${plural(count, 'Rollout')}, each sent once` },
        { label: 'Skipped', value: String(plan.skipped.length) },
        {
          label: 'Waves',
          value: plan.waves.map((w) => `${literal(w.name)}: ${w.rollouts.length}`).join(' → ') || 'none',
        },
        { label: 'Then waits for', value: count ? `${expected}, up to ${input.timeout / 1000}s each` : '—' },
      ],
    },
  ];
  plan.waves.forEach((w, i) =>
    blocks.push({
      kind: 'list',
      title: `Wave ${i + 1}/${plan.waves.length}: ${literal(w.name)} · ${plural(w.rollouts.length, 'Rollout')} · ${Math.min(w.maxUpdate, w.rollouts.length)} at a time`,
      items: w.rollouts.slice(0, SHOWN).map((r) => rolloutItem(r, multiInstance)),
      total: w.rollouts.length,
    }),
  );
  if (plan.skipped.length)
    blocks.push({
      kind: 'list',
      title: `Skipped: Argo CD does not offer ${literal(plan.action)} on these now`,
      items: plan.skipped.slice(0, SHOWN).map((s) => skippedItem(s, multiInstance)),
      total: plan.skipped.length,
    });
  blocks.push({
    kind: 'context',
    text:
      `What is offered is Argo CD's own answer for each Rollout as it is now (GET …/resource/actions). ` +
      `Each action goes through POST …/resource/actions/v2 and needs \`applications, action/argoproj.io/Rollout/${plan.action}\` on the app.`,
  });
  return blocks;
}

function summaryLine(plan: RolloutActionPlan, input: RolloutActionInput): string {
  const count = plan.waves.reduce((n, w) => n + w.rollouts.length, 0);
  const apps = new Set(plan.waves.flatMap((w) => w.rollouts.map((r) => `${r.instance}/${r.app}`))).size;
  const clusters = new Set(plan.waves.flatMap((w) => w.rollouts.map((r) => `${r.instance}/${r.cluster}`))).size;
  const verb =
    input.verb === 'promote' && input.full ? 'Promote fully' : input.verb[0].toUpperCase() + input.verb.slice(1);
  if (!count)
    return `Nothing to ${input.verb}: Argo CD offers ${literal(plan.action)} on none of the ${plural(plan.skipped.length, 'Rollout')} of ${literal(input.selector)} now (${[...new Set(plan.skipped.map((s) => s.reason))].slice(0, 2).join('; ')}).`;
  return `${verb} ${plural(count, 'Rollout')} (${apps} app${apps === 1 ? '' : 's'} on ${plural(clusters, 'cluster')}) with Argo CD's ${literal(plan.action)}${plan.waves.length > 1 ? ` in ${plural(plan.waves.length, 'wave')}` : ''}${plan.skipped.length ? `; ${plan.skipped.length} skipped, not offered` : ''}.`;
}

export async function previewRolloutAction(ctx: PreviewContext): Promise<ActionPreview> {
  const input = rolloutActionInput.parse(ctx.input);
  const plan = await planRolloutAction(ctx, input);
  const rollouts = plan.waves.flatMap((w) => w.rollouts);
  const targets = [...new Map(rollouts.map((r) => [`${r.instance}/${r.app}`, r])).values()];
  return {
    targets: targets.map((r) => ({ instance: r.instance, app: r.app, cluster: r.cluster })),
    summary: summaryLine(plan, input),
    data: { plan },
    blocks: previewBlocks(input, plan, ctx.services.fleet.instances().length > 1),
    empty: rollouts.length === 0,
  };
}
