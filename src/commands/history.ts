import type { RevisionHistory, RevisionMetadata } from '../infra/argocd/types.js';
import { historyImages } from '../infra/argocd/objects.js';
import { code, formatDuration, oneLine, plural, truncate, when } from '../core/format.js';
import type { ReplyBlock, ReplyButton, ReplyItem } from '../core/reply.js';
import type { ReplyOf } from './replies.js';
import type { ArgoApi } from '../infra/argocd/api.js';
import type { FleetApp } from '../fleet/model.js';
import { LiveReadCut } from './live.js';
import { appRef, namedApp, initiator, liveApp, shortRev, withinLiveBudget } from './app.js';
import { checkOptions, checkPositional } from './parse.js';
import { findCommand, type CommandContext, type CommandSpec, type ParsedCommand } from './registry.js';
import type { HistoryEntry } from './reply-data.js';
export type { HistoryEntry } from './reply-data.js';

const USAGE = 'history APP [instance=X]';
/**
 * Entries read; Argo CD keeps `spec.revisionHistoryLimit` of them (10 by default), so this only bites
 * an app configured to keep many.
 */
const HISTORY_MAX = 50;
/** Revisions whose commit is looked up; older entries show the revision alone. */
const METADATA_LOOKUPS = 10;

function entryOf(h: RevisionHistory): Omit<HistoryEntry, 'author' | 'message' | 'tags'> {
  const started = h.deployStartedAt ? Date.parse(h.deployStartedAt) : NaN;
  const deployed = Date.parse(h.deployedAt);
  return {
    id: h.id,
    revision: h.revision ?? null,
    revisions: h.revisions ?? [],
    deployedAt: h.deployedAt,
    deployStartedAt: h.deployStartedAt ?? null,
    durationMs: Number.isNaN(started) || Number.isNaN(deployed) ? null : Math.max(0, deployed - started),
    initiatedBy: h.initiatedBy ? initiator(h.initiatedBy) : null,
    automated: Boolean(h.initiatedBy?.automated),
    images: historyImages(h),
  };
}

/**
 * Commit metadata of the newest entries' revisions, from the repo server, each read from the source
 * as it was in that deployment (versionId) and, for a multi-source app, from its own source. Best
 * effort: a revision the repo cannot resolve (a force-pushed branch, a Helm chart version) shows
 * without it. Keyed by `id/sourceIndex`.
 */
async function metadataOf(
  api: ArgoApi,
  fa: FleetApp,
  entries: { id: number; revisions: string[] }[],
): Promise<{ byEntry: Map<string, RevisionMetadata>; failed: number; cut: boolean }> {
  const byEntry = new Map<string, RevisionMetadata>();
  const lookups = entries
    .flatMap((e) =>
      e.revisions.map((revision, i) => ({
        key: `${e.id}/${i}`,
        revision,
        versionId: e.id,
        sourceIndex: e.revisions.length > 1 ? i : undefined,
      })),
    )
    .slice(0, METADATA_LOOKUPS);
  let failed = 0;
  let cut = false;
  await withinLiveBudget(fa.instance, () =>
    Promise.all(
      lookups.map(async (l) => {
        try {
          byEntry.set(
            l.key,
            await api.revisionMetadata(appRef(fa), l.revision, { versionId: l.versionId, sourceIndex: l.sourceIndex }),
          );
        } catch {
          failed++;
        }
      }),
    ),
  ).catch((error: unknown) => {
    failed = lookups.length - byEntry.size;
    if (error instanceof LiveReadCut) cut = true;
  });
  return { byEntry, failed, cut };
}

