import picomatch from 'picomatch';
import { z } from 'zod';
import { ArgoError } from '../../argocd/errors.js';
import type { Application, ApplicationSyncRequest, Operation } from '../../argocd/types.js';
import { attributionInfos } from '../../argocd/client.js';
import { RollcallError } from '../../core/errors.js';
import { literal, plural, typedDuration } from '../../core/format.js';
import type { ReplyBlock, ReplyItem } from '../../core/reply.js';
import { suggest } from '../../core/suggest.js';
import type { FleetApp } from '../../fleet/model.js';
import { selectApps, type AppSelector } from '../../fleet/select.js';
import { LeaseLostError, type CheckpointEntry, type RunProgress } from '../run-store.js';
import { IN_FLIGHT_APP_STATES, nextAppState, TERMINAL_APP_STATES, type AppCheckpoint, type AppEvent, type AppState } from './sync-progress.js';
import type { ActionContext, ActionPreview, PreviewContext, RunbookAction, StepOutcome } from './types.js';

/** The info entry every sync carries, so an operation is recognisable as this run's (after a crash too). */
export const RUN_INFO_NAME = 'rollcall-run';

const GATES = ['healthy', 'synced', 'none'] as const;
type Gate = (typeof GATES)[number];

export const bulkSyncInput = z.object({
  selector: z.string().min(1, 'expected a selector such as auth-config-*'),
  prune: z.boolean().default(false),
  dryRun: z.boolean().default(false),
  revision: z.string().optional(),
  /** Argo CD's force means delete and recreate; rollcall does not offer it and refuses the word (see preview). */
  force: z.boolean().default(false),
  /** Also sync apps already Synced and Healthy (what rollcall once called force). */
  includeSynced: z.boolean().default(false),
  /** The app count typed back to confirm a sync wider than the blast-radius guard allows in one wave. */
  confirm: z.number().int().optional(),
  concurrency: z.number().int().min(1, 'concurrency must be at least 1 (how many apps sync at once)').max(500, 'concurrency is at most 500').default(10),
  waves: z.string().optional(),
  canary: z.number().int().min(0, 'canary is how many apps go first: 0 or more').default(0),
  gate: z.enum(GATES).default('healthy'),
  waveTimeout: z.number().int().positive('waveTimeout must be longer than 0, e.g. 10m').default(600_000),
  onFailure: z.enum(['pause', 'abort', 'continue']).default('pause'),
});
export type BulkSyncInput = z.output<typeof bulkSyncInput>;

// ---------- selection ----------

const SELECTOR_KEYS: Record<string, keyof AppSelector> = {
  cluster: 'cluster',
  project: 'project',
  appset: 'appSet',
  instance: 'instance',
  labels: 'labels',
  l: 'labels',
};

/**
 * The `selector` param: names or globs (comma or space separated) plus optional `cluster:X`,
 * `project:X`, `appset:X`, `instance:X` tokens and, last, `labels:<k8s selector>`, which takes the
 * rest of the text because set-based selectors have spaces (`labels:env in (prod, staging)`).
 * `auth-config-* cluster:prod-eu1` → {patterns: ['auth-config-*'], cluster: 'prod-eu1'}.
 */
export function parseSelectorParam(text: string): AppSelector {
  const sel: AppSelector = {};
  const patterns: string[] = [];
  const labelsAt = /(?:^|\s)(?:labels|l):/i.exec(text);
  if (labelsAt) {
    const labels = text.slice(labelsAt.index + labelsAt[0].length).trim();
    if (labels) sel.labels = labels;
    text = text.slice(0, labelsAt.index);
  }
  for (const token of text.trim().split(/\s+/).filter(Boolean)) {
    const m = /^([a-z]+):(.+)$/i.exec(token);
    const key = m ? SELECTOR_KEYS[m[1].toLowerCase()] : undefined;
    if (m && key) (sel as Record<string, string>)[key] = m[2];
    else patterns.push(...token.split(',').filter(Boolean));
  }
  if (patterns.length) sel.patterns = patterns;
  return sel;
}

/** The inverse, for `/argo sync <globs> cluster=X -l sel`. */
export function formatSelectorParam(sel: AppSelector): string {
  const parts = [...(sel.patterns ?? [])];
  if (sel.cluster) parts.push(`cluster:${sel.cluster}`);
  if (sel.project) parts.push(`project:${sel.project}`);
  if (sel.appSet) parts.push(`appset:${sel.appSet}`);
  if (sel.instance) parts.push(`instance:${sel.instance}`);
  // Last: it takes the rest of the text (see parseSelectorParam).
  if (sel.labels) parts.push(`labels:${sel.labels.trim()}`);
  return parts.join(' ');
}

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
  if (prefix === undefined) return suggest(pattern, apps.map((a) => a.app), 2);
  const prefixes = new Set<string>();
  for (const { app } of apps) for (let at = app.indexOf('-'); at > 0; at = app.indexOf('-', at + 1)) prefixes.add(app.slice(0, at + 1));
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
  const specs = (waves ?? '').split(';').map((w) => w.trim()).filter((w) => wavePatterns(w).length);
  for (const spec of specs) {
    const match = picomatch(wavePatterns(spec));
    if (!apps.some((a) => match(a.app))) out.push(`wave \`${spec}\` matches none of the ${apps.length} apps to sync: it is left out`);
  }
  if (canary > 0 && canary >= apps.length) out.push(`canary=${canary} but only ${apps.length} app(s) to sync: there is no canary wave, everything goes at once`);
  return out;
}

