import { RollcallError } from '../../core/errors.js';
import { typedDuration } from '../../core/format.js';
import {
  placeholderProblems,
  placeholderUses,
  type IdentityPlaceholder,
  type Placeholder,
} from '../../infra/config/check-query.js';
import type { FleetApp } from '../../fleet/model.js';

/** Who a check is evaluated for: the app's identity, as its query's placeholders name it. */
export interface CheckSubject {
  app: string;
  cluster: string;
  /** The destination namespace; undefined when the Application names none. */
  namespace?: string;
  instance: string;
  project: string;
  /** The Application's metadata.labels. */
  labels: Readonly<Record<string, string>>;
}

export function subjectOf(fa: FleetApp): CheckSubject {
  return {
    app: fa.app.metadata.name,
    cluster: fa.cluster,
    namespace: fa.app.spec?.destination?.namespace || undefined,
    instance: fa.instance,
    project: fa.app.spec?.project || 'default',
    labels: fa.app.metadata.labels ?? {},
  };
}

/** A query that cannot be rendered for this app: a placeholder unknown, or a label the app lacks. */
export class CheckRenderError extends RollcallError {
  override readonly name = 'CheckRenderError';
  constructor(
    readonly check: string,
    message: string,
  ) {
    super('check_placeholder', message);
  }
}

/**
 * A value as the body of a PromQL double-quoted string: a backslash, a quote or a line break in a label
 * cannot end the string, so `team="a\" or vector(1) #"` stays one value instead of changing the query.
 */
export function promqlString(value: string): string {
  return value.replace(/[\\"\n\r\t]/g, (c) => ESCAPES[c]);
}

const ESCAPES: Record<string, string> = { '\\': '\\\\', '"': '\\"', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** A window as a PromQL duration: `1m`, `30s`, `1m30s` (Prometheus reads the same compound form people type). */
export function promqlDuration(ms: number): string {
  return typedDuration(ms);
}

function valueOf(check: string, placeholder: Placeholder, subject: CheckSubject, windowMs: number): string {
  if (placeholder.kind === 'window') return promqlDuration(windowMs);
  const who = `app ${subject.app} (${subject.instance}/${subject.cluster})`;
  if (placeholder.kind === 'label') {
    const value = subject.labels[placeholder.key];
    if (value === undefined)
      throw new CheckRenderError(
        check,
        `Check ${check}: ${who} has no label \`${placeholder.key}\` for {{labels.${placeholder.key}}}.`,
      );
    return promqlString(value);
  }
  const value = subject[placeholder.name satisfies IdentityPlaceholder];
  if (value === undefined)
    throw new CheckRenderError(
      check,
      `Check ${check}: ${who} has no destination ${placeholder.name} for {{${placeholder.name}}}.`,
    );
  return promqlString(value);
}

/**
 * The check's query for one app: every placeholder replaced in one pass (a value that looks like a
 * placeholder stays text), identity values escaped for the double-quoted string they stand in.
 */
export function renderCheckQuery(check: string, query: string, subject: CheckSubject, windowMs: number): string {
  const problems = placeholderProblems(query);
  if (problems.length) throw new CheckRenderError(check, `Check ${check}: ${problems.join('; ')}.`);
  let out = '';
  let from = 0;
  for (const use of placeholderUses(query)) {
    out += query.slice(from, use.start) + valueOf(check, use.placeholder!, subject, windowMs);
    from = use.end;
  }
  return out + query.slice(from);
}
