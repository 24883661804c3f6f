import { mirrorResyncsTotal } from '../infra/metrics.js';
import type { Logger } from 'pino';
import type { ArgoApi, WatchHandle } from '../infra/argocd/api.js';
import type { Application, ApplicationSet, Cluster, WatchEventType } from '../infra/argocd/types.js';
import type { InstanceHealth } from './events.js';
import {
  clusterIndex,
  FleetIndex,
  fleetAppKey,
  tagApp,
  type FleetApp,
  type FleetAppSet,
  type FleetCluster,
  type InstanceLinks,
} from './model.js';
import { normalizeServer } from '../infra/argocd/objects.js';
import { leanApp } from './lean.js';
import { HEALTH_FETCHES_AT_ONCE, HealthFetches, lacksResourceHealth } from './health-fetches.js';
import { mapConcurrent } from '../core/concurrency.js';
import { ArgoError } from '../infra/argocd/errors.js';
import { RollcallError } from '../core/errors.js';

export interface FleetMirrorOptions {
  logger?: Logger;
  /** How long start() waits for an instance's streams to connect. @defaultValue 10000 */
  readyTimeoutMs?: number;
  /** Coalesces relists after reconnects. @defaultValue 500 */
  relistDelayMs?: number;
  /** Retry of a failed initial list: first delay, doubled up to 60 s. @defaultValue 2000 */
  retryMs?: number;
  /** Clusters have no stream: relist them this often. 0 = never. @defaultValue 300000 */
  clusterRefreshMs?: number;
  /**
   * Unhealthy apps fetched one by one, as the list arrives, for their resource health (`HealthFetches`): List
   * leaves it out since v3.0 (argocd-facts B6), and "Degraded" without the crash-loop message is no answer
   * mid-incident. Watch events carry it, so each app is fetched at most once per list. At most this many; 0 = never.
   * @defaultValue 500
   */
  enrichLimit?: number;
  /**
   * How long an instance may stay out of sync before subscribers hear it was lost. Watch streams
   * through proxies drop and reconnect routinely; a loss that heals within this is no event.
   * @defaultValue 5000
   */
  lostAfterMs?: number;
  /**
   * Follow changes after the lists with watch streams. false: one list per instance and nothing after it,
   * for a process that answers once and exits (a one-shot `ask`); such an instance is in sync once listed.
   * @defaultValue true
   */
  follow?: boolean;
  now?: () => Date;
}

interface InstanceState {
  name: string;
  api: ArgoApi;
  /** Whether streams keep this instance current (FleetMirrorOptions.follow). */
  follows: boolean;
  clustersByServer: Map<string, string>;
  loaded: boolean;
  appsConnected: boolean;
  appSetsConnected: boolean;
  appsWatch?: WatchHandle;
  appSetsWatch?: WatchHandle;
  /** The resourceVersion each open stream started from. */
  watchedFrom: Partial<Record<ListKind, string>>;
  /**
   * While the first lists arrive their streams are already open, from each list's resourceVersion (which comes
   * before its items): what the streams tell meanwhile waits here, and is handled in order once the lists are in.
   */
  early?: (() => void)[];
  lastEventAt?: string;
  /** Why a stream or the first list failed. */
  error?: RollcallFailure;
  /** Why the last relist failed: until one succeeds, what is held may miss changes. */
  listError?: RollcallFailure;
  /** When the data held was last known current: a list, or the moment a stream of a synced instance failed. */
  dataAsOf?: string;
  /** What the last lists skipped (ReadList.warnings), by list. */
  listWarnings: { apps: string[]; appSets: string[]; clusters: string[] };
  /** Bumped per stream change; a relist leaves alone what the stream touched after the relist began. */
  seq: number;
  /**
   * What the streams changed while a relist was in flight, by key, at which seq. Only a relist reads it, so it is
   * kept only while one runs: else it would hold a key for every app ever seen (deleted ones too) for as long as
   * the streams stay up.
   */
  touched: Map<string, number>;
  /** Relists in flight: a reopen may start one before the last has finished. */
  relists: number;
  relistTimer?: NodeJS.Timeout;
  relisting?: Promise<void>;
  relistAgain: boolean;
  /** What the next relist reads: the lists whose streams reconnected since the last one began. */
  relistKinds: Set<ListKind>;
  /** Streams reconnected without an answer: followed once a relist of what they follow succeeds. */
  confirmByRelist: Set<ListKind>;
  /** Reading again the apps that were in motion when listed, once the streams are up (`catchUp`). */
  catchingUp?: Promise<void>;
  retryTimer?: NodeJS.Timeout;
  retryDelay: number;
  clusterLookupAt: number;
  /** What subscribers were last told: connected or lost. Undefined until the first load settles. */
  announced?: 'connected' | 'lost';
  lostTimer?: NodeJS.Timeout;
  /** The first load's fetch of unhealthy apps' resource health. */
  enriching?: Promise<void>;
}

