import { describe, expect, it } from 'vitest';
import type { Application } from '../../src/infra/argocd/types.js';
import { StaticFleet } from '../../src/fleet/model.js';
import {
  combineAppVerdicts,
  healthVerifier,
  waveVerifiersFor,
  WaveWatch,
  type VerifierVerdict,
  type WavePhase,
  type WaveVerifier,
} from '../../src/domain/runbooks/actions/bulk-sync/verify.js';

// The watch is judged on the step's clock: these tests hand it the times, nothing reads the wall clock.
const T0 = Date.parse('2030-01-01T12:00:00Z');
const s = (seconds: number) => T0 + seconds * 1000;
const APPS = [
  { instance: 'prod', app: 'shop-01', cluster: 'c1' },
  { instance: 'prod', app: 'shop-02', cluster: 'c2' },
];

/** A verifier that answers from a script, one verdict per look, and records the phases it was shown. */
function scripted(name: string, answers: (VerifierVerdict | Error)[], minIntervalMs?: number) {
  const phases: WavePhase[] = [];
  const verifier: WaveVerifier = {
    name,
    minIntervalMs,
    async verify(_apps, phase) {
      phases.push(phase);
      const next = answers.length > 1 ? answers.shift()! : answers[0];
      if (next instanceof Error) throw next;
      return next;
    },
  };
  return { verifier, phases };
}
const pass: VerifierVerdict = { verdict: 'pass', reason: 'fine' };
const unsure: VerifierVerdict = { verdict: 'inconclusive', reason: 'no data for shop-02' };
const fail: VerifierVerdict = { verdict: 'fail', reason: 'shop-02 (c2): error rate 0.31 > 0.05' };

describe('a wave watch', () => {
  it('a bake passes only once it has ended with every verifier passing', async () => {
    const health = scripted('health', [pass]);
    const watch = new WaveWatch([health.verifier], APPS, s(0), s(30), true);
    expect(await watch.look(s(1))).toEqual({ verdict: 'watching' });
    expect(await watch.look(s(29))).toEqual({ verdict: 'watching' });
    expect(await watch.look(s(30))).toEqual({ verdict: 'pass' });
    expect(health.phases.at(-1)).toEqual({ startedAt: s(0), now: s(30), endsAt: s(30) });
  });

  it('fails at once on a fail, naming the verifier', async () => {
    const check = scripted('check error-rate', [pass, fail]);
    const watch = new WaveWatch([check.verifier], APPS, s(0), s(30), true);
    expect(await watch.look(s(1))).toEqual({ verdict: 'watching' });
    expect(await watch.look(s(2))).toEqual({
      verdict: 'fail',
      reason: 'check error-rate: shop-02 (c2): error rate 0.31 > 0.05',
      failed: { name: 'check error-rate', ...fail },
    });
  });

  it('never counts inconclusive as a pass: it waits, and fails when the bake ends still inconclusive', async () => {
    const check = scripted('check error-rate', [unsure]);
    const watch = new WaveWatch([scripted('health', [pass]).verifier, check.verifier], APPS, s(0), s(30), true);
    expect(await watch.look(s(10))).toEqual({ verdict: 'watching' });
    expect(watch.verdicts()).toEqual([
      { name: 'health', verdict: 'pass', reason: 'fine' },
      { name: 'check error-rate', verdict: 'inconclusive', reason: 'no data for shop-02' },
    ]);
    expect(await watch.look(s(31))).toEqual({
      verdict: 'fail',
      reason: 'check error-rate was still inconclusive when the bake ended: no data for shop-02',
      failed: { name: 'check error-rate', ...unsure },
    });
  });

  it('an inconclusive that turns into a pass before the end lets the bake pass', async () => {
    const check = scripted('check error-rate', [unsure, unsure, pass]);
    const watch = new WaveWatch([check.verifier], APPS, s(0), s(30), true);
    expect(await watch.look(s(5))).toEqual({ verdict: 'watching' });
    expect(await watch.look(s(10))).toEqual({ verdict: 'watching' });
    expect(await watch.look(s(30))).toEqual({ verdict: 'pass' });
  });

  it('without a bake, passes at the first look where all pass, and fails if still inconclusive at the wave timeout', async () => {
    const settling = scripted('check', [unsure, pass]);
    const watch = new WaveWatch([settling.verifier], APPS, s(0), s(600), false);
    expect(await watch.look(s(1))).toEqual({ verdict: 'watching' });
    expect(await watch.look(s(2))).toEqual({ verdict: 'pass' });
    const stuck = new WaveWatch([scripted('check', [unsure]).verifier], APPS, s(0), s(600), false);
    expect(await stuck.look(s(600))).toEqual({
      verdict: 'fail',
      reason: 'check was still inconclusive when the wave timeout ended: no data for shop-02',
      failed: { name: 'check', ...unsure },
    });
  });

  it('a verifier that throws is inconclusive, never a pass', async () => {
    const broken = scripted('check', [new Error('Prometheus answered 503')]);
    const watch = new WaveWatch([broken.verifier], APPS, s(0), s(30), true);
    expect(await watch.look(s(1))).toEqual({ verdict: 'watching' });
    expect(watch.verdicts()[0]).toEqual({
      name: 'check',
      verdict: 'inconclusive',
      reason: 'could not look: Prometheus answered 503',
    });
    expect((await watch.look(s(30))).verdict).toBe('fail');
  });

  it("takes a verifier's first look no sooner than it asks after the start, and says each change of verdict once", async () => {
    const phases: WavePhase[] = [];
    const answers = [pass, unsure, unsure, pass];
    const check: WaveVerifier = {
      name: 'check error-rate',
      firstLookAfterMs: 5000,
      async verify(_apps, phase) {
        phases.push(phase);
        return answers.shift()!;
      },
    };
    const watch = new WaveWatch([check], APPS, s(0), s(30), true);
    const changes: string[] = [];
    const hear = (now: { verdict: string }, before?: { verdict: string }) =>
      changes.push(`${before?.verdict ?? '-'}→${now.verdict}`);
    for (const t of [1, 4, 5, 6, 7, 8]) await watch.look(s(t), hear);
    expect(phases.map((p) => (p.now - T0) / 1000)).toEqual([5, 6, 7, 8]);
    expect(changes).toEqual(['-→pass', 'pass→inconclusive', 'inconclusive→pass']);
  });

  it('asks a verifier no more often than it allows, and always at the end', async () => {
    const costly = scripted('check', [pass], 15_000);
    const cheap = scripted('health', [pass]);
    const watch = new WaveWatch([costly.verifier, cheap.verifier], APPS, s(0), s(30), true);
    for (const t of [1, 2, 10, 16, 20, 30]) await watch.look(s(t));
    expect(costly.phases.map((p) => (p.now - T0) / 1000)).toEqual([1, 16, 30]);
    expect(cheap.phases).toHaveLength(6);
  });
});

