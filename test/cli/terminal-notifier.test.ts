import { describe, expect, it } from 'vitest';
import type { Reply } from '../../src/core/reply.js';
import { TerminalNotifier } from '../../src/surfaces/cli/terminal-notifier.js';

const alert = (state: string): Reply => ({
  ok: true,
  command: 'alert',
  title: 'alert',
  data: {},
  blocks: [
    { kind: 'header', text: 'Degraded after sync: auth-service (prod)' },
    { kind: 'text', text: state },
  ],
});

describe('the terminal stand-in for live messages', () => {
  it('names the alert on every line, its updates too, and skips a repeat', async () => {
    const lines: string[] = [];
    const notifier = new TerminalNotifier((l) => lines.push(l));
    const ref = await notifier.post({ channel: 'terminal' }, alert('Firing'));
    await notifier.update(ref, alert('Clearing'));
    await notifier.update(ref, alert('Clearing'));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/Degraded after sync: auth-service \(prod\): Firing\s*$/);
    expect(lines[1]).toMatch(/Degraded after sync: auth-service \(prod\): Clearing\s*$/);
  });
});
