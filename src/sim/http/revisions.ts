import { createHash } from 'node:crypto';
import type { Application, RevisionMetadata } from '../../argocd/types.js';
import { findApp } from './apps.js';
import type { ApiRequest, RouteResult } from './context.js';
import { SimApiError } from './errors.js';
import { buildTree } from './tree.js';

const AUTHORS = ['Dana Reyes <dana@example.com>', 'Sam Okafor <sam@example.com>', 'Lee Park <lee@example.com>'];

function knownRevisions(app: Application): Map<string, string | undefined> {
  const out = new Map<string, string | undefined>();
  for (const h of app.status?.history ?? []) for (const r of h.revisions ?? (h.revision ? [h.revision] : [])) out.set(r, h.deployStartedAt ?? h.deployedAt);
  const sync = app.status?.sync;
  for (const r of sync?.revisions ?? (sync?.revision ? [sync.revision] : [])) if (!out.has(r)) out.set(r, undefined);
  const result = app.status?.operationState?.syncResult;
  if (result?.revision && !out.has(result.revision)) out.set(result.revision, app.status?.operationState?.startedAt);
  return out;
}

/**
 * GET /api/v1/applications/{name}/revisions/{revision}/metadata (RevisionMetadata, answered by the
 * repo server): author, date, message of a commit of the app's source. A commit SHA or a revision
 * the app knows resolves; a ref the simulated repo cannot resolve is the repo server's error.
 */
export function revisionMetadata(req: ApiRequest): RouteResult {
  const app = findApp(req, req.params.name, req.query.get('project') || undefined, req.query.get('appNamespace') || undefined);
  const revision = req.params.revision;
  const known = knownRevisions(app);
  if (!known.has(revision) && !/^[0-9a-f]{40}$/.test(revision))
    throw new SimApiError(2, `rpc error: code = Unknown desc = unable to resolve '${revision}' to a commit SHA`, 500);
  const h = createHash('sha1').update(`${req.store.name}/${revision}`).digest();
  const at = known.get(revision) ?? new Date(req.core.now().getTime() - 3_600_000 - (h[0] ?? 0) * 60_000).toISOString();
  const metadata: RevisionMetadata = {
    author: AUTHORS[(h[1] ?? 0) % AUTHORS.length],
    date: new Date(Date.parse(at) - 120_000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    message: `${app.metadata.name}: roll out ${revision.slice(0, 7)}`,
  };
  return { json: metadata };
}

/**
 * GET /api/v1/applications/{name}/logs and /pods/{podName}/logs (PodLogs): the app's pods from its
 * tree, narrowed by podName or by the resource (kind, group, resourceName, namespace) they belong
 * to, streamed as Argo CD's grpc-gateway does: one `{"result": LogEntry}` JSON object per line,
 * ending with an entry whose `last` is true. Pods with a crash loop log their crash.
 */
export function podLogs(req: ApiRequest): RouteResult {
  const app = findApp(req, req.params.name, req.query.get('project') || undefined, req.query.get('appNamespace') || undefined);
  const q = req.query;
  const podName = req.params.podName ?? q.get('podName') ?? '';
  const tree = buildTree(req.store.name, app);
  const byUid = new Map(tree.nodes.map((n) => [n.uid, n]));
  const kind = q.get('kind') ?? '';
  const resourceName = q.get('resourceName') ?? '';
  const group = q.get('group') ?? '';
  const namespace = q.get('namespace') ?? '';
  const selects = (uid: string | undefined): boolean => {
    const n = uid ? byUid.get(uid) : undefined;
    if (!n) return false;
    if (n.kind === kind && n.name === resourceName && (n.group ?? '') === group && (!namespace || n.namespace === namespace)) return true;
    return (n.parentRefs ?? []).some((p) => selects(p.uid));
  };
  const pods = tree.nodes.filter((n) => {
    if (n.kind !== 'Pod') return false;
    if (podName) return n.name === podName;
    if (resourceName) return selects(n.uid);
    return true;
  });
  const tail = Number(q.get('tailLines') ?? '') || undefined;
  const now = req.core.now();
  const lines: string[] = [];
  for (const pod of pods) {
    const crashing = pod.health?.status === 'Degraded';
    const content = crashing
      ? ['starting server', 'loading configuration from /etc/config', 'fatal: required config key "auth.issuer" is missing', 'exit status 1']
      : ['starting server', 'listening on :8080', 'ready'];
    const picked = tail ? content.slice(-tail) : content;
    picked.forEach((line, i) => {
      const at = new Date(now.getTime() - (picked.length - i) * 1000).toISOString();
      lines.push(JSON.stringify({ result: { content: line, timeStamp: at.replace(/\.\d{3}Z$/, 'Z'), timeStampStr: at, podName: pod.name, last: false } }));
    });
  }
  const end = now.toISOString();
  lines.push(JSON.stringify({ result: { content: '', timeStamp: end.replace(/\.\d{3}Z$/, 'Z'), timeStampStr: end, podName: '', last: true } }));
  return { raw: lines.join('\n') + '\n' };
}
