import { describe, expect, it } from 'vitest';
import type { Application } from '../../src/infra/argocd/types.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { suggest } from '../../src/core/suggest.js';
import picomatch from 'picomatch';
import { matchesLabels, nameMatcher, parseLabelSelector, selectApps, SelectorError } from '../../src/fleet/select.js';

function selectorError(fn: () => unknown): SelectorError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(SelectorError);
    return e as SelectorError;
  }
  throw new Error('expected a SelectorError');
}

describe('parseLabelSelector', () => {
  it('parses every operator of the Kubernetes syntax', () => {
    expect(parseLabelSelector('a=b, c==d,e!=f, g in (x, y),h notin (z),i,!j')).toEqual([
      { key: 'a', op: '=', values: ['b'] },
      { key: 'c', op: '=', values: ['d'] },
      { key: 'e', op: '!=', values: ['f'] },
      { key: 'g', op: 'in', values: ['x', 'y'] },
      { key: 'h', op: 'notin', values: ['z'] },
      { key: 'i', op: 'exists', values: [] },
      { key: 'j', op: '!', values: [] },
    ]);
  });

  it('accepts prefixed keys, empty values and an empty selector', () => {
    expect(parseLabelSelector('app.kubernetes.io/part-of=shop,tier=')).toEqual([
      { key: 'app.kubernetes.io/part-of', op: '=', values: ['shop'] },
      { key: 'tier', op: '=', values: [''] },
    ]);
    expect(parseLabelSelector('  ')).toEqual([]);
  });

  it('treats in/notin as keys when they stand where a key goes', () => {
    expect(parseLabelSelector('in=x,notin')).toEqual([
      { key: 'in', op: '=', values: ['x'] },
      { key: 'notin', op: 'exists', values: [] },
    ]);
  });

  it.each([
    ['a in (x', 8, "expected ')' after values"],
    ['a in (x y)', 9, "expected ')' after values"],
    ['a in ()', 7, 'in needs at least one value'],
    ['a in x', 6, "expected '(' after in"],
    ['a b', 3, 'expected an operator (=, ==, !=, in, notin)'],
    ['a=b,', 5, "expected a requirement after ','"],
    [',a', 1, 'expected a label key'],
    ['a=(b)', 3, 'expected a value after ='],
    ['a=b c', 5, "expected ',' between requirements"],
    ['-a=b', 1, 'invalid label key "-a"'],
    ['Foo_/x=1', 1, 'invalid label key "Foo_/x": the prefix must be a DNS subdomain'],
    ['a=b%c', 3, 'invalid label value "b%c"'],
    ['!', 2, 'expected a label key, found the end'],
  ])('rejects %j at column %i: %s', (text, at, problem) => {
    const error = selectorError(() => parseLabelSelector(text));
    expect(error.code).toBe('invalid_selector');
    expect(error.message).toContain(`invalid label selector at ${at}: ${problem}`);
    expect(error.details.position).toBe(at);
  });
});

describe('matchesLabels', () => {
  const labels = { team: 'payments', tier: 'web' };
  it.each([
    ['team=payments', true],
    ['team=search', false],
    ['team!=search', true],
    ['missing!=x', true],
    ['tier in (web,api)', true],
    ['tier in (db)', false],
    ['missing in (x)', false],
    ['tier notin (db)', true],
    ['missing notin (x)', true],
    ['tier notin (web)', false],
    ['team', true],
    ['missing', false],
    ['!missing', true],
    ['!team', false],
    ['team=payments,tier=db', false],
    ['', true],
  ])('%j -> %s', (selector, expected) => {
    expect(matchesLabels(labels, parseLabelSelector(selector))).toBe(expected);
  });

  it('matches an app without labels only by absence', () => {
    expect(matchesLabels(undefined, parseLabelSelector('!team,x notin (y)'))).toBe(true);
    expect(matchesLabels(undefined, parseLabelSelector('team'))).toBe(false);
  });
});

const app = (
  name: string,
  cluster: string,
  project: string,
  labels: Record<string, string> = {},
  appSet?: string,
): Application => ({
  metadata: {
    name,
    labels,
    ownerReferences: appSet
      ? [{ apiVersion: 'argoproj.io/v1alpha1', kind: 'ApplicationSet', name: appSet }]
      : undefined,
  },
  spec: { project, destination: { server: `https://${cluster}.k8s` } },
});

