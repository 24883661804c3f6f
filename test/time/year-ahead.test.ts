import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The suites whose scenarios carry dates (key certificates, sync and health times) run again with the
 * process clock 400 days ahead, under libfaketime: a fixture date written as an absolute day, or a
 * comparison with the wall clock that only holds this month, fails here. `.ci/run` installs faketime
 * and sets ROLLCALL_REQUIRE_FAKETIME, so CI never skips this; elsewhere it is skipped when faketime is
 * missing (`apt-get install faketime`).
 */
const SUITES = [
  'test/sim/scenarios.test.ts',
  'test/sim/sealed-secrets-clock.test.ts',
  'test/kube/sealed-secrets.test.ts',
  'test/runbooks/sealed-secrets-sim.test.ts',
  'test/fleet/diagnose-sim.test.ts',
  'test/runbooks/sealed-secrets-cli.test.ts',
  'test/jobs/schedules.test.ts',
  // Redis is not under faketime: its stream ids (the change log, the audit stream) stay in today while these
  // processes live a year ahead, as two hosts whose clocks disagree would.
  'test/incidents/commands.test.ts',
  'test/runbooks/freeze-expiry-sim.test.ts',
];
// Not test/kube/kubectl.test.ts: kubectl is a Go binary, which reads the clock past libfaketime, so it would
// judge the simulator's certificate (issued by the shifted clock) not yet valid.
const AHEAD_DAYS = 400;
const DAY = 86_400_000;

const hasFaketime = spawnSync('faketime', ['-f', '+0d', 'true']).status === 0;
const required = process.env.ROLLCALL_REQUIRE_FAKETIME === '1';

describe('a year from now', () => {
  it.runIf(required)('has faketime where the suite must prove it (CI)', () => {
    expect(hasFaketime, 'faketime is not installed: apt-get install faketime').toBe(true);
  });

  it.skipIf(!hasFaketime)(
    `passes the date-sensitive suites with the clock ${AHEAD_DAYS} days ahead`,
    () => {
      const report = path.join(mkdtempSync(path.join(tmpdir(), 'rollcall-ahead-')), 'report.json');
      const vitest = path.resolve('node_modules/vitest/vitest.mjs');
      const before = Date.now();
      const run = spawnSync(
        'faketime',
        [
          '-f',
          `+${AHEAD_DAYS}d`,
          process.execPath,
          vitest,
          'run',
          '--reporter=json',
          // These suites judge dates, not speed: a loaded machine must not fail them on a test's time limit.
          '--testTimeout=120000',
          `--outputFile=${report}`,
          ...SUITES,
        ],
        { encoding: 'utf8', timeout: 280_000, env: { ...process.env, ROLLCALL_REQUIRE_FAKETIME: '' } },
      );
      const result = JSON.parse(readFileSync(report, 'utf8')) as {
        startTime: number;
        numPassedTests: number;
        numFailedTests: number;
        testResults: { name: string; status: string; message: string }[];
      };
      const failures = result.testResults.filter((r) => r.status !== 'passed').map((r) => `${r.name}: ${r.message}`);
      expect(failures, run.stderr.slice(-2000)).toEqual([]);
      expect(run.status).toBe(0);
      expect(result.numFailedTests).toBe(0);
      expect(result.numPassedTests).toBeGreaterThanOrEqual(20);
      // The child really ran in the future.
      expect(result.startTime).toBeGreaterThan(before + (AHEAD_DAYS - 1) * DAY);
    },
    300_000,
  );
});
