import type { Application, ApplicationSpec, ApplicationSyncRequest } from '../../infra/argocd/types.js';
import { rfc3339 } from '../clock.js';
import { parseFields, projectListItem } from '../fields.js';
import { parseSimSelector, simLabelsMatch, SimSelectorError, type SimLabelRequirement } from '../labels.js';
import type { InstanceStore } from '../store.js';
import { syncWindowVerdict } from '../projects.js';
import { parseJsonBody, queryList, recordOperation, type ApiRequest, type RouteResult } from './context.js';
import { appNotFound, GrpcCode, permissionDenied, SimApiError, toApiError } from './errors.js';
import { appJsonFull, appJsonList } from './json.js';
import { jsonPatch, mergePatch, type JsonPatchOp } from './patch.js';
import { allowed, enforce } from './rbac.js';
import { checkGoShape, ROLLBACK_REQUEST_SHAPE, SYNC_REQUEST_SHAPE } from './shapes.js';
import { automatedEnabled } from '../../fleet/rollingsync.js';

const DEFAULT_NS = 'argocd';

export interface AppQuery {
  selector: SimLabelRequirement[];
  projects: string[];
  name?: string;
  repo?: string;
  appNamespace?: string;
}

/** The query List and Watch share. A bad selector is a plain Go error upstream: gRPC Unknown, HTTP 500. */
export function parseAppQuery(query: URLSearchParams): AppQuery {
  let selector: SimLabelRequirement[];
  try {
    selector = parseSimSelector(query.get('selector') ?? '');
  } catch (error) {
    if (error instanceof SimSelectorError)
      throw new SimApiError(2, `error parsing the selector: ${error.message}`, 500);
    throw error;
  }
  const projects = queryList(query, 'projects');
  return {
    selector,
    // `project` is the legacy alias, used only when `projects` is absent.
    projects: projects.length ? projects : queryList(query, 'project'),
    name: query.get('name') || undefined,
    repo: query.get('repo') || undefined,
    appNamespace: query.get('appNamespace') || undefined,
  };
}

const normalizeRepo = (url: string) =>
  url
    .trim()
    .toLowerCase()
    .replace(/\/+$/, '')
    .replace(/\.git$/, '');

export function appMatches(app: Application, q: AppQuery): boolean {
  if (q.name && app.metadata.name !== q.name) return false;
  if (q.appNamespace && (app.metadata.namespace ?? DEFAULT_NS) !== q.appNamespace) return false;
  if (q.projects.length && !q.projects.includes(app.spec.project || 'default')) return false;
  if (q.repo) {
    const want = normalizeRepo(q.repo);
    const sources = app.spec.sources?.length ? app.spec.sources : app.spec.source ? [app.spec.source] : [];
    if (!sources.some((s) => normalizeRepo(s.repoURL) === want)) return false;
  }
  return simLabelsMatch(app.metadata.labels, q.selector);
}

export function sortedApps(store: InstanceStore, q: AppQuery): Application[] {
  if (q.name) {
    const one = store.apps.get(q.appNamespace ? `${q.appNamespace}/${q.name}` : q.name);
    return one && appMatches(one, q) ? [one] : [];
  }
  const out: Application[] = [];
  for (const app of store.apps.values()) if (appMatches(app, q)) out.push(app);
  return out.sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
}

export function listApplications(req: ApiRequest): RouteResult {
  const q = parseAppQuery(req.query);
  // List quietly leaves out apps the token may not get.
  const apps = sortedApps(req.store, q).filter((a) => allowed(req.account, 'applications', 'get', rbacName(a)));
  const meta = JSON.stringify({ resourceVersion: String(req.store.resourceVersion) });
  const fields = parseFields(req.query.get('fields'));
  if (fields) {
    // The field-filtered path builds its items slice with append, so an empty result is `null`.
    const items = apps.length ? `[${apps.map((a) => JSON.stringify(projectListItem(a, fields))).join(',')}]` : 'null';
    return { raw: `{"metadata":${meta},"items":${items}}` };
  }
  return { raw: `{"metadata":${meta},"items":[${apps.map(appJsonList).join(',')}]}` };
}

