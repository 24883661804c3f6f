import picomatch from 'picomatch';
import type { FleetApp, FleetView } from './model.js';
import { suggest } from '../core/suggest.js';
import { RollcallError } from '../core/errors.js';

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
    readonly details: { position?: number; selector?: string; kind?: string; value?: string; suggestions?: string[] } = {},
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

export interface LabelRequirement {
  key: string;
  op: '=' | '!=' | 'in' | 'notin' | 'exists' | '!';
  values: string[];
}

// k8s validation: keys are [prefix/]name (name <= 63 of [A-Za-z0-9] with -_. inside; prefix a DNS subdomain).
const KEY_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const KEY_PREFIX = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

type TokenKind = 'word' | '=' | '==' | '!=' | '!' | '(' | ')' | ',' | 'end';
interface Token {
  kind: TokenKind;
  text: string;
  /** 1-based column. */
  at: number;
}

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const at = i + 1;
    if (c === '=' && text[i + 1] === '=') {
      tokens.push({ kind: '==', text: '==', at });
      i += 2;
    } else if (c === '!' && text[i + 1] === '=') {
      tokens.push({ kind: '!=', text: '!=', at });
      i += 2;
    } else if (c === '=' || c === '!' || c === '(' || c === ')' || c === ',') {
      tokens.push({ kind: c, text: c, at });
      i++;
    } else {
      let j = i;
      while (j < text.length && !/[\s=!(),]/.test(text[j])) j++;
      tokens.push({ kind: 'word', text: text.slice(i, j), at });
      i = j;
    }
  }
  tokens.push({ kind: 'end', text: '', at: text.length + 1 });
  return tokens;
}

/** Parses a Kubernetes label selector. Throws SelectorError naming the column and the problem. */
export function parseLabelSelector(text: string): LabelRequirement[] {
  const tokens = tokenize(text);
  let p = 0;
  const peek = () => tokens[p];
  const fail = (at: number, problem: string): never => {
    throw new SelectorError(`invalid label selector at ${at}: ${problem}`, 'invalid_selector', { position: at, selector: text });
  };
  const describe = (t: Token) => (t.kind === 'end' ? 'the end' : `"${t.text}"`);

  const key = (): string => {
    const t = tokens[p++];
    if (t.kind !== 'word') fail(t.at, `expected a label key, found ${describe(t)}`);
    const slash = t.text.indexOf('/');
    const prefix = slash >= 0 ? t.text.slice(0, slash) : undefined;
    const name = slash >= 0 ? t.text.slice(slash + 1) : t.text;
    if (prefix !== undefined && (!KEY_PREFIX.test(prefix) || prefix.length > 253))
      fail(t.at, `invalid label key "${t.text}": the prefix must be a DNS subdomain (lower-case letters, digits, "-", ".")`);
    if (!KEY_NAME.test(name))
      fail(t.at, `invalid label key "${t.text}": use up to 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit`);
    return t.text;
  };
  const value = (): string => {
    const t = peek();
    if (t.kind !== 'word') return '';
    p++;
    if (!VALUE.test(t.text)) fail(t.at, `invalid label value "${t.text}": use up to 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit`);
    return t.text;
  };
  const valueSet = (op: string): string[] => {
    const open = tokens[p++];
    if (open.kind !== '(') fail(open.at, `expected '(' after ${op}`);
    const values: string[] = [];
    if (peek().kind === ')') fail(peek().at, `${op} needs at least one value`);
    for (;;) {
      const t = peek();
      if (t.kind !== 'word') fail(t.at, `expected a value, found ${describe(t)}`);
      values.push(value());
      const next = tokens[p++];
      if (next.kind === ')') return values;
      if (next.kind !== ',') fail(next.at, `expected ')' after values`);
    }
  };

  const reqs: LabelRequirement[] = [];
  if (peek().kind === 'end') return reqs;
  for (;;) {
    const start = peek();
    if (start.kind === '!') {
      p++;
      reqs.push({ key: key(), op: '!', values: [] });
    } else {
      const k = key();
      const t = peek();
      if (t.kind === '=' || t.kind === '==' || t.kind === '!=') {
        p++;
        const after = peek();
        if (after.kind !== 'word' && after.kind !== ',' && after.kind !== 'end') fail(after.at, `expected a value after ${t.text}, found ${describe(after)}`);
        reqs.push({ key: k, op: t.kind === '!=' ? '!=' : '=', values: [value()] });
      } else if (t.kind === 'word' && (t.text === 'in' || t.text === 'notin')) {
        p++;
        reqs.push({ key: k, op: t.text, values: valueSet(t.text) });
      } else if (t.kind === ',' || t.kind === 'end') {
        reqs.push({ key: k, op: 'exists', values: [] });
      } else {
        fail(t.at, `expected an operator (=, ==, !=, in, notin) or ',' after "${k}", found ${describe(t)}`);
      }
    }
    const sep = tokens[p++];
    if (sep.kind === 'end') return reqs;
    if (sep.kind !== ',') fail(sep.at, `expected ',' between requirements, found ${describe(sep)}`);
    if (peek().kind === 'end') fail(peek().at, `expected a requirement after ','`);
  }
}

