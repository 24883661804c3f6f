/**
 * A status digest: what needs attention, what happened in the period, and the totals with their change
 * since the previous digest. `composeDigest` is the one way to build one (the scheduled tick, `digest` in
 * Slack and the terminal all call it, so they say the same thing): it reads what Redis remembers and hands
 * it to `buildDigest`, which is pure. Needs attention is the registry's rules' judgement (fleet/rules/).
 */
import type { Application } from '../../infra/argocd/types.js';
import type { AlertsConfig, DigestConfig } from '../../infra/config/schema.js';
import type { IncidentService } from '../incidents/service.js';
import { absoluteTime, formatDuration } from '../../core/format.js';
import type { FleetApp, FleetView } from '../../fleet/model.js';
import { automatedEnabled, isRollingSync, rolloutComplete } from '../../fleet/rollingsync.js';
import {
  appDown,
  degradedAfterSync,
  downLongEnough,
  outOfSyncOutsideRollout,
  rolloutMembers,
  syncFailed,
} from '../../fleet/rules/index.js';
import { matchesLabels, parseLabelSelector } from '../../fleet/select.js';
import { freezeActive, freezeHolding, type Freeze } from '../../fleet/freeze.js';
import type { FreezeStore } from '../runbooks/freeze.js';
import { isActive } from './lifecycle.js';
import type { DigestRun, FleetRecords } from './records.js';

export type { DigestRun } from './records.js';
import type { AlertStore } from './store.js';
import {
  byName,
  evaluateAlertRules,
  groupBy,
  groupKey,
  oldest,
  ownerOf,
  pausedBy,
  revisionOf,
  ruleSettings,
  type AlertCondition,
} from './rules.js';

export const ATTENTION_KINDS = [
  'degraded',
  'out-of-sync',
  'stuck-rollout',
  'paused-rollout',
  'frozen',
  'sync-failed',
  'key-backup-stale',
  'instance-unreachable',
] as const;
export type AttentionKind = (typeof ATTENTION_KINDS)[number];

export interface AttentionItem {
  kind: AttentionKind;
  severity: 'critical' | 'warning' | 'info';
  title: string;
  instance: string;
  appSet?: string;
  apps: string[];
  count: number;
  since: string;
}

export interface DigestActivity {
  from: string;
  to: string;
  syncs: { succeeded: number; failed: number };
  rolloutsCompleted: { instance: string; appSet: string; at: string }[];
  /** Runbook runs started in the period; null when the run records could not be read. */
  runbookRuns: { total: number; byStatus: Record<string, number>; runs: DigestRun[] } | null;
}

/**
 * An incident as a digest speaks of it. The wiring layer reads incidents and their metrics and hands
 * them in as plain facts: alerts does not depend on the incident service.
 */
export interface DigestIncident {
  id: string;
  title: string;
  severity: number;
  /** investigating, identified, mitigated or closed. */
  state: string;
  declaredAt: string;
  closedAt?: string;
  /** Seconds from impact start to close (incident metrics); null when impact start is unknown. */
  ttr?: number | null;
  /** `instance/name` of the apps its scope matched; empty for an incident about the whole fleet. */
  apps: string[];
}

export interface DigestIncidents {
  /** Still open, oldest first, whenever they were declared. */
  open: DigestIncident[];
  /** Declared in the period (open or since closed). */
  opened: DigestIncident[];
  /** Closed in the period, most recent first. */
  closed: DigestIncident[];
}

export const TOTAL_KEYS = [
  'instances',
  'appSets',
  'apps',
  'synced',
  'outOfSync',
  'healthy',
  'progressing',
  'degraded',
  'missing',
  'suspended',
  'unknown',
  'activeAlerts',
] as const;
export type TotalKey = (typeof TOTAL_KEYS)[number];

export interface DigestTotals extends Record<TotalKey, number> {
  /** Each total minus the previous digest's; null when there was none. */
  change: Partial<Record<TotalKey, number>> | null;
  previousAt: string | null;
}

export interface Digest {
  name: string | null;
  at: string;
  selector: string | null;
  allClear: boolean;
  attention: AttentionItem[];
  activity: DigestActivity;
  totals: DigestTotals;
  /** null when this process cannot read incidents (no Redis). */
  incidents: DigestIncidents | null;
}

