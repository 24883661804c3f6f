import { describe, expect, it } from 'vitest';
import { formatSelectorParam, parseSelectorParam } from '../../src/runbooks/actions/bulk-sync.js';
import { parseCommand, selectorFromCommand } from '../../src/commands/parse.js';

describe('the bulk-sync selector param', () => {
  it('carries a set-based label selector with its spaces intact from `/argo sync` to the runbook', () => {
    const sel = selectorFromCommand(parseCommand('sync auth-* -l env in (prod, staging),tier notin (canary) cluster=prod-eu-1'));
    const param = formatSelectorParam(sel);
    expect(param).toBe('auth-* cluster:prod-eu-1 labels:env in (prod, staging),tier notin (canary)');
    expect(parseSelectorParam(param)).toEqual({ patterns: ['auth-*'], cluster: 'prod-eu-1', labels: 'env in (prod, staging),tier notin (canary)' });
  });

  it('reads names, globs and qualifiers typed into `run bulk-sync selector=...`', () => {
    expect(parseSelectorParam('auth-config-*,auth-service-* project:identity')).toEqual({ patterns: ['auth-config-*', 'auth-service-*'], project: 'identity' });
    expect(parseSelectorParam('l:team=auth')).toEqual({ labels: 'team=auth' });
  });
});
