/**
 * Which apps a bulk sync touches and in what order, as pure functions of the fleet's apps and the
 * step's params: no Argo CD call, no Redis. The preview stores the plan; the executor only follows it.
 */
import type { Application } from '../../../../infra/argocd/types.js';
import type { FleetApp } from '../../../../fleet/model.js';
import type { BulkSyncInput } from './input.js';
import { assertWaveSpecsMatch, parseWaves, resolveMaxUpdate, type WaveSpec } from './wave-spec.js';

export interface PlannedApp {
  instance: string;
  app: string;
  cluster: string;
}

/** An app as the waves match it: with its Application labels (matched, never stored in the plan). */
export type WaveApp = PlannedApp & { labels?: Record<string, string> };

const stored = ({ instance, app, cluster }: PlannedApp): PlannedApp => ({ instance, app, cluster });

/**
 * Reads `waves` against the selected apps and refuses, before the preview, an entry that is malformed or
 * matches none of them (see wave-spec.ts). Returns the entries, in order.
 */
export function assertWavesMatch(selected: WaveApp[], waves: string | undefined): WaveSpec[] {
  const specs = parseWaves(waves, selected);
  assertWaveSpecsMatch(selected, specs);
  return specs;
}

function specWarnings(apps: WaveApp[], specs: readonly WaveSpec[], canary: number): string[] {
  const out: string[] = [];
  for (const spec of specs)
    if (!apps.some((a) => spec.matches(a)))
      out.push(`wave \`${spec.name}\` matches none of the ${apps.length} apps to sync: it is left out`);
  if (canary > 0 && canary >= apps.length)
    out.push(
      `canary=${canary} but only ${apps.length} app(s) to sync: there is no canary wave, everything goes at once`,
    );
  return out;
}

/** Wave and canary settings that will not do what they say: said in the preview, before anyone confirms. */
export function waveWarnings(apps: WaveApp[], waves: string | undefined, canary: number): string[] {
  return specWarnings(apps, parseWaves(waves, apps), canary);
}

export const appKey = (a: { instance: string; app: string }) => `${a.instance}/${a.app}`;
export const planned = (f: FleetApp): PlannedApp => ({
  instance: f.instance,
  app: f.app.metadata.name,
  cluster: f.cluster,
});
export const waveApp = (f: FleetApp): WaveApp => ({ ...planned(f), labels: f.app.metadata.labels });

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

/** One wave before its limit is set: its apps, and the entry that chose them (none for the canary and the rest). */
export interface WaveBucket {
  name: string;
  apps: PlannedApp[];
  spec?: WaveSpec;
}

/**
 * Splits the apps to sync into ordered waves: `waves` entries first-match-wins, then the rest; `canary=N`
 * puts N apps of the first wave first.
 */
export function planWaves(
  apps: WaveApp[],
  waves: string | undefined,
  canary: number,
  specs: readonly WaveSpec[] = parseWaves(waves, apps),
): WaveBucket[] {
  const sorted = [...apps].sort((a, b) => a.app.localeCompare(b.app) || a.instance.localeCompare(b.instance));
  let out: WaveBucket[];
  if (specs.length) {
    const buckets: WaveBucket[] = specs.map((spec) => ({ name: spec.name, apps: [], spec }));
    const rest: PlannedApp[] = [];
    for (const a of sorted) {
      const i = specs.findIndex((spec) => spec.matches(a));
      if (i >= 0) buckets[i].apps.push(stored(a));
      else rest.push(stored(a));
    }
    out = buckets.filter((b) => b.apps.length);
    if (rest.length) out.push({ name: '(the rest)', apps: rest });
  } else out = [{ name: 'all', apps: sorted.map(stored) }];
  if (canary > 0 && out.length && out[0].apps.length > canary) {
    const first = out[0];
    out = [
      { name: `canary (${canary})`, apps: first.apps.slice(0, canary) },
      { ...first, apps: first.apps.slice(canary) },
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
  /** A wave chosen by a label selector on the Application labels: the selector. */
  selector?: string;
  /** The `@…` the wave was given (`50%`), when it has its own maxUpdate. */
  maxUpdateAsked?: string;
}

/** A bucket with its limit: its own `@N`/`@N%` (scaled to its app count), else `concurrency`. */
function withMaxUpdate(bucket: WaveBucket, concurrency: number): PlannedWave {
  const { spec } = bucket;
  return {
    name: bucket.name,
    apps: bucket.apps,
    maxUpdate: resolveMaxUpdate(spec?.maxUpdate, bucket.apps.length, concurrency),
    ...(spec?.kind === 'labels' ? { selector: spec.name.replace(/^(?:labels|l):/i, '') } : {}),
    ...(spec?.asked ? { maxUpdateAsked: spec.asked } : {}),
  };
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
 * revision, unless includeSynced), then into ordered waves, each syncing at most its maxUpdate apps at once.
 */
export function planBulkSync(selected: FleetApp[], params: PlanParams): WavePlan {
  const toSync: FleetApp[] = [];
  const skipped: WavePlan['skipped'] = [];
  for (const f of selected) {
    if (!params.includeSynced && alreadyThere(f.app, params.revision))
      skipped.push({ ...planned(f), reason: 'already Synced and Healthy' });
    else toSync.push(f);
  }
  // Plain words are told apart (app name or label key) against every selected app, as the preview's check did.
  const specs = parseWaves(params.waves, selected.map(waveApp));
  const apps = toSync.map(waveApp);
  return {
    toSync,
    waves: planWaves(apps, params.waves, params.canary, specs).map((w) => withMaxUpdate(w, params.concurrency)),
    skipped,
    clusters: [...new Set(toSync.map((f) => f.cluster))].sort(),
    warnings: specWarnings(apps, specs, params.canary),
  };
}