export interface DigestInputs {
  fleet: FleetView;
  now: Date;
  alerts: AlertsConfig;
  name?: string;
  /** A Kubernetes label selector on Application labels; the digest covers the apps it picks. */
  selector?: string;
  /** Start of the period; defaults to 24 hours before now. */
  from?: Date;
  keyBackups?: { cluster: string; lastBackupAt?: string }[];
  runs?: DigestRun[];
  activeAlerts?: number;
  previous?: { at: string; totals: Record<string, number> };
  /** Open and recent incidents; the digest picks those open or opened or closed in the period. */
  incidents?: DigestIncident[];
  /** rollcall's freezes (Redis); what an active one holds is said once, not as OutOfSync apps. */
  freezes?: readonly Freeze[];
}

const SEVERITY: Record<AttentionKind, AttentionItem['severity']> = {
  degraded: 'critical',
  'out-of-sync': 'warning',
  'stuck-rollout': 'critical',
  'paused-rollout': 'info',
  frozen: 'info',
  'sync-failed': 'critical',
  'key-backup-stale': 'warning',
  'instance-unreachable': 'critical',
};

function appKey(a: FleetApp): string {
  return `${a.instance}/${a.app.metadata.name}`;
}

/**
 * When an app was last known to match git: Argo CD records no time for a change of sync status, so the
 * end of its last successful sync is the best bound there is.
 */
function lastInSync(app: Application): string | undefined {
  const op = app.status?.operationState;
  if (op?.phase === 'Succeeded' && op.finishedAt) return op.finishedAt;
  const history = app.status?.history ?? [];
  return history.length ? history[history.length - 1].deployedAt : undefined;
}

interface AttentionApp {
  a: FleetApp;
  since?: string;
  revision?: string;
  /** A down app's health (Degraded or Missing). */
  health?: string;
}

function grouped(
  kind: AttentionKind,
  apps: AttentionApp[],
  now: Date,
  title: (owner: string, n: number, since: string, group: AttentionApp[]) => string,
): AttentionItem[] {
  const out: AttentionItem[] = [];
  for (const group of groupBy(apps, (x) =>
    groupKey({ rule: kind, instance: x.a.instance, ...ownerOf(x.a), revision: x.revision }),
  ).values()) {
    const first = group[0].a;
    const owner = ownerOf(first);
    const since = oldest(
      group.map((g) => g.since),
      now.toISOString(),
    );
    const names = group.map((g) => g.a.app.metadata.name).sort(byName);
    out.push({
      kind,
      severity: SEVERITY[kind],
      title: title(owner.appSet ?? owner.app!, names.length, since, group),
      instance: first.instance,
      ...(owner.appSet ? { appSet: owner.appSet } : {}),
      apps: names,
      count: names.length,
      since,
    });
  }
  return out;
}

const apps = (n: number) => `${n} app${n === 1 ? '' : 's'}`;

/** "Degraded", "Missing", or both, for what the down apps of a group are. */
function downWord(group: AttentionApp[]): string {
  const kinds = new Set(group.map((g) => g.health));
  return kinds.size === 1 ? [...kinds][0]! : 'Degraded or Missing';
}

/**
 * Apps that need attention, judged by the registry's rules (the same tests as alerts and `diagnose`):
 * Degraded right after a sync (degraded-after-sync) at once, any other Degraded or Missing app once it has
 * been down for app-degraded's `after`; OutOfSync outside a rollout (out-of-sync), for an auto-synced app past the
 * rule's threshold counted from its last sync (Argo CD records no time for the change; it catches up on
 * its own before that), for any other app at once; failed syncs (sync-failed)
 * that ended in the period. Apps of a stuck rollout are that rollout's item.
 */