/** Kubernetes semantics: `!=` and `notin` also match a missing key. Empty requirements match everything. */
export function matchesLabels(labels: Record<string, string> | undefined, reqs: LabelRequirement[]): boolean {
  for (const r of reqs) {
    const has = labels !== undefined && Object.prototype.hasOwnProperty.call(labels, r.key);
    const v = has ? labels![r.key] : undefined;
    switch (r.op) {
      case '=':
        if (!has || v !== r.values[0]) return false;
        break;
      case '!=':
        if (has && v === r.values[0]) return false;
        break;
      case 'in':
        if (!has || !r.values.includes(v!)) return false;
        break;
      case 'notin':
        if (has && r.values.includes(v!)) return false;
        break;
      case 'exists':
        if (!has) return false;
        break;
      case '!':
        if (has) return false;
        break;
    }
  }
  return true;
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
  const glob = picomatch(pattern, { dot: true });
  return (name) => glob(name);
}

function unknown(kind: string, value: string, candidates: Iterable<string>): SelectorError {
  const suggestions = suggest(value, candidates);
  const hint = suggestions.length ? ` Did you mean ${suggestions.join(', ')}?` : '';
  return new SelectorError(`No ${kind} named "${value}".${hint}`, 'unknown_target', { kind, value, suggestions });
}

/** A name/glob/list filter; exact names must exist among the candidates. */
function filterFor(kind: string, spec: string | undefined, candidates: () => Set<string>): ((value: string | undefined) => boolean) | undefined {
  if (spec === undefined) return undefined;
  const parts = spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!parts.length) throw new SelectorError(`${kind}= needs a value (a name, a glob or a comma-separated list)`, 'invalid_selector', { kind });
  const exact = new Set<string>();
  const globs: ((s: string) => boolean)[] = [];
  for (const part of parts) {
    if (isGlob(part)) globs.push(picomatch(part, { dot: true }));
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
  const byInstance = filterFor('instance', sel.instance, lazy(() => fleet.instances()));
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
    for (const name of exact) if (!fleet.appsNamed(name).length) throw unknown('app', name, apps.map((a) => a.app.metadata.name));
    const globs = patterns.filter(isGlob).map((p) => picomatch(p, { dot: true }));
    if (!globs.length) {
      // Names only: read the name index instead of scanning the fleet.
      const seen = new Set<FleetApp>();
      source = exact.flatMap((n) => fleet.appsNamed(n)).filter((a) => !seen.has(a) && seen.add(a));
    } else {
      const names = new Set(exact);
      byName = (name) => names.has(name) || globs.some((g) => g(name));
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
