import { isArgoError } from '../infra/argocd/errors.js';
import { LiveReadCut, appRef, cutLine, mirrorAge, withinLiveBudget } from './live.js';
export { appRef, argoApiFor, withinLiveBudget } from './live.js';
import type { Application, ApplicationSource } from '../infra/argocd/types.js';
import { rolloutEntry } from '../fleet/groups.js';
import type { FleetApp, FleetView } from '../fleet/model.js';
import {
  TONE_EMOJI,
  appTone,
  code,
  elapsedMs,
  formatDuration,
  healthTone,
  oneLine,
  since,
  syncTone,
  truncate,
} from '../core/format.js';
import { CommandError, checkOptions, checkPositional } from './parse.js';
import { type CommandContext, type ParsedCommand, type CommandSpec } from './registry.js';
import type { ReplyBlock, ReplyButton } from '../core/reply.js';
import type { ReplyOf } from './replies.js';
import { healthOf, syncOf } from '../fleet/status.js';
import { unknownTarget } from './suggest.js';
import type { AppSourceInfo, AppDetail, RolloutRow, UnreadRollout } from './reply-data.js';
import { hasRollouts } from '../fleet/argo-rollouts.js';
import { PHASE_TONE, readRollouts, rolloutLine, rolloutTargets } from './rollout-reads.js';
export type { AppSourceInfo, AppOperationInfo, AppDetail } from './reply-data.js';

const USAGE = 'app NAME [instance=X]';
const HISTORY_SHOWN = 5;

function sourceInfo(s: ApplicationSource): AppSourceInfo {
  // Argo CD treats an empty targetRevision as HEAD.
  return {
    repoURL: s.repoURL,
    path: s.path ?? null,
    chart: s.chart ?? null,
    targetRevision: s.targetRevision || 'HEAD',
  };
}

export function initiator(by: { username?: string; automated?: boolean } | undefined): string {
  if (by?.username) return by.username;
  return by?.automated ? 'automated' : 'unknown';
}

export function appDetail(fleet: FleetView, fa: FleetApp): AppDetail {
  const app: Application = fa.app;
  const st = app.status;
  const op = st?.operationState;
  const sources = app.spec?.sources?.length
    ? app.spec.sources.map(sourceInfo)
    : app.spec?.source
      ? [sourceInfo(app.spec.source)]
      : [];
  const revision = st?.sync?.revision ?? null;
  const revisions = st?.sync?.revisions?.length ? st.sync.revisions : revision ? [revision] : [];
  const startedMs = op?.startedAt ? Date.parse(op.startedAt) : NaN;
  const finishedMs = op?.finishedAt ? Date.parse(op.finishedAt) : NaN;
  return {
    name: app.metadata.name,
    instance: fa.instance,
    cluster: fa.cluster,
    namespace: app.spec?.destination?.namespace ?? null,
    project: app.spec?.project ?? 'default',
    appSet: fa.appSet ?? null,
    sync: syncOf(app),
    health: healthOf(app),
    revision,
    revisions,
    source: sources[0] ?? null,
    sources,
    operationRequested: Boolean(app.operation),
    operation: op
      ? {
          phase: op.phase,
          initiatedBy: initiator(op.operation?.initiatedBy),
          automated: Boolean(op.operation?.initiatedBy?.automated),
          startedAt: op.startedAt ?? null,
          finishedAt: op.finishedAt ?? null,
          durationMs: Number.isNaN(startedMs) || Number.isNaN(finishedMs) ? null : Math.max(0, finishedMs - startedMs),
          message: op.message ?? null,
          retryCount: op.retryCount ?? 0,
        }
      : null,
    failedResources: (op?.syncResult?.resources ?? [])
      .filter((r) => r.status === 'SyncFailed')
      .map((r) => ({
        group: r.group,
        kind: r.kind,
        namespace: r.namespace,
        name: r.name,
        message: r.message ?? null,
        syncPhase: r.syncPhase ?? null,
      })),
    unhealthyResources: (st?.resources ?? [])
      .filter((r) => r.health && r.health.status !== 'Healthy')
      .map((r) => ({
        group: r.group ?? '',
        kind: r.kind,
        namespace: r.namespace ?? '',
        name: r.name,
        health: r.health!.status,
        message: r.health!.message ?? null,
      })),
    // Argo CD keeps history oldest first.
    history: [...(st?.history ?? [])]
      .reverse()
      .slice(0, HISTORY_SHOWN)
      .map((h) => ({
        id: h.id,
        revision: h.revision ?? null,
        revisions: h.revisions ?? [],
        deployedAt: h.deployedAt,
        deployStartedAt: h.deployStartedAt ?? null,
        initiatedBy: h.initiatedBy ? initiator(h.initiatedBy) : null,
      })),
    conditions: (st?.conditions ?? []).map((c) => ({
      type: c.type,
      message: c.message,
      lastTransitionTime: c.lastTransitionTime ?? null,
    })),
    images: st?.summary?.images ?? [],
    url: fleet.appUrl(fa.instance, app.metadata.name, app.metadata.namespace) ?? null,
    live: false,
  };
}