export async function runHistory(cmd: ParsedCommand, ctx: CommandContext): Promise<ReplyOf<'history'>> {
  checkOptions(cmd, ['instance'], USAGE);
  checkPositional(cmd, 1, USAGE);
  const now = ctx.services.now?.() ?? new Date();
  const fleet = ctx.services.fleet;
  const found = namedApp(cmd, ctx, 'history', USAGE, '`history checkout-prod-eu`');
  // The mirror's copy may be a List projection without status.history: read the app itself.
  const fresh = await liveApp(ctx, found);
  const fa = { ...found, app: fresh.app };
  // Argo CD keeps history oldest first; on-call reads it newest first.
  const all = [...(fa.app.status?.history ?? [])].reverse();
  const entries = all.slice(0, HISTORY_MAX).map(entryOf);
  const revisionsOf = (e: { revision: string | null; revisions: string[] }) =>
    e.revisions.length ? e.revisions : e.revision ? [e.revision] : [];
  const api = ctx.services.argocd?.get(fa.instance);
  const meta =
    entries.length && api
      ? await metadataOf(
          api,
          fa,
          entries.map((e) => ({ id: e.id, revisions: revisionsOf(e) })),
        )
      : { byEntry: new Map<string, RevisionMetadata>(), failed: 0, cut: false };
  const history: HistoryEntry[] = entries.map((e) => {
    const m = revisionsOf(e)
      .map((_, i) => meta.byEntry.get(`${e.id}/${i}`))
      .find(Boolean);
    return {
      ...e,
      author: m?.author ?? null,
      message: m?.message ? oneLine(m.message.split('\n')[0]) : null,
      tags: m?.tags ?? [],
    };
  });

  const multiInstance = fleet.instances().length > 1;
  const title = `History of ${fa.app.metadata.name}${multiInstance ? ` (${fa.instance})` : ''}`;
  const blocks: ReplyBlock[] = [{ kind: 'header', text: title }];
  if (!history.length) {
    blocks.push({
      kind: 'text',
      text: `No deployments recorded for \`${fa.app.metadata.name}\`: Argo CD records one per full sync, and this app has none (or \`revisionHistoryLimit\` is 0).`,
      tone: 'info',
    });
  } else {
    const limit = fa.app.spec?.revisionHistoryLimit ?? 10;
    blocks.push({
      kind: 'context',
      text: `${plural(all.length, 'deployment')}, newest first. Argo CD keeps the last ${limit} (\`spec.revisionHistoryLimit\`).`,
    });
    const items: ReplyItem[] = history.map((h) => {
      const revs =
        revisionsOf(h)
          .map((r) => code(shortRev(r)))
          .join(', ') || '(no revision)';
      const took = h.durationMs === null ? '' : ` · took ${formatDuration(h.durationMs)}`;
      const by = h.initiatedBy
        ? ` · by ${h.initiatedBy}${h.automated && h.initiatedBy !== 'automated' ? ' (automated)' : ''}`
        : '';
      const detail: string[] = [];
      // "Name <email>": the name reads better in chat, and `<…>` is markup there.
      const author = h.author?.replace(/\s*<[^>]*>\s*$/, '') || h.author;
      if (h.message || author)
        detail.push(
          [h.message ? truncate(h.message, 200) : null, author ? `— ${author}` : null].filter(Boolean).join(' '),
        );
      if (h.tags.length) detail.push(`tags: ${h.tags.map(code).join(', ')}`);
      if (h.images.length)
        detail.push(
          `images: ${h.images.slice(0, 5).map(code).join(', ')}${h.images.length > 5 ? ` and ${h.images.length - 5} more` : ''}`,
        );
      return {
        text: `*#${h.id}* ${revs} · deployed ${when(h.deployedAt, now)}${took}${by}`,
        ...(detail.length ? { detail: detail.join('\n') } : {}),
      };
    });
    blocks.push({ kind: 'list', title: 'Deployments', items });
    // No selector narrows a history: the list's own "narrow the selector" note would mislead, so the cut is said here.
    if (all.length > history.length)
      blocks.push({
        kind: 'context',
        text: `The newest ${history.length} are listed; the ${plural(all.length - history.length, 'older one')} ${all.length - history.length === 1 ? 'is' : 'are'} in \`argocd app history ${fa.app.metadata.name}\`.`,
      });
    if (history.length > 1 && findCommand('rollback'))
      blocks.push({
        kind: 'context',
        text: `\`rollback ${fa.app.metadata.name} ID\` goes back to one of them, previewed and confirmed.`,
      });
    if (meta.failed)
      blocks.push({
        kind: 'context',
        text: meta.cut
          ? `:warning: Commit details of ${plural(meta.failed, 'revision')} were not read: Argo CD did not answer within this answer's budget.`
          : `:warning: Commit details of ${plural(meta.failed, 'revision')} could not be read from the repo server.`,
      });
  }
  if (fresh.note) blocks.push({ kind: 'context', text: `:warning: ${fresh.note}` });
  const suffix = fleet.appsNamed(fa.app.metadata.name).length > 1 ? ` instance=${fa.instance}` : '';
  const buttons: ReplyButton[] = [
    { label: 'App', command: `app ${fa.app.metadata.name}${suffix}` },
    { label: 'Diff', command: `diff ${fa.app.metadata.name}${suffix}` },
  ];
  blocks.push({ kind: 'actions', buttons });
  return {
    ok: true,
    command: 'history',
    title,
    data: { app: fa.app.metadata.name, instance: fa.instance, live: fresh.live, history },
    blocks,
  };
}

export const historyCommand: CommandSpec<'history'> = {
  name: 'history',
  summary: "An app's deployments, newest first: revision and commit, when, how long, by whom (argocd app history)",
  usage: USAGE,
  help: [
    'Examples:',
    '`history checkout-prod-eu`',
    '`history auth-service-prod-us-east-1 instance=argocd-eu` — when the name exists on several instances',
  ].join('\n'),
  readOnly: true,
  run: runHistory,
};