export interface BulkSyncPlan {
  waves: { name: string; apps: PlannedApp[] }[];
  skipped: (PlannedApp & { reason: string })[];
  selected: number;
  /** Settings that will not do what they say (a wave matching nothing, a canary as large as the run). */
  warnings?: string[];
  clusters: string[];
  options: Omit<BulkSyncInput, 'selector'> & { selector: string };
  prune?: { resources: number; apps: number; sampled?: { checked: number; of: number }; items: { app: string; cluster: string; resources: string[] }[] };
}

const appKey = (a: { instance: string; app: string }) => `${a.instance}/${a.app}`;
const planned = (f: FleetApp): PlannedApp => ({ instance: f.instance, app: f.app.metadata.name, cluster: f.cluster });

function atTargetRevision(app: Application, revision: string | undefined): boolean {
  if (!revision) return true;
  const sync = app.status?.sync;
  const revs = [sync?.revision, ...(sync?.revisions ?? [])].filter(Boolean);
  const declared = [app.spec.source?.targetRevision, ...(app.spec.sources ?? []).map((s) => s.targetRevision)].filter(Boolean);
  return revs.includes(revision) || declared.includes(revision);
}

function alreadyThere(app: Application, revision: string | undefined): boolean {
  return app.status?.sync?.status === 'Synced' && app.status?.health?.status === 'Healthy' && atTargetRevision(app, revision);
}

/** Splits the apps to sync into ordered waves: `waves` selectors first-match-wins, then the rest; `canary=N` puts N apps first. */
export function planWaves(apps: PlannedApp[], waves: string | undefined, canary: number): { name: string; apps: PlannedApp[] }[] {
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
    out = [{ name: `canary (${canary})`, apps: first.apps.slice(0, canary) }, { name: first.name, apps: first.apps.slice(canary) }, ...out.slice(1)];
  }
  return out;
}

async function pool<T>(items: T[], limit: number, fn: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]);
    }),
  );
}

/**
 * What a prune would delete: resources the mirror marks `requiresPruning`. Apps whose status
 * carries no resource list are checked through managed-resources (targetState null means Argo CD
 * no longer wants it), for at most PRUNE_SAMPLE apps with bounded concurrency.
 */
const PRUNE_SAMPLE = 50;
async function prunePreview(ctx: PreviewContext, apps: FleetApp[]): Promise<NonNullable<BulkSyncPlan['prune']>> {
  const items: { app: string; cluster: string; resources: string[] }[] = [];
  const unknown: FleetApp[] = [];
  for (const f of apps) {
    const resources = f.app.status?.resources;
    if (!resources) {
      unknown.push(f);
      continue;
    }
    const doomed = resources.filter((r) => r.requiresPruning).map((r) => `${r.kind}/${r.namespace ? `${r.namespace}/` : ''}${r.name}`);
    if (doomed.length) items.push({ app: f.app.metadata.name, cluster: f.cluster, resources: doomed });
  }
  const sample = unknown.slice(0, PRUNE_SAMPLE);
  await pool(sample, 8, async (f) => {
    const api = ctx.services.argocd.get(f.instance);
    if (!api) return;
    try {
      const managed = await api.managedResources({ name: f.app.metadata.name, appNamespace: f.app.metadata.namespace, project: f.app.spec.project });
      const doomed = (managed.items ?? [])
        .filter((r) => !r.hook && (r.targetState === undefined || r.targetState === null || r.targetState === '' || r.targetState === 'null') && r.liveState && r.liveState !== 'null')
        .map((r) => `${r.kind}/${r.namespace ? `${r.namespace}/` : ''}${r.name}`);
      if (doomed.length) items.push({ app: f.app.metadata.name, cluster: f.cluster, resources: doomed });
    } catch {
      // The preview stays useful without it; the prune list says it was sampled.
    }
  });
  return {
    resources: items.reduce((n, i) => n + i.resources.length, 0),
    apps: items.length,
    ...(unknown.length > sample.length ? { sampled: { checked: sample.length, of: unknown.length } } : {}),
    items: items.sort((a, b) => a.app.localeCompare(b.app)),
  };
}

function optionsText(o: BulkSyncInput): string {
  const bits = [`prune=${o.prune}`, `dryRun=${o.dryRun}`, `concurrency=${o.concurrency}`, `gate=${o.gate}`, `waveTimeout=${typedDuration(o.waveTimeout)}`, `onFailure=${o.onFailure}`];
  if (o.revision) bits.push(`revision=${o.revision}`);
  if (o.includeSynced) bits.push('includeSynced=true');
  if (o.canary) bits.push(`canary=${o.canary}`);
  return bits.join(' · ');
}

