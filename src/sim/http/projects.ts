import { isDeepStrictEqual } from 'node:util';
import type { AppProject } from '../../infra/argocd/types.js';
import { projectWindowsProblem } from '../../infra/argocd/sync-windows.js';
import { projectsOf, storedSpec } from '../projects.js';
import { parseJsonBody, recordOperation, type ApiRequest, type RouteResult } from './context.js';
import { GrpcCode, SimApiError, toApiError } from './errors.js';
import { allowed, enforce } from './rbac.js';

const created = (req: ApiRequest) =>
  new Date(req.core.now().getTime() - 86_400_000).toISOString().replace(/\.\d{3}Z$/, 'Z');

const projectNotFound = (name: string) =>
  new SimApiError(GrpcCode.NotFound, `appprojects.argoproj.io "${name}" not found`);

/** GET /api/v1/projects (server/project/project.go List): the projects the token may get, by name. */
export function listProjects(req: ApiRequest): RouteResult {
  const items = [...projectsOf(req.store, created(req)).values()]
    .filter((p) => allowed(req.account, 'projects', 'get', p.metadata.name))
    .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
  return { json: { metadata: { resourceVersion: String(req.store.resourceVersion) }, items } };
}

/** GET /api/v1/projects/{name} (Get): RBAC first, then the Kubernetes NotFound wording. */
export function getProject(req: ApiRequest): RouteResult {
  const name = req.params.name;
  enforce(req.account, 'projects', 'get', name);
  const project = projectsOf(req.store, created(req)).get(name);
  if (!project) throw projectNotFound(name);
  return { json: project };
}

const GRPC_OF_PROBLEM = {
  AlreadyExists: GrpcCode.AlreadyExists,
  Unknown: GrpcCode.Unknown,
  OutOfRange: GrpcCode.OutOfRange,
} as const;

/**
 * PUT /api/v1/projects/{project.metadata.name} (Update, body ProjectUpdateRequest `{project}`), what
 * `argocd proj windows add|delete|update` send after a GET: RBAC `projects, update`, ValidateProject (sync
 * windows: duplicates, Validate, a scope), then the Kubernetes update, whose resourceVersion check is the
 * optimistic concurrency: a stale one is a Conflict (gRPC Aborted, HTTP 409), a missing one Invalid.
 */
export function updateProject(req: ApiRequest): RouteResult {
  const name = req.params.name;
  const body = parseJsonBody(req, 'project.ProjectUpdateRequest') as { project?: AppProject | null };
  const record = (status: number) => recordOperation(req, undefined, body, status);
  try {
    const incoming = body.project;
    if (!incoming || typeof incoming !== 'object')
      throw new SimApiError(GrpcCode.InvalidArgument, "missing payload 'project' in request");
    enforce(req.account, 'projects', 'update', name);
    const problem = projectWindowsProblem(incoming.spec?.syncWindows);
    if (problem) throw new SimApiError(GRPC_OF_PROBLEM[problem.code], problem.message);
    const current = projectsOf(req.store, created(req)).get(name);
    if (!current) throw projectNotFound(name);
    const rv = incoming.metadata?.resourceVersion;
    if (!rv)
      throw new SimApiError(
        GrpcCode.InvalidArgument,
        `AppProject.argoproj.io "${name}" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update`,
      );
    if (rv !== current.metadata.resourceVersion)
      throw new SimApiError(
        GrpcCode.Aborted,
        `Operation cannot be fulfilled on appprojects.argoproj.io "${name}": the object has been modified; please apply your changes to the latest version and try again`,
      );
    const spec = storedSpec(incoming.spec ?? {});
    const changed = !isDeepStrictEqual(spec, current.spec);
    const next: AppProject = {
      ...incoming,
      metadata: {
        ...incoming.metadata,
        // The path names the project; the API server owns these.
        name,
        namespace: current.metadata.namespace,
        uid: current.metadata.uid,
        creationTimestamp: current.metadata.creationTimestamp,
        generation: (current.metadata.generation ?? 1) + (changed ? 1 : 0),
      },
      spec,
      status: incoming.status ?? current.status,
    };
    const stored = req.store.putProject(next);
    record(200);
    return { json: stored };
  } catch (error) {
    const mapped = toApiError(error);
    record(mapped?.httpStatus ?? 500);
    throw mapped ?? error;
  }
}
