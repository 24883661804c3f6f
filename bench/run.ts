/**
 * `npm run bench`: every benchmark in sequence, each printing its own table. Not tests: numbers.
 * fleet.ts, queries.ts, slack-ack.ts and alerts.ts (the last three sharing one 10,000-app mirror), bulk-sync.ts, incidents.ts,
 * verify.ts, startup.ts, then slack-bot.ts (a whole bot process), scale.ts (1,000 / 10,000 / 50,000 apps), roles.ts
 * (a bot, a worker and one process with both, 10,000 apps) and soak.ts
 * (a bot mirroring a churning 10,000-app fleet for 10 minutes, then watch bursts).
 */
import { runAlertsBench } from './alerts.js';
import { runBulkSyncBench } from './bulk-sync.js';
import { runFleetBench } from './fleet.js';
import { runIncidentsBench } from './incidents.js';
import { buildMirror, loadLine, machineLine, rssMb, simConfig, startSimChild } from './lib.js';
import { runQueriesBench } from './queries.js';
import { runRolesBench } from './roles.js';
import { runScaleBench } from './scale.js';
import { runSoakBench } from './soak.js';
import { runSlackBotBench } from './slack-bot.js';
import { runSlackAckBench } from './slack-ack.js';
import { runStartupBench } from './startup.js';
import { runVerifyBench } from './verify.js';

const t0 = performance.now();
console.log(`rollcall benchmarks · ${new Date().toISOString()}`);
console.log(`  ${machineLine()}`);
console.log('  The machine may be shared: compare numbers only with the load average printed next to them.');

try {
  await runFleetBench();

  const sim = await startSimChild({ kind: 'fleet', apps: 10_000, clusters: 200 });
  const bot = await buildMirror(simConfig(sim));
  console.log(
    `\n(shared 10,000-app mirror for the next two: built in ${(bot.buildMs / 1000).toFixed(1)} s, RSS ${rssMb().toFixed(0)} MB)`,
  );
  try {
    await runQueriesBench(bot);
    await runSlackAckBench(bot);
    await runAlertsBench(bot);
  } finally {
    await bot.mirror.stop();
    await sim.stop();
  }

  await runBulkSyncBench();
  await runIncidentsBench();
  await runVerifyBench();
  await runStartupBench();
  await runSlackBotBench();
  await runScaleBench();
  await runRolesBench();
  await runSoakBench();
  console.log(`\nall benchmarks done in ${((performance.now() - t0) / 1000).toFixed(0)} s · ${loadLine()}`);
  process.exit(0);
} catch (error) {
  console.error(error);
  process.exit(1);
}
