import type { FleetApp, FleetAppSet, FleetView } from '../fleet/model.js';
import type { ApplicationSet } from '../infra/argocd/types.js';
import {
  appOfProblem,
  downCount,
  summarizeApps,
  summarizeNextChunk,
  type ClusterStatus,
  type FleetSummary,
  type ProblemDetail,
} from '../fleet/status.js';
import { isDown, stepOnPreviousRevision } from '../fleet/rules/index.js';
import {
  PROBLEM_KIND_LABEL,
  groupClustersOfNextChunk,
  groupProblems,
  prepareGroupings,
  problemKind,
  rolloutEntry,
  type ProblemGroup,
  type ProblemKind,
  type ProblemRow,
} from '../fleet/groups.js';
import { isRollingSync, rolloutComplete } from '../fleet/rollingsync.js';
import { chunkCount } from '../fleet/chunks.js';
import { selectApps, type AppSelector } from '../fleet/select.js';
import {
  HEALTH_ORDER,
  SYNC_ORDER,
  TONE_EMOJI,
  absoluteTime,
  code,
  countsLine,
  formatCount,
  mention,
  plural,
  since,
} from '../core/format.js';
import { freezeActive, freezeFromWindow, freezeHolding, type Freeze } from '../fleet/freeze.js';
import { withinLiveBudget } from './live.js';
import { nextTurn } from '../core/concurrency.js';
import { freezesByRun } from '../domain/runbooks/index.js';
import { SELECTOR_OPTIONS, checkOptions, commandText, selectorFromCommand } from './parse.js';
import type { CommandContext, CommandSpec, ParsedCommand } from './registry.js';
import type { ReplyBlock, ReplyButton, ReplyItem, Tone } from '../core/reply.js';
import type { ReplyOf, StatusData } from './replies.js';
import { fleetNames, unknownTarget } from './suggest.js';

const USAGE = 'status [NAME|GLOB|CLUSTER|APPSET ...] [-l selector] [cluster=X] [project=X] [appset=X] [instance=X]';
const MAX_CLUSTERS_SHOWN = 8;
// More clusters with problems than this are summed up in one line: the groups say what is wrong.
const MAX_CLUSTER_LINES = 3;
const isGlob = (s: string) => /[*?[\]{}]/.test(s);

/**
 * Checks that plain names in a selection exist, so a typo gets "did you mean" across apps, appsets and
 * clusters instead of "0 apps". Globs and comma lists are left to selectApps.
 */
export function resolveSelection(fleet: FleetView, cmd: ParsedCommand): { sel: AppSelector; scope: string[] } {
  const sel = selectorFromCommand(cmd);
  const scope: string[] = [];
  const plain = (s: string | undefined): s is string => !!s && !isGlob(s) && !s.includes(',');
  if (plain(sel.instance) && !fleet.instances().includes(sel.instance))
    throw unknownTarget(fleet, sel.instance, 'instance');
  const needNames = plain(sel.cluster) || plain(sel.appSet) || sel.patterns?.some(plain);
  const names = needNames ? fleetNames(fleet) : undefined;
  if (plain(sel.cluster) && !names!.clusters.has(sel.cluster)) throw unknownTarget(fleet, sel.cluster, 'cluster');
  if (plain(sel.appSet) && !names!.appSets.has(sel.appSet) && !fleet.apps().some((a) => a.appSet === sel.appSet))
    throw unknownTarget(fleet, sel.appSet, 'appset');
  // `status prod-us1` or `status payments`: a bare cluster or appset name is what on-call means.
  if (sel.patterns?.length === 1 && plain(sel.patterns[0]) && !names!.apps.has(sel.patterns[0])) {
    const word = sel.patterns[0];
    if (names!.clusters.has(word) && !sel.cluster) {
      sel.cluster = word;
      delete sel.patterns;
    } else if (names!.appSets.has(word) && !sel.appSet) {
      sel.appSet = word;
      delete sel.patterns;
    }
  }
  for (const p of sel.patterns ?? []) {
    if (plain(p) && !names!.apps.has(p))
      throw unknownTarget(fleet, p, 'app', `No app, ApplicationSet or cluster named \`${p}\`.`);
  }
  if (sel.patterns?.length) scope.push(sel.patterns.map(code).join(' '));
  if (sel.labels) scope.push(`-l ${code(sel.labels)}`);
  if (sel.cluster) scope.push(`cluster ${code(sel.cluster)}`);
  if (sel.project) scope.push(`project ${code(sel.project)}`);
  if (sel.appSet) scope.push(`appset ${code(sel.appSet)}`);
  if (sel.instance) scope.push(`instance ${code(sel.instance)}`);
  return { sel, scope };
}

