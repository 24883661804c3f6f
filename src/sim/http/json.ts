import type { Application, ResourceStatus } from '../../infra/argocd/types.js';
import { withoutResourceHealth } from '../fields.js';

/**
 * Serialized apps cached by object identity and resourceVersion: a List of 10,000 apps joins
 * cached strings instead of re-serializing (or cloning) every object on every call.
 */
interface CachedJson {
  rv: string | undefined;
  full?: string;
  list?: string;
}

const cache = new WeakMap<object, CachedJson>();
let serializations = 0;

/** How many app serializations ran so far (a cached List adds none): for tests and benchmarks. */
export function appJsonSerializations(): number {
  return serializations;
}

function entry(app: Application): CachedJson {
  let e = cache.get(app);
  if (!e || e.rv !== app.metadata.resourceVersion) {
    e = { rv: app.metadata.resourceVersion };
    cache.set(app, e);
  }
  return e;
}

/** As Get, Watch and Sync return it: resource health filled in. */
export function appJsonFull(app: Application): string {
  const e = entry(app);
  if (e.full === undefined) {
    serializations++;
    e.full = JSON.stringify(app);
  }
  return e.full;
}

/** As List returns it: since v3.0 `status.resources[].health` is absent (not persisted in the CR). */
export function appJsonList(app: Application): string {
  const e = entry(app);
  if (e.list === undefined) {
    const resources = app.status?.resources;
    if (resources?.some((r) => r.health)) serializations++;
    e.list = resources?.some((r) => r.health)
      ? JSON.stringify({
          ...app,
          status: { ...app.status, resources: resources.map((r) => withoutResourceHealth(r) as ResourceStatus) },
        })
      : appJsonFull(app);
  }
  return e.list;
}