/**
 * The app as a Get returns it. Argo CD 3.x leaves resource health out of List (and so out of the
 * mirror), while Get fills it in (argocd-facts B6): the unhealthy resource's message ("back-off
 * restarting failed container") is what on-call needs. Falls back to the mirror's copy, saying why and how old it is.
 */
export async function liveApp(
  ctx: CommandContext,
  fa: FleetApp,
): Promise<{ app: Application; live: boolean; note?: string }> {
  const api = ctx.services.argocd?.get(fa.instance);
  if (!api) return { app: fa.app, live: false };
  try {
    return { app: await withinLiveBudget(fa.instance, () => api.getApplication(appRef(fa))), live: true };
  } catch (error) {
    // An instance that answers what is not Argo CD's is broken, not slow: the last copy would hide that.
    if (isArgoError(error, 'bad_response')) throw error;
    const now = ctx.services.now?.() ?? new Date();
    const fleet = ctx.services.fleet;
    const message = error instanceof Error ? error.message : String(error);
    return {
      app: fa.app,
      live: false,
      note:
        error instanceof LiveReadCut
          ? `${cutLine(fleet, fa.instance, now)} Shown without resource health.`
          : `Live lookup on ${fa.instance} failed (${message}); showing rollcall's last copy, ${mirrorAge(fleet, fa.instance, now)}, without resource health.`,
    };
  }
}

/** A Warning event of one failing resource, as `app` shows it. */
export interface ResourceWarningEvent {
  kind: string;
  name: string;
  namespace: string;
  reason: string;
  message: string;
  count: number;
  /** lastTimestamp (else eventTime, firstTimestamp). */
  at: string | null;
}

/** How many failing resources' events `app` asks for, and how many events it shows. */
const EVENT_RESOURCES_MAX = 5;
const WARNING_EVENTS_SHOWN = 5;

/**
 * The recent Warning events of the app's failing resources: the Degraded nodes of its live resource
 * tree (a crash-looping Pod's BackOff is on the Pod, not the Deployment Argo CD lists), each asked
 * with ListResourceEvents' resource query. Best effort within what is left of the answer's budget: a failure
 * leaves the reply without events and says so.
 */
