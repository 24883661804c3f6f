import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dispatch } from '../../src/commands/index.js';
import type { CommandContext } from '../../src/commands/registry.js';
import { configSchema } from '../../src/infra/config/schema.js';
import { FleetMirror } from '../../src/fleet/mirror.js';
import type { SimServer } from '../../src/sim/server.js';
import { SLACK_LIMITS, renderBlocks } from '../../src/views/blocks.js';
import { renderText } from '../../src/views/text.js';
import { startTestSim, simClients } from '../support/sim.js';
import { okAnswer } from '../support/replies.js';

interface Scenario {
  sim: SimServer;
  mirror: FleetMirror;
  ctx: (surface?: 'slack' | 'terminal') => CommandContext;
}

async function open(scenario: string): Promise<Scenario> {
  const sim = await startTestSim({ scenario });
  const clients = simClients(sim);
  const mirror = new FleetMirror(
    clients,
    sim.instances.map((i) => ({ name: i.name, uiUrl: i.url })),
  );
  await mirror.start();
  const config = configSchema.parse({
    instances: sim.instances.map((i) => ({ name: i.name, url: i.url, token: i.token })),
  });
  const now = sim.controller.clock.now();
  return {
    sim,
    mirror,
    ctx: (surface = 'terminal') => ({
      services: { config, fleet: mirror, argocd: clients, now: () => now },
      user: 'U1',
      surface,
      channel: `C-${scenario}`,
    }),
  };
}

const close = async (s: Scenario | undefined) => {
  await s?.mirror.stop();
  await s?.sim.stop();
};

const blockText = (blocks: unknown[]) => JSON.stringify(blocks);

