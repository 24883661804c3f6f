import { describe, expect, it } from 'vitest';
import { CASES, CHAOS_DEFAULTS, runCase } from './lib.js';

// The fast cases of `npm run chaos`, with real faults: locks of 2 s really expire under a SIGSTOP, and
// Redis really goes down. Each must sync every app exactly once and report the run as the log shows it.
const FAST_CASES = [
  'SIGSTOP beyond the lock, then SIGCONT',
  'Redis shut down 8 s and restarted (AOF)',
  'Redis SIGKILL (AOF everysec) and restarted',
  'sync applied, answer lost (40 syncs)',
];

describe('chaos: a 540-app bulk sync under faults, judged by the simulator operation log', () => {
  for (const name of FAST_CASES) {
    it(`${name}: no app synced twice, none lost, the run's account true to the log`, { timeout: 180_000 }, async () => {
      const c = CASES.find((x) => x.name === name)!;
      const row = await runCase(c, { ...CHAOS_DEFAULTS, speed: 25, runTimeoutMs: 120_000 });
      expect(row, row.detail).toMatchObject({ apps: 540, duplicates: 0, lost: 0, truthful: true, status: 'succeeded' });
    });
  }
});
