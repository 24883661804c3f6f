import { RollcallError } from '../../../../core/errors.js';
import { formatCount, literal, plural, typedDuration } from '../../../../core/format.js';
import { nameList } from '../../../../fleet/rules/finding-text.js';
import type { ReplyBlock, ReplyItem } from '../../../../core/reply.js';
import type { FleetApp } from '../../../../fleet/model.js';
import { selectApps } from '../../../../fleet/select.js';
import type { ActionPreview, PreviewContext } from '../types.js';
import type { BulkSyncInput } from './input.js';
import { assertWavesMatch, planBulkSync, waveApp, type PlannedApp, type PlannedWave } from './planner.js';
import { parseSelectorParam } from './selector.js';
import { assertChecksUsable, checkNamesOf } from './check-verifier.js';
import { watchVerifiersFor, waveVerifiersFor } from './verify.js';

/** What the preview stores for the run: the plan the executor follows, and what people read before confirming. */
export interface BulkSyncPlan {
  waves: PlannedWave[];
  skipped: (PlannedApp & { reason: string })[];
  selected: number;
  /** Settings that will not do what they say (a wave matching nothing, a canary as large as the run). */
  warnings?: string[];
  clusters: string[];
  /** What watches each wave after its gate (the bake's verifiers, the checks), by name; none: the gate alone decides. */
  verifiers?: string[];
  /** What watches every synced app after the last wave (`watch=`), by name. */
  watchVerifiers?: string[];
  options: Omit<BulkSyncInput, 'selector'> & { selector: string };
  prune?: {
    resources: number;
    apps: number;
    sampled?: { checked: number; of: number };
    items: { app: string; cluster: string; resources: string[] }[];
  };
}