function clusterLine(c: ClusterStatus, problems: number, multiInstance: boolean): ReplyItem {
  const notFine = (counts: Record<string, number>, fine: string) =>
    Object.entries(counts)
      .filter(([k]) => k !== fine)
      .map(([k, n]) => `${k} ${formatCount(n)}`)
      .join(', ');
  const health = notFine(c.health, 'Healthy');
  const sync = notFine(c.sync, 'Synced');
  const counts =
    [health && `health ${health}`, sync && `sync ${sync}`].filter(Boolean).join(' · ') || 'all Synced and Healthy';
  const name = multiInstance ? `${c.instance}/${c.cluster}` : c.cluster;
  const tone = problems ? (downCount(c.health) ? 'error' : 'warn') : 'ok';
  return { text: `*${name}* — ${plural(c.apps, 'app')}: ${counts}`, tone };
}

/** The apps the selection names; a glob that matches nothing gets "did you mean" rather than "0 apps". */
export function selectedApps(fleet: FleetView, sel: AppSelector, scope: string[]): readonly FleetApp[] {
  const selected = scope.length ? selectApps(fleet, sel) : fleet.apps();
  if (scope.length && !selected.length && sel.patterns?.some(isGlob) && !sel.labels) {
    throw unknownTarget(
      fleet,
      sel.patterns.find(isGlob)!.replace(/[*?[\]{}]/g, ''),
      'app',
      `No application matches ${sel.patterns.map(code).join(' ')}.`,
    );
  }
  return selected;
}

/** The totals and one line on how it stands: nothing selected, all fine, or how many apps need attention where. */
function totalsBlocks(
  summary: FleetSummary,
  perCluster: ProblemsPerCluster,
  groups: readonly ProblemGroup[],
  scope: string[],
  multiInstance: boolean,
): ReplyBlock[] {
  const { total, clusters, problems } = summary;
  const instancesWithApps = new Set(clusters.map((c) => c.instance)).size;
  const fields: ReplyBlock = {
    kind: 'fields',
    fields: [
      {
        label: 'Apps',
        value: `${formatCount(total.apps)} on ${plural(clusters.length, 'cluster')}${multiInstance ? `, ${plural(instancesWithApps, 'instance')}` : ''}`,
      },
      { label: 'Sync', value: countsLine(total.sync, SYNC_ORDER) },
      { label: 'Health', value: countsLine(total.health, HEALTH_ORDER) },
    ],
  };
  if (!total.apps) {
    const text = `${TONE_EMOJI.info} No applications match ${scope.join(', ') || 'in the fleet'}.`;
    return [fields, { kind: 'text', text, tone: 'info' }];
  }
  if (!problems.length) {
    const text = `${TONE_EMOJI.ok} All ${plural(total.apps, 'app')} Synced and Healthy (or Progressing/Suspended).`;
    return [fields, { kind: 'text', text, tone: 'ok' }];
  }
  const degraded = problems.filter((p) => isDown(p.health)).length;
  const waiting = groups.filter((g) => g.kind === 'waiting').reduce((n, g) => n + g.apps.length, 0);
  const attention = problems.length - waiting;
  const tone = degraded ? 'error' : attention ? 'warn' : 'info';
  const groupCount = groups.filter((g) => g.kind !== 'waiting').length;
  const clusterCount = perCluster.clusters;
  const head = attention
    ? `*${plural(attention, 'app')} need${attention === 1 ? 's' : ''} attention* in ${plural(groupCount, 'group')} on ${plural(clusterCount, 'cluster')}${degraded ? ` (${formatCount(degraded)} Degraded or Missing)` : ''}`
    : `No failures: ${plural(waiting, 'app')} only wait${waiting === 1 ? 's' : ''} for a RollingSync step`;
  return [
    fields,
    {
      kind: 'text',
      text: `${TONE_EMOJI[tone]} ${head}${attention && waiting ? `; ${plural(waiting, 'more app')} only wait for a RollingSync step` : ''}.`,
      tone,
    },
  ];
}

