/**
 * What a bot and a worker hold apart, against one process that is both (`--role all`, the chart's `roles:
 * combined`): each pod keeps its own mirror of the fleet, so two pods hold two. Per role, `rollcall start` in a
 * process of its own against the same simulated fleet (every app with ten deployments in its history): how long until
 * /readyz, until it is idle (a worker's change recorder writes the fleet's histories to Redis first), its RSS after a
 * full GC and 20 s (as scale.ts reads a bot's), its peak (VmHWM) and V8 heap in use. What the roles cost a crowd's
 * acks when they share a process is slack-bot.ts's `--role all`.
 *
 * `node --import tsx bench/roles.ts [--sizes 10000,50000]`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { cleanPrefix, header, isMain, loadLine, machineLine, ms, startSimChild, table, type SimChild } from './lib.js';
import { REDIS_URL, idleMemory, quiet, startBot, startSlackApi } from './bot-process.js';

const ROLES = ['bot', 'worker', 'all'] as const;
type Role = (typeof ROLES)[number];

export interface RoleMemory {
  apps: number;
  role: Role;
  readyMs: number;
  idleMs: number;
  rssMb: number;
  peakMb: number;
  heapMb: number;
  load: string;
}

async function measureRole(sim: SimChild, apiUrl: string, apps: number, role: Role): Promise<RoleMemory> {
  const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-bench-roles-'));
  const prefix = `rollcall-bench-roles-${process.pid}-${role}`;
  const t0 = performance.now();
  const proc = await startBot(sim, apiUrl, dir, prefix, { role });
  try {
    const readyMs = performance.now() - t0;
    await quiet(proc.child.pid!, 120_000);
    const idleMs = performance.now() - t0;
    const memory = await idleMemory(proc);
    return { apps, role, readyMs, idleMs, ...memory, load: loadLine().replace('load avg now ', '') };
  } finally {
    await proc.stop();
    await cleanPrefix(REDIS_URL, prefix);
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function runRolesBench(sizes = [10_000]): Promise<RoleMemory[]> {
  header(`a bot and a worker apart, and one process with both roles (--role all): ${sizes.join(' / ')} apps`);
  console.log(`  ${machineLine()}`);
  const slack = await startSlackApi();
  const results: RoleMemory[] = [];
  try {
    for (const apps of sizes) {
      const sim = await startSimChild({
        kind: 'fleet',
        apps,
        clusters: Math.max(1, Math.round(apps / 50)),
        instances: apps >= 50_000 ? 5 : 1,
        fullHistory: true,
      });
      try {
        for (const role of ROLES) results.push(await measureRole(sim, slack.apiUrl, apps, role));
      } finally {
        await sim.stop();
      }
    }
  } finally {
    slack.stop();
  }
  const rows = results.map((r) => {
    const apart = results.filter((o) => o.apps === r.apps && o.role !== 'all');
    const sum = apart.reduce((acc, o) => acc + o.rssMb, 0);
    return [
      r.apps.toLocaleString('en'),
      `--role ${r.role}`,
      ms(r.readyMs),
      ms(r.idleMs),
      r.rssMb.toFixed(0),
      r.peakMb.toFixed(0),
      r.heapMb.toFixed(0),
      r.role === 'all' ? `${r.rssMb.toFixed(0)} vs ${sum.toFixed(0)} (bot + worker)` : '',
      r.load,
    ];
  });
  table([
    ['apps', 'process', 'ready ms', 'idle ms', 'RSS MB', 'peak MB', 'heap MB', 'one pod vs two', 'load avg'],
    ...rows,
  ]);
  console.log(
    `  (RSS after start-up, a full GC and 20 s idle; peak = VmHWM; idle = using under 5% of a CPU; ${loadLine()})`,
  );
  return results;
}

if (isMain(import.meta.url)) {
  const { values } = parseArgs({ options: { sizes: { type: 'string' } } });
  const sizes = values.sizes?.split(',').map(Number);
  if (sizes?.some((n) => !Number.isInteger(n) || n <= 0))
    throw new Error('--sizes is a list of app counts: 10000,50000');
  runRolesBench(sizes).then(
    () => process.exit(0),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}
