import { describe, expect, it } from 'vitest';
import { truncate } from '../../src/core/format.js';
import { cutToLimit, renderBlocks, renderFormModal } from '../../src/views/blocks.js';

// 😀 is two UTF-16 units (a surrogate pair); é is one.
const GRIN = '😀';

describe('truncate (core): a word cut', () => {
  it.each([
    ['under the limit', 'deploy payments', 20, 'deploy payments'],
    ['exactly at the limit', 'deploy payments', 15, 'deploy payments'],
    ['over, ending at the last space before the cut', 'deploy payments now please', 18, 'deploy payments…'],
    ['over, one long word: cut mid-word', 'x'.repeat(30), 10, `${'x'.repeat(9)}…`],
    ['over, the only space early: still at the space, never mid-word', 'ab cdefghijklmnop', 10, 'ab…'],
    [
      'a URL is never cut: the text ends before it',
      'failed: Post https://webhook.svc:443/validate',
      30,
      'failed: Post…',
    ],
    ['the cut falling on a space keeps the whole last word', 'deploy payments now', 16, 'deploy payments…'],
    ['multi-byte letters count one each', 'éééé éééé éééé', 12, 'éééé éééé…'],
    ['never half an emoji', `ab${GRIN}${GRIN}${GRIN}`, 5, `ab${GRIN}…`],
    ['an emoji just fitting is kept whole', `abc${GRIN}defgh`, 6, `abc${GRIN}…`],
  ])('%s', (_, text, max, want) => {
    const out = truncate(text, max);
    expect(out).toBe(want);
    expect(out.length).toBeLessThanOrEqual(max);
  });

  it('a modal-sized title ends on a whole word', () => {
    expect(truncate('Rollback auth payments-service-eu', 24)).toBe('Rollback auth…');
  });

  it("keep 'ends': the head and the root cause at the tail, each whole words, within max", () => {
    const chain =
      'Internal error occurred: failed calling webhook "webhook.cert-manager.io": failed to call webhook: Post "https://cert-manager-webhook.cert-manager.svc:443/validate?timeout=30s": context deadline exceeded';
    const out = truncate(chain, 120, 'ends');
    expect(out.length).toBeLessThanOrEqual(120);
    expect(out).toMatch(/^Internal error occurred: failed calling webhook .* … .*context deadline exceeded$/);
    // Every word of the result is a whole word of the chain: nothing cut inside the URL or a name.
    const words = new Set(chain.split(' '));
    for (const word of out.split(' ').filter((w) => w !== '…')) expect(words).toContain(word);
  });

  it("keep 'ends' on text without spaces falls back to a head cut", () => {
    expect(truncate('x'.repeat(30), 10, 'ends')).toBe(`${'x'.repeat(9)}…`);
  });
});

describe('cutToLimit (views): a hard cut to a Slack limit', () => {
  it.each([
    ['under the limit', 'a b', 5, 'a b'],
    ['exactly at the limit', 'abcde', 5, 'abcde'],
    ['over, with spaces: cut where the limit falls, not at a word', 'deploy payments now', 10, 'deploy pa…'],
    ['over, without spaces', 'x'.repeat(12), 10, `${'x'.repeat(9)}…`],
    ['multi-byte letters count one each', 'é'.repeat(12), 10, `${'é'.repeat(9)}…`],
    ['never half an emoji', `abcd${GRIN}${GRIN}`, 6, 'abcd…'],
  ])('%s', (_, text, max, want) => {
    const out = cutToLimit(text, max);
    expect(out).toBe(want);
    expect(out.length).toBeLessThanOrEqual(max);
  });
});

describe('where each cut is used', () => {
  it('a header is cut hard at 150, a modal title at a word within 24', () => {
    const header = renderBlocks({
      ok: true,
      command: 'x',
      title: 't',
      data: {},
      blocks: [{ kind: 'header', text: `${'word '.repeat(40)}` }],
    });
    expect((header.blocks[0] as any).text.text).toBe(`${'word '.repeat(29)}word…`);
    const modal = renderFormModal({ command: 'x', title: 'Rollback auth payments-service-eu', fields: [] } as never);
    expect(modal.title.text).toBe('Rollback auth…');
  });
});