/** Apps named per wave in the preview; the plan in the run's data has them all. */
const WAVE_APPS_SHOWN = 20;

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
    const doomed = resources
      .filter((r) => r.requiresPruning)
      .map((r) => `${r.kind}/${r.namespace ? `${r.namespace}/` : ''}${r.name}`);
    if (doomed.length) items.push({ app: f.app.metadata.name, cluster: f.cluster, resources: doomed });
  }
  const sample = unknown.slice(0, PRUNE_SAMPLE);
  await pool(sample, 8, async (f) => {
    const api = ctx.services.argocd.get(f.instance);
    if (!api) return;
    try {
      const managed = await api.managedResources({
        name: f.app.metadata.name,
        appNamespace: f.app.metadata.namespace,
        project: f.app.spec.project,
      });
      const doomed = (managed.items ?? [])
        .filter(
          (r) =>
            !r.hook &&
            (r.targetState === undefined ||
              r.targetState === null ||
              r.targetState === '' ||
              r.targetState === 'null') &&
            r.liveState &&
            r.liveState !== 'null',
        )
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

/**
 * What prune deletes, one line per distinct set of resources: the same ConfigMap left behind on 12 clusters is
 * "12 × ConfigMap/identity/auth-config-v2", with the apps it is in, not 12 lines that differ only by app.
 */
function pruneItems(items: NonNullable<BulkSyncPlan['prune']>['items']): ReplyItem[] {
  const groups = new Map<string, { resources: string[]; apps: typeof items }>();
  for (const i of items) {
    const key = i.resources.join('\n');
    const group = groups.get(key) ?? { resources: i.resources, apps: [] };
    group.apps.push(i);
    groups.set(key, group);
  }
  return [...groups.values()]
    .sort((a, b) => b.apps.length - a.apps.length)
    .map(({ resources, apps }) => {
      const what = resources.slice(0, 5).join(', ') + (resources.length > 5 ? ` and ${resources.length - 5} more` : '');
      return apps.length === 1
        ? { text: `${apps[0].app} (${apps[0].cluster})`, detail: what, tone: 'warn' as const }
        : {
            text: `${apps.length} × ${resources.length === 1 ? what : `(${what})`}`,
            detail: `one in each of ${plural(apps.length, 'app')}: ${nameList(apps.map((a) => a.app))}`,
            tone: 'warn' as const,
          };
    });
}

/**
 * Holds a single wave wider than the guard allows (config syncGuard): the outage rollcall exists for
 * was one change reaching 540 apps on 12 clusters at once. Waves, a canary or the typed count let it through.
 */
function blastRadius(
  ctx: PreviewContext,
  count: number,
  clusterCount: number,
  waves: { apps: PlannedApp[] }[],
): string | undefined {
  const input = ctx.input as BulkSyncInput;
  const guard = ctx.services.config.syncGuard;
  if (waves.length !== 1 || count <= guard.freeUpTo || input.confirm === count) return undefined;
  const fleet = ctx.services.fleet.apps();
  const perCluster = new Map<string, number>();
  for (const f of fleet)
    perCluster.set(`${f.instance}/${f.cluster}`, (perCluster.get(`${f.instance}/${f.cluster}`) ?? 0) + 1);
  const clusterWorth = Math.max(0, ...perCluster.values());
  const share = fleet.length ? count / fleet.length : 1;
  const tooMany =
    share > guard.maxFleetShare
      ? `${Math.round(share * 100)}% of the fleet (more than ${Math.round(guard.maxFleetShare * 100)}%)`
      : count > clusterWorth
        ? `more apps than the largest cluster holds (${clusterWorth})`
        : undefined;
  if (!tooMany) return undefined;
  const wrong =
    input.confirm !== undefined ? ` confirm=${input.confirm} does not match: the sync is ${count} apps.` : '';
  return `This sync reaches ${count} apps on ${clusterCount} cluster${clusterCount === 1 ? '' : 's'} in one wave: ${tooMany}.${wrong} Split it so a bad change stops early: waves in order (e.g. \`waves="*-eu-*;*-us-*"\`) or \`canary=N\` (N apps first, gated on health). To sync them all at once anyway, confirm the count: \`confirm=${count}\`.`;
}

export async function previewBulkSync(ctx: PreviewContext): Promise<ActionPreview> {
  const input = ctx.input as BulkSyncInput;
  if (input.force) {
    throw new RollcallError(
      'invalid_params',
      'force=true is not offered: in Argo CD, force means delete and recreate resources that fail to apply, which bulk-sync does not do. To also sync apps already Synced and Healthy, use includeSynced=true.',
    );
  }
  // A typo in a check is refused before anything else is read: the run would otherwise verify nothing it was asked to.
  assertChecksUsable(input, ctx.services);
  const selected = selectApps(ctx.services.fleet, parseSelectorParam(input.selector));
  if (!selected.length)
    throw new RollcallError(
      'unknown_target',
      `no apps match "${input.selector}" (\`status ${input.selector.split(/\s+/)[0]}\` shows what there is)`,
    );
  assertWavesMatch(selected.map(waveApp), input.waves);
  const { toSync, waves, skipped, clusters, warnings } = planBulkSync(selected, input);
  const held = blastRadius(ctx, toSync.length, clusters.length, waves);
  if (held) throw new RollcallError('blast_radius', held);
  const planned = waves.flatMap((w) => w.apps);
  assertChecksUsable(input, ctx.services, planned);
  // Named as a real run would watch: a dry run watches nothing, and its preview says what a real run would.
  const real = { ...input, dryRun: false };
  const verifiers = waveVerifiersFor(real, ctx.services, planned).map((v) => v.name);
  const watchVerifiers = watchVerifiersFor(real, ctx.services, planned).map((v) => v.name);
  const plan: BulkSyncPlan = {
    waves,
    skipped,
    selected: selected.length,
    clusters,
    ...(verifiers.length ? { verifiers } : {}),
    ...(watchVerifiers.length ? { watchVerifiers } : {}),
    options: { ...input },
  };
  if (input.prune) plan.prune = await prunePreview(ctx, toSync);
  plan.warnings = [...warnings, ...watchWarnings(input)];
  return {
    targets: toSync.map((f) => ({ instance: f.instance, app: f.app.metadata.name, cluster: f.cluster })),
    summary: previewSummary(input, plan, selected, toSync.length),
    data: { ...plan },
    blocks: previewBlocks(input, plan, toSync.length),
    empty: toSync.length === 0,
  };
}

function previewBlocks(input: BulkSyncInput, plan: BulkSyncPlan, toSync: number): ReplyBlock[] {
  const { waves, skipped, clusters } = plan;
  const warnings = plan.warnings ?? [];
  const blocks: ReplyBlock[] = [
    {
      kind: 'fields',
      fields: [
        { label: 'Apps to sync', value: String(toSync) },
        { label: 'Clusters', value: `${clusters.length}${clusters.length <= 6 ? ` (${clusters.join(', ')})` : ''}` },
        {
          label: 'Skipped',
          value: `${skipped.length}${skipped.length ? ' already Synced+Healthy (includeSynced=true to include)' : ''}`,
        },
        {
          label: 'Waves',
          value:
            waves
              .map(
                (w) => `${literal(w.name)}: ${w.apps.length}${w.maxUpdateAsked ? ` (${w.maxUpdate} at a time)` : ''}`,
              )
              .join(' → ') || 'none',
        },
        ...(waves.length ? [{ label: 'If a wave fails', value: onFailureText(input, waves.length) }] : []),
        ...(plan.watchVerifiers?.length
          ? [{ label: 'After the last wave', value: afterRolloutText(input, plan.watchVerifiers) }]
          : []),
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
  ];
  if (warnings.length)
    blocks.push({
      kind: 'list',
      title: 'Check before confirming',
      items: warnings.map((text) => ({ text, tone: 'warn' as const })),
    });
  // What prune deletes comes before the waves: on a long preview the waves fill the first page, and whoever
  // confirms from that page must have seen it.
  if (plan.prune?.items.length) {
    // The counts are in the facts above; the list says what and where.
    const items = pruneItems(plan.prune.items);
    blocks.push({
      kind: 'list',
      title: `What prune ${input.dryRun ? 'would delete' : 'deletes'}${plan.prune.sampled ? ` (checked ${plan.prune.sampled.checked} of ${plan.prune.sampled.of} apps without a resource list)` : ''}`,
      items: items.slice(0, 15),
      total: items.length,
    });
  }
  // A wave's apps as one paragraph of names: each name carries its cluster, and a line each pages a long preview.
  waves.forEach((w, i) => {
    const names = w.apps.slice(0, WAVE_APPS_SHOWN).map((a) => a.app);
    const more = w.apps.length - names.length;
    blocks.push({
      kind: 'text',
      text: `*${waveTitle(input, plan, i)}*\n${names.join(', ')}${more ? ` and ${formatCount(more)} more` : ''}`,
    });
  });
  return blocks;
}

/** What gates a wave before the next starts: its bake and verifiers, as a real run would do them. */
function watchText(input: BulkSyncInput, plan: BulkSyncPlan): string | undefined {
  const verifiers = plan.verifiers ?? [];
  if (!verifiers.length) return undefined;
  const what = input.bake ? `bake ${typedDuration(input.bake)}` : 'verified';
  // A dry run applies nothing, so nothing is watched: it says what a real run would do.
  return `${input.dryRun ? `a real run would ${input.bake ? what : 'verify'}` : `then ${what}`} (${verifiers.join(', ')})`;
}

/** `Wave 2/3: tier=low-traffic (label selector) · 4 apps · 2 at a time (@50%) · then bake 30s (health)` */
function waveTitle(input: BulkSyncInput, plan: BulkSyncPlan, i: number): string {
  const w = plan.waves[i];
  const limit = Math.min(w.maxUpdate, w.apps.length);
  const bits = [
    `Wave ${i + 1}/${plan.waves.length}: ${literal(w.name)}${w.selector ? ' (label selector)' : ''}`,
    plural(w.apps.length, 'app'),
    `${limit === w.apps.length && !w.maxUpdateAsked ? 'all' : limit} at a time${w.maxUpdateAsked ? ` (@${w.maxUpdateAsked})` : ''}`,
  ];
  const watch = watchText(input, plan);
  if (watch) bits.push(watch);
  return bits.join(' · ');
}

/** Settings that do nothing as given: said before anyone confirms. */
function watchWarnings(input: BulkSyncInput): string[] {
  if (!input.watch && input.onRegression !== 'notify')
    return [`onRegression=${input.onRegression} does nothing without watch= (how long to watch after the last wave)`];
  return [];
}

/** The watch after the last wave and what a regression found in it does. */
function afterRolloutText(input: BulkSyncInput, verifiers: string[]): string {
  const what = `watch every app this run synced for ${typedDuration(input.watch)} (${verifiers.join(', ')})`;
  const regression = {
    rollback: 'roll back every app this run synced, each to its previous deployment, and stop, failed',
    pause: 'pause the run',
    notify: 'say so in the thread and keep watching; the run ends failed',
  }[input.onRegression];
  const said = 'said in the thread, raised as a regression alert';
  return input.dryRun
    ? `a real run would ${what}; a dry run applies nothing, so it watches nothing`
    : `${what}; a regression is ${said}, then rollcall will ${regression} (onRegression=${input.onRegression})`;
}

/** What a failed wave (an app failed or timed out, or its watch failed) does to the run. */
function onFailureText(input: BulkSyncInput, waves: number): string {
  const later = waves > 1 ? 'later waves are not synced' : 'the run stops';
  switch (input.onFailure) {
    case 'rollback':
      return input.dryRun
        ? `a real run would roll back the apps the wave synced, to their previous deployment, and stop (${later}); a dry run applies nothing, so it would roll back nothing`
        : `roll back the apps the wave synced, each to its previous deployment, and stop: ${later} (onFailure=rollback)`;
    case 'abort':
      return `stop, failed: ${later} (onFailure=abort)`;
    case 'continue':
      return 'go on with the next wave; the run ends failed (onFailure=continue)';
    default:
      return 'pause the run; Resume goes on with the next apps (onFailure=pause)';
  }
}

/** One line: what the run syncs, or why there is nothing to sync. */
function previewSummary(input: BulkSyncInput, plan: BulkSyncPlan, selected: FleetApp[], toSync: number): string {
  const { waves, skipped, clusters } = plan;
  return toSync
    ? `${input.dryRun ? 'Dry run: would sync' : 'Sync'} ${toSync} app${toSync === 1 ? '' : 's'} on ${clusters.length} cluster${clusters.length === 1 ? '' : 's'}${input.prune ? ' with prune' : ''} in ${waves.length} wave${waves.length === 1 ? '' : 's'}${!input.dryRun && plan.verifiers?.length ? `, each wave ${input.bake ? `baked ${typedDuration(input.bake)}` : 'verified'}${input.check ? ` against ${checkNamesOf(input).join(', ')}` : ''} before the next starts` : ''}${!input.dryRun && input.onFailure === 'rollback' ? ', a failed wave rolled back' : ''}${!input.dryRun && plan.watchVerifiers?.length ? `, then watched ${typedDuration(input.watch)} (a regression: ${input.onRegression})` : ''}${skipped.length ? `; ${skipped.length} already Synced+Healthy, skipped` : ''}${plan.prune?.resources ? `. Prune ${input.dryRun ? 'would delete' : 'deletes'} ${plural(plan.prune.resources, 'resource')}` : ''}${input.dryRun ? '; nothing is applied' : ''}.`
    : `Nothing to sync: ${selected.length === 1 ? `${selected[0].app.metadata.name}, the one matching app, is` : `all ${selected.length} matching apps are`} already Synced and Healthy${input.revision ? ` at revision ${literal(input.revision)}` : ''}. To sync ${selected.length === 1 ? 'it' : 'them'} anyway, add includeSynced=true.`;
}
