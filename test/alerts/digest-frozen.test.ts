import { describe, expect, it } from 'vitest';
import { buildDigest } from '../../src/domain/alerts/digest.js';
import { evaluateAlertRules } from '../../src/domain/alerts/rules.js';
import { freezeWindow } from '../../src/domain/runbooks/freeze.js';
import type { Freeze } from '../../src/fleet/freeze.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { configSchema } from '../../src/infra/config/schema.js';
import { application, commit } from '../../src/sim/scenarios/builders.js';

const NOW = new Date('2026-03-14T03:30:00Z');
const alerts = configSchema.parse({ instances: [{ name: 'prod', url: 'https://argocd.example', token: 't' }] }).alerts;

/** Two auto-synced apps OutOfSync for five hours, one in the frozen project and one outside it. */
function fleet() {
  const app = (name: string, project: string) =>
    application({
      name,
      now: NOW,
      project,
      source: { repoURL: 'https://git.example.com/shop.git', path: name, targetRevision: 'main' },
      destination: { name: 'prod-eu1', namespace: name },
      syncPolicy: { automated: { prune: true } },
      resources: [{ group: 'apps', version: 'v1', kind: 'Deployment', namespace: name, name, status: 'OutOfSync' }],
      sync: 'OutOfSync',
      revision: commit(`${name}: new`),
      health: 'Healthy',
      history: [{ revision: commit(`${name}: old`), minutesAgo: 300 }],
    });
  return StaticFleet.fromObjects([
    { name: 'prod', applications: [app('checkout', 'payments'), app('search', 'default')] },
  ]);
}

function freeze(at: Date, forMs?: number): Freeze {
  const { window, until } = freezeWindow(
    { applications: ['*'] },
    { now: at, forMs, manualBlocked: false, description: 'rollcall freeze by U123 …' },
  );
  return {
    runId: 'r-abc12',
    instance: 'prod',
    project: 'payments',
    window,
    target: 'project=payments',
    by: 'U123',
    at: at.toISOString(),
    ...(until ? { until: until.toISOString() } : {}),
    incident: 'INC-7',
    manualBlocked: false,
  };
}

describe('a freeze in the digest and the alert rules', () => {
  it('says the frozen project once, as held on purpose, instead of listing its apps OutOfSync', () => {
    const f = fleet();
    const without = buildDigest({ fleet: f, now: NOW, alerts });
    expect(
      without.attention
        .filter((a) => a.kind === 'out-of-sync')
        .flatMap((a) => a.apps)
        .sort(),
    ).toEqual(['checkout', 'search']);

    const frozen = buildDigest({ fleet: f, now: NOW, alerts, freezes: [freeze(new Date(NOW.getTime() - 600_000))] });
    expect(frozen.attention.filter((a) => a.kind === 'out-of-sync').flatMap((a) => a.apps)).toEqual(['search']);
    expect(frozen.attention.filter((a) => a.kind === 'frozen')).toEqual([
      expect.objectContaining({
        severity: 'info',
        apps: ['checkout'],
        title: 'project=payments frozen by U123 for 10m (INC-7): 1 app held',
      }),
    ]);
  });

  it('the out-of-sync rule takes an app under an active freeze as an expected stall, and alerts again once it ends', () => {
    const f = fleet();
    const ended = freeze(new Date(NOW.getTime() - 3 * 3_600_000), 3_600_000);
    const rules = (freezes: Freeze[]) => evaluateAlertRules({ fleet: f, now: NOW, config: alerts, freezes });
    const active = rules([freeze(new Date(NOW.getTime() - 600_000))]);
    expect(active.conditions.filter((c) => c.rule === 'out-of-sync').flatMap((c) => c.apps)).toEqual(['search']);
    expect(active.expected).toEqual([
      expect.objectContaining({
        reason: 'sync-window',
        apps: ['checkout'],
        message: expect.stringContaining(
          "stay OutOfSync under rollcall's freeze of project=payments (by U123, INC-7, until unfrozen)",
        ),
      }),
    ]);
    const after = rules([ended]);
    expect(
      after.conditions
        .filter((c) => c.rule === 'out-of-sync')
        .flatMap((c) => c.apps)
        .sort(),
    ).toEqual(['checkout', 'search']);
    expect(after.expected).toEqual([]);
  });
});