function appAttention(
  inputs: DigestInputs,
  scoped: FleetApp[],
  inStuckRollout: Set<string>,
  from: Date,
): AttentionItem[] {
  const { fleet, now } = inputs;
  const age = (since: string) => formatDuration(now.getTime() - Date.parse(since));
  const degradedWindow = ruleSettings(inputs.alerts, 'degraded-after-sync').windowMs;
  const downAfter = ruleSettings(inputs.alerts, 'app-degraded').afterMs;
  const outOfSyncAfter = ruleSettings(inputs.alerts, 'out-of-sync').afterMs;
  const degraded: AttentionApp[] = [];
  const outOfSync: typeof degraded = [];
  const failed: typeof degraded = [];
  const inRollout = rolloutMembers(fleet);
  for (const a of scoped) {
    if (inStuckRollout.has(appKey(a))) continue;
    const app = a.app;
    const down = appDown(app);
    if (down && (downLongEnough(down, now, downAfter) || degradedAfterSync(app, now, degradedWindow) !== undefined))
      degraded.push({ a, since: down.since, revision: revisionOf(app), health: down.health });
    if (outOfSyncOutsideRollout(a, inRollout) && !freezeHolding(inputs.freezes, a.instance, app, now)) {
      const since = lastInSync(app);
      // Without automated sync nothing but a person will sync it: it needs attention at once.
      const due =
        !automatedEnabled(app.spec?.syncPolicy?.automated) ||
        !since ||
        now.getTime() - Date.parse(since) > outOfSyncAfter;
      if (due) outOfSync.push({ a, since, revision: app.status?.sync?.revision });
    }
    const op = app.status?.operationState;
    if (op && syncFailed(app) && Date.parse(op.finishedAt ?? op.startedAt) >= from.getTime()) {
      failed.push({ a, since: op.finishedAt ?? op.startedAt, revision: revisionOf(app) });
    }
  }
  return [
    ...grouped(
      'degraded',
      degraded,
      now,
      (owner, n, since, group) => `${owner}: ${apps(n)} ${downWord(group)} for ${age(since)}`,
    ),
    ...grouped('out-of-sync', outOfSync, now, (owner, n) => `${owner}: ${apps(n)} OutOfSync`),
    ...grouped('sync-failed', failed, now, (owner, n) => `${owner}: sync failed on ${apps(n)}`),
  ];
}

/** One line per active freeze of rollcall's that holds apps of the digest's scope (or per freeze, unscoped). */
function frozenAttention(inputs: DigestInputs, scoped: FleetApp[]): AttentionItem[] {
  const { now } = inputs;
  const out: AttentionItem[] = [];
  const runs = new Map<string, Freeze[]>();
  for (const f of inputs.freezes ?? []) if (freezeActive(f, now)) runs.set(f.runId, [...(runs.get(f.runId) ?? []), f]);
  for (const run of runs.values()) {
    const held = scoped
      .filter((a) => run.some((f) => freezeHolding([f], a.instance, a.app, now)))
      .map((a) => a.app.metadata.name)
      .sort(byName);
    if (inputs.selector?.trim() && !held.length) continue;
    const f = run[0];
    out.push({
      kind: 'frozen',
      severity: 'info',
      title: `${f.target} frozen by ${f.by} for ${formatDuration(now.getTime() - Date.parse(f.at))}${f.incident ? ` (${f.incident})` : ''}${f.until ? `, until ${absoluteTime(f.until)}` : ''}: ${apps(held.length)} held`,
      instance: f.instance,
      apps: held,
      count: held.length,
      since: f.at,
    });
  }
  return out;
}

const ALWAYS_JUDGED = ['stuck-step', 'key-backup-stale', 'instance-unreachable'] as const;

/** The alert settings with the rules a digest always reports switched on, their thresholds kept. */
function digestRules(alerts: AlertsConfig): AlertsConfig {
  const rules = { ...alerts.rules };
  for (const id of ALWAYS_JUDGED) rules[id] = { ...rules[id], enabled: true };
  return { ...alerts, rules };
}

/** Stale key backups and unreachable instances, from the conditions key-backup-stale and instance-unreachable found. */
function sourceAttention(inputs: DigestInputs, conditions: AlertCondition[]): AttentionItem[] {
  const { fleet, now } = inputs;
  const age = (since: string) => formatDuration(now.getTime() - Date.parse(since));
  const out: AttentionItem[] = [];
  const backups = new Map((inputs.keyBackups ?? []).map((b) => [b.cluster, b]));
  for (const c of conditions.filter((x) => x.rule === 'key-backup-stale')) {
    const last = backups.get(c.instance)?.lastBackupAt;
    out.push({
      kind: 'key-backup-stale',
      severity: 'warning',
      title: last
        ? `Sealed-secrets keys of ${c.instance} last backed up ${age(last)} ago`
        : `No sealed-secrets key backup of ${c.instance} recorded`,
      instance: c.instance,
      apps: [],
      count: 1,
      since: c.since,
    });
  }
  const errors = new Map(fleet.health().map((h) => [h.instance, h.error]));
  for (const c of conditions.filter((x) => x.rule === 'instance-unreachable')) {
    const error = errors.get(c.instance);
    out.push({
      kind: 'instance-unreachable',
      severity: 'critical',
      title: `Argo CD instance ${c.instance} unreachable${error ? `: ${error}` : ''}`,
      instance: c.instance,
      apps: [],
      count: 1,
      since: c.since,
    });
  }
  return out;
}

