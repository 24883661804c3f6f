import { describe, expect, it } from 'vitest';
import type { ResourceDiff } from '../../src/infra/argocd/types.js';
import { SECRET_MASK, manifestDiff } from '../../src/fleet/manifest-diff.js';

const deployment = (image: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'shop', uid: 'u-1', resourceVersion: '7' },
  spec: {
    replicas: 3,
    template: {
      spec: {
        containers: [
          { name: 'sidecar', image: 'envoy:1' },
          { name: 'web', image, env: [{ name: 'A', value: '1' }] },
        ],
      },
    },
    ...extra,
  },
});

function item(o: Partial<ResourceDiff> & { live?: unknown; target?: unknown; predicted?: unknown }): ResourceDiff {
  const state = (v: unknown) => (v === undefined ? 'null' : JSON.stringify(v));
  return {
    kind: o.kind ?? 'Deployment',
    group: o.group ?? 'apps',
    namespace: 'shop',
    name: o.name ?? 'web',
    normalizedLiveState: state(o.live),
    liveState: state(o.live),
    targetState: state(o.target),
    ...(o.predicted !== undefined ? { predictedLiveState: state(o.predicted) } : {}),
    modified: o.modified ?? true,
    ...(o.hook ? { hook: true } : {}),
  };
}

describe('manifestDiff', () => {
  it('names list entries by their name and shows old → new of a changed scalar', () => {
    const [change] = manifestDiff([
      item({ live: deployment('web:live'), target: deployment('web:v2'), predicted: deployment('web:v2') }),
    ]);
    expect(change).toMatchObject({ kind: 'Deployment', change: 'modified', fieldsTotal: 1 });
    expect(change.fields).toEqual([
      { path: 'spec.template.spec.containers[web].image', op: 'changed', from: 'web:live', to: 'web:v2' },
    ]);
  });

  it('leaves out fields the API server sets when it must fall back to the target state', () => {
    const target = deployment('web:v2', { replicas: 5 });
    delete (target.metadata as Record<string, unknown>).uid;
    delete (target.metadata as Record<string, unknown>).resourceVersion;
    const [change] = manifestDiff([item({ live: { ...deployment('web:v2'), status: { readyReplicas: 3 } }, target })]);
    expect(change.fields).toEqual([{ path: 'spec.replicas', op: 'changed', from: '3', to: '5' }]);
  });

  it('trusts the server on "not modified" when both states exist, and skips hooks', () => {
    expect(manifestDiff([item({ live: deployment('a'), target: deployment('b'), modified: false })])).toEqual([]);
    expect(manifestDiff([item({ target: deployment('b'), hook: true })])).toEqual([]);
  });

  it('tells a resource to create from one to prune and one kept out of git, sorted like the CLI', () => {
    const changes = manifestDiff(
      [
        item({ kind: 'ConfigMap', group: '', name: 'z-old', live: { kind: 'ConfigMap', metadata: { name: 'z-old' } } }),
        item({ kind: 'ConfigMap', group: '', name: 'kept', live: { kind: 'ConfigMap', metadata: { name: 'kept' } } }),
        item({ name: 'web', target: deployment('web:v2') }),
      ],
      { requiresPruning: (key) => key !== '/ConfigMap/shop/kept' },
    );
    expect(changes.map((c) => [c.kind, c.name, c.change])).toEqual([
      ['ConfigMap', 'kept', 'extraneous'],
      ['ConfigMap', 'z-old', 'prune'],
      ['Deployment', 'web', 'create'],
    ]);
  });

  it('keeps every value on one line: empty and multi-line strings as JSON', () => {
    const live = { kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: '', b: 'x\ny' } };
    const target = { ...live, data: { a: 'set', b: 'x' } };
    const [change] = manifestDiff([item({ kind: 'ConfigMap', group: '', live, target, predicted: target })]);
    expect(change.fields).toEqual([
      { path: 'data.a', op: 'changed', from: '""', to: 'set' },
      { path: 'data.b', op: 'changed', from: '"x\\ny"', to: 'x' },
    ]);
  });

  it('cuts long values and caps the fields listed, counting them all', () => {
    const long = 'x'.repeat(500);
    const live = {
      kind: 'ConfigMap',
      metadata: { name: 'c' },
      data: Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`k${String(i).padStart(2, '0')}`, 'a'])),
    };
    const target = {
      ...live,
      data: Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`k${String(i).padStart(2, '0')}`, long])),
    };
    const [change] = manifestDiff([item({ kind: 'ConfigMap', group: '', live, target, predicted: target })]);
    expect(change.fieldsTotal).toBe(30);
    expect(change.fields).toHaveLength(20);
    expect(change.fields[0].to!.length).toBeLessThanOrEqual(80);
  });

  it('never shows a Secret value, even one the server left unmasked, in data, stringData or the last-applied annotation', () => {
    const secret = (value: string, extra: Record<string, unknown> = {}) => ({
      kind: 'Secret',
      metadata: {
        name: 's',
        annotations: { 'kubectl.kubernetes.io/last-applied-configuration': `{"data":{"password":"${value}"}}` },
      },
      data: { password: value },
      ...extra,
    });
    const changes = manifestDiff([
      item({
        kind: 'Secret',
        group: '',
        name: 's',
        live: secret('aHVudGVyMg=='),
        target: secret('c2VjcmV0', { stringData: { token: 'plain-token' } }),
        predicted: secret('c2VjcmV0', { stringData: { token: 'plain-token' } }),
      }),
    ]);
    const text = JSON.stringify(changes);
    for (const secretValue of ['aHVudGVyMg==', 'c2VjcmV0', 'plain-token', 'password\\":'])
      expect(text).not.toContain(secretValue);
    expect(changes[0].fields).toEqual(
      expect.arrayContaining([
        { path: 'data.password', op: 'changed', from: SECRET_MASK, to: SECRET_MASK },
        { path: 'stringData', op: 'added', to: expect.stringContaining(SECRET_MASK) },
      ]),
    );
  });
});