const fleet = StaticFleet.fromObjects([
  {
    name: 'eu',
    clusters: [
      { name: 'prod-eu1', server: 'https://prod-eu1.k8s' },
      { name: 'prod-eu2', server: 'https://prod-eu2.k8s' },
    ],
    applications: [
      app('auth-service-prod-eu1', 'prod-eu1', 'payments', { team: 'payments', tier: 'web' }, 'auth-service'),
      app('auth-config-prod-eu1', 'prod-eu1', 'payments', { team: 'payments', tier: 'config' }, 'auth-config'),
      app('search-prod-eu2', 'prod-eu2', 'search', { team: 'search' }),
    ],
  },
  {
    name: 'us',
    clusters: [{ name: 'prod-us1', server: 'https://prod-us1.k8s' }],
    applications: [
      app('auth-service-prod-us1', 'prod-us1', 'payments', { team: 'payments', tier: 'web' }, 'auth-service'),
    ],
  },
]);
const names = (sel: Parameters<typeof selectApps>[1]) =>
  selectApps(fleet, sel).map((a) => `${a.instance}/${a.app.metadata.name}`);

describe('selectApps', () => {
  it('selects by glob across instances', () => {
    expect(names({ patterns: ['auth-service-*'] })).toEqual(['eu/auth-service-prod-eu1', 'us/auth-service-prod-us1']);
  });

  it('selects an exact name through the name index', () => {
    expect(names({ patterns: ['search-prod-eu2'] })).toEqual(['eu/search-prod-eu2']);
  });

  it('combines labels, cluster globs, project, appSet and instance (AND)', () => {
    expect(names({ labels: 'tier in (web,config)', cluster: 'prod-eu*' })).toEqual([
      'eu/auth-service-prod-eu1',
      'eu/auth-config-prod-eu1',
    ]);
    expect(names({ project: 'payments', appSet: 'auth-service', instance: 'us' })).toEqual([
      'us/auth-service-prod-us1',
    ]);
    expect(names({ cluster: 'prod-eu2,prod-us1' })).toEqual(['eu/search-prod-eu2', 'us/auth-service-prod-us1']);
    expect(names({ patterns: ['auth-*'], labels: 'tier!=web' })).toEqual(['eu/auth-config-prod-eu1']);
  });

  it('resolves cluster names from the cluster list (server URL -> name)', () => {
    expect(names({ cluster: 'prod-us1' })).toEqual(['us/auth-service-prod-us1']);
  });

  it('returns nothing (no error) when a glob matches nothing', () => {
    expect(names({ patterns: ['billing-*'] })).toEqual([]);
  });

  it('names the closest matches for an unknown cluster, project, appset, instance or app', () => {
    const cluster = selectorError(() => selectApps(fleet, { cluster: 'prod-eu3' }));
    expect(cluster.code).toBe('unknown_target');
    expect(cluster.message).toBe('No cluster named "prod-eu3". Did you mean prod-eu1, prod-eu2?');
    expect(selectorError(() => selectApps(fleet, { project: 'paymnts' })).details.suggestions).toEqual(['payments']);
    expect(selectorError(() => selectApps(fleet, { appSet: 'auth-servce' })).details.suggestions).toEqual([
      'auth-service',
    ]);
    expect(selectorError(() => selectApps(fleet, { instance: 'uss' })).details.suggestions).toEqual(['us']);
    expect(selectorError(() => selectApps(fleet, { patterns: ['auth-service-prod-eu'] })).details.suggestions).toEqual([
      'auth-service-prod-eu1',
      'auth-service-prod-us1',
    ]);
  });

  it('rejects a bad label selector with invalid_selector', () => {
    expect(selectorError(() => selectApps(fleet, { labels: 'team in (payments' })).code).toBe('invalid_selector');
    expect(selectorError(() => selectApps(fleet, { cluster: ' , ' })).code).toBe('invalid_selector');
  });
});

