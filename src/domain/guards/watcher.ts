import type { FleetApp, FleetAppSet, FleetView } from '../../fleet/model.js';
import { currentStepFromStatus, isRollingSync, rolloutComplete } from '../../fleet/rollingsync.js';
import { keyBase, type RedisClient } from '../../infra/redis.js';
import { SharedSweep } from '../../infra/shared-sweep.js';
import type { Notifier } from '../../core/notifier.js';
import { plural } from '../../core/format.js';
import type { AuditStream } from '../audit/audit-log.js';
import type { CheckService, CheckVerdict } from '../checks/index.js';
import type { RegressionStore } from '../checks/regressions.js';
import type { RunService } from '../runbooks/index.js';
import { guardKey, GuardStore, type Guard, type GuardTrip } from './store.js';
import { tripReply } from './replies.js';

/** The apps of a RollingSync rollout that it has updated, and where it stands. */
export interface GuardedRollout {
  appSet: FleetAppSet;
  /** Apps whose progressive-sync entry is Progressing or Healthy: RollingSync has synced them this rollout. */
  updated: FleetApp[];
  /** 1-based step Argo CD reports as progressing; null when none. */
  step: number | null;
  complete: boolean;
  /** The revisions the updated apps run (sync.revision), the rollout's identity for "trip once". */
  revisions: string[];
}

/**
 * What a guard watches. Argo CD resets every entry of `status.applicationStatus` to Waiting when the appset's
 * generated apps change (a new rollout), then moves the apps of the current step through Pending and
 * Progressing to Healthy (applicationset controller, progressive sync): an entry that is Progressing or
 * Healthy is an app this rollout has synced. An app without an entry was not touched by RollingSync.
 */
export function guardedRollout(
  fleet: FleetView,
  guard: Pick<Guard, 'instance' | 'appSet'>,
): GuardedRollout | undefined {
  const appSet = fleet.appSetsNamed(guard.appSet).find((s) => s.instance === guard.instance);
  if (!appSet) return undefined;
  const entries = appSet.appSet.status?.applicationStatus ?? [];
  const touched = new Set(
    entries.filter((e) => e.status === 'Progressing' || e.status === 'Healthy').map((e) => e.application),
  );
  const updated = fleet.appsOf(guard.instance, guard.appSet).filter((a) => touched.has(a.app.metadata.name));
  const revisions = [...new Set(updated.map((a) => a.app.status?.sync?.revision).filter((r): r is string => !!r))];
  return {
    appSet,
    updated,
    step: currentStepFromStatus(appSet.appSet),
    complete: rolloutComplete(appSet.appSet),
    revisions,
  };
}

export interface GuardWatcherOptions {
  redis: RedisClient;
  prefix: string;
  store: GuardStore;
  fleet: FleetView;
  checks: CheckService;
  /** Where a failing guard raises its regression, which the alert rules turn into an alert. */
  regressions?: RegressionStore;
  runs?: RunService;
  audit?: AuditStream;
  /** Looked up at each trip: Slack's notifier is attached after the runtime starts. */
  notifier?: () => Notifier | undefined;
  /** Where a trip is said when the guard was set from the terminal. */
  alertsChannel?: string;
  everyMs: number;
  now?: () => Date;
  logger?: { warn(o: unknown, m?: string): void; info(o: unknown, m?: string): void };
}

/**
 * Sweeps every guard on an interval: evaluates its checks on the apps the rollout has updated and, when
 * one fails, pauses the rollout (the pause-rollout runbook, in the name of whoever set the guard), audits
 * and says which apps and values. Any number of processes may run one: a sweep is taken by one of them
 * (SET NX for the interval), and a trip is claimed once per guard and rollout.
 */
export class GuardWatcher {
  private readonly now: () => Date;
  private readonly shared: SharedSweep;

  constructor(private readonly opts: GuardWatcherOptions) {
    this.now = opts.now ?? (() => new Date());
    this.shared = new SharedSweep({
      redis: opts.redis,
      lockKey: `${keyBase(opts.prefix)}guard-sweep`,
      everyMs: opts.everyMs,
      sweep: () => this.sweep(),
      name: 'guard sweep',
      logger: opts.logger,
    });
  }

  start(): void {
    this.shared.start();
  }

  trigger(): void {
    this.shared.trigger();
  }

  stop(): Promise<void> {
    return this.shared.stop();
  }

  /** One pass over every guard; returns the trips it made (for tests and the bench). */
  async sweep(): Promise<GuardTrip[]> {
    const trips: GuardTrip[] = [];
    for (const guard of await this.opts.store.list()) {
      const trip = await this.sweepOne(guard).catch((err) => {
        this.opts.logger?.warn({ guard: guardKey(guard), err: (err as Error).message }, 'guard check failed');
        return undefined;
      });
      if (trip) trips.push(trip);
    }
    return trips;
  }

