/**
 * The simulator for the benchmarks, in its own process (started by bench/lib.ts startSimChild).
 * Receives one SimChildRequest over IPC, answers SimChildReady, serves until the parent disconnects.
 */
import { SIM_ANNOTATIONS } from '../src/sim/controller.js';
import type { Application, HealthStatusCode } from '../src/infra/argocd/types.js';
import type { Fixture } from '../src/sim/fixture-types.js';
import { generateFleet, loadScenario, type ScenarioBehaviour } from '../src/sim/scenarios/index.js';
import { startSimServer, type SimServer } from '../src/sim/server.js';
import type { InstanceStore } from '../src/sim/store.js';

export type SimChildRequest =
  | {
      kind: 'fleet';
      apps: number;
      clusters: number;
      instances?: number;
      /**
       * Every app starts with as many history entries as Argo CD keeps (10), as in a fleet that has run for a while:
       * a churn's new entries then replace old ones, and the apps keep their size.
       */
      fullHistory?: boolean;
      /**
       * 'at-once': watches answered at once, not with their first event as Argo CD's (the default). A frozen
       * fleet's streams would stay unanswered, and a mirror counts a stream followed only after waiting
       * subscribeAfterMs for it: waiting, not work, where a bench times a mirror's build.
       */
      watchAnswer?: 'first-message' | 'at-once';
    }
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

/**
 * After ready: steady churn. Every second `perSecond` apps, taken in turn across every instance so the whole fleet
 * changes over time, flip health, gain a history entry (kept to Argo CD's default limit of 10) and a finished
 * operation; and two apps are deleted and created again under a new name. `perSecond: 0` stops it. Answered with SimChildChurned.
 */
export interface SimChildChurn {
  kind: 'churn';
  perSecond: number;
}

export interface SimChildChurned {
  /** Apps changed by the churn since it started. */
  changed: number;
}

/**
 * After ready: the first instance's first `count` apps deleted at once, as deleting an ApplicationSet deletes its
 * apps (`restore: false`); or those apps created again (`restore: true`). Answered with SimChildDeleted.
 */
export interface SimChildDelete {
  kind: 'delete';
  count: number;
  restore: boolean;
}

export interface SimChildDeleted {
  /** Apps deleted, or created again. */
  apps: number;
}

/** After ready: the simulator's own health and sync counts over every instance. Answered with SimChildCounts. */
export interface SimChildCountsRequest {
  kind: 'counts';
}

export interface SimChildCounts {
  apps: number;
  /** Apps the churn changed since it last started. */
  churned: number;
  /** Apps it deleted and created anew under another name since then. */
  replaced: number;
  health: Record<string, number>;
  sync: Record<string, number>;
}

/** Argo CD keeps this many history entries per app unless spec.revisionHistoryLimit says otherwise. */
const HISTORY_LIMIT = 10;

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
      if (req.fullHistory) for (const inst of fixture.instances) inst.applications?.forEach(fillHistory);
      server = await startSimServer({
        fixture,
        port: 0,
        frozen: true,
        adoptFixture: true,
        watchAnswer: req.watchAnswer,
      });
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
      const msg = m as SimChildChange | SimChildChurn | SimChildCountsRequest | SimChildDelete;
      if (msg.kind === 'change') process.send!({ changed: changeApps(msg.count, msg.round) });
      else if (msg.kind === 'delete') process.send!(msg.restore ? restoreApps() : deleteApps(msg.count));
      else if (msg.kind === 'churn') process.send!(churn(msg.perSecond));
      else if (msg.kind === 'counts') process.send!(counts());
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
    store.putApp(changed(app, round % 2 === 0 ? 'Degraded' : 'Healthy', `${round}`, at));
  }
  return Math.min(n, count);
}

/** Apps `deleteApps` took away, to create again. */
let deleted: Application[] = [];

function deleteApps(count: number): SimChildDeleted {
  const store = server!.state.instances.values().next().value!;
  for (const key of [...store.apps.keys()].slice(0, count)) {
    deleted.push(store.apps.get(key)!);
    store.deleteApp(key);
  }
  return { apps: deleted.length };
}

function restoreApps(): SimChildDeleted {
  const store = server!.state.instances.values().next().value!;
  for (const app of deleted) store.putApp(app);
  const apps = deleted.length;
  deleted = [];
  return { apps };
}

/**
 * A copy of `app` with the given health, a new history entry for `revision` and a finished sync operation.
 * `keepShape`: the history entry and the operation keep the fields the app's last ones had (sources, the sync
 * result's resources), so a churned app is the size it was; else they are bare.
 */
