import { code, plural } from '../core/format.js';
import type { ReplyBlock, ReplyButton, ReplyItem } from '../core/reply.js';
import type { ReplyOf } from './replies.js';
import { manifestDiff, resourceKey, type FieldChange, type ResourceChange } from '../fleet/manifest-diff.js';
import { syncOf } from '../fleet/status.js';
import { appRef, argoApiFor, namedApp, liveApp, shortRev, withinLiveBudget } from './app.js';
import { checkOptions, checkPositional } from './parse.js';
import type { CommandContext, CommandSpec, ParsedCommand } from './registry.js';

const USAGE = 'diff APP [instance=X]';

const CHANGE_TEXT: Record<ResourceChange['change'], string> = {
  modified: 'differs from git',
  create: 'not in the cluster: a sync would create it',
  prune: 'not in git: a sync with prune would delete it',
  extraneous: 'not in git, and kept by a sync (not marked for pruning)',
};

function fieldLine(f: FieldChange): string {
  if (f.op === 'added') return `+ ${f.path}: ${code(f.to ?? '')}`;
  if (f.op === 'removed') return `- ${f.path}: ${code(f.from ?? '')}`;
  return `~ ${f.path}: ${code(f.from ?? '')} → ${code(f.to ?? '')}`;
}

function resourceTitle(r: ResourceChange): string {
  return `${r.group ? `${r.group}/` : ''}${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}`;
}

export async function runDiff(cmd: ParsedCommand, ctx: CommandContext): Promise<ReplyOf<'diff'>> {
  checkOptions(cmd, ['instance'], USAGE);
  checkPositional(cmd, 1, USAGE);
  const fleet = ctx.services.fleet;
  const found = namedApp(cmd, ctx, 'diff', USAGE, '`diff checkout-prod-eu`');
  const api = argoApiFor(ctx, found, 'diff');
  const [managed, fresh] = await Promise.all([
    withinLiveBudget(found.instance, () => api.managedResources(appRef(found))),
    liveApp(ctx, found),
  ]);
  const app = fresh.app;
  const pruning = new Map((app.status?.resources ?? []).map((r) => [resourceKey(r), Boolean(r.requiresPruning)]));
  const changes = manifestDiff(managed.items ?? [], { requiresPruning: (key) => pruning.get(key) ?? true });

  const multiInstance = fleet.instances().length > 1;
  const title = `Diff of ${app.metadata.name}${multiInstance ? ` (${found.instance})` : ''}`;
  const revision = app.status?.sync?.revision;
  const against = revision ? ` at ${code(shortRev(revision))}` : '';
  const blocks: ReplyBlock[] = [{ kind: 'header', text: title }];
  if (!changes.length) {
    blocks.push({
      kind: 'text',
      text: `:white_check_mark: No differences: the live state matches git${against}.`,
      tone: 'ok',
    });
    if (syncOf(app) === 'OutOfSync')
      blocks.push({
        kind: 'context',
        text: 'Argo CD still reports OutOfSync: its last comparison may be older than the resources it was made from; `app` shows when it last compared.',
      });
  } else {
    const count = (c: ResourceChange['change']) => changes.filter((r) => r.change === c).length;
    const parts = [
      count('modified') && `${count('modified')} modified`,
      count('create') && `${count('create')} to create`,
      count('prune') && `${count('prune')} to prune`,
      count('extraneous') && `${count('extraneous')} not in git`,
    ].filter(Boolean);
    blocks.push({
      kind: 'text',
      text: `:warning: *${plural(changes.length, 'resource')}* ${changes.length === 1 ? 'differs' : 'differ'} from git${against}: ${parts.join(', ')}.`,
      tone: 'warn',
    });
    const items: ReplyItem[] = changes.map((r) => {
      const lines = r.fields.map(fieldLine);
      if (r.fieldsTotal > r.fields.length) lines.push(`… and ${r.fieldsTotal - r.fields.length} more fields`);
      if (r.change === 'modified' && !r.fieldsTotal)
        lines.push('differs in a field Argo CD normalizes; `argocd app diff` shows the full manifests');
      return {
        text: `*${resourceTitle(r)}* · ${CHANGE_TEXT[r.change]}`,
        tone: r.change === 'modified' ? 'warn' : r.change === 'extraneous' ? 'info' : 'error',
        ...(lines.length ? { detail: lines.join('\n') } : {}),
      };
    });
    blocks.push({ kind: 'list', title: 'Resources', items });
    if (changes.some((r) => r.kind === 'Secret' && !r.group))
      blocks.push({ kind: 'context', text: 'Secret values are never shown: a changed value shows as a changed mask.' });
  }
  if (fresh.note) blocks.push({ kind: 'context', text: `:warning: ${fresh.note}` });
  const suffix = fleet.appsNamed(app.metadata.name).length > 1 ? ` instance=${found.instance}` : '';
  const buttons: ReplyButton[] = [
    { label: 'App', command: `app ${app.metadata.name}${suffix}` },
    { label: 'History', command: `history ${app.metadata.name}${suffix}` },
  ];
  blocks.push({ kind: 'actions', buttons });
  return {
    ok: true,
    command: 'diff',
    title,
    data: { app: app.metadata.name, instance: found.instance, revision: revision ?? null, resources: changes },
    blocks,
  };
}

export const diffCommand: CommandSpec<'diff'> = {
  name: 'diff',
  summary:
    'What a sync would change: each resource whose live state differs from git, field by field (argocd app diff); Secret values hidden',
  usage: USAGE,
  help: [
    'Examples:',
    '`diff checkout-prod-eu`',
    'Compares what Argo CD compares: the normalized live state with the live state git predicts, honouring the app’s ignoreDifferences.',
    '`~` a changed field (live → git), `+` a field git adds, `-` a field a sync removes.',
  ].join('\n'),
  readOnly: true,
  run: runDiff,
};
