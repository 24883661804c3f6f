import picomatch from 'picomatch';
import type { FleetApp, FleetView } from './model.js';
import { MIN_CHUNKED, chunked } from './chunks.js';
import { suggest } from '../core/suggest.js';
import { RollcallError } from '../core/errors.js';
import {
  LabelSelectorSyntaxError,
  matchesLabels,
  parseLabelSelector as parseSelector,
  type LabelRequirement,
} from '../infra/argocd/labels.js';

export { matchesLabels, type LabelRequirement };

/**
 * Selecting apps the way on-call types them: names or globs, a Kubernetes label selector
 * (k8s.io/apimachinery `labels.Parse` syntax), and cluster/project/appset/instance filters.
 */
export type SelectorErrorCode = 'invalid_selector' | 'unknown_target';

export class SelectorError extends RollcallError {
  override readonly name = 'SelectorError';
  declare readonly code: SelectorErrorCode;
  constructor(
    message: string,
    code: SelectorErrorCode = 'invalid_selector',
    readonly details: {
      position?: number;
      selector?: string;
      kind?: string;
      value?: string;
      suggestions?: string[];
    } = {},
  ) {
    super(code, message, {
      suggestions: details.suggestions,
      // A reply lists the suggestions apart from the message, and says how a selector is written.
      userMessage:
        code === 'unknown_target'
          ? message.replace(/\s*Did you mean .*$/s, '')
          : `${message.charAt(0).toUpperCase()}${message.slice(1)}. Use Kubernetes syntax, e.g. -l env=prod,tier!=canary or selector="env in (prod,staging)".`,
    });
  }
}

/** Parses a Kubernetes label selector. Throws SelectorError naming the column and the problem. */
export function parseLabelSelector(text: string): LabelRequirement[] {
  try {
    return parseSelector(text);
  } catch (error) {
    if (!(error instanceof LabelSelectorSyntaxError)) throw error;
    throw new SelectorError(error.message, 'invalid_selector', { position: error.at, selector: text });
  }
}

export interface AppSelector {
  /** App names or globs (picomatch); any of them matches. */
  patterns?: string[];
  /** A Kubernetes label selector on the Application's labels. */
  labels?: string;
  /** Each filter takes a name, a glob, or a comma-separated list of them. */
  cluster?: string;
  project?: string;
  appSet?: string;
  instance?: string;
}

export function isGlob(pattern: string): boolean {
  return picomatch.scan(pattern).isGlob;
}

/** Whether an app name matches a pattern as a selector reads it: a glob, else the exact name. */
export function nameMatcher(pattern: string): (name: string) => boolean {
  if (!isGlob(pattern)) return (name) => name === pattern;
  return globMatcher(pattern);
}

/**
 * A picomatch glob, with its literal start checked first: `auth-*` over 50,000 names is mostly names that do not
 * start with `auth-`, which a string comparison turns away far faster than the glob's regular expression.
 */
function globMatcher(pattern: string): (name: string) => boolean {
  const glob = picomatch(pattern, { dot: true });
  const prefix = literalStart(pattern);
  if (!prefix) return (name) => glob(name);
  return (name) => name.startsWith(prefix) && glob(name);
}

/**
 * What every name a glob matches starts with: the pattern up to the first character picomatch may read as anything
 * but itself (a leading `!` negates the whole glob, a leading `./` is dropped).
 */
function literalStart(pattern: string): string {
  return /^[^*?[\]{}()!+@\\|/.]*/.exec(pattern)![0];
}

/** A run of apps' names in text order, with each one's place in the run. */
interface NameIndex {
  names: string[];
  at: number[];
}

function nameIndex(apps: readonly FleetApp[]): NameIndex {
  const at = apps.map((_, i) => i);
  const nameOf = apps.map((a) => a.app.metadata.name);
  at.sort((x, y) => (nameOf[x] < nameOf[y] ? -1 : nameOf[x] > nameOf[y] ? 1 : x - y));
  return { names: at.map((i) => nameOf[i]), at };
}