interface ProblemsPerCluster {
  /** Clusters with a problem app. */
  clusters: number;
  count: (instance: string, cluster: string) => number;
}

/** Problem apps per cluster, counted once for the totals line and the cluster lines. */
function problemsPerCluster(problems: readonly ProblemDetail[]): ProblemsPerCluster {
  const byInstance = new Map<string, Map<string, number>>();
  let clusters = 0;
  for (const p of problems) {
    let byCluster = byInstance.get(p.instance);
    if (!byCluster) byInstance.set(p.instance, (byCluster = new Map()));
    const n = byCluster.get(p.cluster);
    if (n === undefined) clusters++;
    byCluster.set(p.cluster, (n ?? 0) + 1);
  }
  return { clusters, count: (instance, cluster) => byInstance.get(instance)?.get(cluster) ?? 0 };
}

/** With more than one cluster: a line per cluster (the worst, when there are many), or one line on how far problems reach. */
function clusterBlocks(summary: FleetSummary, perCluster: ProblemsPerCluster, multiInstance: boolean): ReplyBlock[] {
  const { clusters } = summary;
  if (clusters.length <= 1) return [];
  // Counted once per cluster: the ranking below compares thousands of pairs.
  const counts = new Map(clusters.map((c) => [c, perCluster.count(c.instance, c.cluster)]));
  const count = (c: ClusterStatus) => counts.get(c)!;
  const withProblems = clusters.filter((c) => count(c) > 0);
  if (withProblems.length > MAX_CLUSTER_LINES) {
    // Problems spread over many clusters are told by the groups below; one line says how far they reach.
    const most = Math.max(...withProblems.map(count));
    const worst = withProblems
      .filter((c) => count(c) === most)
      .map((c) => (multiInstance ? `${c.instance}/${c.cluster}` : c.cluster));
    const reach = `Problems on ${formatCount(withProblems.length)} of ${plural(clusters.length, 'cluster')}`;
    // "Most" only when some clusters have more than others; a single worst cluster has no "each".
    const spread =
      worst.length === withProblems.length
        ? `, ${plural(most, 'app')} on each`
        : `; most on ${worst.slice(0, 3).join(', ')}${worst.length > 3 ? ` and ${formatCount(worst.length - 3)} more` : ''} (${plural(most, 'app')}${worst.length > 1 ? ' each' : ''})`;
    return [{ kind: 'context', text: `${reach}${spread}. Narrow with cluster=X.` }];
  }
  const blocks: ReplyBlock[] = [];
  const ranked = clusters.length > MAX_CLUSTERS_SHOWN ? [...clusters].sort((a, b) => count(b) - count(a)) : clusters;
  // With many clusters only the worst are worth a line; the healthy rest is a count.
  const shown =
    clusters.length > MAX_CLUSTERS_SHOWN ? ranked.filter((c) => count(c) > 0).slice(0, MAX_CLUSTERS_SHOWN) : ranked;
  const rest = ranked.filter((c) => !shown.includes(c));
  const restWithProblems = rest.filter((c) => count(c) > 0).length;
  if (shown.length)
    blocks.push({
      kind: 'list',
      title: 'Clusters',
      items: shown.map((c) => clusterLine(c, count(c), multiInstance)),
    });
  if (rest.length) {
    blocks.push({
      kind: 'context',
      text: restWithProblems
        ? `and ${plural(rest.length, 'more cluster')} (${formatCount(restWithProblems)} with problems; narrow with cluster=X)`
        : shown.length
          ? `and ${formatCount(rest.length)} more healthy cluster${rest.length === 1 ? '' : 's'}`
          : `On ${plural(rest.length, 'cluster')}, none with a problem.`,
    });
  }
  return blocks;
}

