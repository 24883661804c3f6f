import { describe, expect, it } from 'vitest';
import type { Reply, ReplyBlock, ReplyButton, ReplyItem, Tone } from '../../src/core/reply.js';
import { errorReply } from '../../src/core/reply.js';
import {
  baseActionId,
  decodePageValue,
  encodePageValue,
  ITEMS_PER_PAGE,
  renderBlocks,
  renderFormModal,
  renderHomeView,
  splitText,
} from '../../src/views/blocks.js';
import { allText, expectWithinSlackLimits, slackLimitViolations } from '../slack/limits.js';

const reply = (blocks: ReplyBlock[], extra: Partial<Reply> = {}): Reply => ({
  ok: true,
  command: 'status',
  title: 'Fleet status',
  data: {},
  blocks,
  ...extra,
});
const items = (n: number, detail = ''): ReplyItem[] =>
  Array.from({ length: n }, (_, i) => ({ text: `app-${i + 1}`, tone: 'warn', ...(detail ? { detail } : {}) }));

/** Every `app-N` name in a rendering, in order. */
const shownItems = (blocks: unknown[]) =>
  [...allText(blocks as any[]).matchAll(/\bapp-(\d+)\b/g)].map((m) => Number(m[1]));

describe('renderBlocks', () => {
  it('renders header, fields, tone emoji, context, divider and a fallback text', () => {
    const out = renderBlocks(
      reply([
        { kind: 'header', text: 'Fleet status' },
        {
          kind: 'fields',
          fields: [
            { label: 'Apps', value: '540' },
            { label: 'Health', value: 'Degraded 12' },
          ],
        },
        { kind: 'text', text: '*12 apps need attention*', tone: 'error' },
        { kind: 'divider' },
        { kind: 'context', text: 'as of now' },
      ]),
    );
    expect(out.blocks).toEqual([
      { type: 'header', text: { type: 'plain_text', text: 'Fleet status', emoji: true } },
      {
        type: 'section',
        fields: [
          { type: 'mrkdwn', text: '*Apps*\n540' },
          { type: 'mrkdwn', text: '*Health*\nDegraded 12' },
        ],
      },
      { type: 'section', text: { type: 'mrkdwn', text: ':x: *12 apps need attention*' } },
      { type: 'divider' },
      { type: 'context', elements: [{ type: 'mrkdwn', text: 'as of now' }] },
    ]);
    expect(out.text).toBe('Fleet status — *12 apps need attention*');
  });

  it('maps every tone to its emoji and does not double an emoji the text already starts with', () => {
    const tones: [Tone, string][] = [
      ['ok', ':white_check_mark:'],
      ['error', ':x:'],
      ['warn', ':warning:'],
      ['progress', ':hourglass_flowing_sand:'],
      ['unknown', ':grey_question:'],
      ['info', ':information_source:'],
    ];
    for (const [tone, emoji] of tones)
      expect(allText(renderBlocks(reply([{ kind: 'text', text: 'x', tone }])).blocks)).toBe(`${emoji} x`);
    const err = renderBlocks(errorReply('status', 'unknown_target', 'No app `auht`', ['auth']));
    expect(allText(err.blocks)).toBe(':x: No app `auht`\nDid you mean: `auth`?');
    expect(err.text).toBe('Error — No app `auht`');
  });

  it("escapes &, < and > in text that is not our own markup (Argo CD's <nil>, a user's <!channel>), keeping links and mentions", () => {
    const out = renderBlocks(
      reply([
        {
          kind: 'text',
          text: 'No application named `<!channel>`; op: error: <nil> & retry limit > 5 by <@U0ALICE> <https://cd.example/a|a & b>',
        },
        { kind: 'text', text: '> quoted first line' },
        { kind: 'list', items: [{ text: 'x', detail: 'Deployment/x: <nil>' }] },
      ]),
    );
    const text = allText(out.blocks);
    expect(text).toContain(
      'No application named `&lt;!channel&gt;`; op: error: &lt;nil&gt; &amp; retry limit &gt; 5 by <@U0ALICE> <https://cd.example/a|a & b>',
    );
    expect(text).toContain('> quoted first line');
    expect(text).toContain('Deployment/x: &lt;nil&gt;');
    expect(text).not.toContain('<!channel>');
    // The notification text too.
    expect(out.text).not.toContain('<!channel>');
  });

  it('links list items to their URL, keeping | and > out of the label, and keeps links already in the text', () => {
    const out = renderBlocks(
      reply([
        {
          kind: 'list',
          title: 'Problems',
          items: [
            {
              text: 'a|b>c',
              url: 'https://cd.example/applications/a',
              tone: 'error',
              detail: 'CrashLoopBackOff\nrestarting',
            },
            { text: '<https://cd.example/applications/b|b> · prod', url: 'https://cd.example/applications/b' },
          ],
        },
      ]),
    );
    const text = allText(out.blocks);
    // Each detail line stays on its own line, indented under its item.
    expect(text).toContain(':x: <https://cd.example/applications/a|a b c>\n      CrashLoopBackOff\n      restarting');
    expect(text).toContain('\n<https://cd.example/applications/b|b> · prod');
    expect(text).toContain('*Problems* (2)');
  });

  it('splits more than 10 fields over several sections and cuts a field at 2000 characters', () => {
    const fields = Array.from({ length: 23 }, (_, i) => ({ label: `f${i}`, value: 'v'.repeat(i === 0 ? 5000 : 3) }));
    const out = renderBlocks(reply([{ kind: 'fields', fields }]));
    expect(out.blocks.map((b: any) => b.fields.length)).toEqual([10, 10, 3]);
    expect((out.blocks[0] as any).fields[0].text).toHaveLength(2000);
    expectWithinSlackLimits(out);
  });

  it('splits long text on line boundaries into sections of at most 3000 characters, losing nothing', () => {
    const lines = Array.from({ length: 200 }, (_, i) => `line ${i} ${'x'.repeat(40)}`);
    const out = renderBlocks(reply([{ kind: 'text', text: lines.join('\n') }]));
    const texts = out.blocks.map((b: any) => b.text.text as string);
    expect(texts.length).toBeGreaterThan(1);
    for (const t of texts) expect(t.length).toBeLessThanOrEqual(3000);
    expect(texts.join('\n')).toBe(lines.join('\n'));
    expect(splitText('a b c', 3)).toEqual(['a b', 'c']);
    expect(splitText('x'.repeat(7), 3)).toEqual(['xxx', 'xxx', 'x']);
  });

  it('truncates a header to 150 characters', () => {
    const out = renderBlocks(reply([{ kind: 'header', text: 'h'.repeat(400) }]));
    const t = (out.blocks[0] as any).text.text as string;
    expect(t).toHaveLength(150);
    expect(t.endsWith('…')).toBe(true);
  });

  it('turns buttons into cmd / named / url buttons with unique action ids inside a block', () => {
    const buttons: ReplyButton[] = [
      { label: 'Refresh', command: 'status auth-*' },
      { label: 'Show rollout', command: 'rollout payments', style: 'primary' },
      { label: 'Confirm', action: 'run.confirm', value: 'run-7', style: 'primary' },
      { label: 'Open in Argo CD', url: 'https://cd.example/applications/a' },
      { label: 'b'.repeat(100), command: 'x'.repeat(2001) },
    ];
    const out = renderBlocks(reply([{ kind: 'actions', buttons }]));
    const els = (out.blocks[0] as any).elements;
    expect(els.map((e: any) => [e.action_id, e.value, e.url])).toEqual([
      ['cmd', 'status auth-*', undefined],
      ['cmd~1', 'rollout payments', undefined],
      ['run.confirm', 'run-7', undefined],
      ['link', undefined, 'https://cd.example/applications/a'],
    ]); // the command too long for a button value is dropped, not cut into another command
    expect(els[1].style).toBe('primary');
    expect(baseActionId('cmd~1')).toBe('cmd');
    expect(baseActionId('run.confirm')).toBe('run.confirm');
    expect(baseActionId('a~b')).toBe('a~b');
  });

  it('puts more than 25 buttons into several actions blocks', () => {
    const buttons = Array.from({ length: 60 }, (_, i) => ({ label: `b${i}`, command: `app app-${i}` }));
    const out = renderBlocks(reply([{ kind: 'actions', buttons }]));
    expect(out.blocks.map((b: any) => b.elements.length)).toEqual([25, 25, 10]);
    expectWithinSlackLimits(out);
  });

  it('paginates list items with a More button whose value re-runs the command, each item on exactly one page', () => {
    const r = reply([
      { kind: 'header', text: 'Rollout payments' },
      { kind: 'fields', fields: [{ label: 'Strategy', value: 'RollingSync' }] },
      { kind: 'list', title: 'Step 1', items: items(30) },
      { kind: 'list', title: 'Step 2', items: items(70).map((it, i) => ({ ...it, text: `app-${i + 31}` })) },
      { kind: 'actions', buttons: [{ label: 'Refresh', command: 'rollout payments' }] },
    ]);
    const first = renderBlocks(r, { commandText: 'rollout payments' });
    expect(first.pages).toBe(4);
    const seen: number[] = [];
    for (let page = 1; page <= first.pages; page++) {
      const out = renderBlocks(r, { commandText: 'rollout payments', page });
      expectWithinSlackLimits(out);
      seen.push(...shownItems(out.blocks));
      const nav = out.blocks
        .filter((b: any) => b.type === 'actions')
        .flatMap((b: any) => b.elements)
        .filter((e: any) => e.action_id.startsWith('page'));
      const labels = nav.map((e: any) => e.text.text);
      if (page < 4) expect(labels).toContain(`More (page ${page + 1}/4)`);
      if (page > 1) expect(labels).toContain(`Back (page ${page - 1}/4)`);
      for (const e of nav) expect(decodePageValue(e.value)?.command).toBe('rollout payments');
      // Page 1 carries the summary; later pages repeat only the header.
      expect(allText(out.blocks).includes('RollingSync')).toBe(page === 1);
      expect((out.blocks[0] as any).type).toBe('header');
    }
    expect(seen).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(allText(renderBlocks(r, { commandText: 'rollout payments', page: 2 }).blocks)).toContain(
      '*Step 1* (26–30 of 30)',
    );
  });

  it('clamps an out-of-range page', () => {
    const r = reply([{ kind: 'list', items: items(30) }]);
    expect(renderBlocks(r, { commandText: 'x', page: 99 }).page).toBe(2);
    expect(renderBlocks(r, { commandText: 'x', page: 0 }).page).toBe(1);
  });

  it('collapses to a count when it cannot paginate (no command text, or one too long for a button value)', () => {
    const r = reply([{ kind: 'list', items: items(60) }]);
    for (const out of [renderBlocks(r), renderBlocks(r, { commandText: `status ${'a'.repeat(2000)}` })]) {
      expect(shownItems(out.blocks)).toHaveLength(ITEMS_PER_PAGE);
      expect(allText(out.blocks)).toContain(`…and ${60 - ITEMS_PER_PAGE} more not shown`);
      expect(out.blocks.some((b: any) => b.type === 'actions')).toBe(false);
    }
  });

  it('says when a command itself cut a list short (total)', () => {
    const out = renderBlocks(reply([{ kind: 'list', title: 'Problems', items: items(15), total: 540 }]));
    expect(allText(out.blocks)).toContain('*Problems* (1–15 of 540)');
    expect(allText(out.blocks)).toContain('Showing 15 of 540');
  });

  it('cuts a reply with too many blocks to 50, saying so', () => {
    const out = renderBlocks(
      reply(Array.from({ length: 80 }, (_, i) => ({ kind: 'text' as const, text: `paragraph ${i}` }))),
    );
    expect(out.blocks).toHaveLength(50);
    expect(allText(out.blocks.slice(-1))).toContain('31 more blocks not shown');
    expectWithinSlackLimits(out);
  });

  it('round-trips page values', () => {
    expect(decodePageValue(encodePageValue({ command: 'status -l "env in (prod)"', page: 3 }))).toEqual({
      command: 'status -l "env in (prod)"',
      page: 3,
    });
    expect(decodePageValue('garbage')).toBeUndefined();
    expect(decodePageValue('{"c":"x","p":0}')).toBeUndefined();
  });
});