  private async sweepOne(guard: Guard): Promise<GuardTrip | undefined> {
    const at = this.now().toISOString();
    const rollout = guardedRollout(this.opts.fleet, guard);
    if (!rollout || !isRollingSync(rollout.appSet.appSet)) {
      const note = rollout ? 'no RollingSync strategy' : 'ApplicationSet not found';
      await this.opts.store.noteSweep(guard, { at, apps: 0, failing: 0, inconclusive: 0, note });
      return undefined;
    }
    const verdicts = rollout.updated.length ? await this.opts.checks.evaluateMany(guard.checks, rollout.updated) : [];
    const failing = verdicts.filter((v) => v.status === 'fail');
    const inconclusive = verdicts.filter((v) => v.status === 'inconclusive');
    await this.opts.store.noteSweep(guard, {
      at,
      apps: rollout.updated.length,
      failing: failing.length,
      inconclusive: inconclusive.length,
      ...(inconclusive.length ? { note: inconclusive[0].reason } : {}),
    });
    await this.noteRegression(guard, rollout, failing, at);
    if (!failing.length) return undefined;
    return this.tripOn(guard, rollout, failing, at);
  }

  /** Raised while the guard's checks fail, cleared once they pass: the alert follows the metrics. */
  private async noteRegression(guard: Guard, rollout: GuardedRollout, failing: CheckVerdict[], at: string) {
    const store = this.opts.regressions;
    if (!store) return;
    const key = `guard:${guardKey(guard)}`;
    if (!failing.length) return store.clear(key);
    const apps = [...new Set(failing.map((v) => v.app))].sort();
    await store.raise({
      key,
      source: 'guard',
      instance: guard.instance,
      appSet: guard.appSet,
      checks: [...new Set(failing.map((v) => v.check))],
      apps,
      since: at,
      summary: `${plural(apps.length, 'app')} of ${guard.appSet}${rollout.step !== null ? ` (step ${rollout.step})` : ''} fail ${[...new Set(failing.map((v) => v.check))].join(', ')}`,
      details: failing.map((v) => `${v.app} (${v.cluster}) ${v.check}: ${v.reason}`),
      // A guard no process sweeps any more stops alerting after a few sweeps.
      expiresAt: Date.parse(at) + 4 * this.opts.everyMs,
    });
  }

  private async tripOn(
    guard: Guard,
    rollout: GuardedRollout,
    failing: CheckVerdict[],
    at: string,
  ): Promise<GuardTrip | undefined> {
    // A finished rollout has no step left to hold: say it, do not pause.
    const pause = guard.onFail === 'pause' && !rollout.complete;
    const trip: GuardTrip = {
      at,
      step: rollout.step,
      revisions: rollout.revisions,
      apps: failing.map((v) => ({
        app: v.app,
        cluster: v.cluster,
        check: v.check,
        ...(v.value !== undefined ? { value: v.value } : {}),
        threshold: v.threshold,
        reason: v.reason,
        link: v.link,
      })),
      action: pause ? 'pause' : 'notify',
    };
    if (!(await this.opts.store.claimTrip(guard, trip))) return undefined;
    await this.opts.audit?.record({
      kind: 'guard.trip',
      who: 'rollcall',
      surface: 'engine',
      target: guardKey(guard),
      params: { checks: guard.checks, step: rollout.step, revisions: rollout.revisions },
      result: 'failed',
      message: `${plural(failing.length, 'check')} failed: ${failing
        .slice(0, 3)
        .map((v) => `${v.app} ${v.check} ${v.reason}`)
        .join('; ')}`,
    });
    if (pause) trip.runId = await this.pause(guard, trip);
    if (trip.runId) await this.opts.store.updateTrip(guard, trip);
    await this.say(guard, trip);
    return trip;
  }

  /** The pause-rollout runbook, started and confirmed in the name of whoever set the guard. */
  private async pause(guard: Guard, trip: GuardTrip): Promise<string | undefined> {
    const runs = this.opts.runs;
    if (!runs) return undefined;
    try {
      const run = await runs.start({
        runbook: 'pause-rollout',
        params: { target: guard.appSet, instance: guard.instance },
        user: guard.createdBy,
        channel: guard.channel,
        threadTs: guard.threadTs,
        surface: 'schedule',
        system: true,
      });
      await runs.confirm(run.id, guard.createdBy, { channel: guard.channel, threadTs: guard.threadTs });
      return run.id;
    } catch (err) {
      trip.action = `pause failed: ${(err as Error).message}`;
      this.opts.logger?.warn({ guard: guardKey(guard), err: (err as Error).message }, 'guard could not pause');
      return undefined;
    }
  }

  private async say(guard: Guard, trip: GuardTrip): Promise<void> {
    const channel = guard.channel ?? this.opts.alertsChannel;
    const notifier = this.opts.notifier?.();
    if (!channel || !notifier) return;
    await notifier
      .post({ channel, threadTs: guard.threadTs }, tripReply(guard, trip))
      .catch((err) => this.opts.logger?.warn({ err: (err as Error).message }, 'guard could not post'));
  }
}
