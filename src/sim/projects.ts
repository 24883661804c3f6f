import { createHash } from 'node:crypto';
import type { AppProject, Application, SyncWindow } from '../infra/argocd/types.js';
import { SyncWindowError, canSync, canonicalWindow, windowsFor } from '../infra/argocd/sync-windows.js';
import type { InstanceStore } from './store.js';

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

/**
 * The instance's projects by name: the fixture's, `default`, and any project an app names. A project the
 * fixture does not hold is made once (permissive, as Argo CD's default) and kept, so it can be updated.
 */
export function projectsOf(store: InstanceStore, created: string): Map<string, AppProject> {
  const names = new Set(['default']);
  for (const app of store.apps.values()) names.add(app.spec.project || 'default');
  for (const name of names) if (!store.projects.has(name)) store.projects.set(name, permissiveProject(name, created));
  return store.projects;
}

/** How Argo CD serializes a project it stored: each sync window in its Go form, an empty list left out. */
export function storedSpec(spec: AppProject['spec']): AppProject['spec'] {
  const out = { ...spec };
  if (out.syncWindows?.length) out.syncWindows = out.syncWindows.map(canonicalWindow);
  else delete out.syncWindows;
  return out;
}

/** What the sync windows of the app's project say about a sync starting (or running) now. */
export type WindowVerdict = { allowed: true } | { allowed: false; invalid?: string };

export function syncWindowVerdict(
  store: InstanceStore,
  app: Application,
  attempt: { manual: boolean; at: Date; operationStartedAt?: Date },
): WindowVerdict {
  const windows: SyncWindow[] | undefined = store.projects.get(app.spec.project || 'default')?.spec.syncWindows;
  if (!windows?.length) return { allowed: true };
  try {
    return canSync(windowsFor(windows, app), attempt) ? { allowed: true } : { allowed: false };
  } catch (error) {
    if (error instanceof SyncWindowError) return { allowed: false, invalid: error.message };
    throw error;
  }
}

/** Marks the deny windows the faults API writes (POST /_sim/faults `syncWindow`), so it can take them back. */
export const FAULT_WINDOW_DESCRIPTION = 'simulator fault: syncWindow';
