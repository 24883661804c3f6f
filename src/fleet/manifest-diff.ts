import type { ResourceDiff } from '../infra/argocd/types.js';

/**
 * What `argocd app diff` shows, from the managed-resources answer, as field-level changes instead of a
 * unified diff. Like the CLI (cmd/argocd/commands/app_diff.go compareManifests), it compares the
 * normalized live state with the predicted live state, the live object with git's fields applied
 * and the app's ignoreDifferences and normalizers honoured (the server computed both); a resource
 * with both states counts only when the server says it is modified; one with only a live state is
 * not in git, one with only a target state is not in the cluster. Hooks are not part of the diff.
 */

/** What Argo CD shows for a Secret value (gitops-engine HideSecretData); rollcall shows nothing more. */
export const SECRET_MASK = '++++++++';

export interface FieldChange {
  path: string;
  op: 'changed' | 'added' | 'removed';
  /** Compact rendering of the old value (live), cut to VALUE_MAX. */
  from?: string;
  /** Compact rendering of the new value (what a sync makes it), cut to VALUE_MAX. */
  to?: string;
}

export interface ResourceChange {
  group: string;
  kind: string;
  namespace: string;
  name: string;
  /** modified: live differs from git; create: in git, not in the cluster; prune: in the cluster only, and a sync with prune deletes it; extraneous: in the cluster only, kept (Prune=false or not tracked for pruning). */
  change: 'modified' | 'create' | 'prune' | 'extraneous';
  /** For `modified`: the first FIELDS_MAX changes, in path order. */
  fields: FieldChange[];
  fieldsTotal: number;
}

const VALUE_MAX = 80;
const FIELDS_MAX = 20;