/**
 * The live fleet: per Argo CD instance, one full list of clusters, ApplicationSets and
 * Applications, then watch streams from the lists' resourceVersion.
 *
 * Apps are listed without a `fields` projection on purpose: List's allowlist (B2) drops
 * status.conditions, status.history, status.sync.revisions and operationState.message, which
 * `app`, `status` and the diagnosis rules need. One full list per instance at start (and after
 * a stream gap) costs less than a get per app later. What no reader uses is dropped as each app
 * comes in, from lists, events and fetches alike (`leanApp`).
 *
 * Real Argo CD does not replay changes when a watch resumes from a resourceVersion, so after
 * every reconnect the mirror relists and reconciles (changes seen on the stream meanwhile win).
 */
export class FleetMirror extends FleetIndex {
  private readonly states = new Map<string, InstanceState>();
  private readonly log?: Logger;
  private readonly opts: Required<Omit<FleetMirrorOptions, 'logger'>>;
  private stopped = false;
  private clusterTimer?: NodeJS.Timeout;

  constructor(clients: ReadonlyMap<string, ArgoApi>, links: InstanceLinks[], opts: FleetMirrorOptions = {}) {
    const log = opts.logger?.child({ component: 'fleet-mirror' });
    super([...clients.keys()], links, (error, event) =>
      log?.error(
        { err: (error as Error).message, event: event.kind, instance: event.instance },
        'a fleet event listener failed',
      ),
    );
    this.log = log;
    this.opts = {
      readyTimeoutMs: opts.readyTimeoutMs ?? 10_000,
      relistDelayMs: opts.relistDelayMs ?? 500,
      retryMs: opts.retryMs ?? 2000,
      clusterRefreshMs: opts.clusterRefreshMs ?? 300_000,
      enrichLimit: opts.enrichLimit ?? 500,
      lostAfterMs: opts.lostAfterMs ?? 5000,
      follow: opts.follow ?? true,
      now: opts.now ?? (() => new Date()),
    };
    for (const [name, api] of clients) {
      this.states.set(name, {
        name,
        api,
        follows: this.opts.follow,
        clustersByServer: new Map(),
        loaded: false,
        appsConnected: false,
        appSetsConnected: false,
        watchedFrom: {},
        listWarnings: { apps: [], appSets: [], clusters: [] },
        seq: 0,
        touched: new Map(),
        relists: 0,
        relistAgain: false,
        relistKinds: new Set(),
        confirmByRelist: new Set(),
        retryDelay: this.opts.retryMs,
        clusterLookupAt: 0,
      });
    }
  }

  /**
   * Loads every instance and opens its streams. Resolves when each instance has loaded or
   * failed once; a failed instance keeps retrying in the background and shows in health().
   */
  async start(): Promise<void> {
    this.stopped = false;
    await Promise.all([...this.states.values()].map((s) => this.startInstance(s)));
    // The first answer must be as complete as later ones: a "Degraded" without the crash-loop message
    // that a fetch a moment later fills in is a different, worse answer (a one-shot `ask` has no later).
    await this.settle(Promise.all([...this.states.values()].map((s) => s.enriching)), this.opts.readyTimeoutMs);
    if (this.opts.follow && this.opts.clusterRefreshMs > 0) {
      this.clusterTimer = setInterval(
        () => void this.refreshClusters().catch(() => undefined),
        this.opts.clusterRefreshMs,
      );
      this.clusterTimer.unref();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.clusterTimer) clearInterval(this.clusterTimer);
    for (const s of this.states.values()) {
      this.closeStreams(s);
      if (s.relistTimer) clearTimeout(s.relistTimer);
      if (s.retryTimer) clearTimeout(s.retryTimer);
      if (s.lostTimer) clearTimeout(s.lostTimer);
      s.lostTimer = undefined;
    }
    await Promise.all([...this.states.values()].flatMap((s) => [s.relisting?.catch(() => undefined), s.catchingUp]));
  }

