/**
 * What a bulk sync says about itself: the live message's progress (counts, failing apps, a wave's watch)
 * and the summary it ends with. Pure: the executor hands in its states and what its waves did.
 */
import { NOT_LOOKED_AT } from './verifier.js';
import { formatDuration, link, plural } from '../../../../core/format.js';
import type { RunProgress } from '../../run-store.js';
import { IN_FLIGHT_APP_STATES, TERMINAL_APP_STATES, type AppCheckpoint, type AppState } from '../sync-progress.js';
import type { NamedVerdict, WatchKind } from './verifier.js';
import type { WaveRollbackResult } from './wave-rollback.js';

/** A wave that failed after its gate (its watch) or was rolled back, or the watch after the rollout: which, and why. */
export interface WaveFailure {
  wave: number;
  name: string;
  reason: string;
  /** The metric checks behind the failure: app, check, value and Prometheus' graph, for the summary. */
  checks?: FailedCheck[];
}

/** One app a metric check failed, as the summary names it. */
export interface FailedCheck {
  check: string;
  app: string;
  cluster?: string;
  value?: number;
  threshold?: number;
  link?: string;
}

/** What the run's waves did beyond syncing: failures and rollbacks, for the summary. */
export interface WaveOutcomes {
  failures: WaveFailure[];
  rollback?: WaveRollbackResult & { wave: number };
}

/** `wave 2/3 (tier=low-traffic)` */
export const waveLabel = (index: number, total: number, name: string | undefined) =>
  `wave ${index + 1}/${total}${name ? ` (${name})` : ''}`;

const where = (a: { app: string; cluster?: string }) => `${a.app}${a.cluster ? ` (${a.cluster})` : ''}`;
const listed = (items: string[], max = 5) =>
  `${items.slice(0, max).join(', ')}${items.length > max ? ` and ${items.length - max} more` : ''}`;

/** The rollback of a failed wave in one line: what went back where, and what did not. */
export function rollbackText(r: WaveRollbackResult, dryRun: boolean): string {
  const back = r.rolledBack.map((a) => `${where(a)}${dryRun ? '' : ` to ${a.to}`}`);
  const parts = [
    back.length
      ? `${dryRun ? 'would roll back (dry run: nothing applied)' : 'rolled back'} ${plural(back.length, 'app')}: ${listed(back)}`
      : `${dryRun ? 'would roll back' : 'rolled back'} nothing`,
  ];
  if (r.notRolledBack.length)
    parts.push(`not rolled back: ${listed(r.notRolledBack.map((a) => `${where(a)}: ${a.reason}`))}`);
  return parts.join('; ');
}

/** Prometheus' graph of the first failed app of each check: where on-call looks next. */
function graphLines(checks: FailedCheck[]): string[] {
  const first = new Map<string, FailedCheck>();
  for (const c of checks) if (c.link && !first.has(c.check)) first.set(c.check, c);
  return [...first.values()].map((c) => `${c.check} on ${where(c)}: ${link('graph in Prometheus', c.link)}`);
}

/** What the run did, in words; a dry run's accepted syncs applied nothing, so they are what would sync. */
export function summarize(
  states: Map<string, AppCheckpoint>,
  dryRun: boolean,
  outcomes: WaveOutcomes = { failures: [] },
): Record<string, unknown> {
  const by = (state: AppState) => [...states.values()].filter((s) => s.state === state);
  const failed = [...by('failed'), ...by('timeout')].map((s) => ({
    app: s.app,
    instance: s.instance,
    cluster: s.cluster,
    reason: s.reason,
  }));
  const synced = by('done').length;
  const skipped = by('skipped').length;
  const remaining = [...states.values()].filter((s) => !TERMINAL_APP_STATES.includes(s.state)).length;
  const clusters = new Set(
    by('done')
      .map((s) => s.cluster)
      .filter(Boolean),
  ).size;
  const { failures, rollback } = outcomes;
  const summary = [
    `${synced} app(s) ${dryRun ? 'would sync' : 'synced'}${clusters ? ` on ${clusters} cluster(s)` : ''}${dryRun ? ' (dry run: nothing applied)' : ''}${skipped ? `, ${skipped} skipped (already Synced and Healthy)` : ''}${failed.length ? `, ${failed.length} failed or timed out` : ''}${remaining ? `, ${remaining} not synced yet` : ''}`,
    ...failures.flatMap((f) => [`${f.name} failed: ${f.reason}`, ...graphLines(f.checks ?? [])]),
    ...(rollback ? [rollbackText(rollback, dryRun)] : []),
    ...failed.slice(0, 5).map((f) => `${f.app}${f.cluster ? ` (${f.cluster})` : ''}: ${f.reason}`),
    ...(failed.length > 5 ? [`and ${failed.length - 5} more failed`] : []),
  ];
  return {
    synced,
    skipped,
    failed,
    remaining,
    summary,
    ...(failures.length ? { failedWaves: failures } : {}),
    ...(rollback ? { rolledBack: rollback.rolledBack, notRolledBack: rollback.notRolledBack } : {}),
  };
}

