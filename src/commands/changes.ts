import { parseDuration } from '../infra/config/schema.js';
import type { FleetView } from '../fleet/model.js';
import { isGlob, nameMatcher, selectApps, type AppSelector } from '../fleet/select.js';
import type { ChangeRecord } from '../domain/incidents/changes.js';
import type { ChangeLog } from '../domain/incidents/change-log.js';
import {
  changeJson,
  listedKind,
  withoutDeployOperations,
  type ChangeGroup,
  type ChangeJson,
  type ListedChangeKind,
} from '../domain/incidents/groups.js';
import { groupByCause } from '../domain/incidents/cause.js';
import { DEFAULT_STUCK_AFTER_MS } from '../fleet/diagnose.js';
import { appKey, changesOfApps } from '../domain/incidents/timeline.js';
import { clockTime, displayZone, formatDuration, plural } from '../core/format.js';
import { CommandError, checkOptions, selectorFromCommand, SELECTOR_OPTIONS } from './parse.js';
import type { CommandContext, CommandSpec, ParsedCommand } from './registry.js';
import type { ReplyBlock, ReplyItem, Tone } from '../core/reply.js';
import type { ReplyOf } from './replies.js';
import { STATUS_TONE, type RunStatus } from '../domain/runbooks/index.js';

const USAGE =
  'changes [since=1h] [kind=deploy|sync|operation|rollout|created|deleted|run|health] [APP|GLOB ...] [-l selector] [cluster=X] [appset=X] [instance=X]';
const KINDS: ListedChangeKind[] = ['deploy', 'sync', 'operation', 'rollout', 'created', 'deleted', 'run', 'health'];

/** The tone of a state a change reached: an operation's phase, a health, sync or RollingSync status. */
const STATE_TONE: Record<string, Tone> = {
  Running: 'progress',
  Terminating: 'progress',
  Succeeded: 'ok',
  Healthy: 'ok',
  Synced: 'ok',
  Progressing: 'progress',
  Pending: 'progress',
  Waiting: 'progress',
  OutOfSync: 'warn',
  Suspended: 'warn',
  Unknown: 'unknown',
};

/** A line's icon follows how its changes ended: a run as its run does, a failed sync or a Degraded app as bad. */
function groupTone(g: ChangeGroup): Tone {
  if (g.kind === 'run')
    return g.outcome && Object.hasOwn(STATUS_TONE, g.outcome) ? STATUS_TONE[g.outcome as RunStatus] : 'progress';
  if (g.bad) return 'error';
  if (g.kind === 'deleted') return 'warn';
  if (g.kind === 'deploy' || g.kind === 'created') return 'info';
  return (g.outcome && STATE_TONE[g.outcome]) || 'unknown';
}

/** The change log of this process, or an answer saying why there is none. */
export function requireChangeLog(ctx: CommandContext, command: string): ChangeLog {
  if (!ctx.services.changes) {
    throw new CommandError(
      'redis_unavailable',
      `\`${command}\` reads the change log in Redis, and this process has no Redis connection: set redis.url (or REDIS_URL) and run it through \`rollcall ask\` or \`rollcall start\`.`,
    );
  }
  return ctx.services.changes;
}

/** `since=` as a duration (`90m`, `2h`, `1d`), bounded by what the log keeps. */
export function parseSince(text: string | undefined, fallbackMs: number, retentionMs: number): number {
  if (text === undefined) return fallbackMs;
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0)
    throw new CommandError('usage', `since= takes a duration such as 30m, 1h or 2d (got "${text}").`);
  if (ms > retentionMs)
    throw new CommandError(
      'usage',
      `since=${text} reaches past the change log's retention (${formatDuration(retentionMs)}): use at most since=${formatDuration(retentionMs).replace(/\s/g, '')}.`,
    );
  return ms;
}

/**
 * The apps a scoped `changes` is about: those the selector picks in the fleet, and those that were deleted
 * in the window and whose names it names. "What happened to X?" is asked of apps that are gone, too.
 */
function scopeKeys(fleet: FleetView, selector: AppSelector, records: ChangeRecord[]): Set<string> {
  const patterns = selector.patterns ?? [];
  const byLabelsOrProject = !!selector.labels?.trim() || !!selector.project;
  const gone = byLabelsOrProject || !patterns.length ? [] : records.filter((r) => r.kind === 'deleted' && r.app);
  const names = patterns.map(nameMatcher);
  const goneMatches = gone.filter(
    (r) =>
      names.some((m) => m(r.app!)) &&
      (!selector.instance || r.instance === selector.instance) &&
      (!selector.cluster || r.cluster === selector.cluster) &&
      (!selector.appSet || r.appSet === selector.appSet),
  );
  // A name only a deleted app had is not a typo: the fleet is asked about the other patterns only.
  const goneOnly = new Set(
    patterns.filter((p) => !isGlob(p) && !fleet.appsNamed(p).length && goneMatches.some((r) => r.app === p)),
  );
  const livePatterns = patterns.filter((p) => !goneOnly.has(p));
  const live =
    patterns.length && !livePatterns.length
      ? []
      : selectApps(fleet, { ...selector, ...(patterns.length ? { patterns: livePatterns } : {}) });
  const keys = new Set(live.map((a) => appKey(a.instance, a.app.metadata.name)));
  for (const r of goneMatches) keys.add(appKey(r.instance, r.app!));
  return keys;
}