function changed(
  app: Application,
  health: HealthStatusCode,
  revision: string,
  at: string,
  keepShape = false,
): Application {
  const next = structuredClone(app);
  const status = (next.status ??= {});
  status.health = { status: health, lastTransitionTime: at };
  const history = (status.history ??= []);
  const rev = revision.padStart(40, '0');
  history.push({
    // keepShape: the fields the last entry had (its source), so the entry that drops out is replaced by one as big.
    ...(keepShape ? history[history.length - 1] : undefined),
    id: (history[history.length - 1]?.id ?? -1) + 1,
    revision: rev,
    deployedAt: at,
    deployStartedAt: at,
    initiatedBy: { username: 'bench' },
  });
  if (history.length > HISTORY_LIMIT) history.splice(0, history.length - HISTORY_LIMIT);
  const before = keepShape ? status.operationState : undefined;
  status.operationState = {
    ...before,
    operation: {
      ...before?.operation,
      sync: { ...before?.operation?.sync, revision: rev },
      initiatedBy: { username: 'bench' },
    },
    phase: 'Succeeded',
    message: 'successfully synced',
    startedAt: at,
    finishedAt: at,
    syncResult: { ...before?.syncResult, revision: rev },
  };
  return next;
}

/** Pads an app's history with older deploys of its last revision up to HISTORY_LIMIT entries. */
function fillHistory(app: Application): void {
  const history = ((app.status ??= {}).history ??= []);
  const last = history[history.length - 1];
  const at = last?.deployedAt ?? new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  while (history.length < HISTORY_LIMIT)
    history.unshift({
      ...last,
      id: (history[0]?.id ?? 1) - 1,
      revision: last?.revision ?? '0'.repeat(40),
      deployedAt: at,
      deployStartedAt: at,
    });
  history.forEach((h, i) => (h.id = i));
}

let churnTimer: NodeJS.Timeout | undefined;
let churned = 0;
/** Apps deleted and created anew by the churn since it started. */
let replaced = 0;
let churnRound = 0;
/** Where the churn goes on: instance index and app offset in it. */
let churnAt = { instance: 0, app: 0 };

function churn(perSecond: number): SimChildChurned {
  if (churnTimer) clearInterval(churnTimer);
  churnTimer = undefined;
  if (perSecond > 0) {
    churned = 0;
    replaced = 0;
    churnTimer = setInterval(() => churnOnce(perSecond), 1000);
  }
  return { changed: churned };
}

/** Changes the next `count` apps in turn; each flips its own health, so over time the counts move both ways. */
function churnOnce(count: number): void {
  const stores = [...server!.state.instances.values()];
  const at = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const revision = `churn-${++churnRound}`;
  for (let done = 0; done < count;) {
    const store = stores[churnAt.instance % stores.length];
    const apps = [...store.apps.values()].slice(churnAt.app, churnAt.app + count - done);
    for (const app of apps) {
      const health = app.status?.health?.status === 'Healthy' ? 'Degraded' : 'Healthy';
      store.putApp(changed(app, health, revision, at, true));
    }
    done += apps.length;
    churned += apps.length;
    churnAt.app += apps.length;
    if (churnAt.app >= store.apps.size) churnAt = { instance: churnAt.instance + 1, app: 0 };
    if (!apps.length && stores.every((s) => !s.apps.size)) break;
  }
  replaceOldest(stores[churnRound % stores.length]);
}

/** Apps deleted and created again under a new name every second of churn, so the fleet's set of names turns over. */
const REPLACED_PER_TICK = 2;

/** Deletes the instance's oldest apps and adds each back under a new name (a team renaming a service). */
function replaceOldest(store: InstanceStore): void {
  const oldest = [...store.apps.keys()].slice(0, REPLACED_PER_TICK);
  for (const key of oldest) {
    const app = store.apps.get(key)!;
    store.deleteApp(key);
    const name = `${app.metadata.name.replace(/-r\d+$/, '')}-r${churnRound}`;
    store.putApp({ ...app, metadata: { ...app.metadata, name, uid: `${app.metadata.uid ?? name}-r${churnRound}` } });
    replaced++;
  }
}

function counts(): SimChildCounts {
  const out: SimChildCounts = { apps: 0, churned, replaced, health: {}, sync: {} };
  for (const store of server!.state.instances.values())
    for (const app of store.apps.values()) {
      out.apps++;
      const health = app.status?.health?.status ?? 'Unknown';
      const sync = app.status?.sync?.status ?? 'Unknown';
      out.health[health] = (out.health[health] ?? 0) + 1;
      out.sync[sync] = (out.sync[sync] ?? 0) + 1;
    }
  return out;
}

process.once('disconnect', () => {
  void (server?.stop() ?? Promise.resolve()).finally(() => process.exit(0));
});