// Property: whatever a command builds, Slack accepts the rendering.
describe('renderBlocks limits (generated replies)', () => {
  function rng(seed: number) {
    let s = seed >>> 0;
    return () => {
      s = (s * 1664525 + 1013904223) >>> 0;
      return s / 2 ** 32;
    };
  }
  const TONES: (Tone | undefined)[] = ['ok', 'warn', 'error', 'progress', 'unknown', 'info', undefined];

  function generate(r: () => number): { reply: Reply; commandText?: string; page: number } {
    const int = (max: number) => Math.floor(r() * max);
    const sizes = [0, 1, 5, 80, 149, 151, 1999, 2001, 2999, 3001, 9000, 40_000];
    const small = [0, 1, 5, 80];
    // Random 64-char seeds, repeated to the wanted size: generating char by char would dominate the test.
    const seeds = new Map<string, string[]>();
    const seedOf = (alphabet: string) => {
      let list = seeds.get(alphabet);
      if (!list) {
        list = Array.from({ length: 32 }, () =>
          Array.from({ length: 64 }, () => alphabet[int(alphabet.length)]).join(''),
        );
        seeds.set(alphabet, list);
      }
      return list[int(list.length)];
    };
    const str = (alphabet = 'abc xyz-*_`\n|<>:', pool = sizes) => {
      const n = pool[int(pool.length)];
      return n
        ? seedOf(alphabet)
            .repeat(Math.ceil(n / 64))
            .slice(0, n)
        : '';
    };
    const button = (): ReplyButton => {
      const k = int(4);
      if (k === 0) return { label: str(), command: str('abc =*') };
      if (k === 1) return { label: str(), action: ['run.confirm', 'run.pause', 'x'.repeat(300)][int(3)], value: str() };
      if (k === 2) return { label: str(), url: `https://cd.example/${str('abc')}` };
      return { label: str() };
    };
    const block = (): ReplyBlock => {
      switch (int(7)) {
        case 0:
          return { kind: 'header', text: str() };
        case 1:
          return { kind: 'text', text: str(), tone: TONES[int(TONES.length)] };
        case 2:
          return { kind: 'fields', fields: Array.from({ length: int(40) }, () => ({ label: str(), value: str() })) };
        case 3: {
          const n = [0, 3, 30, 700, 3000][int(5)];
          // Huge lists get short items and long ones few items, to keep the generator itself fast.
          const pool = n > 30 ? small : sizes;
          return {
            kind: 'list',
            title: r() < 0.5 ? str() : undefined,
            items: Array.from({ length: n }, () => ({
              text: str(undefined, pool),
              detail: r() < 0.5 ? str(undefined, pool) : undefined,
              tone: TONES[int(TONES.length)],
              url: r() < 0.3 ? 'https://cd.example/a' : undefined,
            })),
            total: r() < 0.2 ? n + 10 : undefined,
          };
        }
        case 4:
          return { kind: 'context', text: str() };
        case 5:
          return { kind: 'actions', buttons: Array.from({ length: int(80) }, button) };
        default:
          return { kind: 'divider' };
      }
    };
    const blocks = Array.from({ length: [0, 1, 4, 20, 70][int(5)] }, block);
    const reply: Reply = {
      ok: r() < 0.8,
      command: 'status',
      title: str(),
      data: {},
      blocks,
      ...(r() < 0.2 ? { error: { code: 'usage', message: str() } } : {}),
    };
    const commandText = r() < 0.7 ? (r() < 0.8 ? 'status -l env=prod' : 'x'.repeat(2100)) : undefined;
    return { reply, commandText, page: 1 + int(6) };
  }

  it('respects every Block Kit limit for 150 generated replies, in messages and views', () => {
    const r = rng(20261202);
    for (let i = 0; i < 150; i++) {
      const { reply, commandText, page } = generate(r);
      const out = renderBlocks(reply, { commandText, page });
      const violations = slackLimitViolations(out.blocks, 50);
      if (violations.length) throw new Error(`case ${i}: ${violations.slice(0, 3).join('; ')}`);
      expect(out.text.length).toBeGreaterThan(0);
      expect(out.text.length).toBeLessThanOrEqual(3000);
      const view = renderBlocks(reply, { commandText, page, maxBlocks: 100 });
      expect(slackLimitViolations(view.blocks, 100)).toEqual([]);
    }
  });

  it('keeps the Home view within 100 blocks however many replies it stacks', () => {
    const r = rng(7);
    const replies = Array.from({ length: 8 }, () => generate(r).reply);
    const view = renderHomeView(replies);
    expect(view.type).toBe('home');
    expect(slackLimitViolations(view.blocks, 100)).toEqual([]);
  });
});