async function warningEvents(
  ctx: CommandContext,
  fa: FleetApp,
): Promise<{ events: ResourceWarningEvent[]; note?: string }> {
  const api = ctx.services.argocd?.get(fa.instance);
  if (!api) return { events: [] };
  const ref = appRef(fa);
  try {
    const lookup = async () => {
      const tree = await api.resourceTree(ref);
      const failing = (tree.nodes ?? [])
        .filter((n) => n.uid && (n.health?.status === 'Degraded' || n.health?.status === 'Missing'))
        .slice(0, EVENT_RESOURCES_MAX);
      const lists = await Promise.all(
        failing.map((n) => api.resourceEvents(ref, { uid: n.uid!, name: n.name, namespace: n.namespace })),
      );
      return lists.flatMap((l) => l.items);
    };
    const items = await withinLiveBudget(fa.instance, lookup);
    const events = items
      .filter((e) => e.type === 'Warning')
      .map((e) => ({
        kind: e.involvedObject.kind,
        name: e.involvedObject.name,
        namespace: e.involvedObject.namespace ?? '',
        reason: e.reason ?? '',
        message: e.message ?? '',
        count: e.count ?? 1,
        at: e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? null,
      }))
      .sort((a, b) => (Date.parse(b.at ?? '') || 0) - (Date.parse(a.at ?? '') || 0));
    return { events };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { events: [], note: `Events of the failing resources could not be read from ${fa.instance} (${message}).` };
  }
}

export const shortRev = (r: string) => (/^[0-9a-f]{40}$/.test(r) ? r.slice(0, 7) : r);

function sourceText(s: AppSourceInfo): string {
  const what = s.chart ? `chart ${code(s.chart)}` : s.path ? `path ${code(s.path)}` : 'repo root';
  return `${s.repoURL} · ${what} @ ${code(s.targetRevision)}`;
}

/** The apps named so, optionally on one instance; unknown and ambiguous names become CommandErrors. */
/** The one app a verb such as `app X`, `history X` or `diff X` names: a usage error without one, `findApp`'s answers for the rest. */
export function namedApp(
  cmd: ParsedCommand,
  ctx: CommandContext,
  verb: string,
  usage: string,
  example: string,
): FleetApp {
  const name = cmd.positional[0];
  if (!name) throw new CommandError('usage', `Which app? Usage: ${usage}, e.g. ${example}.`);
  return findApp(ctx.services.fleet, name, cmd.options.instance, (i) => `${verb} ${name} instance=${i}`);
}

