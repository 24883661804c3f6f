/**
 * Which apps a bulk sync touches and in what order, as pure functions of the fleet's apps and the
 * step's params: no Argo CD call, no Redis. The preview stores the plan; the executor only follows it.
 */
import picomatch from 'picomatch';
import { RollcallError } from '../../../../core/errors.js';
import { plural } from '../../../../core/format.js';
import { suggest } from '../../../../core/suggest.js';
import type { Application } from '../../../../infra/argocd/types.js';
import type { FleetApp } from '../../../../fleet/model.js';
import type { BulkSyncInput } from './input.js';

export interface PlannedApp {
  instance: string;
  app: string;
  cluster: string;
}

/** The globs of one wave (`a-*,b-*`); empty entries (`a,,b`) are dropped, picomatch refuses them. */
function wavePatterns(wave: string): string[] {
  return wave
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
}

/**
 * What a mistyped wave pattern was probably meant to be: a name (`auth-config-prod-eu1`) is compared with
 * the apps' names, a prefix glob (`auth-confg-*`) with their dash-separated prefixes; other globs get none.
 */
function waveSuggestions(pattern: string, apps: PlannedApp[]): string[] {
  const prefix = pattern.endsWith('*') ? pattern.slice(0, -1) : undefined;
  if (/[*?[\]{}!]/.test(prefix ?? pattern)) return [];
  if (prefix === undefined)
    return suggest(
      pattern,
      apps.map((a) => a.app),
      2,
    );
  const prefixes = new Set<string>();
  for (const { app } of apps)
    for (let at = app.indexOf('-'); at > 0; at = app.indexOf('-', at + 1)) prefixes.add(app.slice(0, at + 1));
  return suggest(prefix, prefixes, 2).map((p) => `${p}*`);
}

/**
 * A wave pattern that matches none of the selected apps is a typo, not a plan: the apps it was meant for
 * would go in "(the rest)", out of the order asked for. Refused before the preview, naming the pattern and what it was
 * probably meant to be. (A pattern that matches only apps skipped as already Synced is a warning instead.)
 */
export function assertWavesMatch(selected: PlannedApp[], waves: string | undefined): void {
  const patterns = [...new Set((waves ?? '').split(';').flatMap(wavePatterns))];
  const unmatched = patterns.filter((p) => !selected.some((a) => picomatch(p)(a.app)));
  if (!unmatched.length) return;
  const suggestions = [...new Set(unmatched.flatMap((p) => waveSuggestions(p, selected)))];
  const named = unmatched.map((p) => `\`${p}\``).join(', ');
  throw new RollcallError(
    'invalid_params',
    `wave pattern${unmatched.length === 1 ? '' : 's'} ${named} match${unmatched.length === 1 ? 'es' : ''} none of the ${plural(selected.length, 'selected app')}: waves are app-name globs, in order (\`waves="auth-config-*;auth-service-*"\`). Nothing was started.`,
    { suggestions },
  );
}

/** Wave and canary settings that will not do what they say: said in the preview, before anyone confirms. */
export function waveWarnings(apps: PlannedApp[], waves: string | undefined, canary: number): string[] {
  const out: string[] = [];
  const specs = (waves ?? '')
    .split(';')
    .map((w) => w.trim())
    .filter((w) => wavePatterns(w).length);
  for (const spec of specs) {
    const match = picomatch(wavePatterns(spec));
    if (!apps.some((a) => match(a.app)))
      out.push(`wave \`${spec}\` matches none of the ${apps.length} apps to sync: it is left out`);
  }
  if (canary > 0 && canary >= apps.length)
    out.push(
      `canary=${canary} but only ${apps.length} app(s) to sync: there is no canary wave, everything goes at once`,
    );
  return out;
}

export const appKey = (a: { instance: string; app: string }) => `${a.instance}/${a.app}`;
export const planned = (f: FleetApp): PlannedApp => ({
  instance: f.instance,
  app: f.app.metadata.name,
  cluster: f.cluster,
});

