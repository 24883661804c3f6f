import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ReplyButton } from '../../src/core/reply.js';
import { registerRunbookAction } from '../../src/domain/runbooks/actions/index.js';
import type { RunService } from '../../src/domain/runbooks/engine.js';
import { parseRunbook } from '../../src/domain/runbooks/loader.js';
import { previewReply, progressReply } from '../../src/domain/runbooks/replies.js';
import { renderText } from '../../src/views/text.js';
import { makeApp } from './fake-argo.js';
import { harness, type Harness } from './harness.js';

// One call and done, like pause-rollout or a key restore: nothing between calls for a pause to hold.
registerRunbookAction({
  name: 'test-one-call',
  description: 'one call',
  destructive: true,
  input: z.object({ app: z.string() }),
  async preview(ctx) {
    const app = String(ctx.input.app);
    return { targets: [{ instance: 'argo-test', app }], summary: `touch ${app}`, data: { app }, blocks: [] };
  },
  async execute() {
    return { status: 'succeeded' };
  },
});

const ONE_CALL = parseRunbook(
  `name: one-call
title: One call
params:
  app: { type: string, required: true }
steps:
  - id: touch
    action: test-one-call
    with: { app: "\${{ params.app }}" }
`,
  'one-call.yaml',
).runbook!;

const labels = (buttons: ReplyButton[] | undefined) => (buttons ?? []).map((b) => b.label);
const buttonsOf = (run: Parameters<typeof progressReply>[0]) =>
  labels(progressReply(run).blocks.flatMap((b) => (b.kind === 'actions' ? b.buttons : [])));

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('the buttons of a run fit its runbook', () => {
  it('offers Pause only where a pause holds something (bulk-sync), Abort while running, nothing once ended', async () => {
    // role bot: no step runs here, so a confirmed run stays running.
    h = await harness([makeApp('a-1', 'c1', { sync: 'OutOfSync' }), makeApp('b-1', 'c1', { sync: 'OutOfSync' })], {
      engine: { role: 'bot' },
      runbooks: [ONE_CALL],
    });
    const runs = h.services.runs as RunService;

    const sync = await runs.confirm(
      (await runs.start({ runbook: 'bulk-sync', params: { selector: 'a-*' }, user: 'U_OP', surface: 'slack' })).id,
      'U_OP',
    );
    expect(sync.status).toBe('running');
    expect(buttonsOf(sync)).toEqual(['Pause', 'Abort']);

    const one = await runs.confirm(
      (await runs.start({ runbook: 'one-call', params: { app: 'b-1' }, user: 'U_OP', surface: 'slack' })).id,
      'U_OP',
    );
    expect(one.status).toBe('running');
    expect(buttonsOf(one)).toEqual(['Abort']);
    // `runs pause ID` is refused the same way the button is missing.
    await expect(runs.pause(one.id, 'U_OP')).rejects.toMatchObject({
      code: 'invalid_state',
      message: expect.stringContaining('cannot be paused'),
    });

    for (const id of [sync.id, one.id]) expect(buttonsOf(await runs.abort(id, 'U_OP'))).toEqual([]);
  });

  it('shows a typed duration one way in the preview, while running and in the summary: 1h30m and 90m both as 1h30m', async () => {
    h = await harness([makeApp('a-1', 'c1', { sync: 'OutOfSync' }), makeApp('b-1', 'c1', { sync: 'OutOfSync' })], {
      engine: { role: 'bot' },
    });
    const runs = h.services.runs as RunService;
    for (const [selector, typed] of [
      ['a-*', '1h30m'],
      ['b-*', '90m'],
    ]) {
      const started = await runs.start({
        runbook: 'bulk-sync',
        params: { selector, waveTimeout: typed },
        user: 'U_OP',
        surface: 'slack',
      });
      const texts = [
        renderText(previewReply(started, 'run')),
        renderText(progressReply(await runs.confirm(started.id, 'U_OP'))),
        renderText(progressReply(await runs.abort(started.id, 'U_OP'))),
      ];
      for (const text of texts) {
        expect(text).toContain('waveTimeout=1h30m');
        expect(text).not.toMatch(/waveTimeout=(90m|5400s)/);
      }
    }
  });
});