describe('selectApps over a large fleet', () => {
  // Over 4,096 apps a glob with a literal start reads a sorted index of names kept per chunk of the fleet's list.
  const big = (n: number) =>
    Array.from({ length: n }, (_, i) => ({
      metadata: { name: `${['auth', 'api', 'web', 'auth-config'][i % 4]}-${(i * 7919) % n}`, namespace: 'argocd' },
      spec: { project: 'default', source: { repoURL: 'r' }, destination: { name: `c${i % 30}` } },
    })) as Application[];
  const scan = (fleet: StaticFleet, patterns: string[]) => {
    const globs = patterns.map((p) => picomatch(p, { dot: true }));
    return fleet.apps().filter((a) => globs.some((g) => g(a.app.metadata.name)));
  };

  it('selects what a scan selects, in fleet order, before and after apps change and are added', () => {
    const fleet = StaticFleet.fromObjects([{ name: 'east', applications: big(6000) }]);
    for (const patterns of [['auth-*'], ['auth-1*', 'web-2?'], ['auth-config-*', 'auth-*'], ['zzz-*']])
      expect(selectApps(fleet, { patterns })).toEqual(scan(fleet, patterns));
    const moved = fleet.apps()[2500];
    fleet.upsertApp({ ...moved, cluster: 'elsewhere' });
    const added = { ...moved.app, metadata: { ...moved.app.metadata, name: 'auth-new' } };
    fleet.upsertApp({ ...moved, app: added });
    const selected = selectApps(fleet, { patterns: ['auth-*'] });
    expect(selected).toEqual(scan(fleet, ['auth-*']));
    expect(selected.find((a) => a.app.metadata.name === moved.app.metadata.name)?.cluster).toBe('elsewhere');
    expect(selected.at(-1)?.app.metadata.name).toBe('auth-new');
  });
});

describe('nameMatcher', () => {
  it('matches exactly as the glob does, its literal start checked first or not', () => {
    const patterns = [
      'auth-*',
      'auth-?-eu',
      '!auth-*',
      './auth-*',
      'a{uth,pi}-*',
      '@(auth|api)-eu',
      'auth[-_]*',
      'a.b-*',
      '*-eu',
    ];
    const names = [
      'auth-1',
      'auth-1-eu',
      'api-eu',
      'auth-eu',
      'xauth-1',
      'a.b-1',
      'auth_1',
      'auth-*',
      'payments-eu',
      '',
    ];
    for (const pattern of patterns) {
      const glob = picomatch(pattern, { dot: true });
      for (const name of names) expect(nameMatcher(pattern)(name), `${pattern} on ${name}`).toBe(glob(name));
    }
  });
});

describe('suggest', () => {
  it('ranks by prefix, containing the word, then edit distance, and caps the count', () => {
    expect(suggest('prod-eu', ['prod-eu1', 'prod-eu2', 'staging-eu1', 'prod-us1'], 2)).toEqual([
      'prod-eu1',
      'prod-eu2',
    ]);
    expect(suggest('auth', ['auth-service', 'auth-config', 'search'])).toEqual(['auth-config', 'auth-service']);
    expect(suggest('zzz', ['auth', 'search'])).toEqual([]);
  });
});

describe('the cluster of an app', () => {
  const dest = (destination: Application['spec']['destination']): Application =>
    ({ metadata: { name: 'a' }, spec: { project: 'default', destination } }) as Application;
  it('is destination.name, else the listed cluster of its server, else in-cluster for the local API server, else the URL', async () => {
    const { clusterIndex, clusterNameOf } = await import('../../src/fleet/model.js');
    const index = clusterIndex([{ server: 'https://prod.example.com:6443/', name: 'prod' }]);
    expect(clusterNameOf(dest({ name: 'edge', server: 'https://x' }), index)).toBe('edge');
    expect(clusterNameOf(dest({ server: 'https://prod.example.com:6443' }), index)).toBe('prod');
    expect(clusterNameOf(dest({ server: 'https://kubernetes.default.svc/' }), index)).toBe('in-cluster');
    expect(clusterNameOf(dest({ server: 'https://unknown.example.com' }), index)).toBe('https://unknown.example.com');
    // A cluster list that names the local cluster otherwise wins.
    expect(
      clusterNameOf(
        dest({ server: 'https://kubernetes.default.svc' }),
        clusterIndex([{ server: 'https://kubernetes.default.svc', name: 'mgmt' }]),
      ),
    ).toBe('mgmt');
  });
});
