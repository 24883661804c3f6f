/**
 * The simulator's own Kubernetes label-selector matcher (k8s.io/apimachinery `labels.Parse`
 * syntax), independent of src/fleet/select.ts so the fake server never shares logic with the bot
 * it is testing: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`, comma = AND.
 */
export type SimLabelOp = '=' | '!=' | 'in' | 'notin' | 'exists' | '!';

export interface SimLabelRequirement {
  key: string;
  op: SimLabelOp;
  values: string[];
}

export class SimSelectorError extends Error {
  constructor(message: string) {
    super(message);
  }
}

// Label keys: optional DNS prefix, then a name of [A-Za-z0-9] with -_. inside (k8s validation).
const KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

/** Parses a selector; throws SimSelectorError with a message shaped like apimachinery's. */
export function parseSimSelector(text: string): SimLabelRequirement[] {
  const reqs: SimLabelRequirement[] = [];
  const src = text.trim();
  if (!src) return reqs;
  let i = 0;
  const skipWs = () => {
    while (i < src.length && src[i] === ' ') i++;
  };
  const readWord = () => {
    skipWs();
    const start = i;
    while (i < src.length && !' ,()=!'.includes(src[i])) i++;
    return src.slice(start, i);
  };
  while (i <= src.length) {
    skipWs();
    let negated = false;
    if (src[i] === '!') {
      negated = true;
      i++;
    }
    const key = readWord();
    if (!KEY.test(key)) throw new SimSelectorError(`unable to parse requirement: invalid label key "${key}"`);
    skipWs();
    if (negated) {
      reqs.push({ key, op: '!', values: [] });
    } else if (i >= src.length || src[i] === ',') {
      reqs.push({ key, op: 'exists', values: [] });
    } else if (src.startsWith('!=', i)) {
      i += 2;
      reqs.push({ key, op: '!=', values: [readValue()] });
    } else if (src.startsWith('==', i)) {
      i += 2;
      reqs.push({ key, op: '=', values: [readValue()] });
    } else if (src[i] === '=') {
      i += 1;
      reqs.push({ key, op: '=', values: [readValue()] });
    } else {
      const word = readWord();
      if (word !== 'in' && word !== 'notin')
        throw new SimSelectorError(`found '${word}', expected: in, notin, =, ==, !=`);
      skipWs();
      if (src[i] !== '(') throw new SimSelectorError(`found '${src[i] ?? ''}', expected: '('`);
      i++;
      const values: string[] = [];
      for (;;) {
        values.push(readValue());
        skipWs();
        if (src[i] === ',') {
          i++;
          continue;
        }
        if (src[i] === ')') {
          i++;
          break;
        }
        throw new SimSelectorError(`found '${src[i] ?? ''}', expected: ',' or ')'`);
      }
      reqs.push({ key, op: word, values });
    }
    skipWs();
    if (i >= src.length) break;
    if (src[i] !== ',') throw new SimSelectorError(`found '${src[i]}', expected: ','`);
    i++;
  }
  return reqs;

  function readValue(): string {
    const value = readWord();
    if (!VALUE.test(value)) throw new SimSelectorError(`invalid label value: "${value}"`);
    return value;
  }
}

export function simLabelsMatch(
  labels: Record<string, string> | undefined | null,
  reqs: SimLabelRequirement[],
): boolean {
  const l = labels ?? {};
  for (const r of reqs) {
    const has = Object.prototype.hasOwnProperty.call(l, r.key);
    const v = l[r.key];
    switch (r.op) {
      case '=':
        if (!has || v !== r.values[0]) return false;
        break;
      case '!=':
        if (has && v === r.values[0]) return false;
        break;
      case 'in':
        if (!has || !r.values.includes(v)) return false;
        break;
      case 'notin':
        if (has && r.values.includes(v)) return false;
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