  override health(): InstanceHealth[] {
    return [...this.states.values()].map((s) => {
      const synced = isSynced(s);
      const error = s.listError ?? s.error;
      const warnings = [...s.listWarnings.clusters, ...s.listWarnings.appSets, ...s.listWarnings.apps];
      return {
        instance: s.name,
        synced,
        lastEventAt: s.lastEventAt,
        error: error?.message,
        ...(error?.code ? { errorCode: error.code } : {}),
        ...(!synced && s.loaded && s.dataAsOf ? { dataAsOf: s.dataAsOf } : {}),
        ...(warnings.length ? { warnings } : {}),
      };
    });
  }

  private emitApp(s: InstanceState, type: WatchEventType, app: FleetApp, previous: FleetApp | undefined) {
    const at = this.opts.now().toISOString();
    if (type === 'DELETED') this.feed.publish({ kind: 'app-removed', instance: s.name, at, app: previous ?? app });
    else if (previous) this.feed.publish({ kind: 'app-changed', instance: s.name, at, app, previous });
    else this.feed.publish({ kind: 'app-added', instance: s.name, at, app });
  }

  private emitAppSet(s: InstanceState, type: WatchEventType, appSet: FleetAppSet, previous: FleetAppSet | undefined) {
    const at = this.opts.now().toISOString();
    if (type === 'DELETED')
      this.feed.publish({ kind: 'appset-removed', instance: s.name, at, appSet: previous ?? appSet });
    else if (previous) this.feed.publish({ kind: 'appset-changed', instance: s.name, at, appSet, previous });
    else this.feed.publish({ kind: 'appset-added', instance: s.name, at, appSet });
  }

  /**
   * Tells subscribers once per change of an instance's connectivity, not once per stream event:
   * both streams dropping with Argo CD is one loss, and their two reconnects one recovery.
   */
  private announce(s: InstanceState) {
    if (this.stopped) return;
    if (isSynced(s)) {
      if (s.lostTimer) clearTimeout(s.lostTimer);
      s.lostTimer = undefined;
      if (s.announced === 'connected') return;
      s.announced = 'connected';
      this.feed.publish({ kind: 'instance-connected', instance: s.name, at: this.opts.now().toISOString() });
      return;
    }
    if (s.announced === 'lost' || s.lostTimer) return;
    // An instance whose first list failed was never there: that is a loss at once.
    const wait = s.loaded ? this.opts.lostAfterMs : 0;
    s.lostTimer = setTimeout(() => {
      s.lostTimer = undefined;
      if (this.stopped || isSynced(s) || s.announced === 'lost') return;
      s.announced = 'lost';
      this.feed.publish({
        kind: 'instance-lost',
        instance: s.name,
        at: this.opts.now().toISOString(),
        error: (s.listError ?? s.error)?.message,
      });
    }, wait);
    s.lostTimer.unref();
  }

  /** Relists clusters on every instance and re-resolves app cluster names (clusters have no stream). */
  async refreshClusters(): Promise<void> {
    await Promise.all([...this.states.values()].filter((s) => s.loaded).map((s) => this.refreshInstanceClusters(s)));
  }

  // ---------- per instance ----------