/** The digest for the apps `selector` picks (all of them without one). */
export function buildDigest(inputs: DigestInputs): Digest {
  const { fleet, now } = inputs;
  const from = inputs.from ?? new Date(now.getTime() - 86_400_000);
  const age = (since: string) => formatDuration(now.getTime() - Date.parse(since));
  const reqs = inputs.selector?.trim() ? parseLabelSelector(inputs.selector) : [];
  const inScope = reqs.length ? (a: FleetApp) => matchesLabels(a.app.metadata.labels, reqs) : () => true;
  const scoped = fleet.apps().filter(inScope);
  const scopedKeys = new Set(scoped.map(appKey));
  const scopedAppSets = new Set(scoped.filter((a) => a.appSet).map((a) => `${a.instance}/${a.appSet}`));
  const appSetInScope = (instance: string, name: string) => !reqs.length || scopedAppSets.has(`${instance}/${name}`);
  const attention: AttentionItem[] = [];

  // Stuck rollouts, stale key backups and unreachable instances as their rules see them, whether or not
  // the rules are switched on for alerts (a digest reports them either way).
  const rules = evaluateAlertRules({
    fleet,
    now,
    config: digestRules(inputs.alerts),
    keyBackups: inputs.keyBackups,
    freezes: inputs.freezes,
  });
  const inStuckRollout = new Set<string>();
  for (const c of rules.conditions) {
    if (c.rule !== 'stuck-step' || !c.appSet || !appSetInScope(c.instance, c.appSet)) continue;
    for (const name of c.apps) inStuckRollout.add(`${c.instance}/${name}`);
    attention.push({
      kind: 'stuck-rollout',
      severity: 'critical',
      title: `${c.appSet} step ${c.step} stuck for ${age(c.since)}: ${apps(c.apps.length)} Pending/Progressing`,
      instance: c.instance,
      appSet: c.appSet,
      apps: c.apps,
      count: c.apps.length,
      since: c.since,
    });
  }
  for (const s of fleet.appSets()) {
    const paused = pausedBy(s.appSet);
    if (!paused || !appSetInScope(s.instance, s.appSet.metadata.name)) continue;
    const waiting = (s.appSet.status?.applicationStatus ?? [])
      .filter((e) => e.status !== 'Healthy')
      .map((e) => e.application)
      .sort(byName);
    const since = paused.at ?? now.toISOString();
    attention.push({
      kind: 'paused-rollout',
      severity: 'info',
      title: `${s.appSet.metadata.name} paused by ${paused.by} for ${age(since)}${waiting.length ? `: ${apps(waiting.length)} wait` : ''}`,
      instance: s.instance,
      appSet: s.appSet.metadata.name,
      apps: waiting,
      count: waiting.length,
      since,
    });
  }

  attention.push(...frozenAttention(inputs, scoped));
  attention.push(...appAttention(inputs, scoped, inStuckRollout, from));
  attention.push(...sourceAttention(inputs, rules.conditions));
  attention.sort(
    (a, b) =>
      ATTENTION_KINDS.indexOf(a.kind) - ATTENTION_KINDS.indexOf(b.kind) ||
      b.count - a.count ||
      byName(a.title, b.title),
  );

  const incidents = inputs.incidents ? incidentsOf(inputs.incidents, scopedKeys, reqs.length > 0, from, now) : null;
  return {
    name: inputs.name ?? null,
    at: now.toISOString(),
    selector: inputs.selector ?? null,
    // An open incident is attention by itself, even when every app already looks fine.
    allClear: attention.length === 0 && !incidents?.open.length,
    attention,
    activity: activity(fleet, scopedKeys, appSetInScope, from, now, inputs.runs),
    totals: totals(fleet, scoped, appSetInScope, inputs.activeAlerts ?? 0, inputs.previous),
    incidents,
  };
}

