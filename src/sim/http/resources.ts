import type { Application, ResourceActionParameter, ResourceNode } from '../../infra/argocd/types.js';
import { ScriptDoesNotExistError, actionImpacts, discoverActions, type ImpactedResource } from '../rollouts/actions.js';
import { LuaError } from '../rollouts/lua.js';
import { createMergePatch } from './patch.js';
import { findApp } from './apps.js';
import { parseJsonBody, recordOperation, type ApiRequest, type RouteResult } from './context.js';
import { GrpcCode, SimApiError, toApiError } from './errors.js';
import { checkGoShape, type GoShape } from './shapes.js';
import { SECRET_MASK, buildTree, liveTreeOf, manifest } from './tree.js';

/**
 * One resource of an app (server/application/application.go): GET …/resource (the live manifest), GET
 * …/resource/actions (ListResourceActions) and POST …/resource/actions[/v2] (RunResourceAction, deprecated, and
 * RunResourceActionV2). Each finds the app as getAppEnforceRBAC does, the resource in its tree (FindNode), and the
 * live object: on a simulated cluster when the app deploys to one, else the manifest the simulator makes up for it.
 */

type Obj = Record<string, any>;

/** ApplicationResourceRequest / ResourceActionRunRequestV2 fields (proto2; required ones checked below). */
interface ResourceRequest {
  name: string;
  namespace?: string;
  resourceName?: string;
  version?: string;
  group?: string;
  kind?: string;
  appNamespace?: string;
  project?: string;
}

const RUN_V2_SHAPE: Record<string, GoShape> = {
  name: 'string',
  namespace: 'string',
  resourceName: 'string',
  version: 'string',
  group: 'string',
  kind: 'string',
  action: 'string',
  appNamespace: 'string',
  project: 'string',
  resourceActionParameters: {
    array: { goType: 'application.ResourceActionParameters', fields: { name: 'string', value: 'string' } },
  },
};

/**
 * The gateway hands the request to the gRPC server through a client connection, and gogo's Marshal refuses a
 * proto2 message whose required field is unset, last field first: gRPC Internal, HTTP 500.
 */
function requireFields(request: Record<string, unknown>, fields: string[]): void {
  for (const f of fields)
    if (typeof request[f] !== 'string')
      throw new SimApiError(GrpcCode.Internal, `grpc: error while marshaling: proto: required field "${f}" not set`);
}

function queryRequest(req: ApiRequest): ResourceRequest {
  const q = (k: string) => req.query.get(k) ?? undefined;
  const request: ResourceRequest = {
    name: req.params.name,
    namespace: q('namespace'),
    resourceName: q('resourceName'),
    version: q('version'),
    group: q('group'),
    kind: q('kind'),
    appNamespace: q('appNamespace'),
    project: q('project'),
  };
  requireFields(request as unknown as Record<string, unknown>, ['kind', 'version', 'resourceName']);
  return request;
}

/** What the app controller's cluster cache has for the resource, and the object kubectl would get. */
function liveResource(
  req: ApiRequest,
  r: ResourceRequest,
  rbacAction: string,
): { app: Application; node: ResourceNode; obj: Obj } {
  const app = findApp(req, r.name, r.project || undefined, r.appNamespace || undefined, rbacAction);
  const live = liveTreeOf(req);
  const tree = buildTree(req.store.name, app, live);
  const [group, namespace] = [r.group ?? '', r.namespace ?? ''];
  const node = tree.nodes.find(
    (n) =>
      (n.group ?? '') === group && n.kind === r.kind && (n.namespace ?? '') === namespace && n.name === r.resourceName,
  );
  if (!node?.uid)
    throw new SimApiError(
      GrpcCode.InvalidArgument,
      `${r.kind} ${group} ${r.resourceName} not found as part of application ${r.name}`,
    );
  const onCluster = live?.objects.get(live.store, app, node);
  const managed = app.status?.resources?.find(
    (s) =>
      (s.group ?? '') === group && s.kind === node.kind && (s.namespace ?? '') === namespace && s.name === node.name,
  );
  const obj: Obj = onCluster
    ? structuredClone(onCluster)
    : managed
      ? manifest(app, managed, true)
      : {
          apiVersion: group ? `${group}/${node.version}` : node.version,
          kind: node.kind,
          metadata: { name: node.name, ...(namespace ? { namespace } : {}), uid: node.uid },
        };
  return { app, node, obj };
}

/** diff.HideSecretData: a Secret's values never leave the API server. */
function hideSecretData(obj: Obj): Obj {
  if (obj.kind !== 'Secret' || !obj.data) return obj;
  return { ...obj, data: Object.fromEntries(Object.keys(obj.data).map((k) => [k, SECRET_MASK])) };
}

export function getResource(req: ApiRequest): RouteResult {
  const { obj } = liveResource(req, queryRequest(req), 'get');
  return { json: { manifest: JSON.stringify(hideSecretData(obj)) } };
}