/** A line per problem group, worst first, and how to look closer. */
function groupBlocks(groups: readonly ProblemGroup[], now: Date, multiInstance: boolean): ReplyBlock[] {
  if (!groups.length) return [];
  const example = groups[0].apps[0].app;
  return [
    {
      kind: 'list',
      title: `Problems by ${groups.some((g) => g.by === 'appset') ? 'ApplicationSet' : 'service'} and reason, worst first`,
      items: groups.map((g) => groupItem(g, now, multiInstance)),
      total: groups.length,
    },
    {
      kind: 'context',
      text: `Details of one app: ${code(`app ${example}`)} · the apps of a group: ${code(`status ${groupSelector(groups[0])}`)}`,
    },
  ];
}

// summarizeApps keeps a problem while its app stays the same, and nothing changes a reply's data once made: the
// contract's row is kept with it rather than copied for each answer.
const dataRows = new WeakMap<ProblemDetail, StatusData['problems'][number]>();

function dataRow(p: ProblemDetail): StatusData['problems'][number] {
  let row = dataRows.get(p);
  if (!row) {
    const { app, instance, cluster, sync, health, reason } = p;
    dataRows.set(p, (row = { app, instance, cluster, sync, health, reason }));
  }
  return row;
}

function statusData(summary: FleetSummary, groups: readonly ProblemGroup[]): ReplyOf<'status'>['data'] {
  const { total, clusters, problems } = summary;
  return {
    total,
    clusters,
    problems: problems.map(dataRow),
    frozen: [],
    groups: groups.map((g) => ({
      name: g.name,
      by: g.by,
      instance: g.instance,
      kind: g.kind,
      reason: g.reason,
      apps: g.apps.map((a) => a.app),
      clusters: g.clusters,
      clustersOfGroup: g.clustersOfGroup,
    })),
  };
}