/** A digest with a selector speaks of the incidents touching its apps, and of those about the whole fleet. */
function incidentsOf(
  list: DigestIncident[],
  scoped: Set<string>,
  selective: boolean,
  from: Date,
  now: Date,
): DigestIncidents {
  const inPeriod = (t: string | undefined) => !!t && Date.parse(t) >= from.getTime() && Date.parse(t) <= now.getTime();
  const relevant = [...new Map(list.map((i) => [i.id, i])).values()].filter(
    (i) => !selective || !i.apps.length || i.apps.some((k) => scoped.has(k)),
  );
  return {
    open: relevant
      .filter((i) => i.state !== 'closed')
      .sort((a, b) => Date.parse(a.declaredAt) - Date.parse(b.declaredAt)),
    opened: relevant
      .filter((i) => inPeriod(i.declaredAt))
      .sort((a, b) => Date.parse(a.declaredAt) - Date.parse(b.declaredAt)),
    closed: relevant
      .filter((i) => i.state === 'closed' && inPeriod(i.closedAt))
      .sort((a, b) => Date.parse(b.closedAt!) - Date.parse(a.closedAt!)),
  };
}

function activity(
  fleet: FleetView,
  scoped: Set<string>,
  appSetInScope: (i: string, n: string) => boolean,
  from: Date,
  now: Date,
  runs: DigestRun[] | undefined,
): DigestActivity {
  const inPeriod = (t: string | undefined) => !!t && Date.parse(t) >= from.getTime() && Date.parse(t) <= now.getTime();
  let succeeded = 0;
  let failed = 0;
  for (const a of fleet.apps()) {
    if (!scoped.has(appKey(a))) continue;
    // History holds the successful syncs; the current operation may be a failure that never reaches it.
    for (const h of a.app.status?.history ?? []) if (inPeriod(h.deployedAt)) succeeded++;
    const op = a.app.status?.operationState;
    if (op && (op.phase === 'Failed' || op.phase === 'Error') && inPeriod(op.finishedAt)) failed++;
  }
  const rolloutsCompleted: DigestActivity['rolloutsCompleted'] = [];
  for (const s of fleet.appSets()) {
    if (!isRollingSync(s.appSet) || !rolloutComplete(s.appSet) || !appSetInScope(s.instance, s.appSet.metadata.name))
      continue;
    const at = s.appSet.status?.conditions?.find((c) => c.type === 'RolloutProgressing')?.lastTransitionTime;
    if (at && inPeriod(at)) rolloutsCompleted.push({ instance: s.instance, appSet: s.appSet.metadata.name, at });
  }
  let runbookRuns: DigestActivity['runbookRuns'] = null;
  if (runs) {
    const list = runs.filter((r) => inPeriod(r.createdAt));
    const byStatus: Record<string, number> = {};
    for (const r of list) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
    runbookRuns = { total: list.length, byStatus, runs: list.slice(0, 20) };
  }
  return {
    from: from.toISOString(),
    to: now.toISOString(),
    syncs: { succeeded, failed },
    rolloutsCompleted,
    runbookRuns,
  };
}

function totals(
  fleet: FleetView,
  scoped: FleetApp[],
  appSetInScope: (i: string, n: string) => boolean,
  activeAlerts: number,
  previous: DigestInputs['previous'],
): DigestTotals {
  const t: Record<TotalKey, number> = {
    instances: fleet.instances().length,
    appSets: fleet.appSets().filter((s) => appSetInScope(s.instance, s.appSet.metadata.name)).length,
    apps: scoped.length,
    synced: 0,
    outOfSync: 0,
    healthy: 0,
    progressing: 0,
    degraded: 0,
    missing: 0,
    suspended: 0,
    unknown: 0,
    activeAlerts,
  };
  for (const a of scoped) {
    const sync = a.app.status?.sync?.status;
    if (sync === 'Synced') t.synced++;
    else if (sync === 'OutOfSync') t.outOfSync++;
    switch (a.app.status?.health?.status) {
      case 'Healthy':
        t.healthy++;
        break;
      case 'Progressing':
        t.progressing++;
        break;
      case 'Degraded':
        t.degraded++;
        break;
      case 'Missing':
        t.missing++;
        break;
      case 'Suspended':
        t.suspended++;
        break;
      default:
        t.unknown++;
    }
  }
  let change: DigestTotals['change'] = null;
  if (previous) {
    change = {};
    for (const k of TOTAL_KEYS) if (typeof previous.totals[k] === 'number') change[k] = t[k] - previous.totals[k];
  }
  return { ...t, change, previousAt: previous?.at ?? null };
}

