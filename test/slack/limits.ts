import { expect } from 'vitest';

/** Fails with the path of the first Block Kit limit a rendering breaks (Slack would reject it as invalid_blocks). */
export function slackLimitViolations(blocks: any[], maxBlocks = 50): string[] {
  const v: string[] = [];
  if (!Array.isArray(blocks)) return ['blocks is not an array'];
  if (blocks.length > maxBlocks) v.push(`${blocks.length} blocks > ${maxBlocks}`);
  const text = (path: string, t: any, max: number) => {
    if (!t || typeof t.text !== 'string') v.push(`${path}: missing text`);
    else if (t.text.trim().length === 0) v.push(`${path}: blank text`);
    else if (t.text.length > max) v.push(`${path}: ${t.text.length} chars > ${max}`);
  };
  blocks.forEach((b, i) => {
    const p = `blocks[${i}](${b.type})`;
    if (b.block_id !== undefined && String(b.block_id).length > 255) v.push(`${p}: block_id > 255`);
    switch (b.type) {
      case 'header':
        text(p, b.text, 150);
        if (b.text?.type !== 'plain_text') v.push(`${p}: header text must be plain_text`);
        break;
      case 'section':
        if (!b.text && !b.fields) v.push(`${p}: neither text nor fields`);
        if (b.text) text(p, b.text, 3000);
        if (b.fields) {
          if (b.fields.length > 10) v.push(`${p}: ${b.fields.length} fields > 10`);
          b.fields.forEach((f: any, j: number) => text(`${p}.fields[${j}]`, f, 2000));
        }
        break;
      case 'context':
        if (!b.elements?.length || b.elements.length > 10) v.push(`${p}: ${b.elements?.length} elements`);
        b.elements?.forEach((e: any, j: number) => text(`${p}.elements[${j}]`, e, 3000));
        break;
      case 'actions': {
        if (!b.elements?.length || b.elements.length > 25) v.push(`${p}: ${b.elements?.length} elements`);
        const ids = new Set<string>();
        b.elements?.forEach((e: any, j: number) => {
          const q = `${p}.elements[${j}]`;
          text(q, e.text, 75);
          if (!e.action_id || e.action_id.length > 255) v.push(`${q}: action_id ${e.action_id?.length}`);
          if (ids.has(e.action_id)) v.push(`${q}: duplicate action_id ${e.action_id}`);
          ids.add(e.action_id);
          if (e.value !== undefined && (e.value.length > 2000 || e.value.length === 0))
            v.push(`${q}: value ${e.value.length}`);
          if (e.url !== undefined && e.url.length > 3000) v.push(`${q}: url ${e.url.length}`);
        });
        break;
      }
      case 'divider':
      case 'input':
        break;
      default:
        v.push(`${p}: unexpected block type`);
    }
  });
  return v;
}

export function expectWithinSlackLimits(message: { text?: string; blocks?: any[] }, maxBlocks = 50): void {
  expect(
    typeof message.text === 'string' && message.text.length > 0 && message.text.length <= 40_000,
    'fallback text',
  ).toBe(true);
  expect(slackLimitViolations(message.blocks ?? [], maxBlocks)).toEqual([]);
}

/** All mrkdwn/plain text of a rendering, for content assertions. */
export function allText(blocks: any[]): string {
  const out: string[] = [];
  const walk = (x: any) => {
    if (!x || typeof x !== 'object') return;
    if (typeof x.text === 'string') out.push(x.text);
    for (const val of Object.values(x)) if (typeof val === 'object') walk(val);
  };
  blocks.forEach(walk);
  return out.join('\n');
}