/** How the list is ordered, as `groupByCause` ranked it. */
function orderText(groups: ChangeGroup[]): string {
  const causes = groups.filter((g) => g.troubleAfter).length;
  if (!causes) return 'newest first';
  const trouble = groups.some((g) => g.bad && !g.troubleAfter) ? ', then that trouble' : '';
  return `first the ${causes === 1 ? 'change' : `${causes} changes`} after which apps went unhealthy${trouble}, then the rest newest first`;
}

export async function runChanges(cmd: ParsedCommand, ctx: CommandContext): Promise<ReplyOf<'changes'>> {
  checkOptions(cmd, ['since', 'kind', ...SELECTOR_OPTIONS], USAGE);
  const log = requireChangeLog(ctx, 'changes');
  const sinceMs = parseSince(cmd.options.since, 3_600_000, log.retentionMs);
  const kinds = cmd.options.kind?.split(',').map((k) => k.trim());
  const unknownKind = kinds?.find((k) => !KINDS.includes(k as ListedChangeKind));
  if (unknownKind !== undefined)
    throw new CommandError('usage', `kind= is one of ${KINDS.join(', ')} (got "${unknownKind}").`);

  const fleet = ctx.services.fleet;
  const now = (ctx.services.now ?? (() => new Date()))();
  let records = (await log.read(now.getTime() - sinceMs, now.getTime())).filter((r) => listedKind(r));
  const selector = selectorFromCommand(cmd);
  const scoped = Object.keys(selector).length > 0;
  if (scoped) records = changesOfApps(records, scopeKeys(fleet, selector, records));
  const unique = new Map(records.map((r) => [r.id, r]));
  const newestFirst = withoutDeployOperations([...unique.values()]).sort((a, b) => Date.parse(b.at) - Date.parse(a.at));
  const all = newestFirst
    .map((r) => ({ json: changeJson(r, fleet), runId: r.runId }))
    .filter((p): p is { json: ChangeJson; runId: string | undefined } => !!p.json);
  const pairs = kinds ? all.filter((p) => kinds.includes(p.json.kind)) : all;
  const changes = pairs.map((p) => p.json);
  // `kind=deploy` still ranks by the health changes it does not list.
  const groups = groupByCause(
    changes,
    new Map(pairs.map((p) => [p.json, p.runId])),
    all.map((p) => p.json),
    { nowMs: now.getTime(), stuckAfterMs: ctx.services.config?.diagnose?.stuckAfter ?? DEFAULT_STUCK_AFTER_MS },
  );

  const window = formatDuration(sinceMs);
  const title = `Changes in the last ${window}`;
  const blocks: ReplyBlock[] = [{ kind: 'header', text: title }];
  if (!groups.length) {
    blocks.push({
      kind: 'text',
      text: `No ${kinds ? kinds.join('/') + ' ' : ''}change${scoped ? ' to the selected apps' : ' in the fleet'} in the last ${window}.`,
      tone: 'ok',
    });
  } else {
    const items: ReplyItem[] = groups.map((g) => ({
      text: `\`${clockTime(new Date(g.to), { seconds: false })}\` ${g.text}`,
      tone: groupTone(g),
    }));
    blocks.push({ kind: 'list', items });
    blocks.push({
      kind: 'context',
      text: `${plural(changes.length, 'change')} in ${plural(groups.length, 'group')}: ${orderText(groups)}. Times ${displayZone()}.`,
    });
  }
  return {
    ok: true,
    command: 'changes',
    title,
    data: { since: new Date(now.getTime() - sinceMs).toISOString(), changes, groups },
    blocks,
  };
}

export const changesCommand: CommandSpec<'changes'> = {
  name: 'changes',
  aliases: ['changed', 'what-changed'],
  summary:
    'What changed across the fleet, the likely cause of trouble first: deploys, syncs, operations, rollouts, apps created or deleted, rollcall runs and health changes, grouped',
  usage: USAGE,
  help: [
    'Examples:',
    '`changes`',
    '`changes since=3h auth-*`',
    '`changes since=30m kind=deploy cluster=prod-eu-west-1`',
  ].join('\n'),
  readOnly: true,
  usesRedis: true,
  run: runChanges,
};
