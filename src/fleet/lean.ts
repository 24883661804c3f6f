import type { Application } from '../infra/argocd/types.js';

/** Written by `kubectl apply`: the whole applied manifest again, as text. */
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * The Application as the mirror holds it: the object Argo CD sent, less what no reader of the fleet uses
 * and what repeats the rest, so 10,000s of apps fit a bot's memory. Dropped:
 * - `metadata.managedFields` and the last-applied annotation: server-side bookkeeping, often the largest
 *   part of an object;
 * - `status.sync.comparedTo`: the spec's source and destination again, as last compared;
 * - `status.operationState.syncResult.source(s)`: the source the sync used, again (its revision stays).
 * Everything else stays as sent, down to each entry of status.resources, status.history and the sync's
 * resource results, which `app`, `status`, `rollout`, the rules and the incident timeline read. A command
 * that needs the object whole reads it live from Argo CD. The object given is left as it is (a caller may
 * still hold it); what changes is copied.
 */
export function leanApp(app: Application): Application {
  const { metadata, status } = app;
  const annotations = metadata.annotations;
  const dropAnnotation = annotations !== undefined && LAST_APPLIED in annotations;
  const dropMeta = dropAnnotation || 'managedFields' in metadata;
  const sync = status?.sync;
  const syncResult = status?.operationState?.syncResult;
  const dropCompared = sync !== undefined && 'comparedTo' in sync;
  const dropSource = syncResult !== undefined && ('source' in syncResult || 'sources' in syncResult);
  if (!dropMeta && !dropCompared && !dropSource) return app;
  const lean: Application = { ...app };
  if (dropMeta) {
    const { managedFields: _managed, ...kept } = metadata;
    lean.metadata = kept;
    if (dropAnnotation) {
      const { [LAST_APPLIED]: _applied, ...rest } = annotations;
      lean.metadata.annotations = rest;
    }
  }
  if (status && (dropCompared || dropSource)) {
    lean.status = { ...status };
    if (sync && dropCompared) {
      const { comparedTo: _compared, ...rest } = sync;
      lean.status.sync = rest;
    }
    if (syncResult && dropSource) {
      const { source: _source, sources: _sources, ...rest } = syncResult;
      lean.status.operationState = { ...status.operationState!, syncResult: rest };
    }
  }
  return lean;
}
