import picomatch from 'picomatch';
import type { Application } from '../infra/argocd/types.js';
import { errorReply, type ReplyBlock } from '../core/reply.js';
import type { ReplyOf } from './replies.js';
import { code, formatCount, when } from '../core/format.js';
import { mapConcurrent } from '../core/concurrency.js';
import type { FleetApp } from '../fleet/model.js';
import { healthOf, syncOf } from '../fleet/status.js';
import { findApp } from './app.js';
import { CommandError, SELECTOR_OPTIONS, checkOptions, commandText } from './parse.js';
import type { CommandContext, CommandSpec, ParsedCommand } from './registry.js';
import { assertSelects } from './runbooks.js';
import type { RefreshType, Refreshed } from './reply-data.js';
export type { RefreshType, Refreshed } from './reply-data.js';

const USAGE = 'refresh <app|glob ...> [hard] [-l selector] [cluster=X] [project=X] [appset=X] [instance=X]';

/**
 * Refreshes at once against one Argo CD instance's repo-server and controller: a hard refresh makes the
 * repo-server render every app's manifests again without its cache, so a selection is worked through a
 * few at a time, each one also taking its turn under the instance's rateLimit.
 */
const CONCURRENCY = 4;

/**
 * `argocd app get --refresh | --hard-refresh`. In Argo CD a refresh is a Get with `refresh=normal|hard`
 * needing only `get`: it annotates the app and waits for the controller to compare again, changing
 * neither desired nor live state, and there is no operation to follow, lock or resume. So it is a
 * direct command, not a runbook; but it loads Argo CD (a hard one skips the repo-server's manifest
 * cache), so rollcall lets only operators ask, records each one, and asks for the count to be
 * confirmed before refreshing a selection.
 */
async function refreshOne(ctx: CommandContext, fa: FleetApp, type: RefreshType): Promise<Refreshed> {
  const name = fa.app.metadata.name;
  const base = {
    app: name,
    instance: fa.instance,
    cluster: fa.cluster,
    reconciledBefore: fa.app.status?.reconciledAt ?? null,
  };
  const api = ctx.services.argocd.get(fa.instance);
  let result: Refreshed;
  if (!api)
    result = {
      ...base,
      ok: false,
      reconciledAt: null,
      sync: syncOf(fa.app),
      health: healthOf(fa.app),
      error: `no Argo CD client for instance ${fa.instance}`,
    };
  else {
    // Paced like syncs: a selection of hard refreshes is repo-server load on one instance. The pace is kept in
    // Redis: without it the refresh is not sent, and the answer says Redis is down (not that Argo CD failed).
    await ctx.services.runs?.limiter.acquire(fa.instance);
    try {
      const app: Application = await api.getApplication(
        { name, appNamespace: fa.app.metadata.namespace, project: fa.app.spec.project },
        { refresh: type },
      );
      result = {
        ...base,
        ok: true,
        reconciledAt: app.status?.reconciledAt ?? null,
        sync: syncOf(app),
        health: healthOf(app),
      };
    } catch (error) {
      result = {
        ...base,
        ok: false,
        reconciledAt: null,
        sync: syncOf(fa.app),
        health: healthOf(fa.app),
        error: (error as Error).message,
      };
    }
  }
  try {
    await ctx.services.audit!.record({
      kind: 'argocd.refresh',
      who: ctx.user,
      target: `${fa.instance}/${name}`,
      params: { refresh: type },
      result: result.ok ? 'ok' : 'error',
      ...(result.error ? { message: result.error } : {}),
    });
  } catch (error) {
    // The refresh happened either way: the answer says it went unrecorded rather than failing.
    result.unrecorded = (error as Error).message;
  }
  return result;
}

function refreshAll(ctx: CommandContext, apps: FleetApp[], type: RefreshType): Promise<Refreshed[]> {
  return mapConcurrent(apps, CONCURRENCY, (fa) => refreshOne(ctx, fa, type));
}

