import type { Application, ApplicationSource, Cluster, RevisionHistory } from './types.js';

/**
 * Facts about Argo CD objects that the fleet and the simulator must agree on. Pure functions over the
 * API's JSON shapes, so the simulator can share them without depending on the rest of rollcall.
 */

/** The ApplicationSet that generated an app: its ownerReference of kind ApplicationSet. */
export function ownerAppSet(app: Application): string | undefined {
  return app.metadata.ownerReferences?.find((o) => o.kind === 'ApplicationSet')?.name;
}

/** Argo CD compares cluster server URLs without a trailing slash. */
export function normalizeServer(server: string): string {
  return server.replace(/\/+$/, '');
}

/** The cluster of an app is the Argo CD cluster name: destination.name, else resolved from server, else the URL. */
export function clusterNameOf(app: Application, clusterNameByServer: ReadonlyMap<string, string>): string {
  const dest = app.spec?.destination ?? {};
  if (dest.name) return dest.name;
  if (dest.server) {
    const server = normalizeServer(dest.server);
    // Argo CD always knows its own cluster as in-cluster, whether or not the cluster list shows it.
    return (
      clusterNameByServer.get(server) ?? (server === 'https://kubernetes.default.svc' ? 'in-cluster' : dest.server)
    );
  }
  return 'unknown';
}

/** Cluster names by normalized server URL, the lookup clusterNameOf resolves `destination.server` through. */
export function clusterIndex(clusters: readonly Cluster[]): Map<string, string> {
  const index = new Map<string, string>();
  for (const c of clusters) if (c.server) index.set(normalizeServer(c.server), c.name || c.server);
  return index;
}

function pinnedImages(s: ApplicationSource | undefined): string[] {
  if (!s) return [];
  // Typed loosely in ApplicationSource: kustomize.images is string[], helm.parameters is [{name, value}].
  const kustomize = Array.isArray(s.kustomize?.images)
    ? (s.kustomize.images as unknown[]).filter((i): i is string => typeof i === 'string')
    : [];
  const parameters = Array.isArray(s.helm?.parameters)
    ? (s.helm.parameters as { name?: unknown; value?: unknown }[])
    : [];
  const helm = parameters
    .filter((p) => typeof p.name === 'string' && /(^|\.)image(\.tag)?$/.test(p.name))
    .map((p) => `${String(p.name)}=${String(p.value)}`);
  return [...kustomize, ...helm];
}

/**
 * The images a history entry pinned through its source(s): kustomize images and helm image parameters.
 * Argo CD records no image list per deployment; images that only the manifests at that revision name are
 * not here.
 */
export function historyImages(h: Pick<RevisionHistory, 'source' | 'sources'>): string[] {
  return (h.sources ?? (h.source ? [h.source] : [])).flatMap(pinnedImages);
}
