/**
 * What watches a wave after it passed its gate, before the next wave starts: a list of wave verifiers,
 * each judging the wave's apps (those this run synced) at a moment of the watch. Health, read off the
 * fleet mirror, is the first; a metric check is another verifier in the list, and the executor needs no
 * change for it. An `inconclusive` verdict never counts as a pass: it is looked at again, and a watch
 * that ends inconclusive fails the wave.
 */
import { clockTime, formatDuration, truncate } from '../../../../core/format.js';
import type { FleetView } from '../../../../fleet/model.js';
import type { RunbookServices } from '../../services.js';
import { checkVerifiersFor } from './check-verifier.js';
import type { BulkSyncInput } from './input.js';
import type { PlannedApp } from './planner.js';
import {
  combineAppVerdicts,
  type AppVerdict,
  type NamedVerdict,
  type VerifierVerdict,
  type WatchKind,
  type WavePhase,
  type WaveVerifier,
  NOT_LOOKED_AT,
} from './verifier.js';

export {
  combineAppVerdicts,
  type AppVerdict,
  type NamedVerdict,
  type VerifierVerdict,
  type VerifierVerdictKind,
  type WatchKind,
  type WavePhase,
  type WaveVerifier,
} from './verifier.js';

/** `12:00:12 (8s ago)`: a bake is counted in seconds, so the time says them. */
function sinceText(at: number, now: number): string {
  return `${clockTime(new Date(at))} (${formatDuration(Math.max(0, now - at))} ago)`;
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
 * The verifiers that watch each wave of a run, built from the step's input, the process' services and the
 * plan's apps (the executor and the preview take whatever this returns). During a bake every app must stay
 * Synced and Healthy; each `check=` is a verifier of its own (check-verifier.ts), with or without a bake. A
 * dry run applies nothing, so there is nothing to watch; without a bake or a check the gate alone decides,
 * as it always did. A check that is unknown or cannot be judged here throws (`unknown_check`, `invalid_params`).
 */
export function waveVerifiersFor(
  input: Pick<BulkSyncInput, 'bake' | 'dryRun' | 'check'>,
  services: Pick<RunbookServices, 'fleet' | 'checks'>,
  apps: readonly PlannedApp[] = [],
): WaveVerifier[] {
  if (input.dryRun) return [];
  return [...(input.bake > 0 ? [healthVerifier(services.fleet)] : []), ...checkVerifiersFor(input, services, apps)];
}

/**
 * What keeps every app the run synced under watch after its last wave (`watch=`): health and every check,
 * whatever the waves had. Nothing without a watch, or in a dry run.
 */
export function watchVerifiersFor(
  input: Pick<BulkSyncInput, 'watch' | 'dryRun' | 'check'>,
  services: Pick<RunbookServices, 'fleet' | 'checks'>,
  apps: readonly PlannedApp[] = [],
): WaveVerifier[] {
  if (input.dryRun || !(input.watch > 0)) return [];
  return [healthVerifier(services.fleet), ...checkVerifiersFor(input, services, apps)];
}

export type WatchVerdict =
  | { verdict: 'watching' }
  | { verdict: 'pass' }
  /** `reason` names the verifier, and for a watch that ended inconclusive says so; `failed` is its verdict. */
  | { verdict: 'fail'; reason: string; failed: NamedVerdict };

const ENDED: Record<WatchKind, string> = { bake: 'bake', verify: 'wave timeout', watch: 'watch' };

/**
 * One wave's watch (or the watch of every synced app after the last wave): its verifiers looked at on the
 * executor's ticks, each no sooner than it asks after the start and no more often than it asks. A bake or a
 * watch (`untilEnd`) passes only when it has ended with every latest verdict a pass; without one, the first
 * look at which every verifier passes ends it. Any fail is said at once; an inconclusive waits, and is a
 * fail once the watch is over.
 */
export class WaveWatch {
  private readonly latest = new Map<string, NamedVerdict>();
  private readonly lookedAt = new Map<string, number>();
  private readonly kind: WatchKind;

  constructor(
    private readonly verifiers: readonly WaveVerifier[],
    private readonly apps: readonly PlannedApp[],
    readonly startedAt: number,
    readonly endsAt: number,
    private readonly untilEnd: boolean,
    kind?: WatchKind,
  ) {
    this.kind = kind ?? (untilEnd ? 'bake' : 'verify');
  }

  /** Every verifier's latest verdict, in the order they were given. */
  verdicts(): NamedVerdict[] {
    return this.verifiers.map(
      (v) => this.latest.get(v.name) ?? { name: v.name, verdict: 'inconclusive', reason: NOT_LOOKED_AT },
    );
  }

  /**
   * Looks at the verifiers due. `onChange` hears each verifier whose verdict changed kind at this look (its
   * first verdict included), with the one before (undefined for the first).
   */
  async look(
    now: number,
    onChange?: (verdict: NamedVerdict, before: NamedVerdict | undefined) => void,
  ): Promise<WatchVerdict> {
    const ended = now >= this.endsAt;
    const phase: WavePhase = { startedAt: this.startedAt, now, endsAt: this.endsAt };
    await Promise.all(
      this.verifiers.map(async (v) => {
        const last = this.lookedAt.get(v.name);
        if (!ended && last === undefined && now < this.startedAt + (v.firstLookAfterMs ?? 0)) return;
        if (!ended && last !== undefined && now - last < (v.minIntervalMs ?? 0)) return;
        this.lookedAt.set(v.name, now);
        let verdict: VerifierVerdict;
        try {
          verdict = await v.verify(this.apps, phase);
        } catch (error) {
          verdict = { verdict: 'inconclusive', reason: `could not look: ${(error as Error).message}` };
        }
        const before = this.latest.get(v.name);
        const named: NamedVerdict = {
          name: v.name,
          ...(v.check ? { check: v.check } : {}),
          verdict: verdict.verdict,
          reason: verdict.reason,
          ...(verdict.figure ? { figure: verdict.figure } : {}),
          ...(verdict.apps ? { apps: verdict.apps } : {}),
        };
        this.latest.set(v.name, named);
        if (before?.verdict !== named.verdict) onChange?.(named, before);
      }),
    );
    const verdicts = this.verdicts();
    const failed = verdicts.find((v) => v.verdict === 'fail');
    if (failed) return { verdict: 'fail', reason: `${failed.name}: ${failed.reason}`, failed };
    const unsure = verdicts.find((v) => v.verdict === 'inconclusive');
    if (ended && unsure)
      return {
        verdict: 'fail',
        reason: `${unsure.name} was still inconclusive when the ${ENDED[this.kind]} ended: ${unsure.reason}`,
        failed: unsure,
      };
    if (unsure || (this.untilEnd && !ended)) return { verdict: 'watching' };
    return { verdict: 'pass' };
  }
}
