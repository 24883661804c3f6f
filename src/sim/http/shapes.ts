import { GrpcCode, SimApiError } from './errors.js';

/**
 * Type checks that reproduce Go's encoding/json decode errors for request bodies. grpc-gateway
 * turns them into InvalidArgument (HTTP 400) with the decoder's message, e.g. a bare-array
 * `syncOptions` gives "json: cannot unmarshal array into Go struct field
 * ApplicationSyncRequest.syncOptions of type application.SyncOptions". Unknown fields are ignored,
 * as encoding/json does (so swagger's `hook.syncStrategyApply.force` is accepted and has no effect).
 */
export type GoShape =
  | 'string'
  | 'bool'
  | 'int64'
  | { array: GoShape; goType?: string }
  | { goType: string; fields: Record<string, GoShape> };

const STRATEGY_FORCE: GoShape = { goType: 'v1alpha1.SyncStrategyApply', fields: { force: 'bool' } };

export const SYNC_REQUEST_SHAPE: Record<string, GoShape> = {
  name: 'string',
  appNamespace: 'string',
  project: 'string',
  revision: 'string',
  revisions: { array: 'string' },
  sourcePositions: { array: 'int64' },
  prune: 'bool',
  dryRun: 'bool',
  strategy: {
    goType: 'v1alpha1.SyncStrategy',
    fields: { apply: STRATEGY_FORCE, hook: { goType: 'v1alpha1.SyncStrategyHook', fields: { force: 'bool' } } },
  },
  resources: {
    array: {
      goType: 'v1alpha1.SyncOperationResource',
      fields: { group: 'string', kind: 'string', name: 'string', namespace: 'string' },
    },
  },
  syncOptions: { goType: 'application.SyncOptions', fields: { items: { array: 'string' } } },
  retryStrategy: {
    goType: 'v1alpha1.RetryStrategy',
    fields: {
      limit: 'int64',
      refresh: 'bool',
      backoff: { goType: 'v1alpha1.Backoff', fields: { duration: 'string', factor: 'int64', maxDuration: 'string' } },
    },
  },
  infos: { array: { goType: 'v1alpha1.Info', fields: { name: 'string', value: 'string' } } },
  manifests: { array: 'string' },
};

export const ROLLBACK_REQUEST_SHAPE: Record<string, GoShape> = {
  name: 'string',
  id: 'int64',
  dryRun: 'bool',
  prune: 'bool',
  appNamespace: 'string',
  project: 'string',
};

function jsonKind(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'number') return `number ${value}`;
  return typeof value;
}

function goTypeName(shape: GoShape): string {
  if (typeof shape === 'string') return shape;
  if ('array' in shape) return `[]${goTypeName(shape.array)}`;
  return shape.goType;
}

function check(value: unknown, shape: GoShape, path: string): void {
  if (value === null || value === undefined) return;
  const fail = () => {
    const kind = jsonKind(value);
    throw new SimApiError(
      GrpcCode.InvalidArgument,
      `json: cannot unmarshal ${kind.startsWith('number') && shape !== 'int64' ? 'number' : kind} into Go struct field ${path} of type ${goTypeName(shape)}`,
    );
  };
  if (shape === 'string') {
    if (typeof value !== 'string') fail();
  } else if (shape === 'bool') {
    if (typeof value !== 'boolean') fail();
  } else if (shape === 'int64') {
    if (typeof value !== 'number' || !Number.isInteger(value)) fail();
  } else if ('array' in shape) {
    if (!Array.isArray(value)) fail();
    for (const el of value as unknown[]) check(el, shape.array, path);
  } else {
    if (typeof value !== 'object' || Array.isArray(value)) fail();
    for (const [key, sub] of Object.entries(shape.fields))
      check((value as Record<string, unknown>)[key], sub, `${path}.${key}`);
  }
}

/** Checks a request body against its Go struct; `root` names the struct, as in Go's messages. */
export function checkGoShape(body: unknown, fields: Record<string, GoShape>, root: string): void {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new SimApiError(
      GrpcCode.InvalidArgument,
      `json: cannot unmarshal ${jsonKind(body)} into Go value of type application.${root}`,
    );
  }
  for (const [key, shape] of Object.entries(fields))
    check((body as Record<string, unknown>)[key], shape, `${root}.${key}`);
}