export async function runStatus(cmd: ParsedCommand, ctx: CommandContext): Promise<ReplyOf<'status'>> {
  checkOptions(cmd, SELECTOR_OPTIONS, USAGE);
  const fleet = ctx.services.fleet;
  const now = ctx.services.now?.() ?? new Date();
  const { sel, scope } = resolveSelection(fleet, cmd);
  // What changed in the whole fleet since the last answer is counted a chunk at a time, requests let in between.
  if (!scope.length) await prepareStatusInSteps(fleet, nextTurn);
  const selected = selectedApps(fleet, sel, scope);
  // The fleet's own list at this version is the list the kept chunks were checked against at this version.
  const version = selected === fleet.apps() ? fleet.version() : undefined;
  const summary = summarizeApps(selected, version);
  const multiInstance = fleet.instances().length > 1;
  // One line per group of apps that share an ApplicationSet (or service) and a reason, real problems
  // before apps that only wait for their RollingSync step; each app is one `app X` away.
  const groups = problemGroups(fleet, selected, summary.problems, version);

  const title = scope.length ? `Status of ${scope.join(', ').replace(/`/g, '')}` : 'Fleet status';
  const buttons: ReplyButton[] = [{ label: 'Refresh', command: commandText(cmd) }];
  for (const name of rolloutsInFlight(fleet, summary))
    buttons.push({ label: `Show rollout ${name.label}`, command: name.command });
  const frozen = await frozenIn(ctx, selected, now);
  const perCluster = problemsPerCluster(summary.problems);
  const blocks: ReplyBlock[] = [
    { kind: 'header', text: title },
    ...totalsBlocks(summary, perCluster, groups, scope, multiInstance),
    ...frozenBlocks(frozen),
    ...clusterBlocks(summary, perCluster, multiInstance),
    ...groupBlocks(groups, now, multiInstance),
    { kind: 'actions', buttons: buttons.slice(0, 5) },
  ];

  return { ok: true, command: 'status', title, data: { ...statusData(summary, groups), frozen: frozen.rows }, blocks };
}

type FrozenRow = StatusData['frozen'][number];

/**
 * rollcall's freezes as this process can know them: its records in Redis where it has them (the bot, the workers),
 * else, for a one-shot `ask` that starts no Redis client, the windows rollcall wrote into the AppProjects of the
 * selected apps, read live (their descriptions say who froze what, until when). A broken Redis read says nothing
 * rather than failing the status; a project that cannot be read is named.
 */
async function knownFreezes(
  ctx: CommandContext,
  selected: readonly FleetApp[],
): Promise<{ freezes: Freeze[]; unread: string[] }> {
  if (ctx.services.freezes)
    return { freezes: (await ctx.services.freezes.list().catch(() => undefined)) ?? [], unread: [] };
  const projectsOf = new Map<string, Set<string>>();
  for (const a of selected) {
    let projects = projectsOf.get(a.instance);
    if (!projects) projectsOf.set(a.instance, (projects = new Set()));
    projects.add(a.app.spec.project || 'default');
  }
  const projects = [...projectsOf].flatMap(([instance, names]) => [...names].map((project) => ({ instance, project })));
  const freezes: Freeze[] = [];
  const unread: string[] = [];
  await Promise.all(
    projects.map(async ({ instance, project }) => {
      const api = ctx.services.argocd?.get(instance);
      if (!api) return;
      try {
        const read = await withinLiveBudget(instance, () => api.getProject(project));
        for (const w of read.spec.syncWindows ?? []) {
          const f = freezeFromWindow(instance, project, w);
          if (f) freezes.push(f);
        }
      } catch {
        unread.push(`AppProject ${project} on ${instance}`);
      }
    }),
  );
  return { freezes: freezes.sort((a, b) => a.at.localeCompare(b.at)), unread: unread.sort() };
}

/** rollcall's active freezes that hold apps of the selection, one row per freeze. */
async function frozenIn(
  ctx: CommandContext,
  selected: readonly FleetApp[],
  now: Date,
): Promise<{ rows: FrozenRow[]; unread: string[] }> {
  const { freezes, unread } = await knownFreezes(ctx, selected);
  const rows: FrozenRow[] = [];
  for (const run of freezesByRun(freezes.filter((f) => freezeActive(f, now)))) {
    const apps = selected
      .filter((a) => freezeHolding(run, a.instance, a.app, now))
      .map((a) => a.app.metadata.name)
      .sort();
    if (!apps.length) continue;
    const f = run[0];
    rows.push({ target: f.target, by: f.by, since: f.at, until: f.until ?? null, incident: f.incident ?? null, apps });
  }
  return { rows, unread };
}

function frozenBlocks({ rows, unread }: { rows: FrozenRow[]; unread: string[] }): ReplyBlock[] {
  const notes: ReplyBlock[] = unread.length
    ? [
        {
          kind: 'context',
          text: `rollcall's freezes in ${unread.join(', ')} are not shown: Argo CD did not answer for ${unread.length === 1 ? 'it' : 'them'}.`,
        },
      ]
    : [];
  if (!rows.length) return notes;
  return [
    ...notes,
    {
      kind: 'list',
      title: 'Frozen by rollcall: deploys held on purpose',
      items: rows.map((r) => ({
        text: `*${r.target}* · ${plural(r.apps.length, 'app')} held · by ${mention(r.by)}${r.incident ? ` for ${r.incident}` : ''} · ${r.until ? `until ${absoluteTime(r.until)}` : 'until unfrozen'}`,
        detail: `\`unfreeze ${r.target}\` lifts it`,
        tone: 'info' as const,
      })),
    },
  ];
}

/** The problems of the selection grouped by ApplicationSet (or service) and shared reason; see fleet/groups.ts. */
export function problemGroups(
  fleet: FleetView,
  selected: readonly FleetApp[],
  problems: readonly ProblemDetail[],
  version?: number,
): ProblemGroup[] {
  const kept = problems.map(rowMaker(fleet, selected));
  return groupProblems(
    kept.map((k) => k.row),
    selected,
    (_, i) => kept[i].kind,
    (_, i) => kept[i].step,
    version,
  );
}

