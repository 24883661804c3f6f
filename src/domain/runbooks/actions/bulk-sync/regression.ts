/**
 * What a regression found by the watch after a bulk sync's last wave becomes: the record the alert rules read
 * (RegressionStore, key `watch:<runId>`), the reply posted once in the run's thread, and the failed checks the
 * summary names. Pure: the executor decides when.
 */
import { formatDuration, plural } from '../../../../core/format.js';
import type { Reply, ReplyItem } from '../../../../core/reply.js';
import type { Regression } from '../../../checks/regressions.js';
import type { OnRegression } from './input.js';
import type { FailedCheck } from './summary.js';
import type { AppVerdict, NamedVerdict } from './verifier.js';

export const regressionKey = (runId: string) => `watch:${runId}`;

const failing = (v: NamedVerdict): AppVerdict[] => (v.apps ?? []).filter((a) => a.verdict === v.verdict);

/** The apps a failed metric check judged, with value, threshold and graph: what the summary names. */
export function failedChecksOf(v: NamedVerdict | undefined): FailedCheck[] {
  const check = v?.check;
  if (!check) return [];
  return failing(v).map((a) => ({
    check,
    app: a.app,
    ...(a.cluster ? { cluster: a.cluster } : {}),
    ...(a.value !== undefined ? { value: a.value } : {}),
    ...(a.threshold !== undefined ? { threshold: a.threshold } : {}),
    ...(a.link ? { link: a.link } : {}),
  }));
}

/** The regression the alert rules read while the watch finds it; dropped at `expiresAt` if nobody clears it. */
export function watchRegression(opts: {
  runId: string;
  failed: NamedVerdict[];
  watched: number;
  now: number;
  expiresAt: number;
}): Regression {
  const apps = [...new Set(opts.failed.flatMap((v) => failing(v).map((a) => a.app)))].sort();
  const first = opts.failed.flatMap(failing)[0];
  const checks = [...new Set(opts.failed.map((v) => v.check ?? v.name))];
  return {
    key: regressionKey(opts.runId),
    source: 'watch',
    instance: first?.instance ?? '',
    runId: opts.runId,
    checks,
    apps,
    since: new Date(opts.now).toISOString(),
    summary: `${plural(apps.length, 'app')} of the ${opts.watched} synced by run ${opts.runId} fail ${checks.join(', ')} after the rollout`,
    details: opts.failed.flatMap((v) =>
      failing(v).map((a) => `${a.app}${a.cluster ? ` (${a.cluster})` : ''} ${v.name}: ${a.reason}`),
    ),
    expiresAt: opts.expiresAt,
  };
}

const ACTION: Record<OnRegression, string> = {
  rollback: 'Rolling back every app this run synced to its previous deployment (onRegression=rollback).',
  pause: 'The run is paused (onRegression=pause): resume to end it, or roll back.',
  notify: 'Watching on to the end; the run will end failed (onRegression=notify).',
};

/** The one message in the run's thread: what regressed where, and what rollcall does about it. */
export function regressionReply(opts: {
  runId: string;
  failed: NamedVerdict;
  watch: { startedAt: number; now: number; watched: number };
  onRegression: OnRegression;
}): Reply {
  const { runId, failed, watch } = opts;
  const apps = failing(failed);
  const items: ReplyItem[] = apps.slice(0, 15).map((a) => ({
    text: `${a.app}${a.cluster ? ` (${a.cluster})` : ''}`,
    detail: `${failed.name}: ${a.reason}`,
    tone: 'error',
    ...(a.link ? { url: a.link } : {}),
  }));
  const after = formatDuration(Math.max(0, watch.now - watch.startedAt));
  return {
    ok: false,
    command: 'runs',
    title: `Regression after run ${runId}`,
    data: {
      runId,
      regression: { verifier: failed.name, verdict: failed.verdict, reason: failed.reason },
      apps: apps.map((a) => ({ app: a.app, instance: a.instance, cluster: a.cluster, value: a.value, link: a.link })),
      onRegression: opts.onRegression,
    },
    blocks: [
      {
        kind: 'text',
        text: `:rotating_light: Regression ${after} into the watch after the rollout of run ${runId}: ${failed.name} fails on ${plural(apps.length || 1, 'app')} of the ${watch.watched} it synced.`,
        tone: 'error',
      },
      ...(items.length ? [{ kind: 'list' as const, items, total: apps.length }] : []),
      ...(!items.length ? [{ kind: 'text' as const, text: failed.reason, tone: 'error' as const }] : []),
      { kind: 'context', text: ACTION[opts.onRegression] },
    ],
  };
}
