import { describe, expect, it } from 'vitest';
import { dispatch } from '../../src/commands/index.js';
import type { CommandContext } from '../../src/commands/registry.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { renderBlocks } from '../../src/views/blocks.js';
import { renderText } from '../../src/views/text.js';
import { ago, app, services } from './fixtures.js';

// 23 services, each Degraded for its own reason on its own cluster: 23 groups, 3 terminal pages of 10.
const fleet = StaticFleet.fromObjects([
  {
    name: 'main',
    applications: Array.from({ length: 23 }, (_, i) =>
      app({
        name: `svc${String(i).padStart(2, '0')}-c${i}`,
        clusterName: `c${i}`,
        status: {
          sync: { status: 'Synced' },
          health: { status: 'Degraded', lastTransitionTime: ago(100 - i) },
          resources: [
            {
              group: 'apps',
              version: 'v1',
              kind: 'Deployment',
              name: `svc${i}`,
              status: 'Synced',
              health: { status: 'Degraded', message: `reason number ${i}` },
            },
          ],
        },
      }),
    ),
  },
]);

const terminal = (channel: string): CommandContext => ({
  services: services(fleet),
  user: 'U1',
  surface: 'terminal',
  channel,
});
const groupLines = (text: string) => text.split('\n').filter((l) => /^\s+✖ svc/.test(l));

describe('every list pages, in the terminal and in Slack', () => {
  it('shows 10 groups a terminal page and says how to get the next one', async () => {
    const text = renderText(await dispatch('status', terminal('p1')));
    expect(groupLines(text)).toHaveLength(10);
    expect(text).toContain('Page 1 of 3 · items 1–10 of 23 · next: status --page 2 (or more)');
  });

  it('`--page N` and `page=N` show that page; `more` continues where the last answer stopped', async () => {
    const ctx = terminal('p2');
    const page2 = renderText(await dispatch('status --page 2', ctx));
    expect(groupLines(page2)[0]).toContain('svc10');
    expect(page2).toContain('Page 2 of 3');
    const page3 = renderText(await dispatch('more', ctx));
    expect(groupLines(page3).map((l) => l.trim().split(' ')[1])).toEqual(['svc20', 'svc21', 'svc22']);
    expect(page3).toContain('Page 3 of 3');
    expect(page3).not.toContain('next:');
    const nothing = await dispatch('more', ctx);
    expect(nothing).toMatchObject({
      ok: false,
      error: { code: 'usage', message: expect.stringMatching(/Nothing to continue/) },
    });
    expect(renderText(await dispatch('status page=3', ctx))).toContain('Page 3 of 3');
  });

  it('refuses a page past the end and a page that is not a number', async () => {
    expect(await dispatch('status --page 9', terminal('p3'))).toMatchObject({
      ok: false,
      error: { code: 'usage', message: expect.stringMatching(/3 pages of 10 items here; page 9 is past the end/) },
    });
    expect(await dispatch('status page=two', terminal('p3'))).toMatchObject({
      ok: false,
      error: { code: 'usage', message: expect.stringMatching(/--page needs a page number/) },
    });
  });

  it('pages in Slack from the typed page, with More and Back buttons that re-run the command', async () => {
    const reply = await dispatch('status --page 2', {
      services: services(fleet),
      user: 'U1',
      surface: 'slack',
      channel: 'C1',
    });
    // Slack pages hold 25 items: 23 groups fit one page, so page 2 does not exist there.
    expect(reply).toMatchObject({ ok: false, error: { code: 'usage' } });
    const first = await dispatch('status', { services: services(fleet), user: 'U1', surface: 'slack', channel: 'C1' });
    const out = renderBlocks(first, { itemsPerPage: 10 });
    expect(out.pages).toBe(3);
    expect(JSON.stringify(out.blocks)).toContain('More (page 2/3)');
  });
});