/** The first place in sorted `names` not before `prefix`. */
function lowerBound(names: readonly string[], prefix: string): number {
  let lo = 0;
  let hi = names.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (names[mid] < prefix) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The apps whose names start with one of `starts`, in fleet order, read from a sorted index of names kept per chunk
 * of the fleet's list (src/fleet/chunks.ts); undefined for a list too short to be worth one.
 */
function startingWith(apps: readonly FleetApp[], starts: readonly string[], version: number): FleetApp[] | undefined {
  if (apps.length < MIN_CHUNKED) return undefined;
  const out: FleetApp[] = [];
  for (const { from, value: index } of chunked(apps, nameIndex, version)) {
    const found = new Set<number>();
    for (const start of starts)
      for (let i = lowerBound(index.names, start); i < index.names.length && index.names[i].startsWith(start); i++)
        found.add(index.at[i]);
    for (const i of [...found].sort((x, y) => x - y)) out.push(apps[from + i]);
  }
  return out;
}

function unknown(kind: string, value: string, candidates: Iterable<string>): SelectorError {
  const suggestions = suggest(value, candidates);
  const hint = suggestions.length ? ` Did you mean ${suggestions.join(', ')}?` : '';
  return new SelectorError(`No ${kind} named "${value}".${hint}`, 'unknown_target', { kind, value, suggestions });
}

/** A name/glob/list filter; exact names must exist among the candidates. */
function filterFor(
  kind: string,
  spec: string | undefined,
  candidates: () => Set<string>,
): ((value: string | undefined) => boolean) | undefined {
  if (spec === undefined) return undefined;
  const parts = spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!parts.length)
    throw new SelectorError(`${kind}= needs a value (a name, a glob or a comma-separated list)`, 'invalid_selector', {
      kind,
    });
  const exact = new Set<string>();
  const globs: ((s: string) => boolean)[] = [];
  for (const part of parts) {
    if (isGlob(part)) globs.push(globMatcher(part));
    else {
      if (!candidates().has(part)) throw unknown(kind, part, candidates());
      exact.add(part);
    }
  }
  return (value) => value !== undefined && (exact.has(value) || globs.some((g) => g(value)));
}

/** The apps a selector picks, in fleet order. Throws SelectorError on bad syntax or an unknown name. */
export function selectApps(fleet: FleetView, sel: AppSelector): FleetApp[] {
  const reqs = sel.labels?.trim() ? parseLabelSelector(sel.labels) : [];
  const apps = fleet.apps();
  const lazy = (build: () => Iterable<string | undefined>) => {
    let cache: Set<string> | undefined;
    return () => (cache ??= new Set([...build()].filter((s): s is string => !!s)));
  };
  const byInstance = filterFor(
    'instance',
    sel.instance,
    lazy(() => fleet.instances()),
  );
  const byCluster = filterFor(
    'cluster',
    sel.cluster,
    lazy(function* () {
      for (const a of apps) yield a.cluster;
      for (const c of fleet.clusters()) yield c.cluster.name;
    }),
  );
  const byProject = filterFor(
    'project',
    sel.project,
    lazy(function* () {
      for (const a of apps) yield a.app.spec?.project;
    }),
  );
  const byAppSet = filterFor(
    'ApplicationSet',
    sel.appSet,
    lazy(function* () {
      for (const s of fleet.appSets()) yield s.appSet.metadata.name;
      for (const a of apps) yield a.appSet;
    }),
  );

  let byName: ((name: string) => boolean) | undefined;
  let source: readonly FleetApp[] = apps;
  const patterns = (sel.patterns ?? []).map((p) => p.trim()).filter(Boolean);
  if (patterns.length) {
    const exact = patterns.filter((p) => !isGlob(p));
    for (const name of exact)
      if (!fleet.appsNamed(name).length)
        throw unknown(
          'app',
          name,
          apps.map((a) => a.app.metadata.name),
        );
    const globs = patterns.filter(isGlob).map(globMatcher);
    if (!globs.length) {
      // Names only: read the name index instead of scanning the fleet.
      const seen = new Set<FleetApp>();
      source = exact.flatMap((n) => fleet.appsNamed(n)).filter((a) => !seen.has(a) && seen.add(a));
    } else {
      const names = new Set(exact);
      byName = (name) => names.has(name) || globs.some((g) => g(name));
      // Globs alone, each with a literal start: only the apps whose names start so need the glob.
      const starts = exact.length ? [] : patterns.map(literalStart);
      if (starts.length && starts.every(Boolean)) source = startingWith(apps, starts, fleet.version()) ?? source;
    }
  }

  return source.filter(
    (a) =>
      (!byName || byName(a.app.metadata.name)) &&
      (!byInstance || byInstance(a.instance)) &&
      (!byCluster || byCluster(a.cluster)) &&
      (!byProject || byProject(a.app.spec?.project)) &&
      (!byAppSet || byAppSet(a.appSet)) &&
      (reqs.length === 0 || matchesLabels(a.app.metadata.labels, reqs)),
  );
}
