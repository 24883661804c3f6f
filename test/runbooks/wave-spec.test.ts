import { describe, expect, it } from 'vitest';
import type { Application } from '../../src/infra/argocd/types.js';
import type { FleetApp } from '../../src/fleet/model.js';
import { assertWavesMatch, planBulkSync, waveApp } from '../../src/domain/runbooks/actions/bulk-sync/planner.js';
import { parseWaves, resolveMaxUpdate } from '../../src/domain/runbooks/actions/bulk-sync/wave-spec.js';
import { isRollcallError } from '../../src/core/errors.js';

function fleetApp(name: string, labels: Record<string, string>): FleetApp {
  const app = {
    metadata: { name, namespace: 'argocd', labels },
    spec: { project: 'default', source: { repoURL: 'https://git.example/x', path: name }, destination: { name } },
    status: { sync: { status: 'OutOfSync', revision: 'abc' }, health: { status: 'Healthy' } },
  } as Application;
  return { instance: 'prod', cluster: `c-${name}`, app };
}

/** 1 canary, 4 low-traffic, 8 high-traffic, 3 without a tier. */
const fleet = [
  fleetApp('shop-01', { tier: 'canary', team: 'shop' }),
  ...[2, 3, 4, 5].map((n) => fleetApp(`shop-0${n}`, { tier: 'low-traffic', team: 'shop' })),
  ...[6, 7, 8, 9, 10, 11, 12, 13].map((n) => fleetApp(`shop-${String(n).padStart(2, '0')}`, { tier: 'high-traffic' })),
  ...['web-a', 'web-b', 'web-c'].map((n) => fleetApp(n, { team: 'web' })),
];
const params = { includeSynced: false, revision: undefined, canary: 0, concurrency: 10 };
const plan = (waves: string, extra: Partial<typeof params> = {}) =>
  planBulkSync(fleet, { ...params, ...extra, waves }).waves.map(
    (w) => `${w.name}: ${w.apps.length} @${w.maxUpdate}${w.selector ? ` [${w.selector}]` : ''}`,
  );

/** The error a bad `waves` gets, before anything is planned. */
function refusal(waves: string): { code: string; message: string; suggestions?: string[] } {
  try {
    assertWavesMatch(fleet.map(waveApp), waves);
  } catch (error) {
    if (isRollcallError(error)) return { code: error.code, message: error.message, suggestions: error.suggestions };
    throw error;
  }
  throw new Error(`waves=${waves} was accepted`);
}

describe('wave maxUpdate, scaled as Argo CD RollingSync scales a step', () => {
  // [asked, apps in the wave, concurrency, maxUpdate]
  const table: [string, Parameters<typeof resolveMaxUpdate>[0], number, number][] = [
    ['no @: the run concurrency', undefined, 8, 10],
    ['@3: three at a time', { count: 3 }, 8, 3],
    ['@50% of 4 is 2', { percent: 50 }, 4, 2],
    ['@25% of 8 is 2', { percent: 25 }, 8, 2],
    ['@50% of 3 rounds down to 1', { percent: 50 }, 3, 1],
    ['@33% of 10 rounds down to 3', { percent: 33 }, 10, 3],
    ['@25% of 3 (0.75) is raised to 1', { percent: 25 }, 3, 1],
    ['@1% of 1 (0.01) is raised to 1', { percent: 1 }, 1, 1],
    ['@99% of 10 rounds down to 9, not up to 10', { percent: 99 }, 10, 9],
    ['@100% of 7 is all 7', { percent: 100 }, 7, 7],
  ];
  for (const [what, asked, apps, want] of table) it(what, () => expect(resolveMaxUpdate(asked, apps, 10)).toBe(want));
});

