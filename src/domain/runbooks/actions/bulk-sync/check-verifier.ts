/**
 * `check=NAME`: a metric check (config `checks.NAME`) as a wave verifier. It judges the apps this run synced
 * through the CheckService, against the Prometheus that sees them, on that Prometheus' rhythm: the first look
 * one scrape interval after the watch starts (the first sample of the new revision), then one a scrape
 * interval, and at the end one over the whole watch, so a spike between two looks still fails it.
 */
import { RollcallError } from '../../../../core/errors.js';
import { suggest } from '../../../../core/suggest.js';
import type { FleetApp, FleetView } from '../../../../fleet/model.js';
import { formatValue, type CheckService, type CheckVerdict, type EvaluateOptions } from '../../../checks/index.js';
import type { RunbookServices } from '../../services.js';
import type { BulkSyncInput } from './input.js';
import type { PlannedApp } from './planner.js';
import {
  combineAppVerdicts,
  type AppVerdict,
  type VerifierVerdict,
  type WavePhase,
  type WaveVerifier,
} from './verifier.js';

/** The check names of `check=a,b`, in order, each once. */
export function checkNamesOf(input: Pick<BulkSyncInput, 'check'>): string[] {
  return [
    ...new Set(
      (input.check ?? '')
        .split(',')
        .map((c) => c.trim())
        .filter(Boolean),
    ),
  ];
}

/**
 * The checks a run names, each configured, and the service that judges them; refused before anything starts
 * when a name is unknown (with the closest configured names), no Prometheus and checks are configured, or
 * (given the apps) no Prometheus sees some of them.
 */
export function assertChecksUsable(
  input: Pick<BulkSyncInput, 'check'>,
  services: Pick<RunbookServices, 'checks'>,
  apps: readonly PlannedApp[] = [],
): { names: string[]; checks?: CheckService } {
  const names = checkNamesOf(input);
  if (!names.length) return { names };
  const checks = services.checks;
  if (!checks)
    throw new RollcallError(
      'invalid_params',
      `check=${names.join(',')} needs metric checks, and this rollcall has none: configure \`prometheus.url\` and \`checks.${names[0]}\` in rollcall.yaml (\`rollcall config check\` lists them).`,
    );
  const known = checks.names();
  const unknown = names.filter((n) => !known.includes(n));
  if (unknown.length) {
    const fixed = names.map((n) => (known.includes(n) ? n : (suggest(n, known, 1)[0] ?? n)));
    throw new RollcallError(
      'unknown_check',
      `No check named ${unknown.map((n) => `\`${n}\``).join(', ')}. Configured checks: ${known.map((n) => `\`${n}\``).join(', ')}.`,
      { suggestions: fixed.join(',') !== names.join(',') ? [`check=${fixed.join(',')}`] : [] },
    );
  }
  const unseen = [...new Set(apps.map((a) => a.instance))].filter((i) => checks.scrapeIntervalOf(i) === undefined);
  if (unseen.length)
    throw new RollcallError(
      'invalid_params',
      `check=${names.join(',')}: no Prometheus is configured for instance ${unseen.join(', ')} (rollcall.yaml \`prometheus\` or \`instances[].prometheus\`), so its apps could never pass a check.`,
    );
  return { names, checks };
}

/**
 * The window a look judges: from one scrape before the watch started to now (the sample that holds the
 * old revision's last counts is the base rate() needs), at least two scrapes (rate() needs two samples),
 * at most the check's own window; whole seconds, as a person would write it in the query.
 */
export function judgedWindow(phase: Pick<WavePhase, 'startedAt' | 'now'>, scrapeMs: number, checkWindowMs: number) {
  const since = Math.floor((phase.now - phase.startedAt + scrapeMs) / 1000) * 1000;
  return Math.min(checkWindowMs, Math.max(since, 2 * scrapeMs));
}

