// npm run chaos [-- --only NAME-SUBSTRING] [--selector GLOB] [--speed X] [--concurrency N]
// Runs every chaos case (test/chaos/lib.ts) on the simulator's seed-outage fleet and prints one
// table row per case: duplicates and lost apps by the simulator's operation log, the longest pause
// in syncs after the fault, the run's final state and whether its account matches the log.
import os from 'node:os';
import { parseArgs } from 'node:util';
import { CASES, CHAOS_DEFAULTS, formatTable, runCase, type ChaosRow } from './lib.js';

const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    selector: { type: 'string' },
    speed: { type: 'string' },
    concurrency: { type: 'string' },
  },
});
const opts = {
  ...CHAOS_DEFAULTS,
  ...(values.selector ? { selector: values.selector } : {}),
  ...(values.speed ? { speed: Number(values.speed) } : {}),
  ...(values.concurrency ? { concurrency: Number(values.concurrency) } : {}),
};
const cases = CASES.filter((c) => !values.only || c.name.includes(values.only));
const load = () =>
  os
    .loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');
console.log(
  `== chaos: bulk sync of ${opts.scenario} (selector ${opts.selector}), concurrency ${opts.concurrency}, sim speed ${opts.speed}, lock ${opts.lockMs} ms, stalled check ${opts.stalledMs} ms, Argo CD timeout ${opts.argoTimeoutMs} ms`,
);
console.log(`   node ${process.version} · ${os.cpus().length} CPUs · load avg ${load()}`);
const rows: ChaosRow[] = [];
for (const c of cases) {
  process.stderr.write(`   running: ${c.name} ...\n`);
  try {
    rows.push(await runCase(c, opts));
  } catch (err) {
    rows.push({
      name: c.name,
      apps: 0,
      duplicates: -1,
      lost: -1,
      status: `harness error: ${(err as Error).message}`,
      truthful: false,
      wallMs: 0,
      detail: '',
    });
  }
}
console.log(formatTable(rows));
console.log(`   (load avg now ${load()})`);
const bad = rows.filter((r) => r.duplicates !== 0 || r.lost !== 0 || !r.truthful);
process.exit(bad.length ? 1 : 0);
