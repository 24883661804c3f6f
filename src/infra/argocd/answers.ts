import { z } from 'zod';

/**
 * What the client checks of a 2xx answer before anyone reads it: only what the code relies on not to
 * misread it (a list's `items`, each item an object that names itself), never every field of an
 * Application. A body that fails the check is not Argo CD's answer (a proxy's page, a cut-off list that
 * still parses, a JSON string); read as the promised shape it would turn into an empty fleet.
 */

/** JSON that is not the shape the endpoint promises; the client makes it an `argocd_bad_response`. */
export class ShapeError extends Error {
  override readonly name = 'ShapeError';
}

/** Checks a parsed body and returns it typed; throws ShapeError. `instance` names the instance in warnings. */
export type AnswerReader<T> = (body: unknown, instance: string) => T;

/** A list as the client hands it on: items never null, and what it skipped of Argo CD's answer, in plain words. */
export interface ReadList<T> {
  metadata: { resourceVersion?: string };
  items: T[];
  /** Set when items were skipped (Argo CD listed a null). */
  warnings?: string[];
}

const anyObject = z.record(z.string(), z.unknown());
const namedObject = z.object({ metadata: z.object({ name: z.string().min(1) }) });
const cluster = z.object({ server: z.string() });

/**
 * `items` must be there: Argo CD marshals its lists with encoding/json, so an empty one is `"items": null`
 * (argocd-facts B7), never a missing key. Only managed-resources omits it when empty (`omitempty`).
 */
const listEnvelope = z.object({ metadata: anyObject.nullish(), items: z.array(z.unknown()).nullable() });
const omittableListEnvelope = z.object({ metadata: anyObject.nullish(), items: z.array(z.unknown()).nullish() });

function check(schema: z.ZodType, body: unknown, what: string): void {
  const result = schema.safeParse(body);
  if (result.success) return;
  const issue = result.error.issues[0];
  const where = issue.path.length ? `${issue.path.join('.')}: ` : '';
  throw new ShapeError(`expected ${what}; ${where}${issue.message.replace(/^Invalid input: /, '')}`);
}

/** An object of any shape (a resource tree, commit metadata): what is inside is optional in Argo CD too. */
export function anObject<T>(what: string): AnswerReader<T> {
  return (body) => {
    check(anyObject, body, what);
    return body as T;
  };
}

/** An Application, ApplicationSet or AppProject: an object with `metadata.name`. */
export function aNamedObject<T>(what: string): AnswerReader<T> {
  return (body) => {
    check(namedObject, body, what);
    return body as T;
  };
}

export type ListItem = 'application' | 'ApplicationSet' | 'AppProject' | 'cluster' | 'event' | 'resource';

const ITEM_ARTICLE: Record<ListItem, string> = {
  application: 'an',
  ApplicationSet: 'an',
  AppProject: 'an',
  cluster: 'a',
  event: 'an',
  resource: 'a',
};

const ITEM_SHAPES: Record<ListItem, { schema: z.ZodType; what: string }> = {
  application: { schema: namedObject, what: 'an object with metadata.name' },
  ApplicationSet: { schema: namedObject, what: 'an object with metadata.name' },
  AppProject: { schema: namedObject, what: 'an object with metadata.name' },
  cluster: { schema: cluster, what: 'an object with server' },
  event: { schema: anyObject, what: 'an object' },
  resource: { schema: anyObject, what: 'an object' },
};

/**
 * Reads a list answer whose items were handed to `eachItem` as they arrived (the client passes it to the
 * transport): `eachItem` checks each item and keeps what `map` makes of it, the reader then checks the rest.
 */
export interface ListReader<T> extends AnswerReader<ReadList<T>> {
  eachItem: (value: unknown, index: number) => unknown;
  /** The list's other top-level fields as they arrive (`onResourceVersion` reads its metadata). */
  eachField: (key: string, value: unknown) => void;
}

export function isListReader<T>(read: AnswerReader<T>): read is AnswerReader<T> & ListReader<unknown> {
  return 'eachItem' in read;
}

