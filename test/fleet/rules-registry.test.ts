import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dispatch } from '../../src/commands/index.js';
import type { CommandContext } from '../../src/commands/registry.js';
import { ConfigError, parseConfig } from '../../src/infra/config/load.js';
import { ALERT_RULES, RULE_CATALOG } from '../../src/infra/config/rule-catalog.js';
import { configSchema } from '../../src/infra/config/schema.js';
import { RULES } from '../../src/fleet/diagnose.js';
import { FleetMirror } from '../../src/fleet/mirror.js';
import { FLEET_RULES } from '../../src/fleet/rules/index.js';
import type { Finding } from '../../src/fleet/rules/finding.js';
import type { SimServer } from '../../src/sim/server.js';
import { startTestSim, simClients } from '../support/sim.js';

const base = 'instances:\n  - name: prod\n    url: https://cd.example.com\n    token: t\n';

function configError(yaml: string): ConfigError {
  try {
    parseConfig(yaml, 'rollcall.yaml', {});
  } catch (e) {
    return e as ConfigError;
  }
  throw new Error('expected the config to be refused');
}

describe('the rule registry is the only list of rules', () => {
  it('config takes every alerting rule of the registry as an alerts.rules key, and only those', () => {
    const alerting = FLEET_RULES.filter((r) => r.alert).map((r) => r.meta.id);
    expect(alerting).toEqual([...ALERT_RULES]);
    const yaml = base + 'alerts:\n  rules:\n' + alerting.map((id) => `    ${id}:\n      enabled: false\n`).join('');
    const config = parseConfig(yaml, 'rollcall.yaml', {});
    expect(Object.keys(config.alerts.rules).sort()).toEqual([...alerting].sort());
  });

  it('refuses an unknown rule name with the rule it probably meant, and a diagnose-only rule as raising no alerts', () => {
    const typo = configError(base + 'alerts:\n  rules:\n    degraded-after-synk:\n      enabled: false\n');
    expect(typo.problems).toEqual([
      expect.objectContaining({
        path: 'alerts.rules.degraded-after-synk',
        message: expect.stringContaining('did you mean "degraded-after-sync"'),
      }),
    ]);
    const diagnoseOnly = configError(base + 'alerts:\n  rules:\n    no-max-update:\n      enabled: false\n');
    expect(diagnoseOnly.problems[0].message).toContain('rule "no-max-update" raises no alerts');
  });

  it('binds every catalog id to a view, and diagnose and its help list every rule that diagnoses', async () => {
    expect(FLEET_RULES.map((r) => r.meta.id)).toEqual(RULE_CATALOG.map((r) => r.id));
    for (const r of FLEET_RULES) expect(r.alert || r.appSet || r.diagnoseFleet, r.meta.id).toBeTruthy();
    expect([...RULES]).toEqual(RULE_CATALOG.map((r) => r.id));
    const config = configSchema.parse({ instances: [{ name: 'prod', url: 'https://cd.example.com', token: 't' }] });
    const help = await dispatch('help diagnose', {
      services: { config, fleet: undefined as never },
      user: 'U1',
      surface: 'terminal',
    } as unknown as CommandContext);
    const text = JSON.stringify(help.blocks);
    for (const r of FLEET_RULES.filter((x) => x.appSet || x.diagnoseFleet)) expect(text).toContain(r.meta.id);
  });
});

describe('diagnose on seed-outage', () => {
  let sim: SimServer;
  let mirror: FleetMirror;
  let ctx: CommandContext;
  beforeAll(async () => {
    sim = await startTestSim({ scenario: 'seed-outage' });
    const clients = simClients(sim);
    mirror = new FleetMirror(
      clients,
      sim.instances.map((i) => ({ name: i.name, uiUrl: i.url })),
    );
    await mirror.start();
    const config = configSchema.parse({
      instances: sim.instances.map((i) => ({ name: i.name, url: i.url, token: i.token })),
    });
    const now = sim.controller.clock.now();
    ctx = {
      services: { config, fleet: mirror, argocd: clients, now: () => now },
      user: 'U1',
      surface: 'terminal',
      channel: 'C1',
    };
  }, 60_000);
  afterAll(async () => {
    await mirror?.stop();
    await sim?.stop();
  });

  it('names the auth-service crash loop after its sync and the fix: sync the auth-config apps with prune', async () => {
    const reply = await dispatch('diagnose', ctx);
    expect(reply.ok).toBe(true);
    const findings = (reply.data as { findings: Finding[] }).findings;
    const crash = findings.filter((f) => f.rule === 'degraded-after-sync');
    expect(crash).toHaveLength(1);
    expect(crash[0]).toMatchObject({ severity: 'critical', appSet: 'auth-service', instance: 'prod' });
    expect(crash[0].apps).toHaveLength(12);
    expect(crash[0].message).toContain('crash-looping');
    expect(crash[0].message).toContain('CrashLoopBackOff');
    expect(crash[0].fix).toContain('sync auth-config-prod-* prune=true');
    expect(crash[0].fix).toContain('ConfigMap/auth-config-v2-session-flags');
    expect(JSON.stringify(reply.blocks)).toContain('degraded-after-sync');
  });
});
