import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';

/**
 * Renders a Helm chart's templates the way `helm template` does, for the subset of Go text/template and
 * Sprig that deploy/helm/rollcall uses: `{{ }}` with `{{-`/`-}}` trimming, comments, `define`/`include`,
 * `if`/`else if`/`else`, `with`, `range` (with `$i, $v :=`), `$` and `.` fields, pipelines, parentheses,
 * and the functions in FUNCTIONS below. Anything else throws, so the chart cannot quietly outgrow what the
 * tests check. Limits: toYaml goes through the `yaml` package (same data, not always the same quoting as
 * Helm's sigs.k8s.io/yaml); no `tpl`, `lookup`, `.Capabilities`, `.Files`, subcharts or schema validation.
 */

type Value = unknown;
type Scope = { dot: Value; vars: Record<string, Value> };

interface TextNode {
  kind: 'text';
  text: string;
}
interface ActionNode {
  kind: 'action';
  pipeline: string;
}
interface IfNode {
  kind: 'if';
  branches: { pipeline?: string; body: Node[] }[];
}
interface WithNode {
  kind: 'with';
  pipeline: string;
  body: Node[];
  otherwise: Node[];
}
interface RangeNode {
  kind: 'range';
  pipeline: string;
  keyVar?: string;
  valueVar?: string;
  body: Node[];
  otherwise: Node[];
}
interface DefineNode {
  kind: 'define';
  name: string;
  body: Node[];
}
type Node = TextNode | ActionNode | IfNode | WithNode | RangeNode | DefineNode;

/** Splits template text into text and actions, applying `{{-` and `-}}` whitespace trimming. */
function lex(source: string): ({ text: string } | { action: string })[] {
  const out: ({ text: string } | { action: string })[] = [];
  let i = 0;
  let trimNext = false;
  while (i < source.length) {
    const open = source.indexOf('{{', i);
    let text = source.slice(i, open === -1 ? source.length : open);
    if (trimNext) text = text.replace(/^\s+/, '');
    if (open === -1) {
      out.push({ text });
      break;
    }
    const close = source.indexOf('}}', open);
    if (close === -1) throw new Error(`unclosed action at offset ${open}`);
    let inner = source.slice(open + 2, close);
    if (inner.startsWith('-')) {
      text = text.replace(/\s+$/, '');
      inner = inner.slice(1);
    }
    trimNext = inner.endsWith('-');
    if (trimNext) inner = inner.slice(0, -1);
    out.push({ text });
    inner = inner.trim();
    if (!inner.startsWith('/*')) out.push({ action: inner });
    i = close + 2;
  }
  return out.filter((t) => !('text' in t) || t.text !== '');
}

function parseNodes(
  tokens: ReturnType<typeof lex>,
  pos: { i: number },
  until: string[],
): { nodes: Node[]; end: string } {
  const nodes: Node[] = [];
  while (pos.i < tokens.length) {
    const t = tokens[pos.i++];
    if ('text' in t) {
      nodes.push({ kind: 'text', text: t.text });
      continue;
    }
    const a = t.action;
    const word = a.split(/\s+/)[0];
    if (until.includes(word)) return { nodes, end: a };
    if (word === 'if') {
      const branches: IfNode['branches'] = [];
      let pipeline: string | undefined = a.slice(2).trim();
      for (;;) {
        const { nodes: body, end } = parseNodes(tokens, pos, ['else', 'end']);
        branches.push({ pipeline, body });
        if (end === 'end') break;
        const rest = end.slice(4).trim();
        if (rest.startsWith('if ')) pipeline = rest.slice(3).trim();
        else if (rest === '') pipeline = undefined;
        else throw new Error(`unsupported else: {{ ${end} }}`);
      }
      nodes.push({ kind: 'if', branches });
    } else if (word === 'with' || word === 'range') {
      const { nodes: body, end } = parseNodes(tokens, pos, ['else', 'end']);
      const otherwise = end === 'end' ? [] : parseNodes(tokens, pos, ['end']).nodes;
      let pipeline = a.slice(word.length).trim();
      if (word === 'with') nodes.push({ kind: 'with', pipeline, body, otherwise });
      else {
        const decl = /^(\$\w+)\s*(?:,\s*(\$\w+)\s*)?:=\s*(.+)$/.exec(pipeline);
        let keyVar: string | undefined;
        let valueVar: string | undefined;
        if (decl) {
          [keyVar, valueVar] = decl[2] ? [decl[1], decl[2]] : [undefined, decl[1]];
          pipeline = decl[3];
        }
        nodes.push({ kind: 'range', pipeline, keyVar, valueVar, body, otherwise });
      }
    } else if (word === 'define') {
      const name = JSON.parse(a.slice(6).trim()) as string;
      nodes.push({ kind: 'define', name, body: parseNodes(tokens, pos, ['end']).nodes });
    } else if (['else', 'end', 'block', 'template', 'break', 'continue'].includes(word)) {
      throw new Error(`unsupported or unbalanced action {{ ${a} }}`);
    } else nodes.push({ kind: 'action', pipeline: a });
  }
  if (until.length) throw new Error(`missing {{ end }} (expected one of ${until.join(', ')})`);
  return { nodes, end: '' };
}

