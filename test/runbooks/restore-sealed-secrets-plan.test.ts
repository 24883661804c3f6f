import { describe, expect, it } from 'vitest';
import {
  needsRestart,
  restorePhases,
  verifyVerdict,
} from '../../src/domain/runbooks/actions/restore-sealed-secrets-keys.js';

describe('restore-sealed-secrets-keys phases', () => {
  it("backs up the target's own keys before writing only when it is to remove them", () => {
    expect(restorePhases({ removeGeneratedKeys: true })).toEqual([
      'preflight',
      'backup-own-keys',
      'keys',
      'restart',
      'verify',
      'refresh',
      'backup',
    ]);
    expect(restorePhases({ removeGeneratedKeys: false })).toEqual([
      'preflight',
      'keys',
      'restart',
      'verify',
      'refresh',
      'backup',
    ]);
  });

  const restarts: [string, Parameters<typeof needsRestart>[0], boolean][] = [
    ['keys created', { created: ['k1'], removedGenerated: [] }, true],
    ["the target's own keys removed", { created: [], removedGenerated: ['k0'] }, true],
    ['nothing written', { created: [], removedGenerated: [] }, false],
    [
      'nothing written by an attempt that found the phase half done',
      { created: [], removedGenerated: [], interrupted: true },
      true,
    ],
  ];
  for (const [what, keys, restart] of restarts) {
    it(`restarts the controller: ${what} → ${restart}`, () => expect(needsRestart(keys)).toBe(restart));
  }

  const verdicts: [string, number, number, 'pass' | 'wait' | 'fail'][] = [
    ['none failing', 0, 0, 'pass'],
    ['none failing, past the deadline', 0, 10, 'pass'],
    ['failing before the deadline', 2, -1, 'wait'],
    ['failing at the deadline', 2, 0, 'fail'],
  ];
  for (const [what, failing, sinceDeadline, verdict] of verdicts) {
    it(`verify gate: ${what} → ${verdict}`, () =>
      expect(verifyVerdict(failing, 1_000 + sinceDeadline, 1_000)).toBe(verdict));
  }
});