/** Each problem's kept row, with the ApplicationSet it reads looked up once per call rather than once per problem. */
function rowMaker(fleet: FleetView, selected: readonly FleetApp[]): (p: ProblemDetail) => KeptRow {
  // summarizeApps hands each problem its app; a problem built elsewhere is found among the selection.
  let byKey: Map<string, FleetApp> | undefined;
  const fleetAppOf = (p: ProblemDetail) => {
    const fa = appOfProblem(p);
    if (fa) return fa;
    if (!byKey) {
      byKey = new Map();
      for (const fa of selected) byKey.set(`${fa.instance}\u0000${fa.app.metadata.name}`, fa);
    }
    return byKey.get(`${p.instance}\u0000${p.app}`);
  };
  // instance -> name -> the first ApplicationSet of that name there, as appSetsNamed(name).find would give it.
  let appSets: Map<string, Map<string, FleetAppSet>> | undefined;
  const appSetOf = (instance: string, name: string | undefined) => {
    if (!name) return undefined;
    if (!appSets) {
      appSets = new Map();
      for (const s of fleet.appSets()) {
        let named = appSets.get(s.instance);
        if (!named) appSets.set(s.instance, (named = new Map()));
        if (!named.has(s.appSet.metadata.name)) named.set(s.appSet.metadata.name, s);
      }
    }
    return appSets.get(instance)?.get(name)?.appSet;
  };
  return (p) => keptRow(p, appSetOf(p.instance, p.appSet), fleetAppOf);
}

/**
 * Computes ahead what the first `status` of the whole fleet would: each app's judgement, the kept chunks of counts,
 * problems and group clusters (fleet/status.ts, fleet/groups.ts) and each problem app's row judgement. A bot does it
 * before it takes requests, so the first crowd of an incident does not pay for a pass over every app; later answers
 * redo only what changed since, as they would anyway.
 */
export function prepareStatus(fleet: FleetView): void {
  const apps = fleet.apps();
  const version = fleet.version();
  problemGroups(fleet, apps, summarizeApps(apps, version).problems, version);
}

/**
 * What a `status` of the whole fleet redoes after the fleet changed, done a chunk of apps at a time with `pause()`
 * between: the chunks counted again, their problems' details, rows and groupings, the groups' clusters. Each chunk
 * holds the event loop for a few milliseconds, where counting every changed chunk at once held it for as long as all
 * of them (mid-incident at 50,000 apps, over a hundred); the answer that follows adds up what is done, and counts
 * what changed after the last step. Only a fleet long enough to be counted in chunks has steps.
 */
export async function prepareStatusInSteps(fleet: FleetView, pause: () => Promise<void>): Promise<void> {
  // Each chunk is counted and read for clusters once: a fleet changing faster than the steps go ends them too.
  for (let steps = 2 * chunkCount(fleet.apps()); steps > 0; steps--) {
    const apps = fleet.apps();
    const problems = summarizeNextChunk(apps);
    if (problems) {
      const kept = problems.map(rowMaker(fleet, apps));
      prepareGroupings(
        kept.map((k) => k.row),
        (_, i) => kept[i].kind,
        (_, i) => kept[i].step,
      );
    } else if (!groupClustersOfNextChunk(apps)) return;
    await pause();
  }
}

/** How soon after the fleet changes a bot prepares its next `status` (keepStatusPrepared). */
const PREPARE_AFTER_MS = 500;
/** The share of a CPU preparing may take while the fleet keeps changing. */
const PREPARE_SHARE = 0.1;
/** Ends a run of steps that was under way when the bot stopped preparing. */
const STOPPED = new Error('status preparation stopped');

/**
 * Keeps a bot's next `status` of the whole fleet prepared while the fleet changes: PREPARE_AFTER_MS after a change
 * the changed chunks are counted (prepareStatusInSteps, a chunk a turn), so a crowd asking mid-incident finds most of
 * its answer made rather than waiting while it is made. While the fleet keeps changing, a run follows the one before
 * no sooner than PREPARE_SHARE of a CPU allows for the work that one did (`afterMs` and `share` say otherwise). Returns
 * what stops it.
 */