/** The largest scrape interval of the Prometheus servers that see these apps (a look must wait for the slowest). */
export function scrapeIntervalFor(checks: CheckService, apps: readonly PlannedApp[]): number | undefined {
  const intervals = [...new Set(apps.map((a) => a.instance))]
    .map((i) => checks.scrapeIntervalOf(i))
    .filter((ms): ms is number => ms !== undefined);
  return intervals.length ? Math.max(...intervals) : undefined;
}

/** The scrape interval a run without a Prometheus for its apps falls back on (config's default). */
const DEFAULT_SCRAPE_MS = 15_000;

function appVerdictOf(v: CheckVerdict, shortWindow: boolean): AppVerdict {
  const base = {
    instance: v.instance,
    app: v.app,
    cluster: v.cluster,
    threshold: v.threshold,
    link: v.link,
    ...(v.value !== undefined ? { value: v.value } : {}),
  };
  // rate() over a window of two or three scrapes can hold one sample and answer nothing: looked at again
  // on a wider window; the check's own window (or the look over the whole watch) lets noData decide.
  if (v.noData && shortWindow)
    return { ...base, verdict: 'inconclusive', reason: `${v.reason}; looked at again on a wider window` };
  return { ...base, verdict: v.status, reason: v.reason };
}

/** `0.31 > 0.05 (checkout-prod-eu-west-1)`: the worst app's value against the threshold. */
function figureOf(apps: AppVerdict[], failWhen: 'above' | 'below'): string | undefined {
  const valued = apps.filter((a) => a.value !== undefined);
  if (!valued.length) return undefined;
  const worst = valued.reduce((w, a) => ((failWhen === 'above' ? a.value! > w.value! : a.value! < w.value!) ? a : w));
  const failed = worst.verdict === 'fail';
  const sign = failWhen === 'above' ? (failed ? '>' : '≤') : failed ? '<' : '≥';
  return `${formatValue(worst.value!)} ${sign} ${worst.threshold} (${worst.app})`;
}

/** One metric check as a wave verifier, named `check NAME`. */
export function checkVerifier(name: string, checks: CheckService, fleet: FleetView, scrapeMs: number): WaveVerifier {
  const check = checks.check(name);
  const failWhen = check.failAbove !== undefined ? 'above' : 'below';
  return {
    name: `check ${name}`,
    check: name,
    minIntervalMs: scrapeMs,
    firstLookAfterMs: scrapeMs,
    async verify(apps, phase): Promise<VerifierVerdict> {
      const unseen: AppVerdict[] = [];
      const live: FleetApp[] = [];
      for (const a of apps) {
        const found = fleet.appsNamed(a.app).find((f) => f.instance === a.instance);
        if (found) live.push(found);
        else unseen.push({ ...a, verdict: 'inconclusive', reason: 'not in the fleet mirror: its identity is unknown' });
      }
      const window = judgedWindow(phase, scrapeMs, check.window);
      // The last look covers the whole watch: a spike between two looks is in it.
      const opts: EvaluateOptions =
        phase.now >= phase.endsAt
          ? { range: { from: phase.startedAt, to: phase.now }, window }
          : { at: phase.now, window };
      const verdicts = live.length ? await checks.evaluateMany([name], live, opts) : [];
      const judged = [...verdicts.map((v) => appVerdictOf(v, window < check.window)), ...unseen];
      const combined = combineAppVerdicts(judged, `${name} within its threshold`);
      const figure = figureOf(judged, failWhen);
      return { ...combined, ...(figure ? { figure } : {}) };
    },
  };
}

/** One verifier per check the run names, each on the scrape interval of the Prometheus that sees its apps. */
export function checkVerifiersFor(
  input: Pick<BulkSyncInput, 'check'>,
  services: Pick<RunbookServices, 'checks' | 'fleet'>,
  apps: readonly PlannedApp[],
): WaveVerifier[] {
  const { names, checks } = assertChecksUsable(input, services);
  if (!checks) return [];
  const scrapeMs = scrapeIntervalFor(checks, apps) ?? DEFAULT_SCRAPE_MS;
  return names.map((name) => checkVerifier(name, checks, services.fleet, scrapeMs));
}