/**
 * A list (`{metadata, items}`). A null item is skipped with a warning: one app Argo CD could not
 * serialize must not hide the other 539. Any other item that is not the shape fails the whole answer.
 * `map` makes each checked item into what the list keeps (a leaner copy), before the next item is read.
 */
export function aList<T>(
  item: ListItem,
  opts: {
    itemsOmittedWhenEmpty?: boolean;
    map?: (item: T) => T;
    onResourceVersion?: (resourceVersion: string) => void;
  } = {},
): ListReader<T> {
  const { schema, what } = ITEM_SHAPES[item];
  const { map, onResourceVersion } = opts;
  // Told only a version that reads as one: a metadata of another shape fails the whole answer at its end.
  const eachField = (key: string, value: unknown): void => {
    const version = key === 'metadata' ? (value as { resourceVersion?: unknown } | null)?.resourceVersion : undefined;
    if (typeof version === 'string' && version) onResourceVersion?.(version);
  };
  const eachItem = (value: unknown, i: number): unknown => {
    if (value === null) return null;
    check(schema, value, `items.${i} to be ${what}`);
    return map ? map(value as T) : value;
  };
  const read: AnswerReader<ReadList<T>> = (body, instance) => {
    check(opts.itemsOmittedWhenEmpty ? omittableListEnvelope : listEnvelope, body, 'an object with an items list');
    const list = body as { metadata?: ReadList<T>['metadata'] | null; items?: unknown[] | null };
    const items: T[] = [];
    let nulls = 0;
    for (const value of list.items ?? []) {
      if (value === null) nulls++;
      else items.push(value as T);
    }
    const result: ReadList<T> = { metadata: list.metadata ?? {}, items };
    if (nulls) {
      const listed =
        nulls === 1 ? `${ITEM_ARTICLE[item]} ${item} with no data (null)` : `${nulls} ${item}s with no data (null)`;
      result.warnings = [`Argo CD instance ${instance} listed ${listed}; skipped ${nulls === 1 ? 'it' : 'them'}`];
    }
    return result;
  };
  return Object.assign(read, { eachItem, eachField });
}

const watchResult = z.object({ type: z.enum(['ADDED', 'MODIFIED', 'DELETED']) });

/**
 * `result` of one watch message (B5): `{type, <field>}` where the object names itself. Throws ShapeError:
 * a message that is not an event is a change the stream lost, not one to skip.
 */
export function aWatchEvent<E>(field: 'application' | 'applicationSet'): (result: unknown) => E {
  return (result) => {
    check(watchResult, result, 'a watch event {type, ' + field + '}');
    check(namedObject, (result as Record<string, unknown>)[field], `${field} to be an object with metadata.name`);
    return result as E;
  };
}

const resourceAction = z.object({
  name: z.string().min(1),
  disabled: z.boolean().optional(),
  displayName: z.string().optional(),
  iconClass: z.string().optional(),
  params: z.array(z.object({ name: z.string() })).nullish(),
});
const actionsList = z.object({ actions: z.array(resourceAction).nullish() });

/**
 * GET …/resource/actions (ResourceActionsListResponse): `actions` is left out when there are none (omitempty),
 * and each action names itself; an enabled one carries no `disabled`.
 */
export function aResourceActionList<T>(): AnswerReader<T[]> {
  return (body) => {
    check(actionsList, body, 'an object with an actions list');
    return ((body as { actions?: T[] | null }).actions ?? []) as T[];
  };
}

const manifestAnswer = z.object({ manifest: z.string() });
const kubeObject = z.object({ kind: z.string().min(1), metadata: z.object({ name: z.string().min(1) }) });

/** GET …/resource (ApplicationResourceResponse): `manifest` is the live object as a JSON string. */
export function aLiveManifest<T>(): AnswerReader<T> {
  return (body) => {
    check(manifestAnswer, body, 'an object with a manifest string');
    let object: unknown;
    try {
      object = JSON.parse((body as { manifest: string }).manifest);
    } catch {
      throw new ShapeError('expected the manifest to be a JSON object; it is not JSON');
    }
    check(kubeObject, object, 'the manifest to be a Kubernetes object with kind and metadata.name');
    return object as T;
  };
}