describe('status on seed-outage (540 apps, 12 clusters)', () => {
  let s: Scenario;
  beforeAll(async () => {
    s = await open('seed-outage');
  }, 30_000);
  afterAll(() => close(s));

  it('fits one terminal screen and names every group with its count and reason', async () => {
    const reply = okAnswer(await dispatch('status', s.ctx()), 'status');
    const text = renderText(reply);
    const lines = text.trimEnd().split('\n');
    expect(lines.length).toBeLessThanOrEqual(25);
    expect(text).toContain(
      'auth-service · Degraded on 12/12 clusters · CrashLoopBackOff: back-off restarting failed container',
    );
    expect(text).toContain('auth-config · OutOfSync on 12/12 clusters · live state differs from the target revision');
    const groups = reply.data.groups as { name: string; apps: string[]; reason: string }[];
    for (const g of groups) {
      const line = lines.find((l) => l.includes(` ${g.name} · `) && l.includes(g.reason));
      expect(line, `a line for ${g.name}: ${g.reason}`).toBeDefined();
    }
    // Every problem app is in exactly one group.
    expect(groups.flatMap((g) => g.apps).sort()).toEqual(
      (reply.data.problems as { app: string }[]).map((p) => p.app).sort(),
    );
    // No pod hashes, UIDs or URLs in the summary, and no suggestion of the command just run.
    expect(text).not.toMatch(/https?:\/\//);
    expect(text).not.toMatch(/[0-9a-f]{10}-[a-z0-9]{5}|[0-9a-f]{8}-[0-9a-f]{4}-/);
    expect(text).not.toContain('→ try: status');
    // The reasons are complete when the answer is given: no "no message in the app list".
    expect(text).not.toMatch(/no message/);
  });

  it('fits one Slack message with every group in it', async () => {
    const reply = okAnswer(await dispatch('status', s.ctx('slack')), 'status');
    const out = renderBlocks(reply, { commandText: 'status' });
    expect(out.pages).toBe(1);
    expect(out.blocks.length).toBeLessThanOrEqual(SLACK_LIMITS.messageBlocks);
    for (const b of out.blocks)
      if (b.type === 'section' && b.text) expect(b.text.text.length).toBeLessThanOrEqual(SLACK_LIMITS.sectionText);
    for (const g of reply.data.groups as { name: string; reason: string }[])
      expect(blockText(out.blocks)).toContain(`*${g.name}*`);
    expect(blockText(out.blocks)).toContain('Degraded on 12/12 clusters');
  });
});

describe('status on progressive-infra', () => {
  let s: Scenario;
  beforeAll(async () => {
    s = await open('progressive-infra');
  }, 30_000);
  afterAll(() => close(s));

  it('puts the failed syncs before the apps that only wait for their RollingSync step', async () => {
    const reply = okAnswer(await dispatch('status', s.ctx()), 'status');
    const groups = reply.data.groups as { name: string; kind: string; apps: string[] }[];
    const kinds = groups.map((g) => g.kind);
    // Three syncs refused by three admission webhooks share their reason: one line, naming the apps.
    expect(groups[0]).toMatchObject({ name: 'progressive-infra', kind: 'failed' });
    expect([...groups[0].apps].sort()).toEqual(['cert-manager-prod-2', 'external-dns-prod-3', 'ingress-nginx-prod-1']);
    // An app matched by no step is never synced by RollingSync: a problem, not a wait.
    expect(groups.find((g) => g.name === 'platform-addons')).toMatchObject({
      kind: 'outofsync',
      reason: 'matched by no RollingSync step: Argo CD never syncs it',
    });
    const waiting = groups.find((g) => g.kind === 'waiting');
    expect(waiting).toMatchObject({ name: 'progressive-infra' });
    expect(waiting!.apps).toHaveLength(9);
    expect(kinds.indexOf('waiting')).toBe(kinds.length - 1);
    const text = renderText(reply);
    expect(text).toMatch(/progressive-infra · 9 apps wait for RollingSync step 3 on 4\/6 clusters · not failing/);
    expect(text).toMatch(/5 apps need attention in 2 groups .*; 9 more apps only wait for a RollingSync step/);
    expect(text).toContain(
      'progressive-infra · 3 apps (ingress-nginx-prod-1, cert-manager-prod-2, external-dns-prod-3) sync failed on 3/6 clusters · one or more objects failed to apply',
    );
  });
});

describe('plan and rollout on progressive-infra', () => {
  let s: Scenario;
  beforeAll(async () => {
    s = await open('progressive-infra');
  }, 30_000);
  afterAll(() => close(s));

  it('plan leads with the blocked step, not with what it would sync', async () => {
    const text = renderText(await dispatch('plan progressive-infra', s.ctx()));
    const lines = text.split('\n').filter((l) => l.trim());
    expect(lines[2]).toBe(
      "✖ Blocked: Step 3 is stuck: 3 apps Pending/Progressing longer than 15m (cert-manager-prod-2, external-dns-prod-3, ingress-nginx-prod-1). Nothing below happens until step 3's failing apps are fixed.",
    );
    expect(text).toContain('Once unblocked, RollingSync will sync');
  });

  it('shows the stuck-step finding as a short line with its fix; detail=true adds the per-app lines', async () => {
    const findingsOf = async (command: string) => {
      const reply = await dispatch(command, s.ctx());
      const list = reply.blocks.find((b) => b.kind === 'list' && b.title === 'Findings') as {
        items: { text: string; detail?: string }[];
      };
      return { reply, stuck: list.items.find((i) => i.text.includes('stuck-step'))! };
    };
    const short = await findingsOf('rollout progressive-infra');
    expect(short.stuck.text.length).toBeLessThan(200);
    expect(short.stuck.detail).toMatch(/^Fix: Fix what the operation and health messages point at, then sync the app/);
    expect(short.stuck.detail).not.toContain('\n');

    const { reply, stuck } = await findingsOf('rollout progressive-infra detail=true');
    expect(stuck.detail).toMatch(/^cert-manager-prod-2 Progressing for/);
    // One line per stuck app, none of them a wall of text, and Argo CD's quoted names never inside double quotes.
    const perApp = stuck.detail!.split('\n').filter((l) => / Progressing for /.test(l));
    expect(perApp.map((l) => l.split(' ')[0])).toEqual([
      'cert-manager-prod-2',
      'external-dns-prod-3',
      'ingress-nginx-prod-1',
    ]);
    for (const line of stuck.detail!.split('\n')) expect(line.length).toBeLessThan(400);
    expect(stuck.detail).not.toMatch(/"[^"`]*"[^"`]*"[^"`]*"/);
    expect(renderText(reply)).not.toMatch(/"Internal error occurred: failed calling webhook "/);
    // The headline is said once: the detail goes on from it, it does not repeat it.
    expect(stuck.detail).not.toContain('Step 3 is stuck');
  });
});

/** Lines a terminal of `width` columns shows for text. */
function screenLines(text: string, width = 80): number {
  return text
    .trimEnd()
    .split('\n')
    .reduce((n, line) => n + Math.max(1, Math.ceil([...line].length / width)), 0);
}

describe('short by default, on the scenarios', () => {
  const scenarios: Record<string, Scenario> = {};
  beforeAll(async () => {
    for (const name of ['progressive-infra', 'seed-outage']) scenarios[name] = await open(name);
  }, 60_000);
  afterAll(async () => {
    for (const s of Object.values(scenarios)) await close(s);
  });
  const text = async (scenario: string, command: string) =>
    renderText(await dispatch(command, scenarios[scenario].ctx()));

  // Lines as printed, and as an 80-column terminal wraps them (before: 47 and 69 lines for the first).
  it.each([
    ['progressive-infra', 'rollout progressive-infra', 27, 37],
    ['progressive-infra', 'rollout platform-addons', 27, 37],
    ['progressive-infra', 'diagnose progressive-infra', 16, 24],
    ['progressive-infra', 'diagnose platform-addons', 18, 28],
    ['seed-outage', 'diagnose', 12, 16],
  ])('%s: %s fits a terminal screen', async (scenario, command, lines, at80) => {
    const short = await text(scenario, command);
    expect(short.trimEnd().split('\n').length).toBeLessThanOrEqual(lines);
    expect(screenLines(short)).toBeLessThanOrEqual(at80);
    expect(short).toContain(`→ try: ${command} detail=true`);
    const detailed = await text(scenario, `${command} detail=true`);
    expect(detailed.length).toBeGreaterThan(short.length);
  });

  it('diagnose of the whole fleet stays within a screen per RollingSync appset, each headline said once', async () => {
    const reply = await dispatch('diagnose', scenarios['progressive-infra'].ctx());
    // Two RollingSync appsets.
    expect(screenLines(renderText(reply))).toBeLessThanOrEqual(2 * 24);
    for (const command of ['diagnose', 'diagnose detail=true']) {
      const list = (await dispatch(command, scenarios['progressive-infra'].ctx())).blocks.find(
        (b) => b.kind === 'list',
      ) as { items: { text: string; detail?: string }[] };
      expect(list.items).toHaveLength(9);
      for (const item of list.items) {
        const headline = item.text.split(': ').slice(1).join(': ').slice(0, 40);
        expect(item.detail ?? '', `${command}: ${headline}`).not.toContain(headline);
      }
    }
  });

  it('offers the detail as a Show detail button in Slack, which runs the same command with detail=true', async () => {
    for (const command of ['diagnose', 'rollout progressive-infra']) {
      const reply = await dispatch(command, scenarios['progressive-infra'].ctx('slack'));
      const blocks = JSON.stringify(renderBlocks(reply).blocks);
      expect(blocks, command).toContain('"Show detail"');
      const button = reply.blocks
        .flatMap((b) => (b.kind === 'actions' ? b.buttons : []))
        .find((b) => b.label === 'Show detail');
      expect(button?.command).toBe(`${command} detail=true`);
    }
  });

  it('cuts nothing mid-word or mid-URL, in the short view or the detail', async () => {
    for (const command of [
      'diagnose',
      'diagnose detail=true',
      'rollout progressive-infra',
      'rollout progressive-infra detail=true',
    ]) {
      const out = await text('progressive-infra', command);
      // An ellipsis comes after a whole word (or a closing quote or parenthesis), never inside a word or a URL.
      for (const m of out.matchAll(/(\S*)…/g)) {
        expect(m[1], `${command}: ${m[0]}`).not.toMatch(/:\/\/|\.svc|[a-z]{1,}[-.:/]$/);
      }
      expect(out, command).not.toMatch(/https?:\/\/[^\s)"]*…/);
    }
  });

  it("seed-outage's diagnose names the crash loop and the fix in its first lines", async () => {
    const short = await text('seed-outage', 'diagnose');
    expect(short).toMatch(/degraded-after-sync .*CrashLoopBackOff/);
    expect(short).toContain('Fix: Sync 12 apps in the same namespaces with prune: sync auth-config-prod-* prune=true');
    expect(short).not.toContain('auth-service-prod-us-west-2 (prod-us-west-2): Degraded');
  });
});

describe('terminal answers on progressive-infra', () => {
  let s: Scenario;
  beforeAll(async () => {
    s = await open('progressive-infra');
  }, 30_000);
  afterAll(() => close(s));

  it('never suggest the command just run, and print no Slack markup (backticks, /argo)', async () => {
    for (const command of [
      'status',
      'status progressive-infra',
      'rollout progressive-infra',
      'plan progressive-infra',
      'diagnose',
      'diagnose progressive-infra',
      'app cert-manager-prod-2',
      'clusters',
    ]) {
      const text = renderText(await dispatch(command, s.ctx()));
      const tries = [...text.matchAll(/^→ try: (.+)$/gm)].map((m) => m[1].trim());
      expect(tries, command).not.toContain(command);
      expect(text, command).not.toContain('`');
      expect(text, command).not.toMatch(/\/argo\s/);
    }
  });
});

describe('app on progressive-infra', () => {
  let s: Scenario;
  beforeAll(async () => {
    s = await open('progressive-infra');
  }, 30_000);
  afterAll(() => close(s));

  it("shows the app's RollingSync step and status", async () => {
    const waiting = renderText(await dispatch('app cert-manager-prod-1', s.ctx()));
    expect(waiting).toMatch(/RollingSync:\s+step 3 · Waiting for \S+/);
    const unmatched = renderText(await dispatch('app metrics-server-stage-1', s.ctx()));
    expect(unmatched).toMatch(/RollingSync:\s+in no step: RollingSync never syncs it/);
  });
});