/**
 * getAppEnforceRBAC (server/application/application.go): with project= a missing app is 404 and an
 * app in another project is also 404 ("doesn't exist in that project"); without project= a missing
 * app is 403 "permission denied" so existence never leaks. Sim tokens hold every permission.
 */
export function findApp(
  req: ApiRequest,
  name: string,
  project?: string,
  appNamespace?: string,
  action = 'get',
): Application {
  if (project && !allowed(req.account, 'applications', action, `${project}/${name}`)) throw permissionDenied();
  const app = req.store.apps.get(appNamespace ? `${appNamespace}/${name}` : name);
  const nsOk = !appNamespace || (app?.metadata.namespace ?? DEFAULT_NS) === appNamespace;
  if (!app || !nsOk) throw project ? appNotFound(name) : permissionDenied();
  if (!allowed(req.account, 'applications', action, rbacName(app)))
    throw project ? appNotFound(name) : permissionDenied();
  if (project && (app.spec.project || 'default') !== project) throw appNotFound(name);
  return app;
}

export const rbacName = (app: Application) => `${app.spec.project || 'default'}/${app.metadata.name}`;

export function getApplication(req: ApiRequest): RouteResult {
  const name = req.params.name;
  let app = findApp(req, name, req.query.get('project') || undefined, req.query.get('appNamespace') || undefined);
  if (req.query.has('refresh') && !req.core.frozen) {
    // A refresh makes the controller compare again; the visible trace of that is reconciledAt, and
    // resource health read afresh from the cluster (here: SealedSecrets on a simulated cluster).
    const copy = structuredClone(app);
    copy.status = { ...copy.status, reconciledAt: rfc3339(req.core.now()) };
    refreshSealedSecretHealth(req, copy);
    app = req.store.putApp(copy);
  }
  return { raw: appJsonFull(app) };
}

function operationRunning(app: Application): boolean {
  const phase = app.status?.operationState?.phase;
  return !!app.operation || phase === 'Running' || phase === 'Terminating';
}

/**
 * Sync (server/application/application.go) asks the project's windows before the `sync` RBAC check, as a
 * manual sync: an active deny window refuses it unless every active deny window has manualSync.
 */
function checkSyncWindows(req: ApiRequest, app: Application): void {
  const verdict = syncWindowVerdict(req.store, app, { manual: true, at: req.core.now() });
  if (verdict.allowed) return;
  if (verdict.invalid)
    throw new SimApiError(GrpcCode.PermissionDenied, `cannot sync: invalid sync window: ${verdict.invalid}`);
  throw new SimApiError(GrpcCode.PermissionDenied, 'cannot sync: blocked by sync window');
}

export function syncApplication(req: ApiRequest): RouteResult {
  const name = req.params.name;
  const body = parseJsonBody(req, 'application.ApplicationSyncRequest');
  const status = (code: number) => recordOperation(req, name, body, code);
  try {
    checkGoShape(body, SYNC_REQUEST_SHAPE, 'ApplicationSyncRequest');
    const request = { ...(body as ApplicationSyncRequest), name };
    const app = findApp(req, name, request.project || undefined, request.appNamespace || undefined);
    checkSyncWindows(req, app);
    enforce(req.account, 'applications', 'sync', rbacName(app));
    if (app.metadata.deletionTimestamp) throw new SimApiError(GrpcCode.FailedPrecondition, 'application is deleting');
    const target = app.spec.source?.targetRevision || 'HEAD';
    if (
      request.revision &&
      automatedEnabled(app.spec.syncPolicy?.automated) &&
      !request.dryRun &&
      request.revision !== target &&
      app.spec.source
    ) {
      throw new SimApiError(
        GrpcCode.FailedPrecondition,
        `Cannot sync to ${request.revision}: auto-sync currently set to ${app.spec.source.targetRevision ?? ''}`,
      );
    }
    if (operationRunning(app))
      throw new SimApiError(GrpcCode.FailedPrecondition, 'another operation is already in progress');
    // The event log learns who asked just before the operation is written (it hears the write at once).
    req.core.events?.noteSyncRequest(req.store.name, app, req.user);
    let updated;
    try {
      updated = req.core.controller.requestSync(req.store.name, req.store.apps.refOf(app), request, req.user);
    } finally {
      req.core.events?.noteSyncRequest(req.store.name, app, undefined);
    }
    status(200);
    return { raw: appJsonFull(req.store.apps.get(req.store.apps.refOf(app)) ?? updated) };
  } catch (error) {
    const mapped = toApiError(error);
    status(mapped?.httpStatus ?? 500);
    throw mapped ?? error;
  }
}