/** Previous totals of a digest over the whole fleet, kept under this name whatever the digest is called. */
export const FLEET_DIGEST = '(fleet)';

/** Where a digest's facts come from; each Redis-backed source is absent in a process without Redis. */
export interface DigestSources {
  fleet: FleetView;
  config: { alerts: AlertsConfig };
  records?: Pick<FleetRecords, 'keyBackups' | 'recentRuns' | 'previousDigest' | 'recordDigest'>;
  alerts?: Pick<AlertStore, 'all'>;
  incidents?: Pick<IncidentService, 'open' | 'recent' | 'closedSince' | 'analyse'>;
  freezes?: Pick<FreezeStore, 'list'>;
}

/**
 * Builds a digest from the mirror plus what Redis remembers (when this process has it): key backups,
 * runbook runs, active alerts and the previous digest's totals, whose time starts the period.
 */
export async function composeDigest(
  sources: DigestSources,
  digest: Pick<DigestConfig, 'name' | 'selector'> | undefined,
  now: Date,
): Promise<Digest> {
  const records = sources.records;
  const historyName = digest?.name ?? FLEET_DIGEST;
  const [keyBackups, runs, previous, stored, freezes] = await Promise.all([
    records?.keyBackups().catch(() => undefined),
    records?.recentRuns().catch(() => undefined),
    records?.previousDigest(historyName).catch(() => undefined),
    sources.alerts?.all().catch(() => undefined),
    sources.freezes?.list().catch(() => undefined),
  ]);
  const incidents = await digestIncidents(
    sources,
    previous ? new Date(previous.at) : new Date(now.getTime() - 86_400_000),
  ).catch(() => undefined);
  return buildDigest({
    fleet: sources.fleet,
    now,
    alerts: sources.config.alerts,
    name: digest?.name,
    selector: digest?.selector,
    from: previous ? new Date(previous.at) : undefined,
    keyBackups,
    runs,
    activeAlerts: stored?.filter(isActive).length ?? 0,
    previous,
    incidents,
    freezes,
  });
}

/** Keeps a posted digest's totals as the previous ones of its name, and of the whole fleet when it has no selector. */
export async function recordPostedDigest(
  sources: DigestSources,
  digest: Pick<DigestConfig, 'name' | 'selector'>,
  d: Digest,
): Promise<void> {
  const totals = Object.fromEntries(Object.entries(d.totals).filter(([, v]) => typeof v === 'number')) as Record<
    string,
    number
  >;
  await sources.records?.recordDigest(digest.name, d.at, totals);
  if (!digest.selector) await sources.records?.recordDigest(FLEET_DIGEST, d.at, totals);
}

/** How many recent incidents a digest also looks through for those closed in its period. */
const INCIDENTS_READ = 100;

/** Open incidents, and recent ones closed since `from` with their TTR from the incident metrics. */
async function digestIncidents(sources: DigestSources, from: Date): Promise<DigestIncident[] | undefined> {
  const svc = sources.incidents;
  if (!svc) return undefined;
  const [open, recent, closedIndexed] = await Promise.all([
    svc.open(),
    svc.recent(INCIDENTS_READ),
    svc.closedSince(from.getTime()),
  ]);
  // Those closed in the period by the closing index, and among recent ones (closed before the index was kept).
  const closedById = new Map(
    [
      ...closedIndexed,
      ...recent.filter((i) => i.state === 'closed' && i.closedAt && Date.parse(i.closedAt) >= from.getTime()),
    ].map((i) => [i.id, i]),
  );
  const closed = [...closedById.values()].sort((a, b) => b.n - a.n);
  const ttr = new Map(await Promise.all(closed.map(async (i) => [i.id, (await svc.analyse(i)).metrics.ttr] as const)));
  return [...open, ...closed].map((i) => ({
    id: i.id,
    title: i.title,
    severity: i.severity,
    state: i.state,
    declaredAt: i.declaredAt,
    ...(i.closedAt ? { closedAt: i.closedAt } : {}),
    ...(ttr.has(i.id) ? { ttr: ttr.get(i.id) } : {}),
    apps: i.scopeApps,
  }));
}