export function findApp(
  fleet: FleetView,
  name: string,
  instance: string | undefined,
  retry: (instance: string) => string,
): FleetApp {
  if (instance && !fleet.instances().includes(instance)) throw unknownTarget(fleet, instance, 'instance');
  const all = fleet.appsNamed(name);
  const matches = instance ? all.filter((a) => a.instance === instance) : all;
  if (!matches.length) {
    if (all.length)
      throw new CommandError(
        'unknown_target',
        `No application \`${name}\` on instance \`${instance}\`; it exists on ${all.map((a) => `\`${a.instance}\``).join(', ')}.`,
        all.map((a) => retry(a.instance)),
      );
    const asAppSet = fleet.appSetsNamed(name);
    if (asAppSet.length)
      throw new CommandError(
        'unknown_target',
        `\`${name}\` is an ApplicationSet, not an application: try \`rollout ${name}\` or \`status appset=${name}\`.`,
        [`rollout ${name}`, `status appset=${name}`],
      );
    throw unknownTarget(fleet, name, 'app');
  }
  if (matches.length > 1) {
    throw new CommandError(
      'ambiguous_target',
      `\`${name}\` exists on ${matches.length} instances: ${matches.map((a) => `\`${a.instance}\``).join(', ')}. Add instance=NAME to pick one.`,
      matches.map((a) => retry(a.instance)),
      {
        matches: matches.map((a) => ({
          name,
          instance: a.instance,
          cluster: a.cluster,
          sync: syncOf(a.app),
          health: healthOf(a.app),
          url: fleet.appUrl(a.instance, name, a.app.metadata.namespace) ?? null,
        })),
      },
      [
        {
          kind: 'list',
          items: matches.map((a) => ({
            text: `*${a.instance}* · ${a.cluster} · ${syncOf(a.app)}/${healthOf(a.app)}`,
            tone: appTone(syncOf(a.app), healthOf(a.app)),
            url: fleet.appUrl(a.instance, name, a.app.metadata.namespace),
          })),
        },
        {
          kind: 'actions',
          buttons: matches.slice(0, 5).map((a) => ({ label: `${name} on ${a.instance}`, command: retry(a.instance) })),
        },
      ],
    );
  }
  return matches[0];
}

/** The header and the fields block: sync, health, where it runs, its RollingSync step and its sources. */
function summaryBlocks(fleet: FleetView, d: AppDetail, app: Application, now: Date): ReplyBlock[] {
  const multiInstance = fleet.instances().length > 1;
  const healthAge = since(app.status?.health?.lastTransitionTime, now);
  const fields = [
    {
      label: 'Sync',
      value: `${TONE_EMOJI[syncTone(d.sync)]} ${d.sync}${d.revisions.length ? ` at ${d.revisions.map((r) => code(shortRev(r))).join(', ')}` : ''}`,
    },
    {
      label: 'Health',
      value: `${TONE_EMOJI[healthTone(d.health)]} ${d.health}${healthAge ? ` for ${healthAge}` : ''}`,
    },
    { label: 'Cluster', value: `${d.cluster}${d.namespace ? ` · namespace ${code(d.namespace)}` : ''}` },
    { label: 'Project', value: d.project },
  ];
  if (d.appSet) fields.push({ label: 'ApplicationSet', value: d.appSet });
  // Where RollingSync has this app: the first question when it sits OutOfSync inside a progressive rollout.
  const entry = d.appSet
    ? rolloutEntry(fleet.appSetsNamed(d.appSet).find((x) => x.instance === d.instance)?.appSet, d.name)
    : undefined;
  if (entry) {
    const age = since(entry.lastTransitionTime, now);
    const where = entry.step === '-1' ? 'in no step: RollingSync never syncs it' : `step ${entry.step}`;
    fields.push({
      label: 'RollingSync',
      value: `${where} · ${entry.status}${age ? ` for ${age}` : ''}${entry.message ? ` · ${truncate(oneLine(entry.message), 200)}` : ''}`,
    });
  }
  for (const [i, s] of d.sources.entries())
    fields.push({ label: d.sources.length > 1 ? `Source ${i + 1}` : 'Source', value: sourceText(s) });
  return [
    { kind: 'header', text: `${d.name}${multiInstance ? ` (${d.instance})` : ''}` },
    { kind: 'fields', fields },
  ];
}

/** A requested sync the controller has not taken, and the last operation: phase, who, how long, its message. */
function operationBlocks(d: AppDetail, now: Date): ReplyBlock[] {
  const blocks: ReplyBlock[] = [];
  if (d.operationRequested)
    blocks.push({
      kind: 'text',
      text: `${TONE_EMOJI.progress} A sync was requested and the controller has not picked it up yet.`,
      tone: 'progress',
    });
  const o = d.operation;
  if (!o) {
    blocks.push({ kind: 'context', text: 'No sync operation recorded for this app.' });
    return blocks;
  }
  const opTone =
    o.phase === 'Succeeded' ? 'ok' : o.phase === 'Running' || o.phase === 'Terminating' ? 'progress' : 'error';
  const ran =
    o.durationMs !== null
      ? `took ${formatDuration(o.durationMs)}`
      : o.startedAt
        ? `running for ${formatDuration(elapsedMs(o.startedAt, now) ?? 0)}`
        : '';
  const started = o.startedAt ? `started ${since(o.startedAt, now)} ago` : '';
  const lines = [
    `${TONE_EMOJI[opTone]} *Last operation:* ${o.phase} · by ${o.initiatedBy} · ${[started, ran].filter(Boolean).join(', ')}${o.retryCount ? ` · retried ${o.retryCount}×` : ''}`,
  ];
  if (o.message) lines.push(`> ${truncate(oneLine(o.message), 600)}`);
  blocks.push({ kind: 'text', text: lines.join('\n'), tone: opTone });
  return blocks;
}

/** What is failing now: the last sync's failed resources, unhealthy resources and their warning events. */
function failureBlocks(
  d: AppDetail & { warningEvents: ResourceWarningEvent[] },
  eventsNote: string | undefined,
  now: Date,
): ReplyBlock[] {
  const blocks: ReplyBlock[] = [];
  if (d.failedResources.length) {
    blocks.push({
      kind: 'list',
      title: 'Failed resources in the last sync',
      items: d.failedResources.slice(0, 10).map((r) => ({
        text: `${r.kind}/${r.name}${r.namespace ? ` in ${r.namespace}` : ''}`,
        tone: 'error',
        detail: r.message ? truncate(oneLine(r.message), 300) : undefined,
      })),
      total: d.failedResources.length,
    });
  }
  if (d.unhealthyResources.length) {
    blocks.push({
      kind: 'list',
      title: 'Unhealthy resources',
      items: d.unhealthyResources.slice(0, 10).map((r) => ({
        text: `${r.kind}/${r.name} ${r.health}`,
        tone: healthTone(r.health),
        detail: r.message ? truncate(oneLine(r.message), 300) : undefined,
      })),
      total: d.unhealthyResources.length,
    });
  }
  if (d.warningEvents.length) {
    blocks.push({
      kind: 'list',
      title: 'Recent warning events',
      items: d.warningEvents.slice(0, WARNING_EVENTS_SHOWN).map((e) => {
        const ago = since(e.at ?? undefined, now);
        return {
          text: `${e.kind}/${e.name} · *${e.reason}*${e.count > 1 ? ` ×${e.count}` : ''}${ago ? ` · ${ago} ago` : ''}`,
          tone: 'warn' as const,
          detail: truncate(oneLine(e.message), 300),
        };
      }),
      total: d.warningEvents.length,
    });
  }
  if (eventsNote) blocks.push({ kind: 'context', text: `:warning: ${eventsNote}` });
  return blocks;
}

/** What Argo CD records about the app: its conditions, recent deployments and images. */
function recordBlocks(d: AppDetail, now: Date): ReplyBlock[] {
  const blocks: ReplyBlock[] = [];
  if (d.conditions.length) {
    blocks.push({
      kind: 'list',
      title: 'Conditions',
      items: d.conditions.map((c) => ({
        text: `*${c.type}*`,
        tone: /Warning$/.test(c.type) ? 'warn' : 'error',
        detail: truncate(oneLine(c.message), 300),
      })),
    });
  }
  if (d.history.length) {
    blocks.push({
      kind: 'list',
      title: 'Recent deployments, newest first',
      items: d.history.map((h) => {
        const revs = h.revisions.length ? h.revisions : h.revision ? [h.revision] : [];
        return {
          text: `#${h.id} ${revs.map((r) => code(shortRev(r))).join(', ') || '(no revision)'} · ${since(h.deployedAt, now) ?? '?'} ago${h.initiatedBy ? ` · by ${h.initiatedBy}` : ''}`,
        };
      }),
    });
  }
  if (d.images.length)
    blocks.push({
      kind: 'fields',
      fields: [
        {
          label: 'Images',
          value:
            d.images.slice(0, 10).map(code).join(', ') +
            (d.images.length > 10 ? ` and ${d.images.length - 10} more` : ''),
        },
      ],
    });
  return blocks;
}