/** Fields the API server sets: never a difference worth showing, and absent from git's side when the server sent no prediction. */
const SERVER_SET = new Set([
  'metadata.resourceVersion',
  'metadata.uid',
  'metadata.creationTimestamp',
  'metadata.generation',
  'metadata.managedFields',
  'metadata.selfLink',
  'status',
]);
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function parseState(state: string | undefined): Record<string, Json> | undefined {
  if (!state || state === 'null') return undefined;
  try {
    const parsed = JSON.parse(state) as Json;
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

const isObject = (v: Json | undefined): v is { [k: string]: Json } =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function segment(key: string): string {
  return /^[A-Za-z_$][\w$-]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

/** Lists of named objects (containers, env, ports, volumes) are compared by name, as a reader thinks of them. */
function byName(list: Json[]): Map<string, Json> | undefined {
  const out = new Map<string, Json>();
  for (const item of list) {
    if (!isObject(item) || typeof item.name !== 'string' || out.has(item.name)) return undefined;
    out.set(item.name, item);
  }
  return out;
}

/** One line: a plain string as is, anything else (an empty or multi-line string, an object) as JSON. */
function compact(v: Json | undefined): string {
  const text = typeof v === 'string' && v && !/[\n\r]/.test(v) ? v : JSON.stringify(v);
  return text.length > VALUE_MAX ? `${text.slice(0, VALUE_MAX - 1)}…` : text;
}

function walk(path: string, from: Json | undefined, to: Json | undefined, out: FieldChange[]): void {
  if (SERVER_SET.has(path.replace(/^\./, ''))) return;
  if (from === undefined && to === undefined) return;
  if (from === undefined) return void out.push({ path, op: 'added', to: compact(to) });
  if (to === undefined) return void out.push({ path, op: 'removed', from: compact(from) });
  if (isObject(from) && isObject(to)) {
    for (const k of [...new Set([...Object.keys(from), ...Object.keys(to)])].sort())
      walk(`${path}${segment(k)}`, from[k], to[k], out);
    return;
  }
  if (Array.isArray(from) && Array.isArray(to)) {
    const a = byName(from);
    const b = byName(to);
    if (a && b) {
      for (const k of [...new Set([...a.keys(), ...b.keys()])]) walk(`${path}[${k}]`, a.get(k), b.get(k), out);
    } else {
      for (let i = 0; i < Math.max(from.length, to.length); i++) walk(`${path}[${i}]`, from[i], to[i], out);
    }
    return;
  }
  if (JSON.stringify(from) !== JSON.stringify(to))
    out.push({ path, op: 'changed', from: compact(from), to: compact(to) });
}

/**
 * Secret values never show, whatever the server sent: every value under data and stringData, and the
 * last-applied annotation that repeats them, become the mask. A changed value still shows as changed.
 */
function maskSecret(obj: Record<string, Json> | undefined): Record<string, Json> | undefined {
  if (!obj) return obj;
  const copy = structuredClone(obj);
  for (const field of ['data', 'stringData']) {
    const data = copy[field];
    if (isObject(data)) for (const k of Object.keys(data)) data[k] = SECRET_MASK;
  }
  const meta = copy.metadata;
  if (isObject(meta) && isObject(meta.annotations) && LAST_APPLIED in meta.annotations)
    meta.annotations[LAST_APPLIED] = SECRET_MASK;
  return copy;
}

function secretFieldChanges(
  path: string,
  live: Record<string, Json>,
  predicted: Record<string, Json>,
  rawLive: Json | undefined,
  rawPredicted: Json | undefined,
): FieldChange[] {
  const out: FieldChange[] = [];
  walk(path, live[path.slice(1)], predicted[path.slice(1)], out);
  // Masked values compare equal; the server's masks differ in length when the values do.
  const a = isObject(rawLive) ? rawLive : {};
  const b = isObject(rawPredicted) ? rawPredicted : {};
  for (const k of Object.keys(a))
    if (k in b && a[k] !== b[k])
      out.push({ path: `${path}${segment(k)}`, op: 'changed', from: SECRET_MASK, to: SECRET_MASK });
  return out;
}

function fieldChanges(
  kind: string,
  group: string,
  live: Record<string, Json>,
  predicted: Record<string, Json>,
): FieldChange[] {
  if (kind !== 'Secret' || group) {
    const out: FieldChange[] = [];
    walk('', live, predicted, out);
    return out.map((c) => ({ ...c, path: c.path.replace(/^\./, '') }));
  }
  const maskedLive = maskSecret(live)!;
  const maskedPredicted = maskSecret(predicted)!;
  const out: FieldChange[] = [];
  for (const k of [...new Set([...Object.keys(maskedLive), ...Object.keys(maskedPredicted)])].sort()) {
    if (k === 'data' || k === 'stringData')
      out.push(...secretFieldChanges(`.${k}`, maskedLive, maskedPredicted, live[k], predicted[k]));
    else walk(segment(k), maskedLive[k], maskedPredicted[k], out);
  }
  return out.map((c) => ({ ...c, path: c.path.replace(/^\./, '') }));
}

export interface DiffOptions {
  /** `status.resources[].requiresPruning` by `group/kind/namespace/name`: a resource only in the cluster that a sync with prune deletes. */
  requiresPruning?: (key: string) => boolean;
}

export const resourceKey = (r: { group?: string; kind: string; namespace?: string; name: string }) =>
  `${r.group ?? ''}/${r.kind}/${r.namespace ?? ''}/${r.name}`;

/** The resources whose live state differs from git, sorted by group/kind/namespace/name as the CLI prints them. */
export function manifestDiff(items: readonly ResourceDiff[], opts: DiffOptions = {}): ResourceChange[] {
  const out: ResourceChange[] = [];
  for (const item of items) {
    if (item.hook) continue;
    const live = parseState(item.normalizedLiveState ?? item.liveState);
    const target = parseState(item.targetState);
    const predicted = parseState(item.predictedLiveState) ?? target;
    const base = { group: item.group ?? '', kind: item.kind, namespace: item.namespace ?? '', name: item.name };
    if (!live && !target) continue;
    if (!live) {
      out.push({ ...base, change: 'create', fields: [], fieldsTotal: 0 });
      continue;
    }
    if (!target) {
      out.push({
        ...base,
        change: opts.requiresPruning?.(resourceKey(base)) === false ? 'extraneous' : 'prune',
        fields: [],
        fieldsTotal: 0,
      });
      continue;
    }
    if (!item.modified) continue;
    const fields = fieldChanges(base.kind, base.group, live, predicted ?? {});
    out.push({ ...base, change: 'modified', fields: fields.slice(0, FIELDS_MAX), fieldsTotal: fields.length });
  }
  return out.sort((a, b) => (resourceKey(a) < resourceKey(b) ? -1 : resourceKey(a) > resourceKey(b) ? 1 : 0));
}
