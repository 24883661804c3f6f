import { describe, expect, it } from 'vitest';
import { errorReply, type Reply } from '../../src/core/reply.js';
import { mrkdwnToText, renderText } from '../../src/views/text.js';

const reply: Reply = {
  ok: true,
  command: 'status',
  title: 'Fleet status',
  data: {},
  blocks: [
    { kind: 'header', text: 'Fleet status' },
    {
      kind: 'fields',
      fields: [
        { label: 'Apps', value: '540 on 12 clusters' },
        { label: 'Health', value: 'Healthy 530 · Degraded 10' },
      ],
    },
    { kind: 'text', text: ':x: *10 apps need attention*', tone: 'error' },
    {
      kind: 'list',
      title: 'Problems, oldest first',
      items: [
        {
          text: '<https://cd.example.com/applications/argocd/auth-prod-us1|auth-prod-us1> · prod-us1',
          tone: 'error',
          detail: 'Deployment/auth Degraded: CrashLoopBackOff',
        },
        { text: 'web-prod-us2 · prod-us2', tone: 'warn', url: 'https://cd.example.com/applications/web-prod-us2' },
      ],
      total: 10,
    },
    { kind: 'context', text: 'and 188 more healthy clusters' },
    {
      kind: 'actions',
      buttons: [
        { label: 'Refresh', command: 'status' },
        { label: 'Open', url: 'https://cd.example.com' },
      ],
    },
  ],
};

describe('renderText', () => {
  it('renders headers, aligned fields, tone symbols, details, truncation counts and button hints', () => {
    expect(renderText(reply)).toBe(
      [
        'Fleet status',
        '────────────',
        '',
        'Apps:    540 on 12 clusters',
        'Health:  Healthy 530 · Degraded 10',
        '',
        '✖ 10 apps need attention',
        '',
        'Problems, oldest first (10):',
        '  ✖ auth-prod-us1 (https://cd.example.com/applications/argocd/auth-prod-us1) · prod-us1',
        '      Deployment/auth Degraded: CrashLoopBackOff',
        '  ⚠ web-prod-us2 · prod-us2',
        '      https://cd.example.com/applications/web-prod-us2',
        '  … and 8 more',
        '',
        'and 188 more healthy clusters',
        '',
        '→ try: status',
        '→ Open: https://cd.example.com',
        '',
      ].join('\n'),
    );
  });

  it('prints link labels only on demand and uses ANSI only with color', () => {
    const plain = renderText(reply, { links: 'label' });
    expect(plain).toContain('  ✖ auth-prod-us1 · prod-us1');
    expect(plain).not.toContain('\u001b[');
    const colored = renderText(reply, { color: true });
    expect(colored).toContain('\u001b[1m10 apps need attention\u001b[0m');
    expect(colored).toContain('\u001b[31m✖\u001b[0m');
  });

  it('prints the terminal command for each run button, or leaves them out for a caller that numbers them', () => {
    const run: Reply = {
      ok: true,
      command: 'run',
      title: 'Bulk sync: preview',
      data: {},
      blocks: [
        {
          kind: 'actions',
          buttons: [
            { label: 'Approve', action: 'run.approve', value: 'r-abc12' },
            { label: 'Cancel', action: 'run.cancel', value: 'r-abc12' },
            { label: 'Parameters', action: 'run.form', value: '{}' },
          ],
        },
      ],
    };
    expect(renderText(run)).toBe('→ Approve: runs approve r-abc12\n→ Cancel: runs cancel r-abc12\n');
    expect(renderText(run, { actions: 'omit' })).not.toMatch(/Approve|runs/);
  });

  it('renders an error reply with its suggestions', () => {
    const text = renderText(errorReply('statsu', 'unknown_command', 'Unknown command `statsu`.', ['status']));
    expect(text).toBe('✖ Unknown command statsu.\n\nDid you mean: status?\n');
  });
});

describe('mrkdwnToText', () => {
  it('converts links, user and channel mentions, emoji and bold, leaving code spans literal', () => {
    expect(mrkdwnToText('<https://x.example|label> <https://y.example> <@U123> <#C1|ops> <!here>')).toBe(
      'label (https://x.example) https://y.example @U123 #ops @here',
    );
    expect(
      mrkdwnToText(':white_check_mark: ok :warning: warn :hourglass_flowing_sand: :rotating_light: :no_such_emoji:'),
    ).toBe('✔ ok ⚠ warn ⏳ ‼ :no_such_emoji:');
    // A code span is literal (a glob stays a glob) and its backticks are Slack markup, not shown.
    expect(mrkdwnToText('*bold* and `auth-* *not bold*` in 12:30:45')).toBe('bold and auth-* *not bold* in 12:30:45');
    expect(mrkdwnToText('Follow it: `/argo runs show r-1`')).toBe('Follow it: runs show r-1');
    expect(mrkdwnToText('a_snake_case_name stays, _italic_ goes')).toBe('a_snake_case_name stays, italic goes');
    expect(mrkdwnToText('> quoted message')).toBe('│ quoted message');
    expect(mrkdwnToText('a &lt;b&gt; &amp; c')).toBe('a <b> & c');
  });
});