  private async startInstance(s: InstanceState): Promise<void> {
    if (this.stopped) return;
    // Started as the list arrives: the fetches of unhealthy apps overlap the list instead of following it.
    const fetches = this.healthFetches(s);
    // So do the streams (`early`): Argo CD's watch replays nothing, and a change made after the list's snapshot and
    // before its stream subscribed is on neither. Subscribed once a list's version is in, that window is the time
    // to the first bytes of its answer, not the time to read them all (seconds, for 10,000 apps).
    if (s.follows) s.early = [];
    const openEarly = (kind: ListKind) => (version: string) => {
      if (!this.stopped && s.early) this.openWatch(s, kind, version);
    };
    try {
      const listedAt = this.opts.now().toISOString();
      const [clusters, appSets, apps] = await Promise.all([
        s.api.listClusters(),
        s.api.listApplicationSets({}, { onResourceVersion: openEarly('appSets') }),
        s.api.listApplications(
          {},
          {
            each: (app) => {
              const lean = leanApp(app);
              fetches?.offer(lean);
              return lean;
            },
            onResourceVersion: openEarly('apps'),
          },
        ),
      ]);
      if (this.stopped) return;
      s.listWarnings = {
        apps: apps.warnings ?? [],
        appSets: appSets.warnings ?? [],
        clusters: clusters.warnings ?? [],
      };
      s.dataAsOf = listedAt;
      s.clustersByServer = clusterIndex(clusters.items ?? []);
      this.replaceInstance(
        s.name,
        (apps.items ?? []).map((a) => this.held(s, a)),
        (appSets.items ?? []).map((appSet) => ({ instance: s.name, appSet })),
        (clusters.items ?? []).map((cluster) => ({ instance: s.name, cluster })),
      );
      s.loaded = true;
      s.error = s.listError = undefined;
      s.retryDelay = this.opts.retryMs;
      this.log?.info(
        { instance: s.name, apps: apps.items?.length ?? 0, appSets: appSets.items?.length ?? 0 },
        'instance loaded',
      );
      // Applied while the streams connect: each fetched app is checked against the newest copy, so an event that
      // arrives first still wins.
      s.enriching = this.enrichUnhealthy(s, fetches);
      if (!s.follows) {
        this.announce(s);
        return;
      }
      // A stream not yet opened from the list it follows (its answer had no version before its items, or an attempt
      // before a retry told another) is opened from it now.
      this.watchFrom(s, 'apps', apps.metadata?.resourceVersion);
      this.watchFrom(s, 'appSets', appSets.metadata?.resourceVersion);
      const early = s.early ?? [];
      s.early = undefined;
      for (const told of early) told();
      await this.waitForStreams(s);
      s.catchingUp = this.catchUp(s);
    } catch (error) {
      fetches?.cancel();
      this.closeStreams(s);
      s.error = failureOf(error);
      this.log?.warn({ instance: s.name, err: s.error.message, code: s.error.code }, 'instance load failed; retrying');
      this.announce(s);
      const delay = s.retryDelay;
      s.retryDelay = Math.min(60_000, s.retryDelay * 2);
      s.retryTimer = setTimeout(() => void this.startInstance(s), delay);
      s.retryTimer.unref();
    }
  }

  /** Waits for work to finish, at most ms; says so in the log when it did not. */
  private async settle(work: Promise<unknown>, ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const done = await Promise.race([
      work.then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
    ]);
    clearTimeout(timer);
    if (!done)
      this.log?.warn({ waitedMs: ms }, 'resource health of unhealthy apps not all fetched yet; serving what is known');
  }