/**
 * Holds a single wave wider than the guard allows (config syncGuard): the outage rollcall exists for
 * was one change reaching 540 apps on 12 clusters at once. Waves, a canary or the typed count let it through.
 */
function blastRadius(ctx: PreviewContext, count: number, clusterCount: number, waves: { apps: PlannedApp[] }[]): string | undefined {
  const input = ctx.input as BulkSyncInput;
  const guard = ctx.services.config.syncGuard;
  if (waves.length !== 1 || count <= guard.freeUpTo || input.confirm === count) return undefined;
  const fleet = ctx.services.fleet.apps();
  const perCluster = new Map<string, number>();
  for (const f of fleet) perCluster.set(`${f.instance}/${f.cluster}`, (perCluster.get(`${f.instance}/${f.cluster}`) ?? 0) + 1);
  const clusterWorth = Math.max(0, ...perCluster.values());
  const share = fleet.length ? count / fleet.length : 1;
  const tooMany = share > guard.maxFleetShare ? `${Math.round(share * 100)}% of the fleet (more than ${Math.round(guard.maxFleetShare * 100)}%)` : count > clusterWorth ? `more apps than the largest cluster holds (${clusterWorth})` : undefined;
  if (!tooMany) return undefined;
  const wrong = input.confirm !== undefined ? ` confirm=${input.confirm} does not match: the sync is ${count} apps.` : '';
  return `This sync reaches ${count} apps on ${clusterCount} cluster${clusterCount === 1 ? '' : 's'} in one wave: ${tooMany}.${wrong} Split it so a bad change stops early: waves in order (e.g. \`waves="*-eu-*;*-us-*"\`) or \`canary=N\` (N apps first, gated on health). To sync them all at once anyway, confirm the count: \`confirm=${count}\`.`;
}

async function preview(ctx: PreviewContext): Promise<ActionPreview> {
  const input = ctx.input as BulkSyncInput;
  if (input.force) {
    throw new RollcallError(
      'invalid_params',
      "force=true is not offered: in Argo CD, force means delete and recreate resources that fail to apply, which bulk-sync does not do. To also sync apps already Synced and Healthy, use includeSynced=true.",
    );
  }
  const selected = selectApps(ctx.services.fleet, parseSelectorParam(input.selector));
  if (!selected.length) throw new RollcallError('unknown_target', `no apps match "${input.selector}" (\`status ${input.selector.split(/\s+/)[0]}\` shows what there is)`);
  assertWavesMatch(selected.map(planned), input.waves);
  const toSync: FleetApp[] = [];
  const skipped: BulkSyncPlan['skipped'] = [];
  for (const f of selected) {
    if (!input.includeSynced && alreadyThere(f.app, input.revision)) skipped.push({ ...planned(f), reason: 'already Synced and Healthy' });
    else toSync.push(f);
  }
  const waves = planWaves(toSync.map(planned), input.waves, input.canary);
  const clusters = [...new Set(toSync.map((f) => f.cluster))].sort();
  const held = blastRadius(ctx, toSync.length, clusters.length, waves);
  if (held) throw new RollcallError('blast_radius', held);
  const plan: BulkSyncPlan = { waves, skipped, selected: selected.length, clusters, options: { ...input } };
  if (input.prune) plan.prune = await prunePreview(ctx, toSync);

  const blocks: ReplyBlock[] = [
    {
      kind: 'fields',
      fields: [
        { label: 'Apps to sync', value: String(toSync.length) },
        { label: 'Clusters', value: `${clusters.length}${clusters.length <= 6 ? ` (${clusters.join(', ')})` : ''}` },
        { label: 'Skipped', value: `${skipped.length}${skipped.length ? ' already Synced+Healthy (includeSynced=true to include)' : ''}` },
        { label: 'Waves', value: waves.map((w) => `${literal(w.name)}: ${w.apps.length}`).join(' → ') || 'none' },
        ...(plan.prune
          ? [
              {
                label: input.dryRun ? 'Prune would delete' : 'Prune deletes',
                value: `${plan.prune.resources ? `${plural(plan.prune.resources, 'resource')} in ${plural(plan.prune.apps, 'app')}` : 'nothing'}${plan.prune.sampled ? ` (in the ${plan.prune.sampled.checked} of ${plan.prune.sampled.of} apps checked)` : ''}`,
              },
            ]
          : []),
      ],
    },
    { kind: 'context', text: optionsText(input) },
  ];
  const warnings = waveWarnings(toSync.map(planned), input.waves, input.canary);
  plan.warnings = warnings;
  if (warnings.length) blocks.push({ kind: 'list', title: 'Check before confirming', items: warnings.map((text) => ({ text, tone: 'warn' as const })) });
  // What prune deletes comes before the waves: on a long preview the waves fill the first page, and whoever
  // confirms from that page must have seen it.
  if (plan.prune?.items.length) {
    blocks.push({
      kind: 'list',
      title: `Prune would delete ${plan.prune.resources} resource(s) in ${plan.prune.apps} app(s)${plan.prune.sampled ? ` (checked ${plan.prune.sampled.checked} of ${plan.prune.sampled.of} apps without a resource list)` : ''}`,
      items: plan.prune.items.slice(0, 15).map((i) => ({ text: `${i.app} (${i.cluster})`, detail: i.resources.slice(0, 5).join(', ') + (i.resources.length > 5 ? ` and ${i.resources.length - 5} more` : ''), tone: 'warn' })),
      total: plan.prune.items.length,
    });
  }
  waves.forEach((w, i) =>
    blocks.push({
      kind: 'list',
      title: `Wave ${i + 1}/${waves.length}: ${literal(w.name)}`,
      items: w.apps.slice(0, 20).map((a): ReplyItem => ({ text: `${a.app}`, detail: `${a.cluster} · ${a.instance}` })),
      total: w.apps.length,
    }),
  );
  const summary = toSync.length
    ? `${input.dryRun ? 'Dry run: would sync' : 'Sync'} ${toSync.length} app${toSync.length === 1 ? '' : 's'} on ${clusters.length} cluster${clusters.length === 1 ? '' : 's'}${input.prune ? ' with prune' : ''} in ${waves.length} wave${waves.length === 1 ? '' : 's'}${skipped.length ? `; ${skipped.length} already Synced+Healthy, skipped` : ''}${plan.prune?.resources ? `. Prune ${input.dryRun ? 'would delete' : 'deletes'} ${plural(plan.prune.resources, 'resource')}` : ''}${input.dryRun ? '; nothing is applied' : ''}.`
    : `Nothing to sync: ${selected.length === 1 ? `${selected[0].app.metadata.name}, the one matching app, is` : `all ${selected.length} matching apps are`} already Synced and Healthy${input.revision ? ` at revision ${literal(input.revision)}` : ''}. To sync ${selected.length === 1 ? 'it' : 'them'} anyway, add includeSynced=true.`;
  return {
    targets: toSync.map((f) => ({ instance: f.instance, app: f.app.metadata.name, cluster: f.cluster })),
    summary,
    data: { ...plan },
    blocks,
    empty: toSync.length === 0,
  };
}

