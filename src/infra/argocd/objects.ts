import type { Application, ApplicationSource, RevisionHistory } from './types.js';

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
