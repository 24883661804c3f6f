import type { Application } from '../infra/argocd/types.js';

/**
 * `fields=` projections as Argo CD applies them.
 *
 * List (server/application/forwarder_overwrite.go) does not walk JSON: it has a fixed map of
 * supported paths, so anything else is silently dropped, and a leading `-` means "every supported
 * path except these". Getters for map/pointer fields return Go typed-nils, which encode as `null`
 * (e.g. `"labels": null` for an app without labels) rather than being left out.
 */
type Getter = (app: Application) => unknown;

const opState = (app: Application) => app.status?.operationState;

export const LIST_FIELD_GETTERS: ReadonlyMap<string, Getter> = new Map<string, Getter>([
  ['metadata.name', (a) => a.metadata.name],
  ['metadata.namespace', (a) => a.metadata.namespace ?? ''],
  ['metadata.annotations', (a) => a.metadata.annotations ?? null],
  ['metadata.labels', (a) => a.metadata.labels ?? null],
  ['metadata.creationTimestamp', (a) => a.metadata.creationTimestamp ?? null],
  ['metadata.deletionTimestamp', (a) => a.metadata.deletionTimestamp ?? null],
  ['spec', (a) => a.spec],
  ['spec.destination', (a) => a.spec.destination],
  ['spec.project', (a) => a.spec.project],
  ['spec.source', (a) => a.spec.source ?? null],
  ['spec.sources', (a) => a.spec.sources ?? null],
  ['spec.sourceHydrator', (a) => (a.spec.sourceHydrator as unknown) ?? null],
  ['spec.syncPolicy', (a) => a.spec.syncPolicy ?? null],
  ['status.sourceHydrator', (a) => (a.status?.sourceHydrator as unknown) ?? {}],
  ['status.sync.status', (a) => a.status?.sync?.status ?? ''],
  ['status.sync.revision', (a) => a.status?.sync?.revision ?? ''],
  ['status.health', (a) => a.status?.health ?? {}],
  ['status.summary', (a) => a.status?.summary ?? {}],
  ['status.operationState.startedAt', (a) => (opState(a) ? opState(a)!.startedAt : undefined)],
  ['status.operationState.finishedAt', (a) => (opState(a) ? (opState(a)!.finishedAt ?? null) : undefined)],
  ['status.operationState.phase', (a) => (opState(a) ? opState(a)!.phase : undefined)],
  // Argo CD's getter for this path returns syncResult, not the operation's sync (a quirk of the server).
  ['status.operationState.operation.sync', (a) => (opState(a) ? (opState(a)!.syncResult ?? null) : undefined)],
  [
    'status.resources',
    (a) => (a.status?.resources?.length ? a.status.resources.map(withoutResourceHealth) : undefined),
  ],
  ['operation.sync', (a) => (a.operation ? (a.operation.sync ?? null) : undefined)],
]);

export interface FieldSelection {
  fields: Set<string>;
  exclude: boolean;
}

/** Parses the `fields` query value (one comma-separated value, as the forwarder reads it). */
export function parseFields(value: string | null | undefined): FieldSelection | undefined {
  if (!value) return undefined;
  const exclude = value.startsWith('-');
  const list = (exclude ? value.slice(1) : value).split(',').map((f) => f.trim());
  return { fields: new Set(list.filter(Boolean)), exclude };
}

/** One List item under a fields selection (paths are matched with their `items.` prefix). */
export function projectListItem(app: Application, sel: FieldSelection): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [path, get] of LIST_FIELD_GETTERS) {
    if (sel.fields.has(`items.${path}`) === sel.exclude) continue;
    const value = get(app);
    if (value === undefined) continue;
    const parts = path.split('.');
    let node = out;
    for (let i = 0; i < parts.length - 1; i++) {
      const next = node[parts[i]];
      if (next === undefined || next === null || typeof next !== 'object') node[parts[i]] = {};
      node = node[parts[i]] as Record<string, unknown>;
    }
    const last = parts[parts.length - 1];
    // `spec` and `spec.destination` both selected: merge rather than overwrite.
    const existing = node[last];
    node[last] =
      existing && typeof existing === 'object' && value && typeof value === 'object' && !Array.isArray(value)
        ? { ...(value as object), ...(existing as object) }
        : value;
  }
  return out;
}

/** Since v3.0 resource health is not persisted; List returns resources without it (B6). */
export function withoutResourceHealth<T extends { health?: unknown }>(resource: T): Omit<T, 'health'> {
  if (!('health' in resource)) return resource;
  const { health: _health, ...rest } = resource;
  return rest;
}

/**
 * The generic stream filter of argoproj/pkg grpc/http: paths over the JSON of each message
 * (`result.type`, `result.application.metadata.name`). Include mode keeps only those paths,
 * `-` mode deletes them. Arrays are walked element by element.
 */
export function filterJsonPaths(value: unknown, sel: FieldSelection): unknown {
  const paths = [...sel.fields].map((p) => p.split('.'));
  if (sel.exclude) {
    const copy = structuredClone(value);
    for (const p of paths) deletePath(copy, p);
    return copy;
  }
  const out: Record<string, unknown> = {};
  for (const p of paths) copyPath(value, out, p);
  return out;
}

function copyPath(src: unknown, dst: Record<string, unknown>, path: string[]): void {
  if (!src || typeof src !== 'object' || Array.isArray(src)) return;
  const [head, ...rest] = path;
  const value = (src as Record<string, unknown>)[head];
  if (value === undefined) return;
  if (!rest.length) {
    dst[head] = value;
    return;
  }
  if (Array.isArray(value)) {
    const existing = (Array.isArray(dst[head]) ? dst[head] : value.map(() => ({}))) as Record<string, unknown>[];
    value.forEach((el, i) => copyPath(el, existing[i], rest));
    dst[head] = existing;
    return;
  }
  if (value && typeof value === 'object') {
    const child = (dst[head] && typeof dst[head] === 'object' ? dst[head] : {}) as Record<string, unknown>;
    copyPath(value, child, rest);
    dst[head] = child;
  }
}

function deletePath(node: unknown, path: string[]): void {
  if (!node || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (const el of node) deletePath(el, path);
    return;
  }
  const [head, ...rest] = path;
  const obj = node as Record<string, unknown>;
  if (!rest.length) delete obj[head];
  else deletePath(obj[head], rest);
}
