import { describe, expect, it } from 'vitest';
import { dispatch } from '../../src/commands/index.js';
import type { CommandContext } from '../../src/commands/registry.js';
import type { ReplyOf } from '../../src/commands/replies.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { outOfSyncOutsideRollout, rolloutMembers } from '../../src/fleet/rules/index.js';
import { configSchema } from '../../src/infra/config/schema.js';
import type { Fixture } from '../../src/sim/fixture-types.js';
import { loadScenario } from '../../src/sim/scenarios/index.js';
import { okAnswer } from '../support/replies.js';

const T0 = new Date('2026-12-05T18:00:00Z');
const DOWN_RULES = ['degraded-after-sync', 'app-degraded', 'degraded-after-healthy', 'stuck-step'];

function context(fixture: Fixture): CommandContext {
  const fleet = StaticFleet.fromFixture(fixture);
  const config = configSchema.parse({
    instances: fleet.instances().map((name) => ({ name, url: `http://${name}.example`, token: 't' })),
  });
  return { services: { config, fleet, argocd: new Map(), now: () => T0 }, user: 'U1', surface: 'terminal' };
}

async function statusOf(ctx: CommandContext): Promise<ReplyOf<'status'>> {
  return okAnswer(await dispatch('status', ctx), 'status');
}

async function findingsOf(ctx: CommandContext) {
  return okAnswer(await dispatch('diagnose', ctx), 'diagnose').data.findings;
}

describe('status judges apps with the rules diagnose uses', () => {
  it.each(['seed-outage', 'sealed-secrets-migration'])(
    '%s: the apps status counts Degraded or Missing are the apps diagnose names down',
    async (scenario) => {
      const ctx = context(loadScenario(scenario, { now: T0 }).fixture);
      const status = await statusOf(ctx);
      const down = status.data.problems.filter((p) => p.health === 'Degraded' || p.health === 'Missing');
      expect(down.length).toBeGreaterThan(0);
      const named = (await findingsOf(ctx))
        .filter((f) => DOWN_RULES.includes(f.rule))
        .flatMap((f) => (f.apps ?? []).map((app) => `${f.instance}/${app}`));
      expect([...new Set(named)].sort()).toEqual(down.map((p) => `${p.instance}/${p.app}`).sort());
      expect(JSON.stringify(status.blocks)).toContain(`(${down.length} Degraded or Missing)`);
      expect(status.data.groups.filter((g) => g.kind === 'degraded').flatMap((g) => g.apps).length).toBe(
        down.filter((p) => p.health === 'Degraded').length,
      );
    },
  );

  it('progressive-infra: apps whose step has not come are waiting, as out-of-sync judges them; apps in no step are OutOfSync problems', async () => {
    const { fixture } = loadScenario('progressive-infra', { now: T0 });
    const ctx = context(fixture);
    const status = await statusOf(ctx);
    const kindOf = (app: string) => status.data.groups.find((g) => g.apps.includes(app))?.kind;
    const fleet = ctx.services.fleet;
    const inRollout = rolloutMembers(fleet);
    for (const a of fleet.apps().filter((x) => x.app.status?.sync?.status === 'OutOfSync')) {
      const name = a.app.metadata.name;
      // out-of-sync leaves an app the rollout is still getting to; status calls the ones not reached yet waiting.
      if (kindOf(name) === 'waiting') expect(outOfSyncOutsideRollout(a, inRollout), name).toBe(false);
    }
    expect(kindOf('ingress-nginx-prod-2')).toBe('waiting');
    // In no step: RollingSync never syncs them, so they wait for nothing and out-of-sync counts them.
    for (const name of ['metrics-server-stage-1', 'metrics-server-canary-1']) {
      expect(kindOf(name)).toBe('outofsync');
      const app = fleet.appsNamed(name)[0];
      expect(outOfSyncOutsideRollout(app, inRollout)).toBe(true);
    }
  });

  it('names the step-on-previous-revision judgement as the reason of an app RollingSync counts done', async () => {
    const { fixture } = loadScenario('progressive-infra', { now: T0 });
    const instance = fixture.instances[0];
    const canary = instance.applications.find((a) => a.metadata.name === 'ingress-nginx-canary-1')!;
    const head = 'c0ffee1d00dfeed5ca1ab1e0ddba11deadbeef42';
    canary.status!.sync = { ...canary.status!.sync!, status: 'OutOfSync', revision: head };
    const appSet = instance.applicationSets!.find((s) => s.metadata.name === 'progressive-infra')!;
    appSet.status!.applicationStatus!.find((e) => e.application === canary.metadata.name)!.targetRevisions = [head];
    const status = await statusOf(context(fixture));
    const group = status.data.groups.find((g) => g.apps.includes('ingress-nginx-canary-1'))!;
    expect(group).toMatchObject({
      kind: 'outofsync',
      reason: 'RollingSync counts its step complete, yet it runs the previous revision: sync it by hand',
    });
  });
});