/**
 * POST /api/v1/applications/{name}/rollback (server/application/application.go Rollback): needs `sync`
 * on the app; the controller checks auto-sync, the history id and a pending operation, in that order.
 */
export function rollbackApplication(req: ApiRequest): RouteResult {
  const name = req.params.name;
  const body = parseJsonBody(req, 'application.ApplicationRollbackRequest');
  const status = (code: number) => recordOperation(req, name, body, code);
  try {
    checkGoShape(body, ROLLBACK_REQUEST_SHAPE, 'ApplicationRollbackRequest');
    const request = body as { id?: number; prune?: boolean; dryRun?: boolean; project?: string; appNamespace?: string };
    const app = findApp(req, name, request.project || undefined, request.appNamespace || undefined);
    enforce(req.account, 'applications', 'sync', rbacName(app));
    const updated = req.core.controller.requestRollback(
      req.store.name,
      req.store.apps.refOf(app),
      { id: request.id ?? 0, prune: request.prune, dryRun: request.dryRun },
      req.user,
    );
    status(200);
    return { raw: appJsonFull(req.store.apps.get(req.store.apps.refOf(app)) ?? updated) };
  } catch (error) {
    const mapped = toApiError(error);
    status(mapped?.httpStatus ?? 500);
    throw mapped ?? error;
  }
}

export function terminateOperation(req: ApiRequest): RouteResult {
  const name = req.params.name;
  const status = (code: number) => recordOperation(req, name, {}, code);
  try {
    const app = findApp(
      req,
      name,
      req.query.get('project') || undefined,
      req.query.get('appNamespace') || undefined,
      'sync',
    );
    // Argo CD's own test: a requested operation the controller has not started yet (no operationState),
    // or a finished one (operation cleared), is not "in progress".
    if (!app.operation || !app.status?.operationState) {
      throw new SimApiError(GrpcCode.InvalidArgument, 'Unable to terminate operation. No operation is in progress');
    }
    req.core.controller.requestTerminate(req.store.name, req.store.apps.refOf(app));
    status(200);
    return { json: {} };
  } catch (error) {
    const mapped = toApiError(error);
    status(mapped?.httpStatus ?? 500);
    throw mapped ?? error;
  }
}

const PATCH_SHAPE = {
  name: 'string',
  patch: 'string',
  patchType: 'string',
  appNamespace: 'string',
  project: 'string',
} as const;

