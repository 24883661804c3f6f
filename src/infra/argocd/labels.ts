/**
 * Kubernetes label selectors as Argo CD applies them (k8s.io/apimachinery `labels.Parse` syntax):
 * `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`, comma = AND. Pure, so the fleet and
 * the simulator read a selector the same way; each maps LabelSelectorSyntaxError to its own error.
 */

/** A malformed selector: `at` is the 1-based column, `problem` what is wrong there. */
export class LabelSelectorSyntaxError extends Error {
  override readonly name = 'LabelSelectorSyntaxError';
  constructor(
    readonly selector: string,
    readonly at: number,
    readonly problem: string,
  ) {
    super(`invalid label selector at ${at}: ${problem}`);
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

/** Parses a Kubernetes label selector. Throws LabelSelectorSyntaxError naming the column and the problem. */
export function parseLabelSelector(text: string): LabelRequirement[] {
  const tokens = tokenize(text);
  let p = 0;
  const peek = () => tokens[p];
  const fail = (at: number, problem: string): never => {
    throw new LabelSelectorSyntaxError(text, at, problem);
  };
  const describe = (t: Token) => (t.kind === 'end' ? 'the end' : `"${t.text}"`);

  const key = (): string => {
    const t = tokens[p++];
    if (t.kind !== 'word') fail(t.at, `expected a label key, found ${describe(t)}`);
    const slash = t.text.indexOf('/');
    const prefix = slash >= 0 ? t.text.slice(0, slash) : undefined;
    const name = slash >= 0 ? t.text.slice(slash + 1) : t.text;
    if (prefix !== undefined && (!KEY_PREFIX.test(prefix) || prefix.length > 253))
      fail(
        t.at,
        `invalid label key "${t.text}": the prefix must be a DNS subdomain (lower-case letters, digits, "-", ".")`,
      );
    if (!KEY_NAME.test(name))
      fail(
        t.at,
        `invalid label key "${t.text}": use up to 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit`,
      );
    return t.text;
  };
  const value = (): string => {
    const t = peek();
    if (t.kind !== 'word') return '';
    p++;
    if (!VALUE.test(t.text))
      fail(
        t.at,
        `invalid label value "${t.text}": use up to 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit`,
      );
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
        if (after.kind !== 'word' && after.kind !== ',' && after.kind !== 'end')
          fail(after.at, `expected a value after ${t.text}, found ${describe(after)}`);
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
export function matchesLabels(labels: Record<string, string> | undefined | null, reqs: LabelRequirement[]): boolean {
  for (const r of reqs) {
    const has = labels != null && Object.prototype.hasOwnProperty.call(labels, r.key);
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
