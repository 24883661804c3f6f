/**
 * The contract of a wave verifier: what watches a wave after its gate (and every synced app after the last
 * wave), one look at a time. The verifiers themselves (health in verify.ts, a metric check in
 * check-verifier.ts) and the watch that looks at them (verify.ts) build on this file alone.
 */
import { plural } from '../../../../core/format.js';
import type { PlannedApp } from './planner.js';

/** The reason of a verifier whose first look is still ahead (a check waits one scrape for the new revision). */
export const NOT_LOOKED_AT = 'not looked at yet';

export type VerifierVerdictKind = 'pass' | 'fail' | 'inconclusive';

/** One app's verdict, when a verifier judges apps one by one. */
export interface AppVerdict {
  instance: string;
  app: string;
  cluster?: string;
  verdict: VerifierVerdictKind;
  /** Why, in words: "health Degraded since 2m ago (12:00:05 UTC)", "error-rate 0.31 > 0.05 (fail above)". */
  reason: string;
  /** A metric check's deciding value, its threshold and Prometheus' graph of the query. */
  value?: number;
  threshold?: number;
  link?: string;
}

/** A verifier's answer at one look. */
export interface VerifierVerdict {
  verdict: VerifierVerdictKind;
  /** One line, naming the apps behind a fail or an inconclusive: what the live message and the summary say. */
  reason: string;
  apps?: AppVerdict[];
  /** The latest figure in a few words, for the live message: a metric check's worst app and its value. */
  figure?: string;
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
  /** The metric check (config `checks`) this verifier judges, if it is one. */
  readonly check?: string;
  /**
   * The least time between two looks (a metric query costs Prometheus a request, the mirror nothing).
   * The look at the end of the watch is always taken.
   * @defaultValue 0: every look of the executor (about every 0.5 s, and on every change of a wave app)
   */
  readonly minIntervalMs?: number;
  /**
   * How long after the watch starts the first look is taken: a metric has no sample of the new revision
   * until Prometheus scraped it once. Until then the verifier counts as not looked at (inconclusive).
   * @defaultValue 0
   */
  readonly firstLookAfterMs?: number;
  /**
   * One look at the wave's apps. An upstream that cannot answer is `inconclusive`, never `pass`; a throw is
   * taken as inconclusive too.
   */
  verify(apps: readonly PlannedApp[], phase: WavePhase): Promise<VerifierVerdict>;
}

/** What a watch is called in its messages: a bake, a wave's verification, or the watch after the rollout. */
export type WatchKind = 'bake' | 'verify' | 'watch';

/** A named verifier's latest verdict, as the live message and the run's progress carry it. */
export interface NamedVerdict {
  name: string;
  /** The metric check behind it, if any. */
  check?: string;
  verdict: VerifierVerdictKind;
  reason: string;
  figure?: string;
  /** The per-app verdicts behind it (not kept in the run's progress). */
  apps?: AppVerdict[];
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
