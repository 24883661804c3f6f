import type { Application } from './types.js';

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
