import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  loadRunbooks,
  parseRunbook,
  RunbookLoadError,
  substitute,
  validateRunbooks,
  SHIPPED_RUNBOOKS_DIR,
} from '../../src/domain/runbooks/loader.js';

const dirs: string[] = [];
function dirWith(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-runbooks-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  return dir;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const GOOD = `name: restart
title: Restart
params:
  selector: { type: selector, required: true }
  prune: { type: bool, default: false }
steps:
  - id: sync
    action: bulk-sync
    with:
      selector: \${{ params.selector }}
      prune: \${{ params.prune }}
`;

describe('runbook loader', () => {
  it('loads the shipped runbooks without problems', () => {
    const result = validateRunbooks(SHIPPED_RUNBOOKS_DIR);
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
    expect(result.runbooks.map((r) => r.name)).toContain('bulk-sync');
    const bulk = result.runbooks.find((r) => r.name === 'bulk-sync')!;
    expect(bulk.steps[0].timeoutMs).toBe(6 * 3_600_000);
  });

  it('names the file and line of an unknown action, with the closest action', () => {
    const text = GOOD.replace('action: bulk-sync', 'action: bulk-synk');
    const { problems } = parseRunbook(text, 'runbooks/restart.yaml');
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ file: 'runbooks/restart.yaml', line: 8, path: 'steps[0].action' });
    expect(problems[0].message).toContain('unknown action "bulk-synk"');
    expect(problems[0].message).toContain('did you mean bulk-sync');
  });

  it('rejects a reference to an undeclared param at its line', () => {
    const text = GOOD.replace('${{ params.prune }}', '${{ params.prnue }}');
    const { problems } = parseRunbook(text, 'r.yaml');
    expect(problems).toEqual([
      expect.objectContaining({
        line: 11,
        path: 'steps[0].with.prune',
        message: expect.stringContaining('unknown param "prnue" (did you mean prune? params:'),
      }),
    ]);
  });

  it('names no action when none is close to the unknown one, only the list', () => {
    const { problems } = parseRunbook(GOOD.replace('action: bulk-sync', 'action: explode'), 'r.yaml');
    expect(problems[0].message).toMatch(/^unknown action "explode" \(actions: [a-z-]+(, [a-z-]+)*\)$/);
  });

  it('refuses expressions other than params references (nothing is evaluated)', () => {
    const text = GOOD.replace('${{ params.prune }}', '${{ process.env.TOKEN }}');
    const { problems } = parseRunbook(text, 'r.yaml');
    expect(problems[0].message).toContain('only ${{ params.NAME }} can be used here');
  });

  it('reports schema problems with their line: bad param type, bad timeout, unknown onFailure', () => {
    const text = `name: x
title: X
params:
  n: { type: number }
steps:
  - id: a
    action: bulk-sync
    onFailure: retry
`;
    const { problems } = parseRunbook(text, 'x.yaml');
    expect(problems.map((p) => [p.path, p.line])).toEqual(
      expect.arrayContaining([
        ['params.n.type', 4],
        ['steps[0].onFailure', 8],
      ]),
    );
    const timeout = parseRunbook(
      GOOD.replace('    action: bulk-sync', '    action: bulk-sync\n    timeout: soon'),
      'y.yaml',
    );
    expect(timeout.problems).toEqual([
      expect.objectContaining({
        path: 'steps[0].timeout',
        line: 9,
        message: expect.stringContaining('expected a duration'),
      }),
    ]);
  });

  it("checks each step's inputs against its action at load time: unknown key, missing required input, literal of the wrong type", () => {
    const text = `name: x
title: X
steps:
  - id: sync
    action: bulk-sync
    with:
      selectr: auth-*
      concurrency: lots
`;
    const { problems } = parseRunbook(text, 'x.yaml');
    expect(problems).toEqual([
      expect.objectContaining({
        line: 7,
        message: expect.stringContaining('bulk-sync has no input "selectr" (did you mean selector?'),
      }),
      expect.objectContaining({ line: 8, message: expect.stringMatching(/^concurrency: expected number/) }),
      expect.objectContaining({ line: 7, message: 'bulk-sync needs input "selector" (add it under with:)' }),
    ]);
  });

  it('rejects a param default that the param type cannot take, and an unknown top-level key at its own line', () => {
    const text = `name: x
title: X
params:
  concurrency: { type: int, default: abc }
  waveTimeout: { type: duration, default: soon }
steps:
  - id: sync
    action: bulk-sync
    with: { selector: a-* }
`;
    expect(parseRunbook(text, 'x.yaml').problems.map((p) => [p.line, p.message])).toEqual([
      [4, 'default: expected a whole number (got "abc")'],
      [5, 'default: expected a duration such as 30s, 10m or 1h (got "soon")'],
    ]);
    const typo = parseRunbook(GOOD.replace('steps:', 'descripton: oops\nsteps:'), 'x.yaml').problems;
    expect(typo).toEqual([expect.objectContaining({ line: 6 })]);
  });

  it('reports YAML syntax errors with the line', () => {
    const { problems } = parseRunbook('name: x\ntitle: [unclosed\nsteps: []\n', 'bad.yaml');
    expect(problems[0].message).toMatch(/^YAML:/);
    expect(problems[0].line).toBeGreaterThanOrEqual(2);
  });

  it('validates a directory: duplicate names and every problem in one report', () => {
    const dir = dirWith({
      'a.yaml': GOOD,
      'b.yaml': GOOD,
      'c.yaml': GOOD.replace('action: bulk-sync', 'action: nope'),
    });
    const result = validateRunbooks(dir);
    expect(result.ok).toBe(false);
    expect(result.report).toContain(
      `${path.join(dir, 'b.yaml')}:1: name: runbook "restart" is also defined in ${path.join(dir, 'a.yaml')}`,
    );
    expect(result.report).toContain(`${path.join(dir, 'c.yaml')}:8: steps[0].action: unknown action "nope"`);
    expect(() => loadRunbooks(dir)).toThrow(RunbookLoadError);
  });

  it('substitutes params as data: whole values keep their type, embedded ones become text, results are not re-scanned', () => {
    const out = substitute(
      {
        selector: '${{ params.selector }}',
        prune: '${{ params.prune }}',
        note: 'sync ${{ params.selector }} now',
        missing: '${{ params.revision }}',
      },
      { selector: '${{ params.prune }}; rm -rf /', prune: true },
    );
    expect(out).toEqual({
      selector: '${{ params.prune }}; rm -rf /',
      prune: true,
      note: 'sync ${{ params.prune }}; rm -rf / now',
    });
  });
});