/** Splits on a separator outside quotes and parentheses. */
function splitTop(text: string, separator: RegExp): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote = '';
  let current = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      current += c;
      if (c === '\\') current += text[++i];
      else if (c === quote) quote = '';
      continue;
    }
    if (c === '"' || c === '`') quote = c;
    if (c === '(') depth++;
    if (c === ')') depth--;
    if (depth === 0 && separator.test(c)) {
      if (current.trim()) parts.push(current.trim());
      current = '';
      continue;
    }
    current += c;
  }
  if (current.trim()) parts.push(current.trim());
  return parts;
}

export function truthy(v: Value): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v as object).length > 0;
  return true;
}

function toYaml(v: Value): string {
  if (v === undefined || v === null) return 'null';
  return stringify(v, { lineWidth: 0 }).replace(/\n$/, '');
}

function indentLines(n: number, s: string): string {
  return s
    .split('\n')
    .map((line) => ' '.repeat(n) + line)
    .join('\n');
}

function toText(v: Value): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

export class ChartRenderer {
  private readonly defines = new Map<string, Node[]>();

  constructor(private readonly files: Record<string, string>) {
    for (const [name, text] of Object.entries(files))
      if (name.endsWith('.tpl')) this.collectDefines(parseNodes(lex(text), { i: 0 }, []).nodes);
  }

  private collectDefines(nodes: Node[]) {
    for (const n of nodes) if (n.kind === 'define') this.defines.set(n.name, n.body);
  }

  private readonly functions: Record<string, (...args: Value[]) => Value> = {
    include: (name, dot) => {
      const body = this.defines.get(String(name));
      if (!body) throw new Error(`include of undefined template "${String(name)}"`);
      return this.renderNodes(body, { dot, vars: { $: dot } });
    },
    toYaml: (v) => toYaml(v),
    nindent: (n, s) => `\n${indentLines(Number(n), toText(s))}`,
    indent: (n, s) => indentLines(Number(n), toText(s)),
    quote: (...vs) => vs.map((v) => JSON.stringify(toText(v))).join(' '),
    default: (fallback, v) => (truthy(v) ? v : fallback),
    printf: (format, ...args) => {
      let i = 0;
      return String(format).replace(/%[sdv]/g, () => toText(args[i++]));
    },
    trunc: (n, s) => toText(s).slice(0, Number(n)),
    trimSuffix: (suffix, s) =>
      toText(s).endsWith(String(suffix)) ? toText(s).slice(0, -String(suffix).length) : toText(s),
    sha256sum: (s) => createHash('sha256').update(toText(s)).digest('hex'),
    toString: (v: Value) => toText(v),
    eq: (a, b) => a === b,
    ne: (a, b) => a !== b,
    not: (v) => !truthy(v),
    and: (...vs) => vs.reduce((acc: Value, v) => (truthy(acc) ? v : acc)),
    or: (...vs) => vs.find((v) => truthy(v)) ?? vs[vs.length - 1],
    fail: (message) => {
      throw new Error(`fail: ${String(message)}`);
    },
    required: (message, v) => {
      if (!truthy(v)) throw new Error(`required: ${String(message)}`);
      return v;
    },
    b64enc: (s) => Buffer.from(toText(s)).toString('base64'),
    dict: (...kv) =>
      Object.fromEntries(Array.from({ length: kv.length / 2 }, (_, i) => [String(kv[2 * i]), kv[2 * i + 1]])),
  };

  private evalArg(token: string, scope: Scope): Value {
    if (token.startsWith('(') && token.endsWith(')')) return this.evalPipeline(token.slice(1, -1), scope);
    if (token.startsWith('"')) return JSON.parse(token);
    if (token.startsWith('`')) return token.slice(1, -1);
    if (/^-?\d+(\.\d+)?$/.test(token)) return Number(token);
    if (token === 'true' || token === 'false') return token === 'true';
    if (token === 'nil') return null;
    let base: Value;
    let rest: string;
    if (token === '.') return scope.dot;
    if (token.startsWith('.')) {
      base = scope.dot;
      rest = token.slice(1);
    } else if (token.startsWith('$')) {
      const [name, ...fields] = token.split('.');
      if (!(name in scope.vars)) throw new Error(`undefined variable ${name}`);
      base = scope.vars[name];
      rest = fields.join('.');
    } else throw new Error(`unsupported argument "${token}"`);
    return rest
      .split('.')
      .filter(Boolean)
      .reduce<Value>(
        (v, key) => (v !== null && typeof v === 'object' ? (v as Record<string, Value>)[key] : undefined),
        base,
      );
  }