// ---------- execution ----------

const TERMINAL = TERMINAL_APP_STATES;
const IN_FLIGHT = IN_FLIGHT_APP_STATES;

interface WaveCheckpoint extends CheckpointEntry {
  state: 'started';
  startedAt: number;
}

/**
 * How long after its `posting` mark a POST of an attempt can still reach Argo CD: the attempt checks
 * a monotonic clock against it right before sending (half the window), and the request itself is
 * bounded by the instance timeout. Only after that may a sync whose answer never came be concluded
 * "not applied" and be sent again.
 */
export function postingWindowMs(instanceTimeoutMs: number): number {
  return instanceTimeoutMs + 5000;
}

function taggedBy(op: Operation | undefined, runId: string): boolean {
  return !!op?.info?.some((i) => i.name === RUN_INFO_NAME && i.value === runId);
}

/** Our operation, as the app shows it: requested (top-level) or picked up (status.operationState). */
function ourOperation(app: Application, runId: string): 'requested' | 'running' | 'completed' | undefined {
  const state = app.status?.operationState;
  if (state && taggedBy(state.operation, runId)) return state.phase === 'Running' || state.phase === 'Terminating' ? 'running' : 'completed';
  if (taggedBy(app.operation, runId)) return 'requested';
  return undefined;
}

function foreignOperationRunning(app: Application, runId: string): string | undefined {
  if (app.operation && !taggedBy(app.operation, runId)) return `an operation requested by ${app.operation.initiatedBy?.username ?? 'someone else'} is pending`;
  const state = app.status?.operationState;
  if (state && !taggedBy(state.operation, runId) && (state.phase === 'Running' || state.phase === 'Terminating'))
    return `an operation by ${state.operation?.initiatedBy?.username ?? 'someone else'} is ${state.phase.toLowerCase()}`;
  return undefined;
}

function failureReason(app: Application): string {
  const state = app.status?.operationState;
  const failed = (state?.syncResult?.resources ?? []).filter((r) => r.status === 'SyncFailed' || r.hookPhase === 'Failed' || r.hookPhase === 'Error');
  const resources = failed.slice(0, 5).map((r) => `${r.kind}/${r.name}${r.message ? `: ${r.message}` : ''}`);
  return [`sync ${state?.phase ?? 'failed'}${state?.message ? `: ${state.message}` : ''}`, ...resources].join('; ');
}

function gateReached(app: Application, gate: Gate): boolean {
  if (gate === 'none') return true;
  const synced = app.status?.sync?.status === 'Synced';
  if (gate === 'synced') return synced;
  return synced && app.status?.health?.status === 'Healthy';
}

