import type { ApplicationSet, Cluster } from '../../infra/argocd/types.js';
import { rfc3339 } from '../clock.js';
import { parseSimSelector, simLabelsMatch, SimSelectorError, type SimLabelRequirement } from '../labels.js';
import type { InstanceStore } from '../store.js';
import { parseJsonBody, queryList, recordOperation, type ApiRequest, type RouteResult } from './context.js';
import { GrpcCode, SimApiError, toApiError } from './errors.js';
import { allowed, enforce } from './rbac.js';
import { createHash } from 'node:crypto';

export interface AppSetQuery {
  selector: SimLabelRequirement[];
  projects: string[];
  name?: string;
}

export function parseAppSetQuery(query: URLSearchParams): AppSetQuery {
  try {
    return {
      selector: parseSimSelector(query.get('selector') ?? ''),
      projects: queryList(query, 'projects'),
      name: query.get('name') || undefined,
    };
  } catch (error) {
    if (error instanceof SimSelectorError)
      throw new SimApiError(2, `error parsing the selector: ${error.message}`, 500);
    throw error;
  }
}

export function appSetMatches(appSet: ApplicationSet, q: AppSetQuery): boolean {
  if (q.name && appSet.metadata.name !== q.name) return false;
  if (q.projects.length && !q.projects.includes(appSet.spec.template?.spec?.project ?? '')) return false;
  return simLabelsMatch(appSet.metadata.labels, q.selector);
}

export function sortedAppSets(store: InstanceStore, q: AppSetQuery): ApplicationSet[] {
  return [...store.appSets.values()]
    .filter((a) => appSetMatches(a, q))
    .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
}

export function listApplicationSets(req: ApiRequest): RouteResult {
  const items = sortedAppSets(req.store, parseAppSetQuery(req.query)).filter((a) =>
    allowed(req.account, 'applicationsets', 'get', appSetRbacName(a)),
  );
  return {
    raw: `{"metadata":{"resourceVersion":"${req.store.resourceVersion}"},"items":[${items.map((a) => JSON.stringify(a)).join(',')}]}`,
  };
}

export function getApplicationSet(req: ApiRequest): RouteResult {
  const appSet = req.store.appSets.get(req.params.name);
  if (!appSet) {
    throw new SimApiError(
      GrpcCode.NotFound,
      `error getting ApplicationSet: applicationsets.argoproj.io "${req.params.name}" not found`,
    );
  }
  enforce(req.account, 'applicationsets', 'get', appSetRbacName(appSet));
  return { raw: JSON.stringify(appSet) };
}

export const appSetRbacName = (a: ApplicationSet) => `${a.spec?.template?.spec?.project ?? ''}/${a.metadata.name}`;

/** Key-order-insensitive equality standing in for Go's reflect.DeepEqual on decoded structs. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}

/**
 * POST /api/v1/applicationsets[?upsert=true&dryRun=true] (server/applicationset/applicationset.go
 * Create): the only way to change an appset over the API. An identical spec, labels, annotations
 * and finalizers returns the existing object untouched; a different one needs upsert, and then
 * only those four parts are replaced (status is kept).
 */