/** A wave's watch (or the watch after the last wave) as the live message shows it. */
export interface WatchState {
  wave: number;
  kind: WatchKind;
  endsAt: number;
  /** How many apps are watched. */
  apps: number;
  verdicts: NamedVerdict[];
}

/** `health: pass`, `check error-rate: fail (0.31 > 0.05 (checkout-prod-eu-west-1))`. */
// Before its first look a check is waiting for a scrape of the new revision, not failing to answer.
const verdictText = (v: NamedVerdict) =>
  `${v.name}: ${v.reason === NOT_LOOKED_AT ? 'waiting for a first look' : v.verdict}${v.figure ? ` (${v.figure})` : ''}`;

/** `baking: 25s left · health: pass`; a watch without a bake says when the wave times out. */
function watchText(watch: WatchState, now: number): string {
  const left = formatDuration(Math.max(0, watch.endsAt - now));
  const verdicts = watch.verdicts.map(verdictText).join(' · ');
  const doing =
    watch.kind === 'bake'
      ? `baking: ${left} left`
      : watch.kind === 'watch'
        ? `watching ${plural(watch.apps, 'synced app')} after the rollout: ${left} left`
        : `verifying (wave times out in ${left})`;
  return `${doing}${verdicts ? ` · ${verdicts}` : ''}`;
}

/** The live message's progress: the wave, what it is doing (a watch, a rollback), counts and failing apps. */
export function progressOf(opts: {
  states: Map<string, AppCheckpoint>;
  waves: { name: string; apps: unknown[] }[];
  waveIndex: number;
  dryRun: boolean;
  now: number;
  watch?: WatchState;
  /** What a failed wave's rollback is doing now. */
  rollbackLine?: string;
}): RunProgress {
  const { states, waves, waveIndex, dryRun, now, watch, rollbackLine } = opts;
  const counts: Record<string, number> = { pending: 0, syncing: 0, done: 0, failed: 0, 'timed out': 0, skipped: 0 };
  const failing: RunProgress['failing'] = [];
  for (const s of states.values()) {
    if (s.state === 'pending') counts.pending++;
    else if (IN_FLIGHT_APP_STATES.includes(s.state)) counts.syncing++;
    else if (s.state === 'done') counts.done++;
    else if (s.state === 'failed') counts.failed++;
    else if (s.state === 'timeout') counts['timed out']++;
    else counts.skipped++;
    if (s.state === 'failed' || s.state === 'timeout')
      failing.push({ app: s.app, instance: s.instance, cluster: s.cluster, reason: s.reason ?? s.state });
  }
  const total = waves.reduce((n, w) => n + w.apps.length, 0);
  const at = Math.min(waveIndex, waves.length - 1);
  const doing = rollbackLine
    ? ` · failed, ${rollbackLine}`
    : watch && watch.wave === waveIndex
      ? ` · ${watchText(watch, now)}`
      : '';
  return {
    headline: `${waveLabel(at, waves.length, waves[at]?.name)}${doing} · ${counts.done}/${total} ${dryRun ? 'would sync (dry run: nothing applied)' : 'synced'}`,
    counts,
    failing,
    wave: { index: at + 1, total: waves.length },
    ...(watch
      ? {
          watch: {
            wave: watch.wave + 1,
            kind: watch.kind,
            endsAt: new Date(watch.endsAt).toISOString(),
            apps: watch.apps,
            // The per-app verdicts stay out: the progress is saved with the run on every update.
            verdicts: watch.verdicts.map(({ name, verdict, reason, figure }) => ({
              name,
              verdict,
              reason,
              ...(figure ? { figure } : {}),
            })),
          },
        }
      : {}),
    updatedAt: new Date(now).toISOString(),
  };
}