describe('renderFormModal', () => {
  it('builds one input per field, keyed by the field name, within modal limits', () => {
    const view = renderFormModal(
      {
        action: 'run.params',
        title: 'Parameters for bulk-sync and more',
        intro: 'Runbook *bulk-sync*',
        metadata: 'bulk-sync',
        fields: [
          { name: 'selector', label: 'Selector', type: 'selector', required: true, hint: 'which apps' },
          { name: 'prune', label: 'Prune', type: 'bool', default: 'false' },
          { name: 'gate', label: 'Gate', type: 'enum', options: ['healthy', 'synced', 'none'], default: 'healthy' },
          { name: 'waveTimeout', label: 'Wave timeout', type: 'duration', default: '10m' },
        ],
      },
      '{"m":"bulk-sync"}',
    );
    expect(view.callback_id).toBe('form:run.params');
    expect(view.title.text.length).toBeLessThanOrEqual(24);
    expect(view.private_metadata).toBe('{"m":"bulk-sync"}');
    const inputs = view.blocks.filter((b: any) => b.type === 'input') as any[];
    expect(inputs.map((b) => [b.block_id, b.optional, b.element.type])).toEqual([
      ['selector', false, 'plain_text_input'],
      ['prune', true, 'static_select'],
      ['gate', true, 'static_select'],
      ['waveTimeout', true, 'plain_text_input'],
    ]);
    expect(inputs[1].element.initial_option.value).toBe('false');
    expect(inputs[2].element.options.map((o: any) => o.value)).toEqual(['healthy', 'synced', 'none']);
    expect(inputs[3].element.initial_value).toBe('10m');
  });
});