function appButtons(fleet: FleetView, d: AppDetail, rollouts: boolean): ReplyButton[] {
  const buttons: ReplyButton[] = [];
  if (d.url) buttons.push({ label: 'Open in Argo CD', url: d.url });
  const instanceSuffix = fleet.appsNamed(d.name).length > 1 ? ` instance=${d.instance}` : '';
  buttons.push({ label: 'Refresh', command: `app ${d.name}${instanceSuffix}` });
  // The argocd CLI's next questions about one app: what changed, what differs, what it logs.
  buttons.push({ label: 'History', command: `history ${d.name}${instanceSuffix}` });
  if (d.sync === 'OutOfSync') buttons.push({ label: 'Diff', command: `diff ${d.name}${instanceSuffix}` });
  if (d.health === 'Degraded' || d.health === 'Progressing')
    buttons.push({ label: 'Logs', command: `logs ${d.name}${instanceSuffix}` });
  // Its Argo Rollouts: what Argo CD offers to run on them now (resume, abort, promote-full...).
  if (rollouts) buttons.push({ label: 'Rollout actions', command: `actions ${d.name}${instanceSuffix}` });
  if (d.appSet) {
    const set = fleet.appSetsNamed(d.appSet);
    buttons.push({
      label: `Show rollout ${d.appSet}`,
      command: `rollout ${d.appSet}${set.length > 1 ? ` instance=${d.instance}` : ''}`,
    });
  }
  return buttons;
}

