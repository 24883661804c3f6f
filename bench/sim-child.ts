/**
 * The simulator for the benchmarks, in its own process (started by bench/lib.ts startSimChild).
 * Receives one SimChildRequest over IPC, answers SimChildReady, serves until the parent disconnects.
 */
import { SIM_ANNOTATIONS } from '../src/sim/controller.js';
import type { Fixture } from '../src/sim/fixture-types.js';
import { generateFleet, loadScenario, type ScenarioBehaviour } from '../src/sim/scenarios/index.js';
import { startSimServer, type SimServer } from '../src/sim/server.js';

export type SimChildRequest =
  | { kind: 'fleet'; apps: number; clusters: number; instances?: number }
  | {
      kind: 'scenario';
      name: string;
      /** Simulated seconds per real second. */
      speed: number;
      /** Fixed per-app sync time and health settle, simulated ms (set on every app as sim annotations). */
      syncDurationMs: number;
      healthSettleMs: number;
    };

/** After ready: change `count` apps at once (health flips, a new history entry, a finished operation), as a bad deploy would. */
export interface SimChildChange {
  kind: 'change';
  count: number;
  round: number;
}

export interface SimChildReady {
  url: string;
  instances: { name: string; url: string; token: string }[];
  apps: number;
  /** Simulator process RSS after load, MB. */
  rssMb: number;
  startMs: number;
}

let server: SimServer | undefined;

process.once('message', (raw: unknown) => {
  const req = raw as SimChildRequest;
  void (async () => {
    const t0 = performance.now();
    let fixture: Fixture;
    let behaviour: ScenarioBehaviour | undefined;
    if (req.kind === 'fleet') {
      fixture = generateFleet({ apps: req.apps, clusters: req.clusters, instances: req.instances });
      server = await startSimServer({ fixture, port: 0, frozen: true, adoptFixture: true });
    } else {
      ({ fixture, behaviour } = loadScenario(req.name));
      for (const inst of fixture.instances)
        for (const app of inst.applications ?? [])
          app.metadata.annotations = {
            ...app.metadata.annotations,
            [SIM_ANNOTATIONS.syncDuration]: `${req.syncDurationMs}ms`,
            [SIM_ANNOTATIONS.healthSettle]: `${req.healthSettleMs}ms`,
          };
      server = await startSimServer({
        fixture,
        port: 0,
        speed: req.speed,
        scenarioBehaviour: behaviour,
        adoptFixture: true,
      });
    }
    const apps = fixture.instances.reduce((n, i) => n + (i.applications?.length ?? 0), 0);
    const ready: SimChildReady = {
      url: server.url,
      instances: server.instances,
      apps,
      rssMb: process.memoryUsage().rss / 1024 / 1024,
      startMs: performance.now() - t0,
    };
    process.send!(ready);
    process.on('message', (m: unknown) => {
      const msg = m as SimChildChange;
      if (msg.kind === 'change') process.send!({ changed: changeApps(msg.count, msg.round) });
    });
  })().catch((error: unknown) => {
    process.send!({ error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    process.exit(1);
  });
});

function changeApps(count: number, round: number): number {
  const store = server!.state.instances.values().next().value!;
  const at = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  let n = 0;
  for (const app of store.apps.values()) {
    if (n++ >= count) break;
    const next = structuredClone(app);
    const status = (next.status ??= {});
    const bad = round % 2 === 0;
    status.health = { status: bad ? 'Degraded' : 'Healthy', lastTransitionTime: at };
    const history = (status.history ??= []);
    const revision = `${round}`.padStart(40, '0');
    history.push({
      id: (history[history.length - 1]?.id ?? -1) + 1,
      revision,
      deployedAt: at,
      deployStartedAt: at,
      initiatedBy: { username: 'bench' },
    });
    status.operationState = {
      operation: { sync: { revision }, initiatedBy: { username: 'bench' } },
      phase: 'Succeeded',
      message: 'successfully synced',
      startedAt: at,
      finishedAt: at,
      syncResult: { revision },
    };
    store.putApp(next);
  }
  return Math.min(n, count);
}

process.once('disconnect', () => {
  void (server?.stop() ?? Promise.resolve()).finally(() => process.exit(0));
});
