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
      server = await startSimServer({ fixture, port: 0, speed: req.speed, scenarioBehaviour: behaviour, adoptFixture: true });
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
  })().catch((error: unknown) => {
    process.send!({ error: error instanceof Error ? error.stack ?? error.message : String(error) });
    process.exit(1);
  });
});

process.once('disconnect', () => {
  void (server?.stop() ?? Promise.resolve()).finally(() => process.exit(0));
});
