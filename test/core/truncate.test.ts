import { describe, expect, it } from 'vitest';
import { truncate } from '../../src/core/format.js';
import { cutToLimit, renderBlocks, renderFormModal } from '../../src/views/blocks.js';

// 😀 is two UTF-16 units (a surrogate pair); é is one.
const GRIN = '😀';

describe('truncate (core): a word cut', () => {
  it.each([
    ['under the limit', 'deploy payments', 20, 'deploy payments'],
    ['exactly at the limit', 'deploy payments', 15, 'deploy payments'],
    ['over, ending at the last space before the cut', 'deploy payments now please', 20, 'deploy payments…'],
    ['over, one long word: cut mid-word', 'x'.repeat(30), 10, `${'x'.repeat(9)}…`],
    ['over, the last space too early (≤ 60%): cut mid-word', 'ab cdefghijklmnop', 10, 'ab cdefgh…'],
    ['multi-byte letters count one each', 'éééé éééé éééé', 12, 'éééé éééé…'],
    ['never half an emoji', `ab${GRIN}${GRIN}${GRIN}`, 5, `ab${GRIN}…`],
    ['an emoji just fitting is kept whole', `abc${GRIN}defgh`, 6, `abc${GRIN}…`],
  ])('%s', (_, text, max, want) => {
    const out = truncate(text, max);
    expect(out).toBe(want);
    expect(out.length).toBeLessThanOrEqual(max);
  });

  it('a lower minKept keeps a word cut that 0.6 would give up', () => {
    // The last space before the cut is at 13 of 24: above half, below 60%.
    const title = 'Rollback auth payments-service-eu';
    expect(truncate(title, 24)).toBe('Rollback auth payments-…');
    expect(truncate(title, 24, 0.5)).toBe('Rollback auth…');
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
