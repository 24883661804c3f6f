import { GrpcCode, SimApiError } from './errors.js';

/** RFC 7386 JSON Merge Patch: objects merge recursively, `null` deletes, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!patch || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const base: Record<string, unknown> =
    target && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [key, value] of Object.entries(patch as Record<string, unknown>)) {
    if (value === null) delete base[key];
    else base[key] = mergePatch(base[key], value);
  }
  return base;
}

export interface JsonPatchOp {
  op: string;
  path: string;
  value?: unknown;
  from?: string;
}

function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw patchError(`invalid JSON pointer "${path}"`);
  return path
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function patchError(message: string) {
  return new SimApiError(GrpcCode.InvalidArgument, message);
}

/** RFC 6902 JSON Patch (add, remove, replace, test, copy, move) applied to a copy of `doc`. */
export function jsonPatch(doc: unknown, ops: JsonPatchOp[]): unknown {
  if (!Array.isArray(ops)) throw patchError('json: cannot unmarshal object into Go value of type jsonpatch.Patch');
  let root = structuredClone(doc);
  const parentOf = (segments: string[], op: string) => {
    let node: unknown = root;
    for (const seg of segments.slice(0, -1)) {
      node = Array.isArray(node) ? node[Number(seg)] : (node as Record<string, unknown> | undefined)?.[seg];
      if (node === undefined || node === null || typeof node !== 'object')
        throw patchError(
          `${op} operation does not apply: doc is missing path: "/${segments.join('/')}": missing value`,
        );
    }
    return node as Record<string, unknown> | unknown[];
  };
  const get = (segments: string[]): unknown => {
    let node: unknown = root;
    for (const seg of segments) {
      if (node === null || typeof node !== 'object') return undefined;
      node = Array.isArray(node) ? node[Number(seg)] : (node as Record<string, unknown>)[seg];
    }
    return node;
  };
  const remove = (segments: string[], op: string) => {
    const parent = parentOf(segments, op);
    const last = segments[segments.length - 1];
    if (Array.isArray(parent)) {
      const idx = Number(last);
      if (!(idx >= 0 && idx < parent.length))
        throw patchError(`${op} operation does not apply: doc is missing path: "/${segments.join('/')}"`);
      return parent.splice(idx, 1)[0];
    }
    if (!(last in parent))
      throw patchError(`${op} operation does not apply: doc is missing path: "/${segments.join('/')}": missing value`);
    const old = parent[last];
    delete parent[last];
    return old;
  };
  const add = (segments: string[], value: unknown, op: string) => {
    if (!segments.length) {
      root = value;
      return;
    }
    const parent = parentOf(segments, op);
    const last = segments[segments.length - 1];
    if (Array.isArray(parent)) {
      const idx = last === '-' ? parent.length : Number(last);
      if (!(idx >= 0 && idx <= parent.length)) throw patchError(`${op} operation does not apply: index out of range`);
      parent.splice(idx, 0, value);
    } else parent[last] = value;
  };
  for (const op of ops) {
    const segments = pointer(op.path);
    switch (op.op) {
      case 'add':
        add(segments, structuredClone(op.value), 'add');
        break;
      case 'remove':
        remove(segments, 'remove');
        break;
      case 'replace': {
        if (get(segments) === undefined)
          throw patchError(
            `replace operation does not apply: doc is missing key: /${segments.join('/')}: missing value`,
          );
        if (!segments.length) root = structuredClone(op.value);
        else {
          const parent = parentOf(segments, 'replace');
          const last = segments[segments.length - 1];
          if (Array.isArray(parent)) parent[Number(last)] = structuredClone(op.value);
          else parent[last] = structuredClone(op.value);
        }
        break;
      }
      case 'test':
        if (JSON.stringify(get(segments)) !== JSON.stringify(op.value))
          throw patchError(`testing value /${segments.join('/')} failed: test failed`);
        break;
      case 'copy':
        add(segments, structuredClone(get(pointer(op.from ?? ''))), 'copy');
        break;
      case 'move':
        add(segments, remove(pointer(op.from ?? ''), 'move'), 'move');
        break;
      default:
        throw patchError(`Unexpected kind: ${op.op}`);
    }
  }
  return root;
}

/**
 * RFC 7386 patch that turns `from` into `to` (jsonpatch.CreateMergePatch, as Argo CD's RunResourceActionV2 builds
 * it from the live object and the action's result): changed fields, `null` for removed ones, arrays whole.
 */
export function createMergePatch(from: unknown, to: unknown): unknown {
  const isMap = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
  if (!isMap(from) || !isMap(to)) return to;
  const patch: Record<string, unknown> = {};
  for (const key of Object.keys(from)) if (!(key in to)) patch[key] = null;
  for (const [key, value] of Object.entries(to)) {
    if (!(key in from)) patch[key] = value;
    else if (isMap(from[key]) && isMap(value)) {
      const inner = createMergePatch(from[key], value) as Record<string, unknown>;
      if (Object.keys(inner).length) patch[key] = inner;
    } else if (JSON.stringify(from[key]) !== JSON.stringify(value)) patch[key] = value;
  }
  return patch;
}