describe('code blocks', () => {
  it('fences verbatim text and escapes everything in it: a log line cannot ping, link or close the fence', () => {
    const out = renderBlocks(
      reply([{ kind: 'code', text: 'a <!channel> b\nsee <https://evil.example|Argo CD> & ``` done' }]),
    );
    expect(out.blocks).toEqual([
      {
        type: 'section',
        text: {
          type: 'mrkdwn',
          text: '```\na &lt;!channel&gt; b\nsee &lt;https://evil.example|Argo CD&gt; &amp; ` ` ` done\n```',
        },
      },
    ]);
    expectWithinSlackLimits(out);
  });

  it('keeps the head or the tail that fits one message, saying how many lines were left out', () => {
    const text = Array.from({ length: 2000 }, (_, i) => `line ${i + 1} ${'x'.repeat(60)}`).join('\n');
    for (const keep of ['head', 'tail'] as const) {
      const out = renderBlocks(
        reply([
          { kind: 'header', text: 'Logs' },
          { kind: 'code', text, keep },
        ]),
      );
      expectWithinSlackLimits(out);
      const all = allText(out.blocks as any[]);
      expect(all).toContain(keep === 'tail' ? 'line 2000 ' : 'line 1 ');
      expect(all).not.toContain(keep === 'tail' ? 'line 1 ' : 'line 2000 ');
      expect(all).toMatch(keep === 'tail' ? /…\d+ earlier lines not shown/ : /…\d+ more lines not shown/);
    }
  });
});
