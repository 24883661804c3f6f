import type { Application, ApplicationSyncRequest, Operation, SyncOperation } from '../infra/argocd/types.js';
import { automatedEnabled } from '../fleet/rollingsync.js';
import {
  isSameRef,
  operationInProgress,
  qualifiedName,
  resolveRevision,
  targetRevision,
  targetRevisions,
} from './app-model.js';
import { SimError } from './sim-error.js';

/** What POST /api/v1/applications/{name}/rollback carries besides the app. */
export interface RollbackRequest {
  id: number;
  prune?: boolean;
  dryRun?: boolean;
}

/**
 * The top-level `operation` Argo CD's API server writes for a sync request (revision resolved to a
 * commit), or the SimError it refuses the request with.
 */
export function syncRequestOperation(app: Application, request: ApplicationSyncRequest, user: string): Operation {
  if (app.metadata.deletionTimestamp) throw new SimError('failed_precondition', 'application is deleting');
  if (operationInProgress(app)) throw new SimError('failed_precondition', 'another operation is already in progress');
  if (request.sourcePositions?.length && request.sourcePositions.length !== (request.revisions?.length ?? 0))
    throw new SimError('invalid_argument', 'the number of revisions must match the number of source positions');
  const sync: SyncOperation = {};
  const multi = app.spec.sources?.length ? app.spec.sources : undefined;
  if (multi) {
    const revisions = targetRevisions(app);
    for (const [i, pos] of (request.sourcePositions ?? []).entries())
      revisions[pos - 1] = resolveRevision(multi[pos - 1]?.repoURL ?? '', request.revisions![i]);
    sync.revisions = revisions;
    if (request.sourcePositions?.length) sync.sourcePositions = request.sourcePositions;
  } else {
    sync.revision =
      request.revision && !isSameRef(app, request.revision)
        ? resolveRevision(app.spec.source?.repoURL ?? '', request.revision)
        : targetRevision(app);
  }
  if (request.prune) sync.prune = true;
  if (request.dryRun) sync.dryRun = true;
  // Go decodes into {apply|hook: {force}}: anything else (swagger's syncStrategyApply nesting) is dropped.
  if (request.strategy) sync.syncStrategy = syncStrategyOf(request.strategy);
  if (request.resources?.length) sync.resources = structuredClone(request.resources);
  if (request.syncOptions?.items?.length) sync.syncOptions = [...request.syncOptions.items];
  return {
    sync,
    initiatedBy: { username: user },
    ...(request.infos?.length ? { info: structuredClone(request.infos) } : {}),
    retry: structuredClone(request.retryStrategy ?? {}),
  };
}

/**
 * The operation Argo CD's Rollback writes: refused while auto-sync is on, for an id not in
 * status.history, and while an operation is pending; otherwise a sync to that entry's revision and
 * source (with the app's syncOptions and an apply strategy), initiated by the token's user.
 */
export function rollbackOperation(app: Application, request: RollbackRequest, user: string): Operation {
  if (app.metadata.deletionTimestamp) throw new SimError('failed_precondition', 'application is deleting');
  if (automatedEnabled(app.spec.syncPolicy?.automated))
    throw new SimError('failed_precondition', 'rollback cannot be initiated when auto-sync is enabled');
  const entry = app.status?.history?.find((h) => h.id === request.id);
  if (!entry)
    throw new SimError(
      'invalid_argument',
      `application ${qualifiedName(app)} does not have deployment with id ${request.id}`,
    );
  if (!entry.source && !entry.sources?.length)
    throw new SimError(
      'failed_precondition',
      'cannot rollback to revision deployed with Argo CD v0.11 or lower. sync to revision instead.',
    );
  if (app.operation) throw new SimError('failed_precondition', 'another operation is already in progress');
  const sync: SyncOperation = {
    ...(entry.revisions?.length ? { revisions: [...entry.revisions] } : { revision: entry.revision }),
    ...(request.dryRun ? { dryRun: true } : {}),
    ...(request.prune ? { prune: true } : {}),
    ...(app.spec.syncPolicy?.syncOptions?.length ? { syncOptions: [...app.spec.syncPolicy.syncOptions] } : {}),
    syncStrategy: { apply: {} },
    ...(entry.sources?.length
      ? { sources: structuredClone(entry.sources) }
      : { source: structuredClone(entry.source) }),
  };
  return { sync, initiatedBy: { username: user } };
}

/** The sync strategy as Argo CD's JSON decoding keeps it: `{apply: {force}}` or `{hook: {force}}`, unknown fields dropped (B4, B7). */
function syncStrategyOf(strategy: unknown): NonNullable<Operation['sync']>['syncStrategy'] {
  const out: Record<string, { force?: boolean }> = {};
  for (const kind of ['apply', 'hook'] as const) {
    const value = (strategy as Record<string, unknown> | undefined)?.[kind];
    if (value && typeof value === 'object') {
      const force = (value as { force?: unknown }).force;
      out[kind] = typeof force === 'boolean' ? { force } : {};
    }
  }
  return out as NonNullable<Operation['sync']>['syncStrategy'];
}