describe('per-app verdicts as one', () => {
  const v = (app: string, verdict: 'pass' | 'fail' | 'inconclusive', reason: string = verdict) => ({
    instance: 'prod',
    app,
    cluster: `c-${app}`,
    verdict,
    reason,
  });
  it('any fail fails, naming the failing apps; else any inconclusive; else a pass', () => {
    expect(combineAppVerdicts([v('a', 'pass'), v('b', 'inconclusive'), v('c', 'fail', 'x')]).reason).toBe('c (c-c): x');
    expect(combineAppVerdicts([v('a', 'pass'), v('b', 'inconclusive', 'no data')])).toMatchObject({
      verdict: 'inconclusive',
      reason: 'b (c-b): no data',
    });
    expect(combineAppVerdicts([v('a', 'pass')]).verdict).toBe('pass');
    expect(combineAppVerdicts(['a', 'b', 'c', 'd', 'e'].map((a) => v(a, 'fail'))).reason).toBe(
      'a (c-a): fail; b (c-b): fail; c (c-c): fail and 2 more',
    );
  });
});

function app(name: string, sync: string, health: string, since?: string, message?: string): Application {
  return {
    metadata: { name, namespace: 'argocd' },
    spec: { project: 'default', destination: { name: `c-${name}` } },
    status: {
      sync: { status: sync },
      health: { status: health, ...(since ? { lastTransitionTime: since } : {}), ...(message ? { message } : {}) },
    },
  } as Application;
}

describe('the health verifier', () => {
  const fleetOf = (...apps: Application[]) => StaticFleet.fromObjects([{ name: 'prod', applications: apps }]);
  const phase = (now: number): WavePhase => ({ startedAt: s(0), now, endsAt: s(30) });
  const wave = (...names: string[]) => names.map((n) => ({ instance: 'prod', app: n, cluster: `c-${n}` }));

  it('passes while every app is Synced and Healthy', async () => {
    const fleet = fleetOf(app('a', 'Synced', 'Healthy'), app('b', 'Synced', 'Healthy'));
    expect(await healthVerifier(fleet).verify(wave('a', 'b'), phase(s(5)))).toMatchObject({
      verdict: 'pass',
      reason: '2 apps: Synced and Healthy',
    });
  });

  it('fails an app that degraded, with its health, since when and why', async () => {
    const fleet = fleetOf(
      app('a', 'Synced', 'Healthy'),
      app('b', 'Synced', 'Degraded', '2030-01-01T12:00:12Z', 'back-off 5m0s restarting failed container=shop'),
    );
    const verdict = await healthVerifier(fleet).verify(wave('a', 'b'), phase(s(20)));
    expect(verdict.verdict).toBe('fail');
    expect(verdict.reason).toMatch(
      /^b \(c-b\): health Degraded since \d\d:\d0:12 \(8s ago\), back-off 5m0s restarting failed container=shop$/,
    );
  });

  it('fails an app gone OutOfSync, since it was first seen so (Argo CD keeps no time for it)', async () => {
    const fleet = fleetOf(app('a', 'OutOfSync', 'Healthy'));
    const health = healthVerifier(fleet);
    expect((await health.verify(wave('a'), phase(s(10)))).reason).toMatch(
      /^a \(c-a\): sync OutOfSync since \d\d:\d0:10 \(0s ago\)$/,
    );
    expect((await health.verify(wave('a'), phase(s(25)))).reason).toMatch(
      /^a \(c-a\): sync OutOfSync since \d\d:\d0:10 \(15s ago\)$/,
    );
  });

  it('is inconclusive, not a pass, for an app the mirror does not show', async () => {
    const verdict = await healthVerifier(fleetOf(app('a', 'Synced', 'Healthy'))).verify(wave('a', 'gone'), phase(s(1)));
    expect(verdict).toMatchObject({ verdict: 'inconclusive', reason: 'gone (c-gone): not in the fleet mirror' });
  });
});

describe('the verifiers of a run', () => {
  const fleet = StaticFleet.fromObjects([{ name: 'prod', applications: [] }]);
  it('health watches a bake; no bake or a dry run watches nothing, as before bakes existed', () => {
    expect(waveVerifiersFor({ bake: 30_000, dryRun: false }, { fleet }).map((v) => v.name)).toEqual(['health']);
    expect(waveVerifiersFor({ bake: 0, dryRun: false }, { fleet })).toEqual([]);
    expect(waveVerifiersFor({ bake: 30_000, dryRun: true }, { fleet })).toEqual([]);
  });
});