export function createApplicationSet(req: ApiRequest): RouteResult {
  const body = parseJsonBody(req, 'v1alpha1.ApplicationSet') as ApplicationSet;
  const name = body && typeof body === 'object' ? body.metadata?.name : undefined;
  const record = (status: number) => recordOperation(req, name, body, status);
  try {
    if (!body || typeof body !== 'object' || Array.isArray(body))
      throw new SimApiError(
        GrpcCode.InvalidArgument,
        'json: cannot unmarshal array into Go value of type v1alpha1.ApplicationSet',
      );
    if (!name)
      throw new SimApiError(
        GrpcCode.InvalidArgument,
        'error creating ApplicationSet: ApplicationSet.argoproj.io "" is invalid: metadata.name: Required value: name or generateName is required',
      );
    if (!body.spec || typeof body.spec !== 'object' || !body.spec.template)
      throw new SimApiError(2, 'ApplicationSet cannot be validated for nil value', 500);
    const project = body.spec.template.spec?.project ?? '';
    if (project.includes('{{'))
      throw new SimApiError(
        2,
        'the Argo CD API does not currently support creating ApplicationSets with templated `project` fields',
        500,
      );
    // Create is checked first, on every call; an update also needs update (below).
    enforce(req.account, 'applicationsets', 'create', appSetRbacName(body));
    const upsert = req.query.get('upsert') === 'true';
    const dryRun = req.query.get('dryRun') === 'true';
    if (dryRun) {
      record(200);
      return { raw: JSON.stringify(body) };
    }
    const existing = req.store.appSets.get(name);
    if (!existing) {
      const created: ApplicationSet = structuredClone(body);
      created.metadata = {
        ...created.metadata,
        namespace: created.metadata.namespace ?? 'argocd',
        uid: uidOf(req.store.name, name),
        generation: 1,
        creationTimestamp: rfc3339(req.core.now()),
      };
      delete created.status;
      const stored = req.store.putAppSet(created);
      record(200);
      return { raw: JSON.stringify(stored) };
    }
    const same =
      canonical(existing.spec) === canonical(body.spec) &&
      canonical(existing.metadata.labels) === canonical(body.metadata.labels) &&
      canonical(existing.metadata.annotations) === canonical(body.metadata.annotations) &&
      canonical(existing.metadata.finalizers) === canonical(body.metadata.finalizers);
    if (same) {
      record(200);
      return { raw: JSON.stringify(existing) };
    }
    if (!upsert)
      throw new SimApiError(
        GrpcCode.InvalidArgument,
        'existing ApplicationSet spec is different, use upsert flag to force update',
      );
    enforce(req.account, 'applicationsets', 'update', appSetRbacName(existing));
    const updated = structuredClone(existing);
    updated.spec = structuredClone(body.spec);
    updated.metadata.labels = body.metadata.labels;
    updated.metadata.annotations = body.metadata.annotations;
    updated.metadata.finalizers = body.metadata.finalizers;
    for (const key of ['labels', 'annotations', 'finalizers'] as const)
      if (updated.metadata[key] === undefined) delete updated.metadata[key];
    if (canonical(existing.spec) !== canonical(body.spec))
      updated.metadata.generation = (existing.metadata.generation ?? 1) + 1;
    const stored = req.store.putAppSet(updated);
    record(200);
    return { raw: JSON.stringify(stored) };
  } catch (error) {
    const mapped = toApiError(error);
    record(mapped?.httpStatus ?? 500);
    throw mapped ?? error;
  }
}

function uidOf(...parts: string[]): string {
  const h = createHash('sha1').update(parts.join('/')).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/**
 * Clusters as the API serves them: credentials redacted to `{tlsClientConfig:{insecure:false}}`,
 * `info.applicationsCount` counted from the apps that target the cluster.
 */
export function servedCluster(store: InstanceStore, cluster: Cluster, counts: Map<string, number>): Cluster {
  const { config: _config, ...rest } = cluster;
  const insecure =
    (cluster.config as { tlsClientConfig?: { insecure?: boolean } } | undefined)?.tlsClientConfig?.insecure ?? false;
  const connectionState = cluster.connectionState ??
    cluster.info?.connectionState ?? { status: 'Unknown', message: '' };
  return {
    ...rest,
    config: { tlsClientConfig: { insecure } },
    connectionState,
    info: {
      ...cluster.info,
      connectionState: cluster.info?.connectionState ?? connectionState,
      applicationsCount: counts.get(cluster.server) ?? 0,
    },
  };
}

function appCounts(store: InstanceStore): Map<string, number> {
  const nameToServer = new Map<string, string>();
  for (const c of store.clusters.values()) nameToServer.set(c.name, c.server);
  const counts = new Map<string, number>();
  for (const app of store.apps.values()) {
    const d = app.spec.destination ?? {};
    const server = d.server ? d.server.replace(/\/+$/, '') : d.name ? nameToServer.get(d.name) : undefined;
    if (server) counts.set(server, (counts.get(server) ?? 0) + 1);
  }
  // Index by the cluster's own spelling of the server too (trailing slash or not).
  for (const c of store.clusters.values()) {
    const n = counts.get(c.server.replace(/\/+$/, ''));
    if (n !== undefined) counts.set(c.server, n);
  }
  return counts;
}

export function listClusters(req: ApiRequest): RouteResult {
  const server = req.query.get('server');
  const name = req.query.get('name');
  const counts = appCounts(req.store);
  const items = [...req.store.clusters.values()]
    .filter((c) => (!server || c.server === server) && (!name || c.name === name))
    .map((c) => servedCluster(req.store, c, counts));
  return { json: { metadata: {}, items } };
}

export function getCluster(req: ApiRequest): RouteResult {
  const id = req.params.id;
  const byName = req.query.get('id.type') === 'name';
  const cluster = [...req.store.clusters.values()].find((c) =>
    byName ? c.name === id : c.server === id || c.name === id,
  );
  // Argo CD answers an unknown or forbidden cluster alike.
  if (!cluster) throw new SimApiError(GrpcCode.PermissionDenied, 'permission denied');
  return { json: servedCluster(req.store, cluster, appCounts(req.store)) };
}