function resultReply(results: Refreshed[], type: RefreshType, target: string): ReplyOf<'refresh'> {
  const failed = results.filter((r) => !r.ok);
  const label = type === 'hard' ? 'Hard refresh' : 'Refresh';
  const blocks: ReplyBlock[] = [{ kind: 'header', text: `${label}: ${target}` }];
  if (results.length === 1 && results[0].ok) {
    const r = results[0];
    blocks.push({
      kind: 'fields',
      fields: [
        {
          label: 'Compared',
          value: `${when(r.reconciledAt)}${r.reconciledBefore ? ` (before: ${when(r.reconciledBefore)})` : ''}`,
        },
        { label: 'Sync', value: r.sync },
        { label: 'Health', value: r.health },
        { label: 'Where', value: `${r.cluster} · ${r.instance}` },
      ],
    });
  } else {
    blocks.push({
      kind: 'text',
      text: `${formatCount(results.length - failed.length)} of ${formatCount(results.length)} app(s) compared again${type === 'hard' ? ' with manifests rendered afresh (no repo-server cache)' : ''}.`,
      tone: failed.length ? 'warn' : 'ok',
    });
    const outOfSync = results.filter((r) => r.ok && r.sync !== 'Synced');
    if (outOfSync.length)
      blocks.push({
        kind: 'list',
        title: 'Not Synced after the refresh',
        items: outOfSync
          .slice(0, 20)
          .map((r) => ({ text: `${r.app} (${r.cluster})`, detail: `${r.sync}/${r.health}`, tone: 'warn' as const })),
        total: outOfSync.length,
      });
  }
  if (failed.length)
    blocks.push({
      kind: 'list',
      title: 'Refresh failed',
      items: failed
        .slice(0, 20)
        .map((r) => ({ text: `${r.app} (${r.cluster})`, detail: r.error, tone: 'error' as const })),
      total: failed.length,
    });
  const unrecorded = results.find((r) => r.unrecorded)?.unrecorded;
  blocks.push({
    kind: 'context',
    text: unrecorded
      ? `:warning: The audit log could not record ${results.filter((r) => r.unrecorded).length} of these refreshes: ${unrecorded}.`
      : 'Recorded in the audit log.',
  });
  return {
    ok: failed.length === 0,
    command: 'refresh',
    title: `${label} of ${results.length === 1 ? results[0].app : `${results.length} apps`}${failed.length ? `: ${failed.length} failed` : ''}`,
    data: { refresh: type, apps: results },
    blocks,
    ...(failed.length
      ? {
          error: {
            code: 'argocd_unavailable',
            message: `${failed.length} refresh(es) failed: ${failed
              .slice(0, 3)
              .map((r) => `${r.app}: ${r.error}`)
              .join('; ')}`,
          },
        }
      : {}),
  };
}

/** `refresh auth-*` without confirm=N: what would be refreshed, and the button that confirms the count. */
function previewReply(cmd: ParsedCommand, apps: FleetApp[], type: RefreshType, mismatch?: string): ReplyOf<'refresh'> {
  const clusters = new Set(apps.map((a) => a.cluster));
  const confirmText = commandText({ ...cmd, options: { ...cmd.options, confirm: String(apps.length) } });
  const blocks: ReplyBlock[] = [
    { kind: 'header', text: `${type === 'hard' ? 'Hard refresh' : 'Refresh'} — preview` },
    {
      kind: 'text',
      text: `${mismatch ? `${mismatch} ` : ''}${type === 'hard' ? 'Hard-refresh' : 'Refresh'} ${formatCount(apps.length)} app(s) on ${clusters.size} cluster(s): Argo CD compares each with git again${type === 'hard' ? ', rendering its manifests without the repo-server cache (load on the repo-server)' : ''}. Nothing is synced.`,
      tone: 'info',
    },
    {
      kind: 'list',
      title: 'Apps',
      items: apps.slice(0, 20).map((a) => ({ text: a.app.metadata.name, detail: `${a.cluster} · ${a.instance}` })),
      total: apps.length,
    },
    { kind: 'context', text: `To go ahead: ${code(confirmText)} (the count confirms what you saw).` },
    {
      kind: 'actions',
      buttons: [
        { label: `Refresh ${apps.length} app${apps.length === 1 ? '' : 's'}`, command: confirmText, style: 'primary' },
      ],
    },
  ];
  return {
    ok: true,
    command: 'refresh',
    title: `Refresh ${apps.length} apps: preview`,
    data: {
      preview: true,
      refresh: type,
      count: apps.length,
      apps: apps.map((a) => ({ app: a.app.metadata.name, instance: a.instance, cluster: a.cluster })),
    },
    blocks,
  };
}