export function keepStatusPrepared(
  fleet: FleetView,
  onError: (err: unknown) => void,
  { afterMs = PREPARE_AFTER_MS, share = PREPARE_SHARE }: { afterMs?: number; share?: number } = {},
): () => void {
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  let changedMeanwhile = false;
  let stopped = false;
  let gapMs = afterMs;
  const run = async () => {
    timer = undefined;
    running = true;
    changedMeanwhile = false;
    let busyMs = 0;
    let mark = performance.now();
    try {
      await prepareStatusInSteps(fleet, async () => {
        busyMs += performance.now() - mark;
        await nextTurn();
        if (stopped) throw STOPPED;
        mark = performance.now();
      });
      busyMs += performance.now() - mark;
    } catch (err) {
      if (err !== STOPPED) onError(err);
    }
    running = false;
    gapMs = Math.max(afterMs, busyMs / share);
    if (changedMeanwhile) schedule();
  };
  const schedule = () => {
    if (stopped || timer) return;
    if (running) changedMeanwhile = true;
    else (timer = setTimeout(() => void run(), gapMs)).unref();
  };
  const unsubscribe = fleet.subscribe(schedule);
  return () => {
    stopped = true;
    unsubscribe();
    if (timer) clearTimeout(timer);
  };
}

type RolloutEntry = ReturnType<typeof rolloutEntry>;

/** A problem's row, with the kind and RollingSync step it is grouped by. */
interface KeptRow {
  row: ProblemRow;
  kind: ProblemKind;
  step?: string;
}

// A row reads its problem, the problem's app and the app's RollingSync entry. summarizeApps keeps a problem while its
// app stays the same, and the mirror replaces an ApplicationSet (its entries with it) on every change: a row is kept
// per pair of problem and ApplicationSet object.
const NO_APPSET = {};
const keptRows = new WeakMap<object, WeakMap<ProblemDetail, KeptRow>>();

function keptRow(
  p: ProblemDetail,
  appSet: ApplicationSet | undefined,
  fleetAppOf: (p: ProblemDetail) => FleetApp | undefined,
): KeptRow {
  let byProblem = keptRows.get(appSet ?? NO_APPSET);
  if (!byProblem) keptRows.set(appSet ?? NO_APPSET, (byProblem = new WeakMap()));
  let kept = byProblem.get(p);
  if (!kept) {
    kept = rowOf(p, fleetAppOf(p), rolloutEntry(appSet, p.app));
    byProblem.set(p, kept);
  }
  return kept;
}

function rowOf(p: ProblemDetail, fa: FleetApp | undefined, entry: RolloutEntry): KeptRow {
  const kind = fa ? problemKind(fa, p.sync, p.health, entry) : 'outofsync';
  const step = entry?.step;
  if (step === '-1')
    return { row: { ...p, reason: 'matched by no RollingSync step: Argo CD never syncs it' }, kind, step };
  if (fa && stepOnPreviousRevision(fa.app, entry))
    return {
      row: { ...p, reason: 'RollingSync counts its step complete, yet it runs the previous revision: sync it by hand' },
      kind,
      step,
    };
  // An app waiting for its step has waited since its entry last changed, not since its last sync days ago.
  if (kind === 'waiting' && entry!.lastTransitionTime)
    return { row: { ...p, since: entry!.lastTransitionTime }, kind, step };
  // Read, never changed, by the grouping: the problem itself serves as its row.
  return { row: p, kind, step };
}

const KIND_TONE: Record<ProblemKind, Tone> = {
  failed: 'error',
  degraded: 'error',
  missing: 'error',
  unknown: 'unknown',
  outofsync: 'warn',
  waiting: 'info',
};

