import { createHash } from 'node:crypto';
import type { Application, ResourceNode, RevisionMetadata } from '../../infra/argocd/types.js';
import { commitMessage } from '../scenarios/builders.js';
import { findApp } from './apps.js';
import type { ApiRequest, RouteResult } from './context.js';
import { SimApiError, invalidArgument } from './errors.js';
import { buildTree, liveTreeOf } from './tree.js';

const AUTHORS = ['Dana Reyes <dana@example.com>', 'Sam Okafor <sam@example.com>', 'Lee Park <lee@example.com>'];

function knownRevisions(app: Application): Map<string, string | undefined> {
  const out = new Map<string, string | undefined>();
  for (const h of app.status?.history ?? [])
    for (const r of h.revisions ?? (h.revision ? [h.revision] : [])) out.set(r, h.deployStartedAt ?? h.deployedAt);
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
  const app = findApp(
    req,
    req.params.name,
    req.query.get('project') || undefined,
    req.query.get('appNamespace') || undefined,
  );
  const revision = req.params.revision;
  const known = knownRevisions(app);
  if (!known.has(revision) && !/^[0-9a-f]{40}$/.test(revision))
    throw new SimApiError(2, `rpc error: code = Unknown desc = unable to resolve '${revision}' to a commit SHA`, 500);
  const h = createHash('sha1').update(`${req.store.name}/${revision}`).digest();
  const at = known.get(revision) ?? new Date(req.core.now().getTime() - 3_600_000 - (h[0] ?? 0) * 60_000).toISOString();
  const metadata: RevisionMetadata = {
    author: AUTHORS[(h[1] ?? 0) % AUTHORS.length],
    date: new Date(Date.parse(at) - 120_000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    message: commitMessage(revision) ?? `${app.metadata.name}: roll out ${revision.slice(0, 7)}`,
  };
  return { json: metadata };
}

/** Argo CD's default `server.maxPodLogsToRender` (argocd-cm). */
const MAX_POD_LOGS_TO_RENDER = 10;
/** How many lines a healthy simulated container has written since it started. */
const HEALTHY_LOG_LINES = 200;

/** The container a simulated Pod runs: the one of its Deployment or Rollout, named like it (as buildTree's images are). */
function containerOf(pod: ResourceNode, byKey: Map<string, ResourceNode>): string {
  let node: ResourceNode | undefined = pod;
  for (let hops = 0; node && hops < 5; hops++) {
    if (node.kind === 'Deployment' || node.kind === 'Rollout') return node.name;
    const parent: { group?: string; kind: string; namespace?: string; name: string } | undefined = node.parentRefs?.[0];
    node = parent
      ? byKey.get(`${parent.group ?? ''}/${parent.kind}/${parent.namespace ?? ''}/${parent.name}`)
      : undefined;
  }
  return pod.name;
}

function containerLines(crashing: boolean, previous: boolean): string[] {
  if (crashing)
    return [
      'starting server',
      'loading configuration from /etc/config',
      'fatal: required config key "auth.issuer" is missing',
      'exit status 1',
    ];
  const lines = ['starting server', 'listening on :8080', 'ready'];
  // Structured access logs, as most services write them: long lines, which is what a chat answer must fit.
  for (let i = 0; lines.length < HEALTHY_LOG_LINES; i++) {
    lines.push(
      JSON.stringify({
        level: 'info',
        msg: 'request served',
        method: 'GET',
        path: i % 5 ? '/api/v1/orders' : '/healthz',
        status: 200,
        duration_ms: 1 + (i % 7),
        request_id: (i * 7919).toString(16).padStart(8, '0'),
      }),
    );
  }
  return previous ? [] : lines;
}

/**
 * GET /api/v1/applications/{name}/logs and /pods/{podName}/logs (server/application/application.go
 * PodLogs). Pods come from the app's tree as getSelectedPods picks them: a Pod (core group, with a
 * uid) that matches, or descends from a node that matches, every non-empty one of resourceName,
 * kind, group and namespace; podName means kind=Pod, resourceName=podName. No pod: an empty body,
 * the server returns before streaming. More than maxPodLogsToRender pods: InvalidArgument. Each
 * pod's lines are kubelet's (sinceSeconds, then tailLines, per pod); a container the pod does not run is Kubernetes'
 * BadRequest, passed on as the content of an entry without pod name. The stream ends with a `last`
 * entry; every message is one `{"result": LogEntry}` line, as grpc-gateway streams.
 */
export function podLogs(req: ApiRequest): RouteResult {
  const app = findApp(
    req,
    req.params.name,
    req.query.get('project') || undefined,
    req.query.get('appNamespace') || undefined,
  );
  const q = req.query;
  const podName = req.params.podName ?? q.get('podName') ?? '';
  const kind = podName ? 'Pod' : (q.get('kind') ?? '');
  const resourceName = podName || (q.get('resourceName') ?? '');
  const group = q.get('group') ?? '';
  const namespace = q.get('namespace') ?? '';
  const container = q.get('container') ?? '';
  const previous = q.get('previous') === 'true';
  const tree = buildTree(req.store.name, app, liveTreeOf(req));
  const byKey = new Map(tree.nodes.map((n) => [`${n.group ?? ''}/${n.kind}/${n.namespace ?? ''}/${n.name}`, n]));
  const matches = (n: ResourceNode, depth = 0): boolean => {
    if (
      (!resourceName || n.name === resourceName) &&
      (!kind || n.kind === kind) &&
      (!group || (n.group ?? '') === group) &&
      (!namespace || (n.namespace ?? '') === namespace)
    )
      return true;
    return (
      depth < 10 &&
      (n.parentRefs ?? []).some((p) => {
        const parent = byKey.get(`${p.group ?? ''}/${p.kind}/${p.namespace ?? ''}/${p.name}`);
        return parent !== undefined && matches(parent, depth + 1);
      })
    );
  };
  const pods = tree.nodes.filter((n) => n.kind === 'Pod' && !n.group && n.uid && matches(n));
  if (!pods.length) return { raw: '' };
  if (pods.length > MAX_POD_LOGS_TO_RENDER)
    throw invalidArgument('max pods to view logs are reached. Please provide more granular query');
  const tailRaw = Number(q.get('tailLines') ?? '');
  const tail = Number.isInteger(tailRaw) && tailRaw > 0 ? tailRaw : undefined;
  const sinceRaw = Number(q.get('sinceSeconds') ?? '');
  const since = Number.isInteger(sinceRaw) && sinceRaw > 0 ? sinceRaw : undefined;
  const now = req.core.now();
  const stamp = (d: Date) => ({ timeStamp: d.toISOString().replace(/\.\d{3}Z$/, 'Z'), timeStampStr: d.toISOString() });
  const lines: string[] = [];
  for (const pod of pods) {
    const runs = containerOf(pod, byKey);
    const crashing = pod.health?.status === 'Degraded';
    let failure: string | undefined;
    if (container && container !== runs) failure = `container ${container} is not valid for pod ${pod.name}`;
    else if (previous && !crashing) failure = `previous terminated container "${runs}" in pod "${pod.name}" not found`;
    if (failure) {
      lines.push(
        JSON.stringify({ result: { content: failure, ...stamp(new Date(-62135596800000)), podName: '', last: false } }),
      );
      continue;
    }
    // One line a second up to now; kubelet applies sinceSeconds, then tailLines.
    const content = containerLines(crashing, previous);
    const recent = since ? content.slice(-since) : content;
    const picked = tail ? recent.slice(-tail) : recent;
    picked.forEach((line, i) => {
      lines.push(
        JSON.stringify({
          result: {
            content: line,
            ...stamp(new Date(now.getTime() - (picked.length - i) * 1000)),
            podName: pod.name,
            last: false,
          },
        }),
      );
    });
  }
  lines.push(JSON.stringify({ result: { content: '', ...stamp(now), podName: '', last: true } }));
  return { raw: lines.join('\n') + '\n' };
}