export function patchApplication(req: ApiRequest): RouteResult {
  const name = req.params.name;
  const body = parseJsonBody(req, 'application.ApplicationPatchRequest') as Record<string, unknown>;
  const status = (code: number) => recordOperation(req, name, body, code);
  try {
    checkGoShape(body, PATCH_SHAPE, 'ApplicationPatchRequest');
    const app = findApp(req, name, (body.project as string) || undefined, (body.appNamespace as string) || undefined);
    enforce(req.account, 'applications', 'update', rbacName(app));
    const patchText = (body.patch as string | undefined) ?? '';
    const patchType = (body.patchType as string | undefined) || 'json';
    let patchValue: unknown;
    try {
      patchValue = JSON.parse(patchText);
    } catch {
      throw new SimApiError(
        GrpcCode.InvalidArgument,
        `error decoding patch: invalid JSON in patch "${patchText.slice(0, 80)}"`,
      );
    }
    let patched: unknown;
    if (patchType === 'json') patched = jsonPatch(app, patchValue as JsonPatchOp[]);
    else if (patchType === 'merge') patched = mergePatch(structuredClone(app), patchValue);
    else throw new SimApiError(GrpcCode.InvalidArgument, `Patch type '${patchType}' is not supported`);
    const next = patched as Application;
    if (!next || typeof next !== 'object' || !next.spec || typeof next.spec !== 'object')
      throw new SimApiError(GrpcCode.InvalidArgument, 'application spec is invalid: the patch removed spec');
    if (next.metadata?.name !== app.metadata.name)
      throw new SimApiError(GrpcCode.InvalidArgument, 'the patch must not change metadata.name');
    next.metadata.generation =
      (app.metadata.generation ?? 1) + (JSON.stringify(next.spec) === JSON.stringify(app.spec) ? 0 : 1);
    const stored = req.store.putApp(next);
    status(200);
    return { raw: appJsonFull(stored) };
  } catch (error) {
    const mapped = toApiError(error);
    status(mapped?.httpStatus ?? 500);
    throw mapped ?? error;
  }
}

export function updateSpec(req: ApiRequest): RouteResult {
  const name = req.params.name;
  const body = parseJsonBody(req, 'v1alpha1.ApplicationSpec') as ApplicationSpec;
  const status = (code: number) => recordOperation(req, name, body, code);
  try {
    if (!body || typeof body !== 'object' || Array.isArray(body))
      throw new SimApiError(
        GrpcCode.InvalidArgument,
        'json: cannot unmarshal array into Go value of type v1alpha1.ApplicationSpec',
      );
    const app = findApp(req, name, req.query.get('project') || undefined, req.query.get('appNamespace') || undefined);
    enforce(req.account, 'applications', 'update', rbacName(app));
    if (!body.destination || (!body.destination.server && !body.destination.name))
      throw new SimApiError(
        GrpcCode.InvalidArgument,
        'application spec for ' + name + ' is invalid: InvalidSpecError: Destination server missing from app spec',
      );
    const next = structuredClone(app);
    next.spec = body;
    next.metadata.generation = (app.metadata.generation ?? 1) + 1;
    req.store.putApp(next);
    status(200);
    return { json: body };
  } catch (error) {
    const mapped = toApiError(error);
    status(mapped?.httpStatus ?? 500);
    throw mapped ?? error;
  }
}

export { DEFAULT_NS };

const HEALTH_ORDER = ['Healthy', 'Suspended', 'Progressing', 'Missing', 'Degraded', 'Unknown'] as const;

/** Re-reads the health of the app's SealedSecrets from the simulated cluster; the app's health is the worst of its resources'. */
function refreshSealedSecretHealth(req: ApiRequest, app: Application): void {
  const cluster = app.spec.destination?.name;
  const resources = app.status?.resources;
  if (!cluster || !resources || !req.core.sealedSecretHealth) return;
  let changed = false;
  for (const r of resources) {
    if (r.kind !== 'SealedSecret') continue;
    const health = req.core.sealedSecretHealth(cluster, r.namespace ?? '', r.name);
    if (!health) continue;
    r.health = health.message ? { status: health.status, message: health.message } : { status: health.status };
    changed = true;
  }
  if (!changed) return;
  const worst = resources.reduce(
    (w, r) => {
      const h = r.health?.status as (typeof HEALTH_ORDER)[number] | undefined;
      return h && HEALTH_ORDER.indexOf(h) > HEALTH_ORDER.indexOf(w) ? h : w;
    },
    'Healthy' as (typeof HEALTH_ORDER)[number],
  );
  if (app.status!.health?.status !== worst)
    app.status!.health = { status: worst, lastTransitionTime: rfc3339(req.core.now()) };
}