function atTargetRevision(app: Application, revision: string | undefined): boolean {
  if (!revision) return true;
  const sync = app.status?.sync;
  const revs = [sync?.revision, ...(sync?.revisions ?? [])].filter(Boolean);
  const declared = [app.spec.source?.targetRevision, ...(app.spec.sources ?? []).map((s) => s.targetRevision)].filter(
    Boolean,
  );
  return revs.includes(revision) || declared.includes(revision);
}

export function alreadyThere(app: Application, revision: string | undefined): boolean {
  return (
    app.status?.sync?.status === 'Synced' && app.status?.health?.status === 'Healthy' && atTargetRevision(app, revision)
  );
}

/** Splits the apps to sync into ordered waves: `waves` selectors first-match-wins, then the rest; `canary=N` puts N apps first. */
export function planWaves(
  apps: PlannedApp[],
  waves: string | undefined,
  canary: number,
): { name: string; apps: PlannedApp[] }[] {
  const sorted = [...apps].sort((a, b) => a.app.localeCompare(b.app) || a.instance.localeCompare(b.instance));
  let out: { name: string; apps: PlannedApp[] }[];
  if (waves?.trim()) {
    const specs = waves
      .split(';')
      .map((w) => w.trim())
      .filter((w) => wavePatterns(w).length);
    const matchers = specs.map((w) => picomatch(wavePatterns(w)));
    const buckets = specs.map((name) => ({ name, apps: [] as PlannedApp[] }));
    const rest: PlannedApp[] = [];
    for (const a of sorted) {
      const i = matchers.findIndex((m) => m(a.app));
      if (i >= 0) buckets[i].apps.push(a);
      else rest.push(a);
    }
    out = buckets.filter((b) => b.apps.length);
    if (rest.length) out.push({ name: '(the rest)', apps: rest });
  } else out = [{ name: 'all', apps: sorted }];
  if (canary > 0 && out.length && out[0].apps.length > canary) {
    const first = out[0];
    out = [
      { name: `canary (${canary})`, apps: first.apps.slice(0, canary) },
      { name: first.name, apps: first.apps.slice(canary) },
      ...out.slice(1),
    ];
  }
  return out;
}

/** One wave as the executor runs it: its apps, and how many of them may be syncing at once. */
export interface PlannedWave {
  name: string;
  apps: PlannedApp[];
  maxUpdate: number;
}

export interface WavePlan {
  /** The apps to sync, in the order of the fleet's selection. */
  toSync: FleetApp[];
  waves: PlannedWave[];
  skipped: (PlannedApp & { reason: string })[];
  clusters: string[];
  /** Settings that will not do what they say (a wave matching nothing, a canary as large as the run). */
  warnings: string[];
}

type PlanParams = Pick<BulkSyncInput, 'includeSynced' | 'revision' | 'waves' | 'canary' | 'concurrency'>;

/**
 * The selection split into what to sync and what to skip (already Synced and Healthy at the
 * revision, unless includeSynced), then into ordered waves, each syncing at most `concurrency` apps at once.
 */
export function planBulkSync(selected: FleetApp[], params: PlanParams): WavePlan {
  const toSync: FleetApp[] = [];
  const skipped: WavePlan['skipped'] = [];
  for (const f of selected) {
    if (!params.includeSynced && alreadyThere(f.app, params.revision))
      skipped.push({ ...planned(f), reason: 'already Synced and Healthy' });
    else toSync.push(f);
  }
  const apps = toSync.map(planned);
  return {
    toSync,
    waves: planWaves(apps, params.waves, params.canary).map((w) => ({ ...w, maxUpdate: params.concurrency })),
    skipped,
    clusters: [...new Set(toSync.map((f) => f.cluster))].sort(),
    warnings: waveWarnings(apps, params.waves, params.canary),
  };
}
