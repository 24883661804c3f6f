/**
 * What watches a wave after it passed its gate, before the next wave starts: a list of wave verifiers,
 * each judging the wave's apps (those this run synced) at a moment of the watch. Health, read off the
 * fleet mirror, is the first; a metric check is another verifier in the list, and the executor needs no
 * change for it. An `inconclusive` verdict never counts as a pass: it is looked at again, and a watch
 * that ends inconclusive fails the wave.
 */
import { clockTime, formatDuration, plural, truncate } from '../../../../core/format.js';
import type { FleetView } from '../../../../fleet/model.js';
import type { RunbookServices } from '../../services.js';
import type { BulkSyncInput } from './input.js';
import type { PlannedApp } from './planner.js';

export type VerifierVerdictKind = 'pass' | 'fail' | 'inconclusive';

/** One app's verdict, when a verifier judges apps one by one. */
export interface AppVerdict {
  instance: string;
  app: string;
  cluster?: string;
  verdict: VerifierVerdictKind;
  /** Why, in words: "health Degraded since 2m ago (12:00:05 UTC)", "error rate 0.31 > 0.05". */
  reason: string;
}

/** A verifier's answer at one look. */
export interface VerifierVerdict {
  verdict: VerifierVerdictKind;
  /** One line, naming the apps behind a fail or an inconclusive: what the live message and the summary say. */
  reason: string;
  apps?: AppVerdict[];
}

/** Where a look falls in the watch, in ms on the step's clock. */
export interface WavePhase {
  /** When the watch began: the bake's start, kept in the wave checkpoint across attempts. */
  startedAt: number;
  now: number;
  /** When the watch ends: the bake's end, or without a bake the wave's timeout. */
  endsAt: number;
}

export interface WaveVerifier {
  /** Shown in the preview, the live message and failures: `health`, `check error-rate`. */
  readonly name: string;
  /**
   * The least time between two looks (a metric query costs Prometheus a request, the mirror nothing).
   * The look at the end of the watch is always taken.
   * @defaultValue 0: every look of the executor (about every 0.5 s, and on every change of a wave app)
   */
  readonly minIntervalMs?: number;
  /**
   * One look at the wave's apps. An upstream that cannot answer is `inconclusive`, never `pass`; a throw is
   * taken as inconclusive too.
   */
  verify(apps: readonly PlannedApp[], phase: WavePhase): Promise<VerifierVerdict>;
}

/** `12:00:12 (8s ago)`: a bake is counted in seconds, so the time says them. */
function sinceText(at: number, now: number): string {
  return `${clockTime(new Date(at))} (${formatDuration(Math.max(0, now - at))} ago)`;
}

const appText = (v: AppVerdict) => `${v.app}${v.cluster ? ` (${v.cluster})` : ''}: ${v.reason}`;

/**
 * Per-app verdicts as one: any fail fails, else any inconclusive is inconclusive, else a pass. The reason
 * names the apps behind it (at most three, then how many more).
 */
export function combineAppVerdicts(apps: AppVerdict[], passed = 'every app passed'): VerifierVerdict {
  const named = (list: AppVerdict[]) =>
    `${list.slice(0, 3).map(appText).join('; ')}${list.length > 3 ? ` and ${list.length - 3} more` : ''}`;
  const failed = apps.filter((a) => a.verdict === 'fail');
  if (failed.length) return { verdict: 'fail', reason: named(failed), apps };
  const unsure = apps.filter((a) => a.verdict === 'inconclusive');
  if (unsure.length) return { verdict: 'inconclusive', reason: named(unsure), apps };
  return { verdict: 'pass', reason: `${plural(apps.length, 'app')}: ${passed}`, apps };
}

/**
 * Every app of the wave stays Synced and Healthy, as the fleet mirror shows it. What Argo CD reports is
 * a verdict (Degraded, Progressing, Unknown all fail, with the health and since when); an app the mirror
 * does not show, or an instance the mirror does not follow now, is inconclusive: nobody can tell.
 */