function waitingReason(app: Application | undefined, gate: Gate): string {
  if (!app) return 'app not found in the fleet mirror';
  const state = app.status?.operationState;
  const bits = [`sync ${app.status?.sync?.status ?? 'Unknown'}`, `health ${app.status?.health?.status ?? 'Unknown'}`];
  if (state) bits.push(`operation ${state.phase}${state.message ? `: ${state.message}` : ''}`);
  return `did not reach the ${gate} gate (${bits.join(', ')})`;
}

const plannedAppSchema = z.object({ instance: z.string(), app: z.string(), cluster: z.string() });
/** What execution reads back of the plan the preview stored (the rest is for people). */
const storedPlanSchema = z.object({
  waves: z.array(z.object({ name: z.string(), apps: z.array(plannedAppSchema) })),
  skipped: z.array(plannedAppSchema.extend({ reason: z.string() })),
});

/** The plan the preview stored for this step, checked as it is read back from Redis. */
function planOf(ctx: ActionContext): z.infer<typeof storedPlanSchema> | undefined {
  const parsed = storedPlanSchema.safeParse(ctx.run.preview?.byStep?.[ctx.stepId] ?? ctx.run.preview?.data);
  return parsed.success ? parsed.data : undefined;
}

async function execute(ctx: ActionContext): Promise<StepOutcome> {
  const input = bulkSyncInput.parse(ctx.input);
  const runId = ctx.run.id;
  const plan = planOf(ctx);
  if (!plan) return { status: 'failed', error: 'the run has no bulk-sync plan (preview missing)' };
  const fleet = ctx.services.fleet;
  const checkpoint = ctx.checkpoint<AppCheckpoint>();
  const waveCheckpoint = ctx.checkpoint<WaveCheckpoint>('waves');
  const windowFor = (instance: string) => postingWindowMs(ctx.services.config.instances.find((i) => i.name === instance)?.timeout ?? 30_000);

  // First attempt writes every app as pending; later attempts find their states.
  const loadStates = async () => new Map([...(await checkpoint.all())].filter(([k]) => !k.startsWith('wave:')));
  let states = await loadStates();
  const missing: { key: string; expected: undefined; value: AppCheckpoint }[] = [];
  plan.waves.forEach((w, wave) =>
    w.apps.forEach((a) => {
      if (!states.has(appKey(a))) missing.push({ key: appKey(a), expected: undefined, value: { state: 'pending', ...a, wave } });
    }),
  );
  for (const s of plan.skipped) if (!states.has(appKey(s))) missing.push({ key: appKey(s), expected: undefined, value: { state: 'skipped', ...s, wave: -1, reason: s.reason } });
  if (missing.length) {
    await checkpoint.transitionMany(missing);
    states = await loadStates();
  }

  // Apps this attempt sent a POST for: never sent again by it, whatever the stored state says
  // (a Redis that lost its last second of writes can show one of them `pending` again).
  const sent = new Set<string>();
  // Apps whose Argo CD state was read with a GET by this attempt, and when (ms, Redis time).
  const checked = new Map<string, number>();

  // A later attempt (a worker died, stalled, or Redis restarted) reads Argo CD itself first: a sync
  // the last attempt sent may be missing from the checkpoint, and the mirror may not show it yet.
  const attempt = ctx.run.steps.find((s) => s.id === ctx.stepId)?.attempts ?? 1;
  const listed = new Map<string, Application>();
  const unread = new Set(attempt > 1 ? [...states.values()].map((s) => s.instance) : []);
  // Until its instance has been read, no app of it is sent (Argo CD unreachable: tried again each tick).
  const readInstances = async () => {
    for (const instance of [...unread]) {
      try {
        const list = await ctx.services.argocd.get(instance)?.listApplications();
        for (const app of list?.items ?? []) listed.set(`${instance}/${app.metadata.name}`, app);
        unread.delete(instance);
      } catch {
        // next tick
      }
    }
  };
  await readInstances();

  // Wake on every mirror event for one of our apps; otherwise re-read the (in-memory) mirror each tick.
  let wake: (() => void) | undefined;
  // Set by an event that arrives while a tick is being processed, so the next sleep does not miss it.
  let dirty = false;
  const onApp = (e: { app?: FleetApp }) => {
    if (e.app && states.has(appKey({ instance: e.app.instance, app: e.app.app.metadata.name }))) {
      dirty = true;
      wake?.();
    }
  };
  const unsubscribe = fleet.subscribe((e) => 'app' in e && onApp(e));
  const abortWake = () => wake?.();
  ctx.signal.addEventListener('abort', abortWake);
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (dirty) return resolve();
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        wake = undefined;
        resolve();
      }
      wake = done;
    });

  const live = (a: PlannedApp): Application | undefined => {
    const key = appKey(a);
    if (listed.has(key)) {
      const fromList = listed.get(key)!;
      const fromMirror = fleet.appsNamed(a.app).find((f) => f.instance === a.instance)?.app;
      // The list answers "was it sent?"; the mirror, once it shows our operation, is as good and newer.
      return fromMirror && ourOperation(fromMirror, runId) ? fromMirror : fromList;
    }
    return fleet.appsNamed(a.app).find((f) => f.instance === a.instance)?.app;
  };

  /**
   * One compare-and-set transition, from the state this attempt last saw. When another executor (or
   * a Redis that lost writes) changed it meanwhile, nothing is written and the stored entry is taken.
   * A lost lease throws LeaseLostError.
   */
  const apply = async (key: string, event: AppEvent): Promise<boolean> => {
    const s = states.get(key)!;
    const t = nextAppState(s, event);
    if (!t.ok) return false;
    if (await checkpoint.transition(key, s.state, t.next)) {
      states.set(key, t.next);
      return true;
    }
    const stored = await checkpoint.get(key);
    if (stored) states.set(key, stored);
    return false;
  };
  const applyMany = async (changes: [string, AppEvent][]) => {
    const writes: { key: string; expected: AppState; value: AppCheckpoint }[] = [];
    for (const [key, event] of changes) {
      const s = states.get(key)!;
      const t = nextAppState(s, event);
      if (t.ok) writes.push({ key, expected: s.state, value: t.next });
    }
    const written = await checkpoint.transitionMany(writes);
    for (const [i, w] of writes.entries()) {
      if (written[i]) states.set(w.key, w.value);
      else {
        const stored = await checkpoint.get(w.key);
        if (stored) states.set(w.key, stored);
      }
    }
  };

  const report = (waveIndex: number) => {
    const counts: Record<string, number> = { pending: 0, syncing: 0, done: 0, failed: 0, 'timed out': 0, skipped: 0 };
    const failing: RunProgress['failing'] = [];
    for (const s of states.values()) {
      if (s.state === 'pending') counts.pending++;
      else if (IN_FLIGHT.includes(s.state)) counts.syncing++;
      else if (s.state === 'done') counts.done++;
      else if (s.state === 'failed') counts.failed++;
      else if (s.state === 'timeout') counts['timed out']++;
      else counts.skipped++;
      if (s.state === 'failed' || s.state === 'timeout') failing.push({ app: s.app, instance: s.instance, cluster: s.cluster, reason: s.reason ?? s.state });
    }
    const total = plan.waves.reduce((n, w) => n + w.apps.length, 0);
    ctx.progress({
      headline: `wave ${Math.min(waveIndex + 1, plan.waves.length)}/${plan.waves.length}${plan.waves[waveIndex] ? ` (${plan.waves[waveIndex].name})` : ''} · ${counts.done}/${total} ${input.dryRun ? 'would sync (dry run: nothing applied)' : 'synced'}`,
      counts,
      failing,
      wave: { index: waveIndex + 1, total: plan.waves.length },
      updatedAt: new Date(ctx.now()).toISOString(),
    });
    return counts;
  };

  const syncParams = { prune: input.prune, dryRun: input.dryRun, revision: input.revision };

  /**
   * Sends one app's sync. Order matters: the rate limiter first (an abort or pause while waiting
   * sends nothing), then the `posting` mark under the lease (refused once a pause, an abort or a
   * newer attempt took the lease), then a monotonic-clock check that this process was not frozen
   * past the posting window since the mark, then the POST.
   */
  const post = async (key: string) => {
    const planned = states.get(key)!;
    const api = ctx.services.argocd.get(planned.instance);
    if (!api) {
      await apply(key, { type: 'gone', reason: `no Argo CD client for instance ${planned.instance}` });
      return;
    }
    try {
      await ctx.limiter.acquire(planned.instance, ctx.signal);
    } catch {
      return; // aborted while waiting: nothing sent, nothing written
    }
    if (ctx.signal.aborted || states.get(key)!.state !== 'pending') return;
    const app = live(planned);
    if (!app) return;
    if (ourOperation(app, runId)) {
      await apply(key, { type: 'found' });
      return;
    }
    const before = performance.now();
    if (!(await apply(key, { type: 'claim' }))) return;
    if (ctx.signal.aborted || performance.now() - before > windowFor(planned.instance) / 2) return;
    const request: ApplicationSyncRequest = {
      name: planned.app,
      appNamespace: app.metadata.namespace,
      project: app.spec.project,
      prune: input.prune,
      dryRun: input.dryRun,
      ...(input.revision ? { revision: input.revision } : {}),
      infos: attributionInfos({ runInfoName: RUN_INFO_NAME, runId, user: ctx.run.requester, surface: ctx.run.surface }),
    };
    sent.add(key);
    let failure: unknown;
    try {
      await api.sync(request);
    } catch (err) {
      failure = err;
    }
    if (!failure) {
      await apply(key, { type: 'answered' });
      // Recorded without holding up the next POST; the engine's audit writer never throws.
      void ctx.audit({ kind: 'argocd.sync', who: ctx.run.requester, target: key, params: syncParams, result: 'accepted' });
      return;
    }
    const e = failure instanceof ArgoError ? failure : undefined;
    const message = e?.argoMessage ?? (failure as Error).message;
    if (!e || e.maybeApplied || ['unavailable', 'rate_limited', 'timeout', 'network'].includes(e.kind)) {
      // The POST may have reached Argo CD: verified with a GET (now, and after the posting window), never re-sent blindly.
      await apply(key, { type: 'answerLost', note: message });
    } else if (e.kind === 'operation_in_progress') {
      // Refused on its only try: nothing was applied. Which operation runs is read off the app next tick.
      sent.delete(key);
      await apply(key, { type: 'busy', note: 'waiting: another operation is in progress' });
    } else {
      await apply(key, { type: 'refused', reason: message });
    }
    await ctx.audit({ kind: 'argocd.sync', who: ctx.run.requester, target: key, params: syncParams, result: `error: ${e?.kind ?? 'unknown'}`, message });
  };

  /**
   * A `posting` or `unknown` app this attempt is not sending: did Argo CD take the sync? The mirror
   * first, then a GET at once and one more after the posting window; only that last one may
   * conclude the sync never took.
   */
  const verify = async (key: string, redisNow: number) => {
    const s = states.get(key)!;
    const app = live(s);
    if (app && ourOperation(app, runId)) {
      await apply(key, { type: 'found' });
      return;
    }
    const windowPassed = redisNow > (s.at ?? 0) + windowFor(s.instance);
    const last = checked.get(key);
    // One GET as soon as the mark is seen, one after its window; none in between.
    if (last !== undefined && last >= (s.at ?? 0) && (!windowPassed || last > (s.at ?? 0) + windowFor(s.instance))) return;
    const api = ctx.services.argocd.get(s.instance);
    try {
      await ctx.assertLease();
      const fresh = await api!.getApplication({ name: s.app, appNamespace: app?.metadata.namespace, project: app?.spec.project });
      checked.set(key, redisNow);
      if (ourOperation(fresh, runId)) await apply(key, { type: 'found' });
      else if (windowPassed && !sent.has(key)) await apply(key, { type: 'notApplied', windowPassed });
      else if (windowPassed) {
        // This attempt sent it and the answer was lost: as above, the window has passed with no trace of it.
        sent.delete(key);
        await apply(key, { type: 'notApplied', windowPassed });
      }
    } catch (err) {
      if (err instanceof LeaseLostError) throw err;
      // Argo CD is still failing: try again next tick.
    }
  };

  const stopped = (wave: number): StepOutcome | undefined => {
    if (!ctx.signal.aborted) return undefined;
    report(wave);
    const reason = String(ctx.signal.reason);
    if (reason === 'abort') return { status: 'aborted', output: summarize(states, input.dryRun) };
    if (reason === 'timeout') return { status: 'failed', error: 'bulk-sync step timed out', output: summarize(states, input.dryRun) };
    if (reason === 'lease-lost' || reason === 'stale') return { status: 'interrupted', output: summarize(states, input.dryRun) };
    return { status: 'paused', reason: reason === 'pause' ? 'paused by a user' : reason, output: summarize(states, input.dryRun) };
  };

  let currentWave = 0;
  try {
    for (let wave = 0; wave < plan.waves.length; wave++) {
      currentWave = wave;
      const keys = plan.waves[wave].apps.map(appKey);
      const waveKey = `wave:${wave}`;
      let started = (await waveCheckpoint.get(waveKey))?.startedAt;
      if (started === undefined) {
        started = ctx.now();
        await waveCheckpoint.set(waveKey, { state: 'started', startedAt: started });
      }
      for (;;) {
        const stop = stopped(wave);
        if (stop) return stop;
        dirty = false;
        if (unread.size) await readInstances();
        let inFlight = keys.filter((k) => IN_FLIGHT.includes(states.get(k)!.state)).length;
        // Transitions read off the mirror go in one round trip per tick; the ones around a POST are written one by one, before moving on.
        const batch: [string, AppEvent][] = [];
        let freed = 0;
        const calls: Promise<void>[] = [];
        const uncertain = keys.filter((k) => {
          const st = states.get(k)!.state;
          return st === 'posting' || st === 'unknown';
        });
        if (uncertain.length) {
          const redisNow = await ctx.redisNow();
          for (const key of uncertain) calls.push(verify(key, redisNow));
        }
        for (const key of keys) {
          const s = states.get(key)!;
          const app = live(s);
          if (s.state === 'accepted') {
            if (input.gate === 'none' || input.dryRun) {
              batch.push([key, { type: 'finished', succeeded: true }]);
              freed++;
              continue;
            }
            const op = app ? ourOperation(app, runId) : undefined;
            if (op === 'completed') {
              const phase = app!.status!.operationState!.phase;
              if (phase !== 'Succeeded') {
                batch.push([key, { type: 'finished', succeeded: false, reason: failureReason(app!) }]);
                freed++;
              } else if (gateReached(app!, input.gate)) {
                batch.push([key, { type: 'finished', succeeded: true }]);
                freed++;
              }
            }
          } else if (s.state === 'pending' && inFlight < input.concurrency) {
            if (unread.has(s.instance)) continue;
            if (!app) {
              batch.push([key, { type: 'gone', reason: 'app no longer exists' }]);
              continue;
            }
            if (ourOperation(app, runId)) {
              // Already ours (an earlier attempt got it through): never send twice.
              batch.push([key, { type: 'found' }]);
              inFlight++;
              continue;
            }
            if (sent.has(key)) continue; // sent by this attempt; its stored mark was lost: the mirror will show it
            const busy = foreignOperationRunning(app, runId);
            if (busy) {
              if (s.note !== `waiting: ${busy}`) batch.push([key, { type: 'waiting', note: `waiting: ${busy}` }]);
              continue;
            }
            inFlight++;
            calls.push(post(key));
          }
        }
        await Promise.all(calls);
        if (batch.length) await applyMany(batch);
        const open = keys.filter((k) => !TERMINAL.includes(states.get(k)!.state));
        if (!open.length) break;
        if (ctx.now() - started > input.waveTimeout) {
          const timeouts: [string, AppEvent][] = [];
          for (const key of open) {
            const s = states.get(key)!;
            const app = live(s);
            const reason =
              s.state === 'pending'
                ? `timed out before its sync started${s.note ? ` (${s.note})` : ''}`
                : app && ourOperation(app, runId) === 'running'
                  ? `timed out: sync still running${app.status?.operationState?.message ? ` (${app.status.operationState.message})` : ''}`
                  : `timed out: ${waitingReason(app, input.gate)}`;
            timeouts.push([key, { type: 'timedOut', reason }]);
          }
          await applyMany(timeouts);
        }
        const fresh = keys.filter((k) => {
          const s = states.get(k)!;
          return (s.state === 'failed' || s.state === 'timeout') && !s.acknowledged;
        });
        if (fresh.length) {
          const names = fresh.map((k) => `${states.get(k)!.app} (${states.get(k)!.reason})`);
          await applyMany(fresh.map((k) => [k, { type: 'acknowledge' }]));
          if (input.onFailure !== 'continue') {
            report(wave);
            const text = `${fresh.length} app${fresh.length === 1 ? '' : 's'} failed in wave ${wave + 1}: ${names.slice(0, 5).join('; ')}${names.length > 5 ? ` and ${names.length - 5} more` : ''}`;
            if (input.onFailure === 'abort') return { status: 'failed', error: text, output: summarize(states, input.dryRun) };
            return { status: 'paused', reason: `${text}`, output: summarize(states, input.dryRun) };
          }
        }
        if (!keys.some((k) => !TERMINAL.includes(states.get(k)!.state))) break;
        report(wave);
        // Slots just freed and apps waiting: start them now rather than on the next event or tick.
        if (freed && keys.some((k) => states.get(k)!.state === 'pending')) continue;
        await sleep(500);
      }
      report(wave);
    }
  } catch (err) {
    if (err instanceof LeaseLostError) {
      report(currentWave);
      return { status: 'interrupted', output: summarize(states, input.dryRun) };
    }
    throw err;
  } finally {
    unsubscribe();
    ctx.signal.removeEventListener('abort', abortWake);
  }
  report(plan.waves.length - 1);
  const output = summarize(states, input.dryRun);
  const failed = [...states.values()].filter((s) => s.state === 'failed' || s.state === 'timeout');
  if (failed.length) return { status: 'failed', error: `${failed.length} app(s) did not sync: ${failed.slice(0, 5).map((s) => `${s.app} (${s.reason})`).join('; ')}`, output };
  return { status: 'succeeded', output };
}