  private evalCommand(command: string, scope: Scope, piped: Value[]): Value {
    const tokens = splitTop(command, /\s/);
    const [head, ...args] = tokens;
    if (/^[a-zA-Z]\w*$/.test(head) && !['true', 'false', 'nil'].includes(head)) {
      const fn = this.functions[head];
      if (!fn) throw new Error(`unsupported function "${head}"`);
      return fn(...args.map((a) => this.evalArg(a, scope)), ...piped);
    }
    if (args.length || piped.length) throw new Error(`cannot call a value: ${command}`);
    return this.evalArg(head, scope);
  }

  private evalPipeline(pipeline: string, scope: Scope): Value {
    const assign = /^(\$\w+)\s*:=\s*(.+)$/.exec(pipeline);
    if (assign) {
      scope.vars[assign[1]] = this.evalPipeline(assign[2], scope);
      return undefined;
    }
    let value: Value[] = [];
    for (const command of splitTop(pipeline, /\|/)) value = [this.evalCommand(command, scope, value)];
    return value[0];
  }

  private renderNodes(nodes: Node[], scope: Scope): string {
    let out = '';
    for (const n of nodes) {
      if (n.kind === 'text') out += n.text;
      else if (n.kind === 'action') out += toText(this.evalPipeline(n.pipeline, scope));
      else if (n.kind === 'if') {
        const branch = n.branches.find((b) => b.pipeline === undefined || truthy(this.evalPipeline(b.pipeline, scope)));
        if (branch) out += this.renderNodes(branch.body, scope);
      } else if (n.kind === 'with') {
        const v = this.evalPipeline(n.pipeline, scope);
        out += truthy(v)
          ? this.renderNodes(n.body, { dot: v, vars: scope.vars })
          : this.renderNodes(n.otherwise, scope);
      } else if (n.kind === 'range') {
        const v = this.evalPipeline(n.pipeline, scope);
        const entries: [Value, Value][] = Array.isArray(v)
          ? v.map((x, i) => [i, x])
          : v && typeof v === 'object'
            ? Object.keys(v)
                .sort()
                .map((k) => [k, (v as Record<string, Value>)[k]])
            : [];
        if (!entries.length) out += this.renderNodes(n.otherwise, scope);
        for (const [k, x] of entries) {
          const vars = {
            ...scope.vars,
            ...(n.keyVar ? { [n.keyVar]: k } : {}),
            ...(n.valueVar ? { [n.valueVar]: x } : {}),
          };
          out += this.renderNodes(n.body, { dot: x, vars });
        }
      } else if (n.kind === 'define') this.defines.set(n.name, n.body);
    }
    return out;
  }

  /** Renders one template file with the chart's top-level objects. */
  render(file: string, top: { Values: Value; Release: Record<string, Value>; Chart: Record<string, Value> }): string {
    const nodes = parseNodes(lex(this.files[file]), { i: 0 }, []).nodes;
    return this.renderNodes(nodes, { dot: top, vars: { $: top } });
  }
}

/** Deep merge as Helm merges --values over the chart's values.yaml (maps merge, everything else replaces). */
export function mergeValues(base: Value, override: Value): Value {
  if (override === undefined) return base;
  if (
    base &&
    override &&
    typeof base === 'object' &&
    typeof override === 'object' &&
    !Array.isArray(base) &&
    !Array.isArray(override)
  ) {
    const out: Record<string, Value> = { ...(base as Record<string, Value>) };
    for (const [k, v] of Object.entries(override as Record<string, Value>))
      out[k] = v === null ? undefined : mergeValues(out[k], v);
    return out;
  }
  return override;
}

export interface RenderedObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [key: string]: unknown;
  /** The template file it came from. */
  source: string;
}

/** `helm template RELEASE CHART -f values`: every object of every template, parsed. */
export function renderChart(
  chartDir: string,
  opts: { release?: string; namespace?: string; values?: Value } = {},
): RenderedObject[] {
  const templatesDir = path.join(chartDir, 'templates');
  const files = Object.fromEntries(
    readdirSync(templatesDir).map((f) => [f, readFileSync(path.join(templatesDir, f), 'utf8')]),
  );
  const chart = parse(readFileSync(path.join(chartDir, 'Chart.yaml'), 'utf8')) as Record<string, Value>;
  const values = mergeValues(parse(readFileSync(path.join(chartDir, 'values.yaml'), 'utf8')), opts.values);
  const renderer = new ChartRenderer(files);
  const top = {
    Values: values,
    Release: { Name: opts.release ?? 'rollcall', Namespace: opts.namespace ?? 'rollcall', Service: 'Helm' },
    Chart: { Name: chart.name, Version: chart.version, AppVersion: chart.appVersion },
  };
  const objects: RenderedObject[] = [];
  for (const file of Object.keys(files)
    .filter((f) => f.endsWith('.yaml'))
    .sort()) {
    const text = renderer.render(file, top);
    for (const doc of parseAllDocuments(text)) {
      if (doc.errors.length)
        throw new Error(`${file}: rendered YAML does not parse: ${doc.errors[0].message}\n${text}`);
      const obj = doc.toJS() as RenderedObject | null;
      if (obj) objects.push({ ...obj, source: file });
    }
  }
  return objects;
}