export function healthVerifier(fleet: FleetView): WaveVerifier {
  // When this verifier first saw an app out of sync (Argo CD keeps no transition time for sync status).
  const firstSeen = new Map<string, number>();
  return {
    name: 'health',
    async verify(apps, phase) {
      const instances = new Map(fleet.health().map((h) => [h.instance, h]));
      const verdicts = apps.map((a): AppVerdict => {
        const base = { instance: a.instance, app: a.app, cluster: a.cluster };
        const followed = instances.get(a.instance);
        if (followed && !followed.synced)
          return {
            ...base,
            verdict: 'inconclusive',
            reason: `the fleet mirror does not follow instance ${a.instance} now${followed.error ? ` (${followed.error})` : ''}`,
          };
        const live = fleet.appsNamed(a.app).find((f) => f.instance === a.instance)?.app;
        if (!live) return { ...base, verdict: 'inconclusive', reason: 'not in the fleet mirror' };
        const key = `${a.instance}/${a.app}`;
        const health = live.status?.health;
        const sync = live.status?.sync?.status ?? 'Unknown';
        if (health?.status === 'Healthy' && sync === 'Synced') {
          firstSeen.delete(key);
          return { ...base, verdict: 'pass', reason: 'Synced and Healthy' };
        }
        const seen = firstSeen.get(key) ?? phase.now;
        firstSeen.set(key, seen);
        const bits: string[] = [];
        if (health?.status !== 'Healthy') {
          const changed = Date.parse(health?.lastTransitionTime ?? '');
          bits.push(
            `health ${health?.status ?? 'Unknown'} since ${sinceText(Number.isNaN(changed) ? seen : changed, phase.now)}`,
          );
          if (health?.message) bits.push(truncate(health.message, 160));
        }
        if (sync !== 'Synced')
          bits.push(health?.status === 'Healthy' ? `sync ${sync} since ${sinceText(seen, phase.now)}` : `sync ${sync}`);
        return { ...base, verdict: 'fail', reason: bits.join(', ') };
      });
      return combineAppVerdicts(verdicts, 'Synced and Healthy');
    },
  };
}

/**
 * The verifiers that watch each wave of a run, built from the step's input and the process' services (a
 * metric check adds its verifier here; the executor and the preview take whatever this returns). During a
 * bake every app must stay Synced and Healthy. A dry run applies nothing, so there is nothing to watch;
 * without a bake (and no other verifier) the gate alone decides, as it always did.
 */
export function waveVerifiersFor(
  input: Pick<BulkSyncInput, 'bake' | 'dryRun'>,
  services: Pick<RunbookServices, 'fleet'>,
): WaveVerifier[] {
  if (input.dryRun) return [];
  return input.bake > 0 ? [healthVerifier(services.fleet)] : [];
}

/** A named verifier's latest verdict, as the live message and the run's progress carry it. */
export interface NamedVerdict {
  name: string;
  verdict: VerifierVerdictKind;
  reason: string;
}

export type WatchVerdict =
  | { verdict: 'watching' }
  | { verdict: 'pass' }
  /** `reason` names the verifier, and for a watch that ended inconclusive says so. */
  | { verdict: 'fail'; reason: string };

/**
 * One wave's watch: its verifiers looked at on the executor's ticks, each no more often than it asks.
 * A bake (`untilEnd`) passes only when the watch has ended with every latest verdict a pass; without one,
 * the first look at which every verifier passes ends it. Any fail ends it at once; an inconclusive waits,
 * and is a fail once the watch is over.
 */
export class WaveWatch {
  private readonly latest = new Map<string, NamedVerdict>();
  private readonly lookedAt = new Map<string, number>();

  constructor(
    private readonly verifiers: readonly WaveVerifier[],
    private readonly apps: readonly PlannedApp[],
    readonly startedAt: number,
    readonly endsAt: number,
    private readonly untilEnd: boolean,
  ) {}

  /** Every verifier's latest verdict, in the order they were given. */
  verdicts(): NamedVerdict[] {
    return this.verifiers.map(
      (v) => this.latest.get(v.name) ?? { name: v.name, verdict: 'inconclusive', reason: 'not looked at yet' },
    );
  }

  async look(now: number): Promise<WatchVerdict> {
    const ended = now >= this.endsAt;
    const phase: WavePhase = { startedAt: this.startedAt, now, endsAt: this.endsAt };
    await Promise.all(
      this.verifiers.map(async (v) => {
        const last = this.lookedAt.get(v.name);
        if (!ended && last !== undefined && now - last < (v.minIntervalMs ?? 0)) return;
        this.lookedAt.set(v.name, now);
        let verdict: VerifierVerdict;
        try {
          verdict = await v.verify(this.apps, phase);
        } catch (error) {
          verdict = { verdict: 'inconclusive', reason: `could not look: ${(error as Error).message}` };
        }
        this.latest.set(v.name, { name: v.name, verdict: verdict.verdict, reason: verdict.reason });
      }),
    );
    const verdicts = this.verdicts();
    const failed = verdicts.find((v) => v.verdict === 'fail');
    if (failed) return { verdict: 'fail', reason: `${failed.name}: ${failed.reason}` };
    const unsure = verdicts.find((v) => v.verdict === 'inconclusive');
    if (ended && unsure)
      return {
        verdict: 'fail',
        reason: `${unsure.name} was still inconclusive when the ${this.untilEnd ? 'bake' : 'wave timeout'} ended: ${unsure.reason}`,
      };
    if (unsure || (this.untilEnd && !ended)) return { verdict: 'watching' };
    return { verdict: 'pass' };
  }
}
