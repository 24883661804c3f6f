import { describe, expect, it } from 'vitest';
import { formatSelectorParam, parseSelectorParam } from '../../src/domain/runbooks/actions/bulk-sync.js';
import { parseCommand, selectorFromCommand } from '../../src/commands/parse.js';

describe('the bulk-sync selector param', () => {
  it('carries a set-based label selector with its spaces intact from `/argo sync` to the runbook', () => {
    const sel = selectorFromCommand(
      parseCommand('sync auth-* -l env in (prod, staging),tier notin (canary) cluster=prod-eu-1'),
    );
    const param = formatSelectorParam(sel);
    expect(param).toBe('auth-* cluster:prod-eu-1 labels:env in (prod, staging),tier notin (canary)');
    expect(parseSelectorParam(param)).toEqual({
      patterns: ['auth-*'],
      cluster: 'prod-eu-1',
      labels: 'env in (prod, staging),tier notin (canary)',
    });
  });

  it('reads names, globs and qualifiers typed into `run bulk-sync selector=...`', () => {
    expect(parseSelectorParam('auth-config-*,auth-service-* project:identity')).toEqual({
      patterns: ['auth-config-*', 'auth-service-*'],
      project: 'identity',
    });
    expect(parseSelectorParam('l:team=auth')).toEqual({ labels: 'team=auth' });
  });
});

describe('bulk-sync wave warnings', () => {
  it('says when a wave matches nothing or a canary is as large as the run, and nothing when the settings make sense', async () => {
    const { waveWarnings } = await import('../../src/domain/runbooks/actions/bulk-sync.js');
    const apps = ['auth-config-a', 'auth-config-b', 'auth-service-a'].map((app) => ({
      instance: 'prod',
      app,
      cluster: app.slice(-1),
    }));
    expect(waveWarnings(apps, 'auth-config-*;auth-servce-*', 0)).toEqual([
      'wave `auth-servce-*` matches none of the 3 apps to sync: it is left out',
    ]);
    expect(waveWarnings(apps, undefined, 3)).toEqual([
      'canary=3 but only 3 app(s) to sync: there is no canary wave, everything goes at once',
    ]);
    expect(waveWarnings(apps, 'auth-config-*;auth-service-*', 1)).toEqual([]);
    // Empty entries are typos, not patterns (picomatch throws on them).
    expect(waveWarnings(apps, 'auth-config-*,,;;auth-service-*', 0)).toEqual([]);
    const { planWaves } = await import('../../src/domain/runbooks/actions/bulk-sync.js');
    expect(planWaves(apps, 'auth-config-*,;,', 0).map((w) => [w.name, w.apps.length])).toEqual([
      ['auth-config-*,', 2],
      ['(the rest)', 1],
    ]);
  });
});
