import { describe, expect, it } from 'vitest';
import { parseSimSelector, simLabelsMatch, SimSelectorError } from '../../src/sim/labels.js';
import { jsonPatch, mergePatch } from '../../src/sim/http/patch.js';

const match = (selector: string, labels?: Record<string, string>) => simLabelsMatch(labels, parseSimSelector(selector));

describe('simulator label selectors (k8s labels.Parse semantics)', () => {
  it('matches != and notin on a missing key, but not = or in', () => {
    expect(match('env!=prod', {})).toBe(true);
    expect(match('env notin (prod)', {})).toBe(true);
    expect(match('env=prod', {})).toBe(false);
    expect(match('env in (prod)', undefined)).toBe(false);
  });

  it('ANDs comma-separated requirements and accepts spaces and prefixed keys', () => {
    expect(
      match('app.kubernetes.io/part-of = shop , tier in ( web,api )', {
        'app.kubernetes.io/part-of': 'shop',
        tier: 'api',
      }),
    ).toBe(true);
    expect(
      match('app.kubernetes.io/part-of=shop,tier in (web)', { 'app.kubernetes.io/part-of': 'shop', tier: 'api' }),
    ).toBe(false);
    expect(match('', { any: 'thing' })).toBe(true);
  });

  it('rejects malformed selectors', () => {
    for (const bad of ['env in prod', 'env in (a', 'env ~ x', '=x', 'env=a b'])
      expect(() => parseSimSelector(bad), bad).toThrow(SimSelectorError);
  });
});

describe('simulator patches', () => {
  it('merge patch (RFC 7386) merges objects, replaces arrays and deletes on null', () => {
    expect(mergePatch({ a: { b: 1, c: [1, 2] }, d: 1 }, { a: { c: [3] }, d: null })).toEqual({ a: { b: 1, c: [3] } });
  });

  it('json patch (RFC 6902) adds to arrays with "-", removes, and leaves the input untouched', () => {
    const doc = { spec: { syncPolicy: { syncOptions: ['A=1'] } } };
    const out = jsonPatch(doc, [
      { op: 'add', path: '/spec/syncPolicy/syncOptions/-', value: 'B=2' },
      { op: 'remove', path: '/spec/syncPolicy/syncOptions/0' },
      { op: 'add', path: '/metadata', value: { labels: { 'a/b': 'x' } } },
      { op: 'replace', path: '/metadata/labels/a~1b', value: 'y' },
    ]);
    expect(out).toEqual({ spec: { syncPolicy: { syncOptions: ['B=2'] } }, metadata: { labels: { 'a/b': 'y' } } });
    expect(doc.spec.syncPolicy.syncOptions).toEqual(['A=1']);
    expect(() => jsonPatch(doc, [{ op: 'remove', path: '/spec/nope' }])).toThrow(/missing/);
    expect(() => jsonPatch(doc, { op: 'add' } as never)).toThrow(/cannot unmarshal object/);
  });
});
