import { describe, expect, it } from 'vitest';
import type { Application } from '../../src/infra/argocd/types.js';
import { chunked } from '../../src/fleet/chunks.js';
import { FleetIndex, tagApp, type FleetApp } from '../../src/fleet/model.js';

const clusters = new Map([['https://eu1.k8s', 'prod-eu1']]);
const app = (name: string, opts: { appSet?: string; rv?: string; namespace?: string } = {}): FleetApp =>
  tagApp(
    'eu',
    {
      metadata: {
        name,
        namespace: opts.namespace ?? 'argocd',
        resourceVersion: opts.rv ?? '1',
        ownerReferences: opts.appSet
          ? [{ apiVersion: 'argoproj.io/v1alpha1', kind: 'ApplicationSet', name: opts.appSet }]
          : undefined,
      },
      spec: { project: 'default', destination: { server: 'https://eu1.k8s' } },
    } satisfies Application,
    clusters,
  );

describe('FleetIndex incremental updates (used by the live mirror)', () => {
  it('replaces an app in place and moves it between appsets when its owner changes', () => {
    const index = new FleetIndex(['eu']);
    index.load([app('a', { appSet: 'web' }), app('b', { appSet: 'web' })], [], []);
    const previous = index.upsertApp(app('a', { appSet: 'api', rv: '2' }));
    expect(previous?.app.metadata.resourceVersion).toBe('1');
    expect(index.apps().map((a) => `${a.app.metadata.name}@${a.app.metadata.resourceVersion}`)).toEqual(['a@2', 'b@1']);
    expect(index.appsOf('eu', 'web').map((a) => a.app.metadata.name)).toEqual(['b']);
    expect(index.appsOf('eu', 'api').map((a) => a.app.metadata.name)).toEqual(['a']);
    expect(index.appsNamed('a')).toHaveLength(1);
    expect(index.appsNamed('a')[0].app.metadata.resourceVersion).toBe('2');
    expect(index.findApp('eu', 'a', 'argocd')?.cluster).toBe('prod-eu1');
  });

  it('keeps apps of the same name in different namespaces apart', () => {
    const index = new FleetIndex(['eu']);
    index.upsertApp(app('a', { namespace: 'team-1' }));
    index.upsertApp(app('a', { namespace: 'team-2' }));
    expect(index.appsNamed('a')).toHaveLength(2);
    index.removeApp('eu', 'a', 'team-1');
    expect(index.appsNamed('a').map((a) => a.app.metadata.namespace)).toEqual(['team-2']);
  });

  it('removes an app from every index, and finds the rest after the removal', () => {
    const index = new FleetIndex(['eu']);
    index.load([app('a', { appSet: 'web' }), app('b', { appSet: 'web' }), app('c')], [], []);
    expect(index.removeApp('eu', 'a', 'argocd')?.app.metadata.name).toBe('a');
    expect(index.removeApp('eu', 'a', 'argocd')).toBeUndefined();
    expect(index.apps().map((a) => a.app.metadata.name)).toEqual(['c', 'b']);
    expect(index.appsNamed('a')).toEqual([]);
    expect(index.appsOf('eu', 'web').map((a) => a.app.metadata.name)).toEqual(['b']);
    expect(index.findApp('eu', 'c', 'argocd')?.app.metadata.name).toBe('c');
    index.upsertApp(app('d'));
    expect(index.findApp('eu', 'd', 'argocd')).toBe(index.apps()[2]);
  });

  it("fills a removed app's place with the last app, so only the chunks it wrote are passed over again", () => {
    const index = new FleetIndex(['eu']);
    index.load(
      Array.from({ length: 5000 }, (_, i) => app(`app-${i}`, { appSet: `set-${i % 3}` })),
      [],
      [],
    );
    const passed: string[] = [];
    const firstOf = (apps: readonly FleetApp[]) => (passed.push(apps[0].app.metadata.name), apps.length);
    const pass = () => chunked(index.apps(), firstOf, index.version()).map((c) => c.value);
    expect(pass()).toEqual([1024, 1024, 1024, 1024, 904]);
    passed.length = 0;
    index.removeApp('eu', 'app-10', 'argocd');
    index.removeApp('eu', 'app-4999', 'argocd');
    // The first chunk (app-4999 took app-10's place, then was removed from there: app-4998 holds it now) and the
    // last (shorter by two); the three between are kept.
    expect(pass()).toEqual([1024, 1024, 1024, 1024, 902]);
    expect(passed).toEqual(['app-0', 'app-4096']);
    expect(index.apps()[10].app.metadata.name).toBe('app-4998');
    expect(index.findApp('eu', 'app-4998', 'argocd')).toBe(index.apps()[10]);
    expect(index.findApp('eu', 'app-4999', 'argocd')).toBeUndefined();
    expect(index.appsOf('eu', 'set-1').map((a) => a.app.metadata.name)).not.toContain('app-10');
    expect(index.appsOf('eu', 'set-1')).toHaveLength(1666 - 1);
    for (const [i, a] of index.apps().entries())
      expect(index.findApp('eu', a.app.metadata.name, 'argocd')).toBe(index.apps()[i]);
  });

  it('replaces one instance and keeps the others', () => {
    const index = new FleetIndex(['eu', 'us']);
    const us: FleetApp = { ...app('x'), instance: 'us' };
    index.load([app('a'), us], [], []);
    index.replaceInstance('eu', [app('b')], [], []);
    expect(index.apps().map((a) => `${a.instance}/${a.app.metadata.name}`)).toEqual(['us/x', 'eu/b']);
    expect(index.findApp('eu', 'a', 'argocd')).toBeUndefined();
  });

  it('upserts and removes appsets by instance and name', () => {
    const index = new FleetIndex(['eu', 'us']);
    const set = (instance: string, rv: string) => ({
      instance,
      appSet: {
        metadata: { name: 'web', resourceVersion: rv },
        spec: { generators: [], template: { metadata: {}, spec: { project: 'p', destination: {} } } },
      },
    });
    expect(index.upsertAppSet(set('eu', '1'))).toBeUndefined();
    index.upsertAppSet(set('us', '1'));
    expect(index.upsertAppSet(set('eu', '2'))?.appSet.metadata.resourceVersion).toBe('1');
    expect(index.appSetsNamed('web').map((s) => `${s.instance}@${s.appSet.metadata.resourceVersion}`)).toEqual([
      'eu@2',
      'us@1',
    ]);
    index.removeAppSet('us', 'web');
    expect(index.appSets().map((s) => s.instance)).toEqual(['eu']);
  });
});

describe('FleetIndex version', () => {
  it('changes with every change to apps, appsets and clusters, and not with a read or a removal of nothing', () => {
    const index = new FleetIndex(['eu']);
    const seen = [index.version()];
    const step = (change: () => unknown) => {
      change();
      seen.push(index.version());
    };
    step(() => index.load([app('a'), app('b')], [], []));
    step(() => index.upsertApp(app('a', { rv: '2' })));
    step(() => index.upsertApp(app('c')));
    step(() => index.removeApp('eu', 'b', 'argocd'));
    step(() => index.upsertAppSet({ instance: 'eu', appSet: { metadata: { name: 'web' }, spec: {} } as never }));
    step(() => index.removeAppSet('eu', 'web'));
    step(() => index.replaceClusters('eu', []));
    expect(new Set(seen).size).toBe(seen.length);

    const before = index.version();
    index.apps();
    index.findApp('eu', 'a', 'argocd');
    index.removeApp('eu', 'nope', 'argocd');
    index.removeAppSet('eu', 'nope');
    expect(index.version()).toBe(before);
  });
});
