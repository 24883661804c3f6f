import { describe, expect, it } from 'vitest';
import { parseRunbook, SHIPPED_RUNBOOKS_DIR, loadRunbooks } from '../../src/domain/runbooks/loader.js';
import { ParamError, parseParams } from '../../src/domain/runbooks/params.js';

const bulk = loadRunbooks(SHIPPED_RUNBOOKS_DIR).get('bulk-sync')!;

function problems(raw: Record<string, string>) {
  try {
    parseParams(bulk, raw);
  } catch (e) {
    expect(e).toBeInstanceOf(ParamError);
    return (e as ParamError).problems;
  }
  throw new Error('expected a ParamError');
}

describe('runbook params', () => {
  it('types values and applies defaults', () => {
    const values = parseParams(bulk, {
      selector: 'auth-config-*',
      prune: 'true',
      concurrency: '4',
      waveTimeout: '90s',
    });
    expect(values).toMatchObject({
      selector: 'auth-config-*',
      prune: true,
      concurrency: 4,
      waveTimeout: 90_000,
      gate: 'healthy',
      onFailure: 'pause',
      dryRun: false,
    });
    expect(values).not.toHaveProperty('revision');
  });

  it('says what is wrong with each bad value, all at once', () => {
    const found = problems({
      selector: 'a-*',
      concurrency: 'ten',
      waveTimeout: 'soon',
      prune: 'maybe',
      gate: 'helthy',
    });
    expect(found.map((p) => p.message)).toEqual(
      expect.arrayContaining([
        'concurrency: expected a whole number (got "ten")',
        'waveTimeout: expected a duration such as 30s, 10m or 1h (got "soon")',
        'prune: expected true or false (got "maybe")',
        'gate: expected one of healthy, synced, none (got "helthy")',
      ]),
    );
    expect(found.find((p) => p.param === 'gate')).toMatchObject({ code: 'invalid_value', suggestion: 'gate=healthy' });
  });

  it('suggests the closest param for an unknown one, as it would be typed, and only once (not in the message too)', () => {
    const [p] = problems({ selector: 'a-*', prnue: 'true' });
    expect(p).toMatchObject({ code: 'unknown_param', param: 'prnue', suggestion: 'prune=true' });
    expect(p.message).toBe('unknown param "prnue" for bulk-sync; params: ' + Object.keys(bulk.params).join(', '));
  });

  it('offers an enum value or a param name only when it is close to what was typed', () => {
    const found = problems({ selector: 'a-*', gate: 'green', onFailure: 'explode', zzzzzzzz: 'x' });
    expect(found.map((p) => [p.param, p.suggestion])).toEqual([
      ['gate', undefined],
      ['onFailure', undefined],
      ['zzzzzzzz', undefined],
    ]);
    expect(found.find((p) => p.param === 'gate')!.message).toBe(
      'gate: expected one of healthy, synced, none (got "green")',
    );
  });

  it('names a missing required param and how to give it', () => {
    const [p] = problems({});
    expect(p).toMatchObject({ code: 'missing_param', param: 'selector' });
    expect(p.message).toContain('add selector=...');
  });

  it('rejects an enum default outside its values at load time', () => {
    const { problems: found } = parseRunbook(
      'name: x\ntitle: X\nparams:\n  mode: { type: enum, values: [a, b], default: c }\nsteps:\n  - { id: s, action: bulk-sync, with: { selector: a-* } }\n',
      'x.yaml',
    );
    expect(found).toEqual([expect.objectContaining({ path: 'params.mode.default', line: 4 })]);
  });
});

describe('formatParam', () => {
  it('writes durations back the way people type them, everything else as is', async () => {
    const { formatParam } = await import('../../src/domain/runbooks/params.js');
    expect(formatParam({ type: 'duration', required: false, description: '' }, 600_000)).toBe('10m');
    expect(formatParam({ type: 'duration', required: false, description: '' }, 7_200_000)).toBe('2h');
    expect(formatParam({ type: 'duration', required: false, description: '' }, 90_000)).toBe('1m30s');
    expect(formatParam({ type: 'duration', required: false, description: '' }, 1500)).toBe('1s500ms');
    expect(formatParam({ type: 'int', required: false, description: '' }, 600_000)).toBe('600000');
    expect(formatParam(undefined, true)).toBe('true');
  });
});
