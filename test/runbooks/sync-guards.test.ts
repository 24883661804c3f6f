import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/infra/config/schema.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { bulkSyncAction, bulkSyncInput } from '../../src/domain/runbooks/actions/bulk-sync.js';
import { formatParam, parseParams } from '../../src/domain/runbooks/params.js';
import { loadRunbooks, SHIPPED_RUNBOOKS_DIR } from '../../src/domain/runbooks/loader.js';
import { loadScenario } from '../../src/sim/scenarios/index.js';
import { renderBlocks } from '../../src/views/blocks.js';
import { renderText } from '../../src/views/text.js';
import type { Reply } from '../../src/core/reply.js';

const { fixture } = loadScenario('seed-outage');
const fleet = StaticFleet.fromObjects(fixture.instances);
const config = configSchema.parse({ instances: [{ name: 'prod', url: 'http://prod.example', token: 't' }] });
const services = { config, fleet, argocd: new Map() };
const preview = (input: Record<string, unknown>) =>
  bulkSyncAction.preview!({ services, input: bulkSyncInput.parse(input), runId: 'r-test' });
const asReply = (blocks: Reply['blocks']): Reply => ({
  ok: true,
  command: 'sync',
  title: 'Bulk sync',
  data: {},
  blocks,
});

describe('bulk-sync blast-radius guard (seed-outage: 540 apps, 45 a cluster)', () => {
  it('holds a one-wave sync of the whole fleet and says how to split it or confirm the count', async () => {
    await expect(preview({ selector: 'labels:env=prod', includeSynced: true })).rejects.toMatchObject({
      code: 'blast_radius',
      message: expect.stringMatching(
        /reaches 540 apps on 12 clusters in one wave: 100% of the fleet .*waves=.*canary=N.*confirm=540/,
      ),
    });
  });

  it('holds more apps in one wave than the largest cluster holds, even under the fleet share', async () => {
    const sixty = await preview({ selector: 'a*', includeSynced: true }).catch((e: Error) => e);
    expect(sixty).toMatchObject({ code: 'blast_radius' });
  });

  it('lets waves, a canary or the typed count through, and refuses a count that does not match', async () => {
    await expect(preview({ selector: 'labels:env=prod', includeSynced: true, canary: 5 })).resolves.toMatchObject({
      targets: expect.any(Array),
    });
    await expect(
      preview({ selector: 'labels:env=prod', includeSynced: true, waves: '*-eu-*;*-us-*' }),
    ).resolves.toBeDefined();
    await expect(preview({ selector: 'labels:env=prod', includeSynced: true, confirm: 540 })).resolves.toBeDefined();
    await expect(preview({ selector: 'labels:env=prod', includeSynced: true, confirm: 54 })).rejects.toMatchObject({
      message: expect.stringMatching(/confirm=54 does not match: the sync is 540 apps/),
    });
  });

  it('lets the fix of the outage through untouched: 12 auth-config apps in one wave', async () => {
    const p = await preview({ selector: 'auth-config-*' });
    expect(p.targets).toHaveLength(12);
  });
});

describe('force', () => {
  it("refuses force=true, naming Argo CD's meaning and the new name", async () => {
    await expect(preview({ selector: 'auth-config-*', force: true })).rejects.toMatchObject({
      code: 'invalid_params',
      message: expect.stringMatching(/force means delete and recreate.*includeSynced=true/),
    });
  });

  it('includeSynced=true also syncs apps already Synced and Healthy', async () => {
    const plain = await preview({ selector: 'auth-config-*,sessions-*' });
    const all = await preview({ selector: 'auth-config-*,sessions-*', includeSynced: true });
    expect(plain.targets.map((t) => t.app).every((a) => a.startsWith('auth-config-'))).toBe(true);
    expect(plain.targets).toHaveLength(12);
    expect(all.targets.length).toBe(
      plain.targets.length + fleet.apps().filter((a) => a.app.metadata.name.startsWith('sessions-')).length,
    );
  });
});

describe('text of the preview', () => {
  it('shows wave globs literally: not bold in Slack, plain in the terminal', async () => {
    const p = await preview({ selector: 'auth-service-*', includeSynced: true, waves: '*-eu-*;*-us-*', canary: 1 });
    const slack = JSON.stringify(renderBlocks(asReply(p.blocks)).blocks);
    expect(slack).toContain('canary (1): 1 → `*-eu-*`: 3 → `*-us-*`: 4');
    const text = renderText(asReply(p.blocks));
    expect(text).toContain('canary (1): 1 → *-eu-*: 3 → *-us-*: 4');
  });

  it("leaves the parameters to the run's params line, which shows durations as typed: said once, not twice", async () => {
    const p = await preview({ selector: 'auth-config-*', waveTimeout: 600_000 });
    const text = JSON.stringify(p.blocks);
    for (const param of ['waveTimeout=', 'concurrency=', 'dryRun=', 'gate=']) expect(text).not.toContain(param);
    expect(text).not.toContain('600s');
  });
});

describe('durations are parsed strictly', () => {
  const runbook = loadRunbooks(SHIPPED_RUNBOOKS_DIR).get('bulk-sync')!;
  it('refuses a bare number with the hint of both units', () => {
    expect(() => parseParams(runbook, { selector: 'auth-config-*', waveTimeout: '10' })).toThrow(
      /waveTimeout=10 has no unit: write 10m or 10s/,
    );
  });
  it('shows 1h30m back as 1h30m (not 90m), and one value one way: 600s and 10m both as 10m', () => {
    const spec = runbook.params.waveTimeout;
    const shown = (typed: string) =>
      formatParam(spec, parseParams(runbook, { selector: 'x', waveTimeout: typed }).waveTimeout);
    for (const typed of ['10m', '1h30m', '1m30s', '250ms', '2d']) expect(shown(typed)).toBe(typed);
    expect(shown('600s')).toBe('10m');
    expect(shown('90m')).toBe('1h30m');
    expect(shown('90s')).toBe('1m30s');
  });
});
