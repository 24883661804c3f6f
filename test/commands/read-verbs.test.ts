/**
 * history, diff and logs: the argocd CLI's read verbs, answered live from the (simulated) Argo CD for
 * the seed-outage fleet: auth-service v2.14.3 -> v2.15.0 crash-loops, auth-config drifted with a
 * ConfigMap to prune and a signing-keys Secret.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClients } from '../../src/infra/argocd/client.js';
import type { HistoryEntry } from '../../src/commands/history.js';
import { dispatch } from '../../src/commands/index.js';
import type { CommandContext } from '../../src/commands/registry.js';
import { configSchema } from '../../src/infra/config/schema.js';
import type { ResourceChange } from '../../src/fleet/manifest-diff.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { SEED_OUTAGE_INSTANCE } from '../../src/sim/scenarios/seed-outage.js';
import type { SimServer } from '../../src/sim/server.js';
import { renderBlocks } from '../../src/views/blocks.js';
import { renderText } from '../../src/views/text.js';
import { simOperations, startTestSim } from '../support/sim.js';
import { okAnswer } from '../support/replies.js';

const AUTH = 'auth-service-prod-us-east-1';
const CONFIG = 'auth-config-prod-us-east-1';

let sim: SimServer;
let ctx: (surface?: 'terminal' | 'slack') => CommandContext;

beforeAll(async () => {
  sim = await startTestSim({ scenario: 'seed-outage', frozen: true });
  const instance = sim.instances.find((i) => i.name === SEED_OUTAGE_INSTANCE)!;
  const config = configSchema.parse({
    instances: [{ name: instance.name, url: instance.url, token: instance.token, timeout: 3000 }],
  });
  const store = sim.state.instance(SEED_OUTAGE_INSTANCE)!;
  const fleet = StaticFleet.fromObjects([
    {
      name: instance.name,
      applications: structuredClone([...store.apps.values()]),
      applicationSets: [...store.appSets.values()],
      clusters: [...store.clusters.values()],
    },
  ]);
  const argocd = createClients(config, { retry: { retries: 0, baseMs: 10, maxMs: 10 } });
  ctx = (surface = 'terminal') => ({
    services: { config, fleet, argocd, now: () => sim.controller.clock.now() },
    user: 'U_ONCALL',
    surface,
  });
}, 60_000);
afterAll(async () => {
  await sim?.stop();
});

describe('history APP', () => {
  it('lists deployments newest first with commit message, duration and initiator', async () => {
    const reply = okAnswer(await dispatch(`history ${AUTH}`, ctx()), 'history');
    expect(reply.ok, reply.error?.message).toBe(true);
    const history = reply.data.history as HistoryEntry[];
    expect(history.map((h) => h.id)).toEqual([1, 0]);
    expect(history[0]).toMatchObject({
      message: 'deployments: auth-service v2.15.0',
      initiatedBy: 'applicationset-controller',
      automated: true,
      durationMs: 25_000,
      images: ['registry.example.com/identity/auth-service:v2.15.0'],
      author: expect.stringContaining('@'),
    });
    expect(history[1]).toMatchObject({
      message: 'deployments: weekly dependency bumps',
      initiatedBy: 'ci-deployer',
      images: ['registry.example.com/identity/auth-service:v2.14.3'],
    });
    const text = renderText(reply);
    expect(text).toMatch(
      /#1 [0-9a-f]{7} · deployed 44m ago \(.+\) · took 25s · by applicationset-controller \(automated\)/,
    );
    expect(text.indexOf('#1 ')).toBeLessThan(text.indexOf('#0 '));
    expect(text).toContain(`rollback ${AUTH} ID goes back to one of them`);
    // Terminal text carries no Slack markup.
    expect(text).not.toMatch(/[*`]|:[a-z_]+:/);
    expect(await simOperations(sim)).toEqual([]);
  });

  it('gives an unknown app the same typo suggestions as app', async () => {
    const reply = await dispatch('history auth-service-prod-us-east-l', ctx());
    expect(reply.ok).toBe(false);
    expect(reply.error?.code).toBe('unknown_target');
    expect(reply.error?.suggestions?.[0]).toBe(AUTH);
    const app = await dispatch('app auth-service-prod-us-east-l', ctx());
    expect(reply.error?.suggestions).toEqual(app.error?.suggestions);
  });
});

describe('diff APP', () => {
  it('shows the drifted ConfigMap field by field, the ConfigMap to prune, and never a Secret value', async () => {
    const reply = okAnswer(await dispatch(`diff ${CONFIG}`, ctx()), 'diff');
    expect(reply.ok, reply.error?.message).toBe(true);
    const resources = reply.data.resources as ResourceChange[];
    expect(resources.map((r) => [r.kind, r.name, r.change])).toEqual([
      ['ConfigMap', 'auth-config', 'modified'],
      ['ConfigMap', 'auth-config-v2-session-flags', 'prune'],
    ]);
    expect(resources[0].fields).toEqual([
      { path: 'data.DEBUG_ENDPOINTS', op: 'removed', from: 'true' },
      { path: 'data.LOG_LEVEL', op: 'changed', from: 'debug', to: 'info' },
    ]);
    const text = renderText(reply);
    expect(text).toContain('ConfigMap identity/auth-config · differs from git');
    expect(text).toContain('~ data.LOG_LEVEL: debug → info');
    expect(text).toContain('not in git: a sync with prune would delete it');
  });

  it('masks Secret data even when the live Secret drifted: a changed value shows as a changed mask', async () => {
    const store = sim.state.instance(SEED_OUTAGE_INSTANCE)!;
    const app = store.apps.get(CONFIG)!;
    const secret = app.status!.resources!.find((r) => r.kind === 'Secret')!;
    secret.status = 'OutOfSync';
    try {
      const reply = okAnswer(await dispatch(`diff ${CONFIG}`, ctx('slack')), 'diff');
      const change = (reply.data.resources as ResourceChange[]).find((r) => r.kind === 'Secret')!;
      expect(change.fields).toEqual([{ path: 'data["tls.key"]', op: 'changed', from: '++++++++', to: '++++++++' }]);
      const json = JSON.stringify(renderBlocks(reply).blocks);
      expect(json).toContain('data[\\"tls.key\\"]');
      expect(json).toContain('Secret values are never shown');
    } finally {
      secret.status = 'Synced';
    }
  });

  it('says "No differences" for an app in sync', async () => {
    const reply = okAnswer(await dispatch(`diff ${AUTH}`, ctx()), 'diff');
    expect(reply.ok).toBe(true);
    expect(reply.data.resources).toEqual([]);
    expect(renderText(reply)).toMatch(/No differences: the live state matches git at [0-9a-f]{7}\./);
  });
});

describe('logs APP [resource] [container] [tail=N]', () => {
  it('shows the crash of a crash-looping pod through the logs API, plain in a terminal', async () => {
    const reply = okAnswer(await dispatch(`logs ${AUTH}`, ctx()), 'logs');
    expect(reply.ok, reply.error?.message).toBe(true);
    const text = renderText(reply);
    expect(text).toContain('fatal: required config key "auth.issuer" is missing');
    expect(text).not.toContain('```');
    expect((reply.data.pods as string[]).length).toBe(1);
    // It restarted: its previous run is one step away. A bare name picks the workload among same-named resources.
    expect(text).toContain('→ try: logs auth-service-prod-us-east-1 tail=50 previous=true');
    const byName = okAnswer(await dispatch(`logs ${AUTH} auth-service`, ctx()), 'logs');
    expect(byName.ok, byName.error?.message).toBe(true);
    expect(byName.data.pods).toEqual(reply.data.pods);
    expect(renderText(await dispatch('logs payments-prod-us-east-1', ctx()))).not.toContain('previous=true');
  });

  it('reads the last N lines per pod of one workload, and fences them for Slack within one message', async () => {
    const healthy = 'payments-prod-us-east-1';
    const reply = okAnswer(await dispatch(`logs ${healthy} deployment/payments tail=120`, ctx('slack')), 'logs');
    expect(reply.ok, reply.error?.message).toBe(true);
    expect((reply.data.lines as unknown[]).length).toBe(120);
    const { blocks } = renderBlocks(reply);
    const sections = blocks.filter((b) => b.type === 'section').map((b) => (b as { text: { text: string } }).text.text);
    const code = sections.filter((t) => t.startsWith('```'));
    expect(code.length).toBeGreaterThan(0);
    for (const t of code) expect(t.length).toBeLessThanOrEqual(3000);
    expect(blocks.length).toBeLessThanOrEqual(50);
    // The newest line is always shown.
    expect(code.at(-1)).toContain((reply.data.lines as { content: string }[]).at(-1)!.content);
  });

  it('keeps the newest lines when a long log does not fit one Slack message, saying how many were cut', async () => {
    const reply = okAnswer(await dispatch('logs payments-prod-us-east-1 tail=500', ctx('slack')), 'logs');
    expect((reply.data.lines as unknown[]).length).toBe(200);
    const { blocks } = renderBlocks(reply);
    const texts = blocks.map((b) => JSON.stringify(b));
    const cut = texts.find((t) => t.includes('earlier lines not shown'));
    expect(cut).toBeDefined();
    const shown = blocks.filter(
      (b) => b.type === 'section' && (b as { text: { text: string } }).text.text.startsWith('```'),
    );
    expect(shown).toHaveLength(4);
    const last = (reply.data.lines as { content: string }[]).at(-1)!.content;
    expect((shown.at(-1) as { text: { text: string } }).text.text.endsWith(`${last}\n\`\`\``)).toBe(true);
    // The terminal gets every line.
    expect(
      renderText(reply)
        .split('\n')
        .filter((l) => l.includes('"msg":"request served"')).length,
    ).toBe(197);
  });

  it('defaults to 50 lines and refuses a tail beyond 500', async () => {
    const reply = okAnswer(await dispatch('logs payments-prod-us-east-1', ctx()), 'logs');
    expect(reply.data.tail).toBe(50);
    expect((reply.data.lines as unknown[]).length).toBe(50);
    const refused = await dispatch('logs payments-prod-us-east-1 tail=5000', ctx());
    expect(refused.error).toMatchObject({ code: 'usage', message: expect.stringContaining('from 1 to 500') });
  });

  it('suggests the pods and workloads of the app for an unknown resource', async () => {
    const reply = await dispatch('logs payments-prod-us-east-1 deployment/paymnts', ctx());
    expect(reply.error?.code).toBe('unknown_target');
    expect(reply.error?.suggestions).toContain('logs payments-prod-us-east-1 Deployment/payments');
  });

  it('names the containers the workload declares when asked for one it does not run', async () => {
    const reply = await dispatch('logs payments-prod-us-east-1 deployment/payments payments-x', ctx());
    expect(reply.ok).toBe(false);
    expect(reply.error?.message).toMatch(/run no container `payments-x`\. Its containers: `payments`/);
    expect(reply.error?.suggestions).toEqual(['logs payments-prod-us-east-1 deployment/payments payments']);
  });

  it('gives an unknown app the typo suggestions', async () => {
    const reply = await dispatch('logs payments-api-prod-us-east-2x', ctx());
    expect(reply.error?.code).toBe('unknown_target');
    expect(reply.error?.suggestions?.length).toBeGreaterThan(0);
  });
});

describe('access', () => {
  it('answers the read verbs only to readers when access.readers is set', async () => {
    const base = ctx();
    const config = configSchema.parse({ ...base.services.config, access: { readers: ['U_READER'] } });
    for (const verb of [`history ${AUTH}`, `diff ${CONFIG}`, `logs ${AUTH}`]) {
      const refused = await dispatch(verb, { ...base, services: { ...base.services, config }, user: 'U_EVE' });
      expect(refused.error?.code).toBe('forbidden');
      expect((await dispatch(verb, { ...base, services: { ...base.services, config }, user: 'U_READER' })).ok).toBe(
        true,
      );
    }
  });
});

describe('help and suggestions', () => {
  it('lists the verbs and suggests them by their canonical names', async () => {
    const help = okAnswer(await dispatch('help', ctx()), 'help');
    const names = 'commands' in help.data ? help.data.commands.map((c) => c.name) : [];
    for (const verb of ['history', 'diff', 'logs']) expect(names).toContain(verb);
    expect((await dispatch('dif x', ctx())).error?.suggestions).toContain('diff');
    expect((await dispatch('histroy x', ctx())).error?.suggestions).toContain('history');
    // `log` is a shortcut of logs: hints name the command itself.
    const logs = (await dispatch('lgos x', ctx())).error?.suggestions ?? [];
    expect(logs).toContain('logs');
    expect(logs).not.toContain('log');
    const diag = okAnswer(await dispatch('help diff', ctx()), 'help');
    expect('command' in diag.data && diag.data.command).toBe('diff');
  });
});