/** "auth-service · Degraded on 12/12 clusters · CrashLoopBackOff: back-off restarting failed container · for 41m" */
function groupItem(g: ProblemGroup, now: Date, multiInstance: boolean): ReplyItem {
  const where = (c: string) => (multiInstance ? `${g.instance}/${c}` : c);
  const on =
    g.clusters === 1 ? where(g.apps[0].cluster) : `${formatCount(g.clusters)}/${plural(g.clustersOfGroup, 'cluster')}`;
  const age = since(g.since, now);
  const n = g.apps.length;
  let text: string;
  if (g.kind === 'waiting') {
    text = `*${g.name}* · ${plural(n, 'app')} wait${n === 1 ? 's' : ''} for RollingSync step ${g.step ?? '?'} on ${on} · not failing: the step has not reached ${n === 1 ? 'it' : 'them'} yet${age ? ` · for ${age}` : ''}`;
  } else {
    const label = PROBLEM_KIND_LABEL[g.kind];
    // A lone app is named unless its name is just the group's on its cluster (`search` on prod-1 is search-prod-1).
    const lone = g.apps[0];
    const named = () => g.apps.every((a) => isNamedFor(a.app, g.name, a.cluster));
    const who =
      g.by === 'app' || (n === g.clusters && named())
        ? ''
        : n === 1
          ? `${lone.app} `
          : n <= 3
            ? `${plural(n, 'app')} (${g.apps.map((a) => a.app).join(', ')}) `
            : `${plural(n, 'app')} `;
    const when = !age
      ? ''
      : g.kind === 'outofsync'
        ? ` · last sync ${age} ago`
        : g.kind === 'unknown'
          ? ''
          : ` · for ${age}`;
    text = `*${g.name}* · ${who}${label} on ${on} · ${g.reason}${when}`;
  }
  return { text, tone: KIND_TONE[g.kind] };
}

/** Whether `app` is `<name>-<cluster>`, without building the name: a group of thousands of apps is checked per answer. */
function isNamedFor(app: string, name: string, cluster: string): boolean {
  return (
    app.length === name.length + 1 + cluster.length &&
    app.charCodeAt(name.length) === 45 /* - */ &&
    app.startsWith(name) &&
    app.endsWith(cluster)
  );
}

/** The selection that shows a group's apps: its appset, its service glob, or the app. */
function groupSelector(g: ProblemGroup): string {
  return g.by === 'service' ? `${g.name}-*` : g.name;
}

/** RollingSync appsets of the selected apps whose rollout is not complete; problem apps' appsets first. */
function rolloutsInFlight(fleet: FleetView, summary: FleetSummary): { label: string; command: string }[] {
  const keys: [string, string][] = [];
  // instance -> appset names seen: mid-incident every problem app names its appset.
  const seen = new Map<string, Set<string>>();
  const add = (instance: string, name: string) => {
    let names = seen.get(instance);
    if (!names) seen.set(instance, (names = new Set()));
    if (!names.has(name)) {
      names.add(name);
      keys.push([instance, name]);
    }
  };
  for (const p of summary.problems) if (p.appSet) add(p.instance, p.appSet);
  for (const [instance, names] of summary.appSets) for (const n of names) add(instance, n);
  const out: { label: string; command: string }[] = [];
  for (const [instance, name] of keys) {
    const candidates = fleet.appSetsNamed(name);
    const set = candidates.find((s) => s.instance === instance);
    if (!set || !isRollingSync(set.appSet) || rolloutComplete(set.appSet)) continue;
    const ambiguous = candidates.length > 1;
    out.push({ label: name, command: `rollout ${name}${ambiguous ? ` instance=${instance}` : ''}` });
    if (out.length === 3) break;
  }
  return out;
}

export const statusCommand: CommandSpec<'status'> = {
  name: 'status',
  aliases: ['st'],
  summary: 'Sync and health totals, per cluster, and the apps that need attention (oldest problem first)',
  usage: USAGE,
  help: [
    'Examples:',
    '`status` — the whole fleet',
    '`status prod-us1` — one cluster (a bare cluster or appset name works)',
    '`status auth-*` — apps by name glob',
    '`status -l env=prod,tier=canary` — by Application labels (also `selector="env in (prod,staging)"`)',
    '`status project=payments instance=argocd-eu`',
    'Problems are OutOfSync or Unknown sync, or Degraded, Missing or Unknown health, with the reason Argo CD gives.',
  ].join('\n'),
  readOnly: true,
  sharedAnswer: true,
  run: runStatus,
};