/** Where the app's Argo Rollouts stand: step, weight, pause, read live; and those that could not be read. */
function rolloutBlocks(rows: RolloutRow[], unread: UnreadRollout[], now: Date): ReplyBlock[] {
  const blocks: ReplyBlock[] = [];
  if (rows.length)
    blocks.push({
      kind: 'list',
      title: 'Argo Rollouts',
      items: rows.map((r) => ({
        text: rolloutLine(r, now),
        tone: PHASE_TONE[r.phase] ?? 'unknown',
        detail: r.images.length ? `revision ${r.revision ?? '?'} · ${r.images.map(code).join(', ')}` : undefined,
      })),
    });
  for (const u of unread)
    blocks.push({
      kind: 'context',
      text: `:warning: Rollout ${u.name} could not be read live from Argo CD: ${u.error}`,
    });
  return blocks;
}

export async function runApp(cmd: ParsedCommand, ctx: CommandContext): Promise<ReplyOf<'app'>> {
  checkOptions(cmd, ['instance'], USAGE);
  checkPositional(cmd, 1, USAGE);
  const fleet = ctx.services.fleet;
  const now = ctx.services.now?.() ?? new Date();
  const found = namedApp(cmd, ctx, 'app', USAGE, '`app payments-prod-us1`');
  const fresh = await liveApp(ctx, found);
  const fa: FleetApp = { ...found, app: fresh.app };
  // Only a live app has resource health to go by; a healthy one has no failing resources to ask about.
  const [warnings, rollouts] = await Promise.all([
    fresh.live && healthOf(fa.app) !== 'Healthy'
      ? warningEvents(ctx, fa)
      : Promise.resolve({ events: [] as ResourceWarningEvent[], note: undefined }),
    readRollouts(ctx, rolloutTargets([fa])),
  ]);
  const d = {
    ...appDetail(fleet, fa),
    live: fresh.live,
    warningEvents: warnings.events,
    rollouts: rollouts.rows,
    unreadRollouts: rollouts.unread,
  };
  const tone = appTone(d.sync, d.health);

  const blocks: ReplyBlock[] = [
    ...summaryBlocks(fleet, d, fa.app, now),
    ...rolloutBlocks(d.rollouts, d.unreadRollouts, now),
    ...operationBlocks(d, now),
    ...failureBlocks(d, warnings.note, now),
    ...recordBlocks(d, now),
  ];
  if (fresh.note) blocks.push({ kind: 'context', text: `:warning: ${fresh.note}` });
  blocks.push({ kind: 'actions', buttons: appButtons(fleet, d, hasRollouts(fa.app)) });

  return {
    ok: true,
    command: 'app',
    title: `${tone === 'ok' ? '' : `${d.sync}/${d.health}: `}${d.name}`,
    data: { app: d },
    blocks,
  };
}

export const appCommand: CommandSpec<'app'> = {
  name: 'app',
  aliases: ['application'],
  summary: 'One app: sync, health, revision and source, last operation, failed resources, history, images',
  usage: USAGE,
  help: [
    'Examples:',
    '`app payments-prod-us1`',
    '`app auth-service instance=argocd-eu` — when the name exists on several Argo CD instances',
  ].join('\n'),
  readOnly: true,
  run: runApp,
};