/** What the run did, in words; a dry run's accepted syncs applied nothing, so they are what would sync. */
function summarize(states: Map<string, AppCheckpoint>, dryRun: boolean): Record<string, unknown> {
  const by = (state: AppState) => [...states.values()].filter((s) => s.state === state);
  const failed = [...by('failed'), ...by('timeout')].map((s) => ({ app: s.app, instance: s.instance, cluster: s.cluster, reason: s.reason }));
  const synced = by('done').length;
  const skipped = by('skipped').length;
  const remaining = [...states.values()].filter((s) => !TERMINAL.includes(s.state)).length;
  const clusters = new Set(by('done').map((s) => s.cluster).filter(Boolean)).size;
  const summary = [
    `${synced} app(s) ${dryRun ? 'would sync' : 'synced'}${clusters ? ` on ${clusters} cluster(s)` : ''}${dryRun ? ' (dry run: nothing applied)' : ''}${skipped ? `, ${skipped} skipped (already Synced and Healthy)` : ''}${failed.length ? `, ${failed.length} failed or timed out` : ''}${remaining ? `, ${remaining} not synced yet` : ''}`,
    ...failed.slice(0, 5).map((f) => `${f.app}${f.cluster ? ` (${f.cluster})` : ''}: ${f.reason}`),
    ...(failed.length > 5 ? [`and ${failed.length - 5} more failed`] : []),
  ];
  return { synced, skipped, failed, remaining, summary };
}

export const bulkSyncAction: RunbookAction = {
  name: 'bulk-sync',
  description: 'Sync many apps, each once, in ordered waves with a health gate, following progress through the fleet watch',
  destructive: true,
  pausable: true,
  input: bulkSyncInput,
  preview,
  execute,
};
