import { mention, when } from '../core/format.js';
import { formatSelectorParam, type PauseRecord } from '../domain/runbooks/index.js';
// `pause` and `resume` are shortcuts for the pause-rollout / resume-rollout runbooks and go through the
// `run` command itself (preview, confirm, approvals, live progress).
import { SELECTOR_OPTIONS, selectorFromCommand } from './parse.js';
import type { CommandContext, ParsedCommand, CommandSpec } from './registry.js';
import { assertSelects, startRunbookAs } from './runbooks.js';
import { pointToRolloutResume, rolloutActionUsage, startRolloutAction, wantsRollouts } from './rollout-actions.js';
import { unknownTarget } from './suggest.js';
import { isGlob, selectApps } from '../fleet/select.js';
import { errorReply, type ReplyItem } from '../core/reply.js';

/**
 * Options of `pause` that narrow an app selection (as in `sync`) rather than being runbook params;
 * `instance` is both, and goes to the runbook as its own param.
 */
const SELECTION_OPTIONS: readonly string[] = SELECTOR_OPTIONS.filter((k) => k !== 'instance');

/** `pause progressive-infra` (an ApplicationSet) or `pause auth-* cluster=prod-1` / `pause -l team=auth` (apps). */
function pauseTarget(cmd: ParsedCommand): string {
  const narrowed = SELECTION_OPTIONS.some((k) => cmd.options[k] !== undefined);
  if (cmd.positional.length === 1 && !narrowed) return cmd.positional[0];
  return formatSelectorParam({ ...selectorFromCommand(cmd), instance: undefined });
}

/**
 * A pause target that names nothing is answered before any run exists, with the closest names, as
 * `rollout` and `sync` answer a typo: a bare word is an ApplicationSet first, then apps.
 */
function assertPauseTarget(cmd: ParsedCommand, ctx: CommandContext, target: string): void {
  if (target !== cmd.positional[0]) {
    assertSelects(cmd, ctx, 'pause');
    return;
  }
  const fleet = ctx.services.fleet;
  const instance = cmd.options.instance;
  const here = <T extends { instance: string }>(found: T[]) =>
    found.filter((f) => !instance || f.instance === instance);
  if (here(fleet.appSetsNamed(target)).length) return;
  const apps = isGlob(target)
    ? selectApps(fleet, { patterns: [target], ...(instance ? { instance } : {}) })
    : here(fleet.appsNamed(target));
  if (apps.length) return;
  throw unknownTarget(
    fleet,
    target.replace(/[*?[\]{}]/g, ''),
    'appset',
    `No ApplicationSet or app named \`${target}\`${instance ? ` on ${instance}` : ''}: nothing to pause.`,
  );
}

export const pauseCommand: CommandSpec<'pause'> = {
  name: 'pause',
  summary: 'Pause a rollout (RollingSync appset), an appset, or auto-sync on apps; resume restores exactly',
  usage: `pause <appset | app|glob ...> [-l selector] [cluster=X] [instance=X] [terminate=true] | ${rolloutActionUsage('pause')}`,
  usesRuns: true,
  help:
    'Argo CD has no pause: rollcall holds a RollingSync appset with maxUpdate 0 on the steps not yet done, puts other appsets on ' +
    'create-only with auto-sync off on their apps, and pauses a parent app-of-apps whose auto-sync would revert it from git. ' +
    'Every change is previewed and recorded; `resume <target>` puts back exactly what was there. `paused` lists what is paused. ' +
    'With `kind=rollout` it pauses Argo Rollouts Rollouts instead (Argo CD pause action: `pause storefront-* kind=rollout`), as `promote` and `abort` act on them.',
  readOnly: false,
  async run(cmd, ctx) {
    if (wantsRollouts(cmd, 'pause')) return startRolloutAction('pause', cmd, ctx, 'pause');
    const target = pauseTarget(cmd);
    if (!target)
      return errorReply(
        'pause',
        'usage',
        'Pause what? e.g. `pause progressive-infra` (an ApplicationSet) or `pause auth-* cluster=prod-1` (apps).',
      );
    assertPauseTarget(cmd, ctx, target);
    const params: Record<string, string> = { target };
    for (const [k, v] of Object.entries(cmd.options)) if (!SELECTION_OPTIONS.includes(k)) params[k] = v;
    return startRunbookAs('pause-rollout', params, ctx, 'pause');
  },
};

export const resumeCommand: CommandSpec<'resume'> = {
  name: 'resume',
  summary: 'Resume what `pause` paused: restores the recorded values and removes the annotations',
  usage: `resume <target> [instance=X] | ${rolloutActionUsage('resume')}`,
  usesRuns: true,
  help:
    'The target is what `paused` lists. rollcall refuses, naming the field, when someone changed a paused field since. ' +
    "With `kind=rollout` it resumes Argo Rollouts Rollouts instead (Argo CD's resume action: a paused canary goes on to its next step).",
  readOnly: false,
  async run(cmd, ctx) {
    if (wantsRollouts(cmd, 'resume')) return startRolloutAction('resume', cmd, ctx, 'resume');
    const target = cmd.positional.join(' ');
    if (!target)
      return errorReply('resume', 'usage', 'Resume what? `paused` lists what rollcall paused; then `resume <target>`.');
    await pointToRolloutResume(cmd, ctx, target);
    return startRunbookAs('resume-rollout', { target, ...cmd.options }, ctx, 'resume');
  },
};

function pausedItem(r: PauseRecord): ReplyItem {
  const objects = r.changes.map((c) => `${c.kind === 'ApplicationSet' ? 'appset ' : ''}${c.name}`);
  const shown = objects.slice(0, 5).join(', ') + (objects.length > 5 ? ` and ${objects.length - 5} more` : '');
  return {
    text: `*${r.target}* on ${r.instance}: paused by ${mention(r.by)} ${when(r.at)}`,
    detail: `${r.changes.length} change(s): ${shown} · run ${r.runId} · \`resume ${r.target}\``,
    tone: 'warn',
  };
}

export const pausedCommand: CommandSpec<'paused'> = {
  name: 'paused',
  summary: 'What rollcall has paused, by whom, since when',
  usage: 'paused',
  usesRuns: true,
  readOnly: true,
  async run(_cmd, ctx) {
    const store = ctx.services.pauses;
    if (!store)
      return errorReply(
        'paused',
        'runs_unavailable',
        'Pauses are recorded in Redis, and this process has none (set redis.url in rollcall.yaml or REDIS_URL).',
      );
    const records = await store.list();
    const data = {
      paused: records.map((r) => ({
        target: r.target,
        instance: r.instance,
        by: r.by,
        since: r.at,
        runId: r.runId,
        changes: r.changes.length,
      })),
    };
    if (!records.length)
      return {
        ok: true,
        command: 'paused',
        title: 'Nothing is paused',
        data,
        blocks: [{ kind: 'text', text: 'Nothing is paused by rollcall.', tone: 'ok' }],
      };
    return {
      ok: true,
      command: 'paused',
      title: `${records.length} paused`,
      data,
      blocks: [
        {
          kind: 'list',
          title: 'Paused by rollcall, oldest first',
          items: records.map(pausedItem),
          total: records.length,
        },
      ],
    };
  },
};