export const refreshCommand: CommandSpec<'refresh'> = {
  name: 'refresh',
  summary: 'Make Argo CD compare apps with git again (argocd app get --refresh / --hard-refresh); audited',
  usage: USAGE,
  // Not for runs: the audit log the engine's connection writes to.
  usesRuns: true,
  help: [
    'Examples:',
    '`refresh checkout-prod-eu` — at once',
    '`refresh checkout-prod-eu hard` — also re-render its manifests without the repo-server cache',
    '`refresh auth-* hard` — a selection shows the count first; confirm with the button (or `confirm=N`)',
    'A refresh syncs nothing. Each one is recorded in the audit log.',
  ].join('\n'),
  readOnly: false,
  async run(cmd, ctx) {
    checkOptions(cmd, [...SELECTOR_OPTIONS, 'confirm'], USAGE);
    const words = [...cmd.positional];
    let type: RefreshType = 'normal';
    if (words.length && /^(hard|normal)$/i.test(words[words.length - 1]))
      type = words.pop()!.toLowerCase() as RefreshType;
    const narrowed = SELECTOR_OPTIONS.some((k) => k !== 'instance' && cmd.options[k] !== undefined);
    if (!words.length && !narrowed)
      throw new CommandError('usage', `Refresh which apps? Usage: ${USAGE}, e.g. \`refresh checkout-prod-eu hard\`.`);
    if (!ctx.services.audit)
      return errorReply(
        'refresh',
        'runs_unavailable',
        'A refresh is recorded in the audit log, in Redis, and this process has none (set redis.url in rollcall.yaml or REDIS_URL).',
      );
    const fleet = ctx.services.fleet;
    const sel: ParsedCommand = { ...cmd, positional: words };
    // The command again, as typed (with `hard`), for the confirm button.
    const again: ParsedCommand = { ...cmd, positional: type === 'hard' ? [...words, 'hard'] : words };
    // One app named exactly: at once, as `argocd app get APP --refresh` is.
    if (words.length === 1 && !narrowed && !picomatch.scan(words[0]).isGlob) {
      if (cmd.options.confirm !== undefined)
        throw new CommandError('usage', '`confirm=` is for refreshing a selection; one app is refreshed at once.');
      const fa = findApp(
        fleet,
        words[0],
        cmd.options.instance,
        (i) => `refresh ${words[0]}${type === 'hard' ? ' hard' : ''} instance=${i}`,
      );
      return resultReply([await refreshOne(ctx, fa, type)], type, fa.app.metadata.name);
    }
    const apps = assertSelects(sel, ctx, 'refresh');
    const confirm = cmd.options.confirm;
    if (confirm !== undefined && !/^\d+$/.test(confirm))
      throw new CommandError('usage', `confirm= is the app count the preview showed; got \`${confirm}\`.`);
    if (!ctx.assumeYes && Number(confirm) !== apps.length) {
      const { confirm: _confirm, ...options } = again.options;
      const mismatch =
        confirm !== undefined
          ? `The selection is ${apps.length} app(s) now, not ${confirm}: nothing was refreshed.`
          : undefined;
      return previewReply({ ...again, options }, apps, type, mismatch);
    }
    return resultReply(
      await refreshAll(ctx, apps, type),
      type,
      commandText({ ...sel, command: 'refresh' }).replace(/^refresh /, ''),
    );
  },
};
