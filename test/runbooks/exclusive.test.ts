import { afterEach, describe, expect, it } from 'vitest';
import type { RunService } from '../../src/domain/runbooks/engine.js';
import { makeApp } from './fake-argo.js';
import { harness, type Harness } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('an exclusive engine (ask --wait)', () => {
  it("executes only the run it adopted; another run's queued step waits for a real worker", async () => {
    const apps = [
      ...Array.from({ length: 3 }, (_, i) => makeApp(`mine-${i}`, `c${i}`)),
      ...Array.from({ length: 3 }, (_, i) => makeApp(`theirs-${i}`, `c${i}`)),
    ];
    h = await harness(apps, { engine: { role: 'bot' } });
    const runs = h.services.runs as RunService;
    const theirs = await runs.start({
      runbook: 'bulk-sync',
      params: { selector: 'theirs-*', gate: 'none' },
      user: 'U_OP',
      surface: 'slack',
    });
    await runs.confirm(theirs.id, 'U_OP');
    const mine = await runs.start({
      runbook: 'bulk-sync',
      params: { selector: 'mine-*', gate: 'none' },
      user: 'U_OP',
      surface: 'terminal',
    });
    await runs.confirm(mine.id, 'U_OP');

    const terminal = await h.startAnother({ role: 'all', exclusive: true });
    terminal.adopt(mine.id);
    expect((await runs.waitForEnd(mine.id, 10_000)).status).toBe('succeeded');
    await new Promise((r) => setTimeout(r, 1000));
    expect(h.argo.syncs.map((s) => s.app).sort()).toEqual(['mine-0', 'mine-1', 'mine-2']);
    expect((await runs.get(theirs.id))!.steps[0].attempts).toBe(0);

    await h.startAnother({ role: 'worker' });
    expect((await runs.waitForEnd(theirs.id, 10_000)).status).toBe('succeeded');
    expect(h.argo.syncs).toHaveLength(6);
  });
});
