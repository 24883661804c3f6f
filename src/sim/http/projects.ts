import { createHash } from 'node:crypto';
import type { AppProject } from '../../infra/argocd/types.js';
import type { InstanceStore } from '../store.js';
import type { ApiRequest, RouteResult } from './context.js';
import { GrpcCode, SimApiError } from './errors.js';
import { allowed, enforce } from './rbac.js';

const CONTROL_PLANE_NAMESPACE = 'argocd';

/**
 * The project Argo CD's API server creates at start when none is named `default`
 * (server/server.go initializeDefaultProject): every repo, every destination, every cluster resource.
 */
function permissiveProject(name: string, created: string): AppProject {
  const h = createHash('sha1').update(`project:${name}`).digest('hex');
  return {
    metadata: {
      name,
      namespace: CONTROL_PLANE_NAMESPACE,
      uid: `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`,
      resourceVersion: '1',
      generation: 1,
      creationTimestamp: created,
    },
    spec: {
      sourceRepos: ['*'],
      destinations: [{ server: '*', namespace: '*' }],
      clusterResourceWhitelist: [{ group: '*', kind: '*' }],
    },
    status: {},
  };
}

/** The instance's projects by name: the fixture's, `default`, and any project an app names. */
export function projectsOf(store: InstanceStore, created: string): Map<string, AppProject> {
  const out = new Map(store.projects);
  const names = new Set(['default']);
  for (const app of store.apps.values()) names.add(app.spec.project || 'default');
  for (const name of names) if (!out.has(name)) out.set(name, permissiveProject(name, created));
  return out;
}

const created = (req: ApiRequest) =>
  new Date(req.core.now().getTime() - 86_400_000).toISOString().replace(/\.\d{3}Z$/, 'Z');

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
  if (!project) throw new SimApiError(GrpcCode.NotFound, `appprojects.argoproj.io "${name}" not found`);
  return { json: project };
}