describe('label waves in the bulk-sync planner', () => {
  it('plans tier waves in order, each with its own maxUpdate, the rest last with concurrency', () => {
    expect(plan('tier=canary;tier=low-traffic@50%;tier=high-traffic@25%')).toEqual([
      'tier=canary: 1 @10 [tier=canary]',
      'tier=low-traffic: 4 @2 [tier=low-traffic]',
      'tier=high-traffic: 8 @2 [tier=high-traffic]',
      '(the rest): 3 @10',
    ]);
  });

  it('reads set-based selectors, !key and a bare label key, and mixes them with glob waves', () => {
    expect(plan('tier in (canary, low-traffic)@1;!tier;shop-1*@3')).toEqual([
      'tier in (canary, low-traffic): 5 @1 [tier in (canary, low-traffic)]',
      '!tier: 3 @10 [!tier]',
      'shop-1*: 4 @3',
      '(the rest): 4 @10',
    ]);
    // `team` names no app but is a label key: the apps that have it.
    expect(plan('team;tier notin (canary)')).toEqual([
      'team: 8 @10 [team]',
      'tier notin (canary): 8 @10 [tier notin (canary)]',
    ]);
    // A plain word that names an app is the app.
    expect(plan('web-b;shop-0*@50%')).toEqual(['web-b: 1 @10', 'shop-0*: 9 @4', '(the rest): 6 @10']);
  });

  it('first match wins, and a canary comes out of the first wave, whose percentage counts what is left', () => {
    expect(plan('tier!=high-traffic@50%;tier', { canary: 2 })).toEqual([
      'canary (2): 2 @10',
      'tier!=high-traffic: 6 @3 [tier!=high-traffic]',
      'tier: 8 @10 [tier]',
    ]);
  });

  it('stores no labels in the plan: the executor reads names only', () => {
    const { waves } = planBulkSync(fleet, { ...params, waves: 'tier=canary' });
    expect(waves[0].apps).toEqual([{ instance: 'prod', app: 'shop-01', cluster: 'c-shop-01' }]);
  });
});

describe('a waves param that cannot be planned is refused before the preview', () => {
  const table: [string, string, string, RegExp][] = [
    ['@0', 'tier=canary@0', 'invalid_params', /@0 would never sync the wave's apps .*manual gate/],
    ['@0%', 'tier=canary@0%', 'invalid_params', /@0% would never sync/],
    [
      'more than the wave',
      'tier=canary@150%',
      'invalid_params',
      /@150% is more than the whole wave; write at most @100%/,
    ],
    ['a fraction', 'tier=canary@12.5%', 'invalid_params', /@12.5% is not a maxUpdate\. Write @N .* or @N%/],
    ['a word', 'tier=canary@half', 'invalid_params', /@half is not a maxUpdate/],
    ['nothing before @', '@2', 'invalid_params', /has nothing before its @/],
    ['two @', 'tier=canary@1@2', 'invalid_params', /has more than one @/],
    ['too many at once', 'tier=canary@501', 'invalid_params', /more than 500 apps at once/],
    [
      'globs mixed with a selector',
      'tier=canary,web-*',
      'invalid_params',
      /mixes app-name globs .* with label-selector operators/,
    ],
    ['an unclosed set', 'tier in (canary', 'invalid_selector', /is not a valid label selector: expected .* \(column/],
    ['a bad key', 'tier=canary,=x', 'invalid_selector', /is not a valid label selector: expected a label key/],
    ['a bad value', 'tier=can ary', 'invalid_selector', /is not a valid label selector/],
  ];
  for (const [what, waves, code, message] of table)
    it(what, () => {
      const error = refusal(waves);
      expect(error.code).toBe(code);
      expect(error.message).toMatch(message);
      expect(error.message).toContain('Nothing was started.');
    });

  it('refuses a word that is both an app name and a label key, offering both readings', () => {
    const both = [...fleet, fleetApp('tier', { app: 'x' })];
    try {
      parseWaves('tier', both.map(waveApp));
      throw new Error('accepted');
    } catch (error) {
      expect(isRollcallError(error, 'invalid_params')).toBe(true);
      expect((error as Error).message).toMatch(
        /wave `tier` is ambiguous: `tier` is the name of a selected app and a label key/,
      );
      expect((error as { suggestions?: string[] }).suggestions).toEqual(['apps:tier', 'labels:tier']);
    }
    expect(parseWaves('apps:tier;labels:tier', both.map(waveApp)).map((s) => s.kind)).toEqual(['names', 'labels']);
  });

  it('refuses a list mixing app names and label keys', () => {
    expect(refusal('web-a,team').message).toMatch(/mixes app names \(`web-a`\) and label keys \(`team`\)/);
  });

  it('refuses a selector that matches none of the selected apps, saying what their labels are and what was meant', () => {
    const values = refusal('tier=canry;tier=low-traffic');
    expect(values.code).toBe('invalid_params');
    expect(values.message).toMatch(
      /^wave selector `tier=canry` matches none of the 16 selected apps \(their `tier` labels: canary, high-traffic, low-traffic\)\./,
    );
    expect(values.suggestions).toEqual(['tier=canary']);
    const key = refusal('tyer=canary');
    expect(key.message).toContain('no selected app has a label `tyer` (their label keys: team, tier)');
    expect(key.suggestions).toEqual(['tier=canary']);
    // A plain word that is neither a name nor a key: a glob that matches nothing, with the key it was likely meant as.
    expect(refusal('tiers').suggestions).toEqual(['tier']);
    expect(refusal('tiers').message).toMatch(/^wave pattern `tiers` matches none of the 16 selected apps/);
  });
});
