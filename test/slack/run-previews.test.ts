import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '../../src/commands/index.js';
import { startEngine, type EngineHandle, type RunService } from '../../src/domain/runbooks/engine.js';
import { blockActionsPayload, postInteraction, postSlashCommand } from '../support/slack-request.js';
import { app, clusters } from './fixture.js';
import { startHarness, SECRET, type Harness } from './harness.js';
import { allText } from './limits.js';

// 40 apps to sync in two waves: more apps than one Slack page (25 list items) would hold as a list.
const fleet = [
  {
    name: 'prod',
    clusters,
    applications: [
      ...Array.from({ length: 40 }, (_, i) =>
        app(`auth-config-${String(i).padStart(2, '0')}`, i % 2 ? 'prod-us1' : 'prod-eu1', 'OutOfSync', 'Healthy'),
      ),
      app('web-prod-us1', 'prod-us1', 'Synced', 'Healthy'),
    ],
  },
];

const buttonsOf = (body: any) =>
  body.blocks.flatMap((b: any) => b.elements ?? []).filter((e: any) => e.type === 'button');

describe('runbook previews in Slack', () => {
  let h: Harness;
  let engine: EngineHandle;
  const runs = () => engine.runs as RunService;

  beforeAll(async () => {
    h = await startHarness({
      fleet,
      access: { operators: ['U0ALICE'] },
      configure: async (services) => {
        // role bot: no step runs here.
        engine = await startEngine(services, {
          role: 'bot',
          redisUrl: process.env.REDIS_URL!,
          prefix: services.config.redis.prefix,
        });
        services.runs = engine.runs;
        services.audit = engine.runs.audit;
      },
    });
  });
  afterAll(async () => {
    await engine?.stop();
    await h?.stop();
  });

  it('answers a sync with nothing to do with what it found: no run, no Confirm', async () => {
    await postSlashCommand(h.url, SECRET, { text: 'sync web-prod-us1', response_url: h.fake.responseUrl('empty') });
    await expect.poll(() => h.fake.responsesTo('empty').length).toBe(1);
    const body = h.fake.responsesTo('empty')[0].body;
    expect(allText(body.blocks)).toContain(
      'Nothing to sync: web-prod-us1, the one matching app, is already Synced and Healthy. To sync it anyway, add includeSynced=true.',
    );
    expect(buttonsOf(body)).toEqual([]);
    expect(await runs().list(5)).toEqual([]);
    // Audited as what it was: a request that found nothing to do, not a refusal.
    const audited = (await runs().audit.latest(10)).filter((e) => e.target === 'bulk-sync');
    expect(audited.map((e) => [e.kind, e.result])).toEqual([['run.noop', 'nothing to do']]);
  });

  it('shows a 40-app sync preview in one message: each wave a paragraph, no More button, one run awaiting Confirm', async () => {
    await postSlashCommand(h.url, SECRET, {
      text: 'sync auth-config-* waves="auth-config-0*;auth-config-*"',
      response_url: h.fake.responseUrl('preview'),
    });
    await expect.poll(() => h.fake.responsesTo('preview').length).toBe(1);
    const first = h.fake.responsesTo('preview')[0].body;
    const [run] = await runs().list(5);
    expect(run.status).toBe('awaiting-confirmation');
    const text = allText(first.blocks);
    // Both waves with their counts; a wave names its first 20 apps and counts the rest (the run's plan has them all).
    expect(text).toContain('Wave 1/2: `auth-config-0*` · 10 apps');
    expect(text).toContain('Wave 2/2: `auth-config-*` · 30 apps');
    expect(text).toContain('auth-config-29 and 10 more');
    expect(buttonsOf(first).find((b: any) => b.action_id === 'page')).toBeUndefined();
    expect(buttonsOf(first).map((b: any) => b.text.text)).toContain('Confirm');
    expect((await runs().list(5)).map((r) => r.id)).toEqual([run.id]);
    expect((await runs().audit.latest(50)).filter((e) => e.kind === 'run.start')).toHaveLength(1);
  });

  it('ignores a page button whose command would change something (a button from before previews paged by run)', async () => {
    const before = (await runs().list(10)).length;
    await postInteraction(
      h.url,
      SECRET,
      blockActionsPayload({
        actionId: 'page',
        value: JSON.stringify({ c: 'sync auth-config-*', p: 2 }),
        responseUrl: h.fake.responseUrl('stale'),
      }),
    );
    await new Promise((r) => setTimeout(r, 500));
    expect(h.fake.responsesTo('stale')).toEqual([]);
    expect((await runs().list(10)).length).toBe(before);
  });
});