  private async waitForStreams(s: InstanceState): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const ready = Promise.all([s.appsWatch?.ready, s.appSetsWatch?.ready]).then(() => true);
    const timeout = new Promise<boolean>(
      (resolve) => (timer = setTimeout(() => resolve(false), this.opts.readyTimeoutMs)),
    );
    const ok = await Promise.race([ready, timeout]);
    clearTimeout(timer);
    if (!ok) this.log?.warn({ instance: s.name }, 'streams not connected yet; serving the listed state');
  }

  private watchFrom(s: InstanceState, kind: ListKind, resourceVersion: string | undefined) {
    const key = kind === 'apps' ? 'appsWatch' : 'appSetsWatch';
    if (!s[key] || s.watchedFrom[kind] !== resourceVersion) this.openWatch(s, kind, resourceVersion);
  }

  /** Opens the stream of one kind, closing the one it replaces: the first time it follows, the mirror is told. */
  private openWatch(s: InstanceState, kind: ListKind, resourceVersion: string | undefined) {
    const key = kind === 'apps' ? 'appsWatch' : 'appSetsWatch';
    s[key]?.close();
    s.confirmByRelist.delete(kind);
    // Before the first lists are in, what the stream tells waits for them; a stream replaced meanwhile (its list was
    // retried) told nothing that list's answer does not hold.
    const told = (then: () => void) => {
      if (!s.early) return then();
      s.early.push(() => {
        if (s[key] === handle) then();
      });
    };
    const options = {
      onError: (e: Error) => told(() => this.streamFailed(s, kind, e)),
      onReconnect: (_: string | undefined, answered: boolean) => told(() => this.reconnected(s, kind, answered)),
      onExpired: () =>
        told(() => {
          this.streamFailed(s, kind);
          this.scheduleRelist(s, true);
        }),
    };
    const handle: WatchHandle =
      kind === 'apps'
        ? s.api.watchApplications(
            { resourceVersion },
            {
              ...options,
              // Kept lean while it waits: a burst of changes during a long list holds only what the mirror would.
              onEvent: (e) => {
                if (!s.early) return this.applyAppEvent(s, e.type, e.application);
                const app = leanApp(e.application);
                told(() => this.applyAppEvent(s, e.type, app));
              },
            },
          )
        : s.api.watchApplicationSets(
            { resourceVersion },
            { ...options, onEvent: (e) => told(() => this.applyAppSetEvent(s, e.type, e.applicationSet)) },
          );
    s[key] = handle;
    s.watchedFrom[kind] = resourceVersion;
    void handle.ready.then(() => {
      if (s[key] === handle) told(() => this.streamFollows(s, kind));
    });
  }

  private closeStreams(s: InstanceState) {
    s.appsWatch?.close();
    s.appSetsWatch?.close();
    s.appsWatch = s.appSetsWatch = undefined;
    s.watchedFrom = {};
    s.early = undefined;
    s.appsConnected = s.appSetsConnected = false;
  }

  /**
   * A stream reconnected: what changed while it was down is relisted. One the server answered follows from now on;
   * one that only stayed open (unanswered, as a quiet stream stays) follows once that relist succeeds, so a proxy that
   * holds every request while Argo CD is down does not make the instance look connected again.
   */
  private reconnected(s: InstanceState, stream: ListKind, answered: boolean) {
    if (answered) this.streamFollows(s, stream);
    else s.confirmByRelist.add(stream);
    this.scheduleRelist(s, false, stream);
  }

  private streamFollows(s: InstanceState, stream: ListKind) {
    s.confirmByRelist.delete(stream);
    if (stream === 'apps') s.appsConnected = true;
    else s.appSetsConnected = true;
    s.error = undefined;
    this.announce(s);
  }

  /** A stream stopped following: what is held was current until now (if it was current at all). */
  private streamFailed(s: InstanceState, stream: ListKind, error?: Error) {
    s.confirmByRelist.delete(stream);
    if (isSynced(s)) s.dataAsOf = this.opts.now().toISOString();
    if (stream === 'apps') s.appsConnected = false;
    else s.appSetsConnected = false;
    if (error) s.error = failureOf(error);
    this.announce(s);
  }

  private touch(s: InstanceState, key: string) {
    ++s.seq;
    if (s.relists) s.touched.set(key, s.seq);
    s.lastEventAt = this.opts.now().toISOString();
  }

  private applyAppEvent(s: InstanceState, type: WatchEventType, app: Application) {
    const { name, namespace } = app.metadata;
    const key = fleetAppKey(s.name, name, namespace);
    this.touch(s, 'app' + key);
    if (type === 'DELETED') {
      const previous = this.removeApp(s.name, name, namespace);
      if (previous) this.emitApp(s, type, this.tag(s, app), previous);
      return;
    }
    const current = this.findApp(s.name, name, namespace);
    // A resumed stream or a snapshot can repeat what we already hold.
    if (
      current &&
      app.metadata.resourceVersion &&
      current.app.metadata.resourceVersion === app.metadata.resourceVersion
    )
      return;
    const tagged = this.tag(s, app);
    const previous = this.upsertApp(tagged);
    this.emitApp(s, previous ? 'MODIFIED' : 'ADDED', tagged, previous);
  }

  private applyAppSetEvent(s: InstanceState, type: WatchEventType, appSet: ApplicationSet) {
    const { name, namespace } = appSet.metadata;
    this.touch(s, 'set' + fleetAppKey(s.name, name, namespace));
    if (type === 'DELETED') {
      const previous = this.removeAppSet(s.name, name, namespace);
      if (previous) this.emitAppSet(s, type, { instance: s.name, appSet }, previous);
      return;
    }
    const current = this.appSets().find(
      (x) =>
        x.instance === s.name &&
        x.appSet.metadata.name === name &&
        (x.appSet.metadata.namespace ?? '') === (namespace ?? ''),
    );
    if (
      current &&
      appSet.metadata.resourceVersion &&
      current.appSet.metadata.resourceVersion === appSet.metadata.resourceVersion
    )
      return;
    const fleetAppSet = { instance: s.name, appSet };
    const previous = this.upsertAppSet(fleetAppSet);
    this.emitAppSet(s, previous ? 'MODIFIED' : 'ADDED', fleetAppSet, previous);
  }

  /**
   * Argo CD's watch replays nothing (`resourceVersion` only skips the snapshot), so a change between the list's
   * snapshot and the streams' start is on neither. An app Argo CD was still working on when listed (an operation
   * pending or running, health Progressing) would keep that state until its next change, and a run waiting for it
   * would wait for ever: a worker that starts while a sync completes apps meets exactly that. Once the streams carry
   * every later change, those apps are read again; what comes back is applied unless a stream event changed the app
   * meanwhile, and an app gone since is removed.
   */
  private async catchUp(s: InstanceState): Promise<void> {
    const moving = this.apps().filter((a) => a.instance === s.name && inMotion(a.app));
    await mapConcurrent(moving, HEALTH_FETCHES_AT_ONCE, async ({ app: seen }) => {
      if (this.stopped) return;
      const { name, namespace } = seen.metadata;
      const fresh = await s.api
        .getApplication({ name, appNamespace: namespace, project: seen.spec?.project })
        .catch((error: unknown) => {
          if (error instanceof ArgoError && error.kind === 'not_found') return null;
          // Left as listed until its next change or a relist, as an app whose enrichment fetch failed.
          this.log?.debug(
            { instance: s.name, app: name, err: (error as Error).message },
            'could not read an app again',
          );
          return undefined;
        });
      if (this.stopped) return;
      this.readStreams(s);
      const current = this.findApp(s.name, name, namespace);
      if (fresh === undefined || current?.app.metadata.resourceVersion !== seen.metadata.resourceVersion) return;
      if (fresh === null) {
        const previous = this.removeApp(s.name, name, namespace);
        if (previous) this.emitApp(s, 'DELETED', previous, previous);
      } else if (fresh.metadata.resourceVersion !== seen.metadata.resourceVersion) {
        const tagged = this.tag(s, fresh);
        this.emitApp(s, 'MODIFIED', tagged, this.upsertApp(tagged));
      }
    });
  }

  /**
   * Handles what the instance's streams have read and not yet handled, before a list or a read is applied over it:
   * as when events were handled as read, an event that arrived first is applied first.
   */
  private readStreams(s: InstanceState) {
    s.appsWatch?.drain?.();
    s.appSetsWatch?.drain?.();
  }

  /** The fetches of one list's unhealthy apps, or none when enrichment is off. */
  private healthFetches(s: InstanceState): HealthFetches | undefined {
    if (!this.opts.enrichLimit) return undefined;
    return new HealthFetches(s.api, {
      limit: this.opts.enrichLimit,
      stopped: () => this.stopped,
      onError: (app, error) =>
        this.log?.debug(
          { instance: s.name, app: app.metadata.name, err: (error as Error).message },
          'could not fetch resource health',
        ),
    });
  }

  /**
   * Fetches the instance's unhealthy apps that lack resource health (those offered while the list arrived first,
   * then any other the mirror holds: a List read whole offers nothing) and fills it in. Resolves once all are done.
   */
  private enrichUnhealthy(s: InstanceState, fetches = this.healthFetches(s)): Promise<void> {
    if (!fetches) return Promise.resolve();
    for (const a of this.apps()) if (a.instance === s.name) fetches.offer(a.app);
    fetches.applyWith((full) => {
      const current = this.findApp(s.name, full.metadata.name, full.metadata.namespace);
      // Only fill in what the List left out; a newer watch event wins. Not an event: Argo CD's state did not change,
      // our copy of it became complete.
      if (
        current &&
        current.app.metadata.resourceVersion === full.metadata.resourceVersion &&
        lacksResourceHealth(current.app)
      )
        this.upsertApp(this.tag(s, full));
    });
    return fetches.close();
  }

  /** Every Application the mirror takes in (lists, watch events, fetches) passes here, and leaves lean. */
  private held(s: InstanceState, app: Application): FleetApp {
    return tagApp(s.name, leanApp(app), s.clustersByServer);
  }

  private tag(s: InstanceState, app: Application): FleetApp {
    const tagged = this.held(s, app);
    const server = app.spec?.destination?.server;
    // An unknown destination server usually means a cluster added since the last cluster list.
    if (!app.spec?.destination?.name && server && !s.clustersByServer.has(normalizeServer(server)))
      this.lookupClustersSoon(s);
    return tagged;
  }

  private lookupClustersSoon(s: InstanceState) {
    const now = Date.now();
    if (now - s.clusterLookupAt < 30_000) return;
    s.clusterLookupAt = now;
    void this.refreshInstanceClusters(s).catch(() => undefined);
  }

  private async refreshInstanceClusters(s: InstanceState): Promise<void> {
    const list = await s.api.listClusters();
    const clusters: Cluster[] = list.items;
    s.listWarnings.clusters = list.warnings ?? [];
    s.clustersByServer = clusterIndex(clusters);
    this.replaceClusters(
      s.name,
      clusters.map((cluster): FleetCluster => ({ instance: s.name, cluster })),
    );
    for (const a of this.apps().filter((x) => x.instance === s.name)) {
      const retagged = tagApp(s.name, a.app, s.clustersByServer);
      if (retagged.cluster !== a.cluster) this.upsertApp(retagged);
    }
  }

  // ---------- relist after a stream gap ----------

  /**
   * A relist after a stream gap reads the lists whose streams had the gap: a quiet ApplicationSet stream that a
   * proxy cuts every minute (it is unanswered, so it has no keep-alives) costs an ApplicationSet list, not every app.
   */
  private scheduleRelist(s: InstanceState, reopen = false, ...kinds: ListKind[]) {
    if (this.stopped) return;
    for (const kind of kinds.length ? kinds : LIST_KINDS) s.relistKinds.add(kind);
    if (reopen) {
      // 410: the stream is gone for good; relist now and open new streams from the new lists.
      if (s.relistTimer) clearTimeout(s.relistTimer);
      s.relistTimer = undefined;
      void this.relist(s, true);
      return;
    }
    if (s.relistTimer) return;
    s.relistTimer = setTimeout(() => {
      s.relistTimer = undefined;
      void this.relist(s, false);
    }, this.opts.relistDelayMs);
  }

  private async relist(s: InstanceState, reopen: boolean): Promise<void> {
    if (s.relisting) {
      s.relistAgain = true;
      if (reopen) await s.relisting.catch(() => undefined);
      else return;
    }
    mirrorResyncsTotal.inc({ instance: s.name });
    s.relists++;
    const kinds = new Set<ListKind>(reopen || !s.relistKinds.size ? LIST_KINDS : s.relistKinds);
    s.relistKinds.clear();
    const run = this.doRelist(s, reopen, kinds);
    s.relisting = run;
    try {
      await run;
    } catch (error) {
      // What is held stays (dropping it would turn a broken answer into an empty fleet), marked as not current.
      s.listError = failureOf(error);
      this.log?.warn(
        { instance: s.name, err: s.listError.message, code: s.listError.code },
        'relist failed; keeping the last listed state; retrying',
      );
      this.announce(s);
      if (!this.stopped) setTimeout(() => this.scheduleRelist(s, reopen, ...kinds), this.opts.retryMs).unref();
    } finally {
      s.relisting = undefined;
      if (--s.relists === 0) s.touched.clear();
    }
    if (s.relistAgain && !this.stopped) {
      s.relistAgain = false;
      this.scheduleRelist(s, false, ...s.relistKinds);
    }
  }

  private async doRelist(s: InstanceState, reopen: boolean, kinds: ReadonlySet<ListKind>): Promise<void> {
    const startedAt = s.seq;
    const listedAt = this.opts.now().toISOString();
    const [apps, appSets] = await Promise.all([
      kinds.has('apps') ? s.api.listApplications({}, { each: leanApp }) : undefined,
      kinds.has('appSets') ? s.api.listApplicationSets() : undefined,
    ]);
    if (this.stopped) return;
    this.readStreams(s);
    const touchedSince = (key: string) => (s.touched.get(key) ?? 0) > startedAt;
    if (apps) this.reconcileApps(s, apps.items ?? [], touchedSince);
    if (appSets) this.reconcileAppSets(s, appSets.items ?? [], touchedSince);

    for (const [key, seq] of s.touched) if (seq <= startedAt) s.touched.delete(key);
    s.listWarnings = {
      ...s.listWarnings,
      ...(apps ? { apps: apps.warnings ?? [] } : {}),
      ...(appSets ? { appSets: appSets.warnings ?? [] } : {}),
    };
    s.dataAsOf = listedAt;
    s.listError = undefined;
    for (const kind of kinds) if (s.confirmByRelist.has(kind)) this.streamFollows(s, kind);
    this.announce(s);
    if (apps) void this.enrichUnhealthy(s);
    this.log?.info(
      { instance: s.name, lists: [...kinds], apps: apps?.items?.length, appSets: appSets?.items?.length },
      'relisted after a stream gap',
    );
    if (reopen) {
      this.openWatch(s, 'apps', apps?.metadata?.resourceVersion);
      this.openWatch(s, 'appSets', appSets?.metadata?.resourceVersion);
      // As after the first list: what changed before the new streams subscribed is on neither.
      void this.waitForStreams(s).then(() => {
        if (!this.stopped) s.catchingUp = this.catchUp(s);
      });
    }
  }

  /** The listed apps against what is held: what a stream changed since the relist began wins. */
  private reconcileApps(s: InstanceState, items: Application[], touchedSince: (key: string) => boolean): void {
    const listed = new Set<string>();
    for (const app of items) {
      const key = fleetAppKey(s.name, app.metadata.name, app.metadata.namespace);
      listed.add(key);
      if (touchedSince('app' + key)) continue;
      const current = this.findApp(s.name, app.metadata.name, app.metadata.namespace);
      if (
        current &&
        current.app.metadata.resourceVersion === app.metadata.resourceVersion &&
        app.metadata.resourceVersion
      )
        continue;
      const tagged = this.tag(s, app);
      const previous = this.upsertApp(tagged);
      this.emitApp(s, previous ? 'MODIFIED' : 'ADDED', tagged, previous);
    }
    for (const a of this.apps().filter((x) => x.instance === s.name)) {
      const key = fleetAppKey(s.name, a.app.metadata.name, a.app.metadata.namespace);
      if (listed.has(key) || touchedSince('app' + key)) continue;
      const previous = this.removeApp(s.name, a.app.metadata.name, a.app.metadata.namespace);
      if (previous) this.emitApp(s, 'DELETED', previous, previous);
    }
  }

  /** The listed ApplicationSets against what is held, as reconcileApps. */
  private reconcileAppSets(s: InstanceState, items: ApplicationSet[], touchedSince: (key: string) => boolean): void {
    const listedSets = new Set<string>();
    for (const appSet of items) {
      const key = 'set' + fleetAppKey(s.name, appSet.metadata.name, appSet.metadata.namespace);
      listedSets.add(key);
      if (touchedSince(key)) continue;
      const fleetAppSet = { instance: s.name, appSet };
      const current = this.appSets().find(
        (x) => x.instance === s.name && x.appSet.metadata.name === appSet.metadata.name,
      );
      if (
        current &&
        appSet.metadata.resourceVersion &&
        current.appSet.metadata.resourceVersion === appSet.metadata.resourceVersion
      )
        continue;
      const previous = this.upsertAppSet(fleetAppSet);
      this.emitAppSet(s, previous ? 'MODIFIED' : 'ADDED', fleetAppSet, previous);
    }
    for (const x of this.appSets().filter((y) => y.instance === s.name)) {
      const key = 'set' + fleetAppKey(s.name, x.appSet.metadata.name, x.appSet.metadata.namespace);
      if (listedSets.has(key) || touchedSince(key)) continue;
      const previous = this.removeAppSet(s.name, x.appSet.metadata.name, x.appSet.metadata.namespace);
      if (previous) this.emitAppSet(s, 'DELETED', previous, previous);
    }
  }
}

type ListKind = 'apps' | 'appSets';
const LIST_KINDS: readonly ListKind[] = ['apps', 'appSets'];

function isSynced(s: InstanceState): boolean {
  return s.loaded && !s.listError && (!s.follows || (s.appsConnected && s.appSetsConnected));
}

/** A failure as health() reports it: the message, and the error code when it is a RollcallError (an ArgoError). */
interface RollcallFailure {
  message: string;
  code?: string;
}

function failureOf(error: unknown): RollcallFailure {
  return { message: (error as Error).message, ...(error instanceof RollcallError ? { code: error.code } : {}) };
}

/** Whether Argo CD was still working on an app: an operation pending or running, or health still settling. */
function inMotion(app: Application): boolean {
  const phase = app.status?.operationState?.phase;
  return (
    !!app.operation || phase === 'Running' || phase === 'Terminating' || app.status?.health?.status === 'Progressing'
  );
}