/** `actions` is omitempty: a kind without a discovery script answers `{}`. */
export function listResourceActions(req: ApiRequest): RouteResult {
  const r = queryRequest(req);
  const { obj } = liveResource(req, r, 'get');
  let actions;
  try {
    actions = discoverActions(r.group, r.kind!, obj);
  } catch (error) {
    if (!(error instanceof LuaError)) throw error;
    throw new SimApiError(
      GrpcCode.Unknown,
      `error getting available actions: error executing Lua discovery script: ${error.message}`,
      500,
    );
  }
  return { json: actions.length ? { actions } : {} };
}

/** POST …/resource/actions (deprecated): the body is the action name as a JSON string, the rest is the query. */
export function runResourceActionV1(req: ApiRequest): RouteResult {
  const body = parseJsonBody(req, 'string');
  return runAction(req, body, () => {
    if (typeof body !== 'string')
      throw new SimApiError(
        GrpcCode.InvalidArgument,
        `json: cannot unmarshal ${Array.isArray(body) ? 'array' : typeof body} into Go value of type string`,
      );
    const q = (k: string) => req.query.get(k) ?? undefined;
    const request = {
      name: req.params.name,
      namespace: q('namespace'),
      resourceName: q('resourceName'),
      version: q('version'),
      group: q('group'),
      kind: q('kind'),
      action: body,
      appNamespace: q('appNamespace'),
      project: q('project'),
    };
    requireFields(request, ['action', 'kind', 'version', 'resourceName']);
    return { request, params: [] };
  });
}

export function runResourceActionV2(req: ApiRequest): RouteResult {
  const body = parseJsonBody(req, 'application.ResourceActionRunRequestV2');
  return runAction(req, body, () => {
    checkGoShape(body, RUN_V2_SHAPE, 'ResourceActionRunRequestV2');
    // Path parameters win over the body's fields.
    const request = { ...(body as Obj), name: req.params.name } as ResourceRequest & { action?: string };
    requireFields(request as unknown as Record<string, unknown>, ['action', 'kind', 'version', 'resourceName']);
    const params = ((body as Obj).resourceActionParameters ?? []) as ResourceActionParameter[];
    return { request, params };
  });
}

/** The API server's name for a kind's objects in its errors (`jobs.batch`): plural resource, then group. */
function resourceName(obj: Obj): string {
  const group = String(obj.apiVersion ?? '').includes('/') ? String(obj.apiVersion).split('/')[0] : '';
  return `${String(obj.kind).toLowerCase()}s${group ? `.${group}` : ''}`;
}

/**
 * What an action asked to create, dry-run first for every one and then for real (RunResourceActionV2: "to
 * reduce the risk of only some of the resources being successfully created"). A name taken already is the API
 * server's AlreadyExists, as create-job's second Job in one minute meets it.
 */
function createImpacted(req: ApiRequest, app: Application, impacts: ImpactedResource[]): void {
  const creates = impacts.filter((i) => i.operation === 'create').map((i) => i.resource);
  const live = req.core.live;
  if (!live) return;
  for (const dryRun of [true, false])
    for (const obj of creates)
      if (live.create(req.store, app, obj, dryRun) === 'exists')
        throw new SimApiError(
          GrpcCode.AlreadyExists,
          `${resourceName(obj)} "${(obj.metadata as Obj).name}" already exists`,
        );
}

/**
 * RunResourceActionV2: RBAC `action/<group>/<kind>/<action>` on the app, the action's script on the live object,
 * then what it asks: the merge patch between the object and its changed copy applied (its status part through the
 * status subresource), new objects created. A disabled action runs all the same: the server never consults
 * discovery. Every call is recorded, refused or not.
 */
function runAction(
  req: ApiRequest,
  body: unknown,
  read: () => { request: ResourceRequest & { action?: string }; params: ResourceActionParameter[] },
): RouteResult {
  const status = (code: number) => recordOperation(req, req.params.name, body, code);
  try {
    const { request, params } = read();
    const action = request.action!;
    const { app, node, obj } = liveResource(req, request, `action/${request.group ?? ''}/${request.kind}/${action}`);
    let impacts: ImpactedResource[];
    try {
      impacts = actionImpacts(request.group, request.kind!, action, obj, { now: req.core.now(), params });
    } catch (error) {
      if (error instanceof ScriptDoesNotExistError)
        throw new SimApiError(GrpcCode.Unknown, `error getting Lua resource action: ${error.message}`, 500);
      if (error instanceof LuaError)
        throw new SimApiError(GrpcCode.Unknown, `error executing Lua resource action: ${error.message}`, 500);
      throw error;
    }
    createImpacted(req, app, impacts);
    for (const impact of impacts.filter((i) => i.operation === 'patch')) {
      const patch = createMergePatch(obj, impact.resource) as Obj;
      // Objects the simulator only makes up (no simulated cluster holds them) have nowhere to keep the change.
      if (Object.keys(patch).length && req.core.live) req.core.live.patch(req.store, app, node, patch);
    }
    req.core.events?.actionRan(req.store, app, req.user, action, `${node.group ?? ''}/${node.kind}/${node.name}`);
    status(200);
    return { json: {} };
  } catch (error) {
    const mapped = toApiError(error);
    status(mapped?.httpStatus ?? 500);
    throw mapped ?? error;
  }
}
