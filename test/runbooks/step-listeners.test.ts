import { afterEach, describe, expect, it } from 'vitest';
import { dispatch } from '../../src/commands/index.js';
import type { RunService } from '../../src/domain/runbooks/engine.js';
import { configSchema } from '../../src/infra/config/schema.js';
import { makeApp } from './fake-argo.js';
import { harness, type Harness } from './harness.js';
import { okAnswer } from '../support/replies.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('a step with many apps waiting on the rate limiter', () => {
  it('prints no MaxListenersExceededWarning at concurrency 30 (every waiting app listens to the step signal); steps audit as the engine', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', onWarning);
    try {
      const config = configSchema.parse({
        instances: [{ name: 'argo-test', url: 'http://127.0.0.1:1', token: 't', rateLimit: { max: 5, per: 200 } }],
        access: { operators: ['U_OP'] },
      });
      const apps = Array.from({ length: 30 }, (_, i) => makeApp(`web-${i}`, `c${i % 3}`));
      h = await harness(apps, { config });
      const runs = h.services.runs as RunService;
      const reply = await dispatch('sync web-* concurrency=30 gate=none confirm=30', {
        services: h.services,
        user: 'U_OP',
        surface: 'terminal',
        assumeYes: true,
      });
      expect(reply.ok, JSON.stringify(reply.error)).toBe(true);
      const started = okAnswer(reply, 'sync').data;
      const run = await runs.waitForEnd('runId' in started ? started.runId : '', 30_000);
      expect(run.status).toBe('succeeded');
      expect(h.argo.syncs).toHaveLength(30);
      // The request came from the terminal; the steps ran in this process's worker, on the engine's own account.
      const entries = await runs.audit.latest(200);
      const surfaces = (kind: string) => [...new Set(entries.filter((e) => e.kind === kind).map((e) => e.surface))];
      expect(surfaces('run.start')).toEqual(['terminal']);
      expect(surfaces('run.confirm')).toEqual(['terminal']);
      expect(surfaces('step.start')).toEqual(['engine']);
      expect(surfaces('argocd.sync')).toEqual(['engine']);
      // Warnings are emitted on the next tick.
      await new Promise((r) => setImmediate(r));
      expect(warnings.filter((w) => w.includes('MaxListenersExceeded'))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  }, 60_000);
});
