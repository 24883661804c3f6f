import { describe, expect, it } from 'vitest';
import {
  CommandSyntaxError,
  commandText,
  parseCommand,
  selectorFromCommand,
  tokenize,
} from '../../src/commands/parse.js';
import { suggest } from '../../src/core/suggest.js';

describe('parseCommand', () => {
  it('splits command, targets, key=value options and --flags', () => {
    const cmd = parseCommand('Status auth-* web-prod cluster=prod-us1 project=payments --public');
    expect(cmd.command).toBe('status');
    expect(cmd.positional).toEqual(['auth-*', 'web-prod']);
    expect(cmd.options).toEqual({ cluster: 'prod-us1', project: 'payments' });
    expect([...cmd.flags]).toEqual(['public']);
  });

  it('maps -l and selector= to options.selector, joining several', () => {
    expect(parseCommand('status -l env=prod,tier=canary').options.selector).toBe('env=prod,tier=canary');
    expect(parseCommand('status selector=env=prod').options.selector).toBe('env=prod');
    expect(parseCommand('status -lenv=prod').options.selector).toBe('env=prod');
    expect(parseCommand('status --selector=env=prod -l tier!=canary').options.selector).toBe('env=prod,tier!=canary');
  });

  it('takes unquoted label-selector waves whole, with their @maxUpdate, and stops at the next option', () => {
    expect(parseCommand('sync shop-* waves=tier in (canary);tier notin (canary, low) @25% bake=30s')).toMatchObject({
      positional: ['shop-*'],
      options: { waves: 'tier in (canary);tier notin (canary, low) @25%', bake: '30s' },
    });
    expect(parseCommand('sync shop-* waves=tier=canary;tier=low@50% prune=true').options).toEqual({
      waves: 'tier=canary;tier=low@50%',
      prune: 'true',
    });
    // Globs as before: the next word is a target, not part of the waves.
    expect(parseCommand('sync a-* waves=a-*;b-* b-*')).toMatchObject({
      positional: ['a-*', 'b-*'],
      options: { waves: 'a-*;b-*' },
    });
  });

  it('takes an unquoted set-based selector whole, as people type it in Slack', () => {
    expect(parseCommand('status -l env in (prod, staging) auth-*')).toMatchObject({
      positional: ['auth-*'],
      options: { selector: 'env in (prod, staging)' },
    });
    expect(parseCommand('sync -l env=prod,tier in (canary) prune=true')).toMatchObject({
      positional: [],
      options: { selector: 'env=prod,tier in (canary)', prune: 'true' },
    });
    expect(parseCommand('status -l env notin (dev) cluster=a')).toMatchObject({
      options: { selector: 'env notin (dev)', cluster: 'a' },
    });
    // An unfinished selector still ends at the last word: the selector parser then says what is missing.
    expect(parseCommand('status -l env in (prod').options.selector).toBe('env in (prod');
    expect(parseCommand('status -l env=prod auth-*')).toMatchObject({
      positional: ['auth-*'],
      options: { selector: 'env=prod' },
    });
  });

  it('keeps quoted values with spaces together, also inside a word', () => {
    const cmd = parseCommand('status selector="env in (prod, staging)" "my app"');
    expect(cmd.options.selector).toBe('env in (prod, staging)');
    expect(cmd.positional).toEqual(['my app']);
    expect(tokenize(`a 'b c' "d \\"e\\""`)).toEqual(['a', 'b c', 'd "e"']);
  });

  it("reads Slack's typographic quotes and HTML escapes as typed", () => {
    const cmd = parseCommand('status -l \u201cenv in (prod)\u201d selector=tier&amp;x &lt;y&gt;');
    expect(cmd.options.selector).toBe('env in (prod),tier&x');
    expect(cmd.positional).toEqual(['<y>']);
  });

  it('drops a leading /argo so pasted commands work', () => {
    const cmd = parseCommand('/argo rollout progressive-infra instance=east');
    expect(cmd.command).toBe('rollout');
    expect(cmd.positional).toEqual(['progressive-infra']);
    expect(cmd.options.instance).toBe('east');
  });

  it('rejects an unterminated quote and -l without a selector with usage errors', () => {
    expect(() => parseCommand('status selector="env=prod')).toThrow(CommandSyntaxError);
    expect(() => parseCommand('status selector="env=prod')).toThrow(/unterminated " quote at position 17/);
    const error = (() => {
      try {
        parseCommand('status -l');
      } catch (e) {
        return e as CommandSyntaxError;
      }
    })();
    expect(error?.code).toBe('usage');
    expect(error?.message).toMatch(/-l needs a label selector/);
  });

  it('gives an empty command for empty text', () => {
    expect(parseCommand('   ').command).toBe('');
  });

  it('builds the app selector from targets and options', () => {
    const sel = selectorFromCommand(parseCommand('status auth-* -l env=prod cluster=c1 project=p appset=s instance=i'));
    expect(sel).toEqual({
      patterns: ['auth-*'],
      labels: 'env=prod',
      cluster: 'c1',
      project: 'p',
      appSet: 's',
      instance: 'i',
    });
    expect(selectorFromCommand(parseCommand('status'))).toEqual({});
  });

  it('reassembles a command as text that parses back to the same command, without --public', () => {
    const cmd = parseCommand('status "my app" -l "env in (prod)" cluster=c1 --public --wide');
    const text = commandText(cmd);
    expect(text).toBe('status "my app" cluster=c1 -l "env in (prod)" --wide');
    const again = parseCommand(text);
    expect(again.positional).toEqual(cmd.positional);
    expect(again.options).toEqual(cmd.options);
  });
});

describe('suggest', () => {
  const names = ['payments-prod-us1', 'payments-prod-us2', 'auth-service', 'auth-config', 'web'];

  it('ranks prefix matches first, then close edits', () => {
    expect(suggest('payments', names)).toEqual(['payments-prod-us1', 'payments-prod-us2']);
    expect(suggest('auth-servce', names)).toEqual(['auth-service']);
    expect(suggest('statsu', ['status', 'app', 'rollout'])).toEqual(['status']);
  });

  it('suggests nothing for a word unlike every candidate', () => {
    expect(suggest('zzzzzz', names)).toEqual([]);
  });

  it('caps the number of suggestions', () => {
    expect(suggest('a', ['a1', 'a2', 'a3', 'a4'], 2)).toEqual(['a1', 'a2']);
  });
});

describe('repeated options', () => {
  it('refuses the same option with two values, and accepts it repeated with the same value', () => {
    expect(() => parseCommand('sync auth-* prune=true prune=false')).toThrow(
      'prune= is given twice (prune=true and prune=false): keep the one you mean',
    );
    expect(parseCommand('sync auth-* prune=true prune=true').options.prune).toBe('true');
  });
});
