/**
 * Carries out a bulk-sync plan, wave by wave, over the per-app state machine in sync-progress.ts.
 * Every app's progress is a checkpoint entry written as a compare-and-set under the attempt's lease,
 * so a retried job continues where the last attempt stopped and no app is synced twice in a run.
 * A wave that passed its gate may then be watched (a bake: verify.ts) before the next starts; where a
 * wave is (syncing, watched since when, failed, rolling back) is its own checkpoint entry, so a retried
 * attempt continues a bake where it was and never rolls an app back twice.
 */
import { z } from 'zod';
import { ArgoError } from '../../../../infra/argocd/errors.js';
import type { Application, ApplicationSyncRequest } from '../../../../infra/argocd/types.js';
import { attributionInfos } from '../../../../infra/argocd/client.js';
import type { FleetApp } from '../../../../fleet/model.js';
import { leanApp } from '../../../../fleet/lean.js';
import { LeaseLostError, type Checkpoint, type CheckpointEntry } from '../../run-store.js';
import { isRollcallError } from '../../../../core/errors.js';
import { formatDuration, plural, typedDuration } from '../../../../core/format.js';
import {
  IN_FLIGHT_APP_STATES,
  nextAppState,
  TERMINAL_APP_STATES,
  type AppCheckpoint,
  type AppEvent,
  type AppState,
} from '../sync-progress.js';
import type { ActionContext, StepOutcome } from '../types.js';
import { appVerdict, gatesFor, timeoutReason, waveVerdict, type AppGate } from './gates.js';
import { bulkSyncInput, type BulkSyncInput } from './input.js';
import { foreignOperationRunning, ourOperation, postingWindowMs, RUN_INFO_NAME } from './operations.js';
import { appKey, type PlannedApp } from './planner.js';
import { failedChecksOf, regressionKey, regressionReply, watchRegression } from './regression.js';
import {
  progressOf,
  rollbackText,
  summarize,
  waveLabel,
  type FailedCheck,
  type WaveOutcomes,
  type WatchState,
} from './summary.js';
import type { NamedVerdict } from './verifier.js';
import { watchVerifiersFor, waveVerifiersFor, WaveWatch, type WaveVerifier } from './verify.js';
import { rollBackWave } from './wave-rollback.js';

const TERMINAL = TERMINAL_APP_STATES;
const IN_FLIGHT = IN_FLIGHT_APP_STATES;

/**
 * Where a wave is. `started`: syncing (`startedAt` keeps its timeout across attempts); `verifying`: past its
 * gate, watched since `verifyStartedAt` (the bake's start); `passed`; `failed`: its watch failed and the
 * failure was acted on (paused for, or let through); `rolling-back`: it failed under onFailure=rollback.
 */
interface WaveCheckpoint extends CheckpointEntry {
  state: 'started' | 'verifying' | 'passed' | 'failed' | 'rolling-back';
  startedAt: number;
  verifyStartedAt?: number;
  failure?: string;
  /** The metric checks behind the failure, for the summary a later attempt writes. */
  checks?: FailedCheck[];
}

/**
 * The watch after the last wave (`watch=`): `watching` since `startedAt` (kept across attempts); `rolling-back`
 * every synced app after a regression under onRegression=rollback; `ended` (passed, or a regression acted on).
 */
interface WatchCheckpoint extends CheckpointEntry {
  state: 'watching' | 'rolling-back' | 'ended';
  startedAt: number;
  /** The first regression the watch found, as the summary and the error name it. */
  regression?: string;
  checks?: FailedCheck[];
  /** The watch ended with a verifier still inconclusive: it could not confirm the rollout. */
  unconfirmed?: string;
}

/** What the watch after the rollout is called in the summary, the audit and the run's error. */
const AFTER_ROLLOUT = 'the watch after the rollout';
/** A regression whose watcher died stops alerting this long after the watch would have ended. */
const REGRESSION_GRACE_MS = 60_000;

/** Apps of a metric check's verdict an audit entry keeps: a wave of hundreds would make every entry that large. */
const AUDITED_APPS = 50;
const VERDICT_ORDER = { fail: 0, inconclusive: 1, pass: 2 } as const;

/**
 * Each verifier's verdict as an audit entry's params: a metric check's per-app values, thresholds and graphs,
 * the failing and inconclusive apps first (at most AUDITED_APPS; `appsJudged` says of how many).
 */
function verdictParams(verdicts: NamedVerdict[]): Record<string, unknown> {
  return {
    verdicts: verdicts.map((v) => {
      const apps = [...(v.apps ?? [])].sort((a, b) => VERDICT_ORDER[a.verdict] - VERDICT_ORDER[b.verdict]);
      return {
        name: v.name,
        verdict: v.verdict,
        reason: v.reason,
        ...(v.figure ? { figure: v.figure } : {}),
        ...(v.check
          ? {
              appsJudged: apps.length,
              apps: apps.slice(0, AUDITED_APPS).map((a) => ({
                app: a.app,
                instance: a.instance,
                verdict: a.verdict,
                ...(a.value !== undefined ? { value: a.value } : {}),
                ...(a.threshold !== undefined ? { threshold: a.threshold } : {}),
                ...(a.link ? { link: a.link } : {}),
              })),
            }
          : {}),
      };
    }),
  };
}

const plannedAppSchema = z.object({ instance: z.string(), app: z.string(), cluster: z.string() });
/** What execution reads back of the plan the preview stored (the rest is for people). */
const storedPlanSchema = z.object({
  // A plan stored before waves carried their own limit syncs `concurrency` apps at once, as every wave did then.
  waves: z.array(
    z.object({
      name: z.string(),
      apps: z.array(plannedAppSchema),
      maxUpdate: z.number().int().positive().optional(),
    }),
  ),
  skipped: z.array(plannedAppSchema.extend({ reason: z.string() })),
});
type StoredPlan = z.infer<typeof storedPlanSchema>;

/** The plan the preview stored for this step, checked as it is read back from Redis. */
function planOf(ctx: ActionContext): StoredPlan | undefined {
  const parsed = storedPlanSchema.safeParse(ctx.run.preview?.byStep?.[ctx.stepId] ?? ctx.run.preview?.data);
  return parsed.success ? parsed.data : undefined;
}

export async function executeBulkSync(ctx: ActionContext): Promise<StepOutcome> {
  const input = bulkSyncInput.parse(ctx.input);
  const plan = planOf(ctx);
  if (!plan) return { status: 'failed', error: 'the run has no bulk-sync plan (preview missing)' };
  let execution: BulkSyncExecution;
  try {
    execution = new BulkSyncExecution(ctx, input, plan);
  } catch (error) {
    // A check this worker cannot judge (its config differs from the one that previewed): nothing is synced unverified.
    if (isRollcallError(error)) return { status: 'failed', error: error.message };
    throw error;
  }
  return execution.run();
}

class BulkSyncExecution {
  private readonly runId: string;
  private readonly checkpoint: Checkpoint<AppCheckpoint>;
  private readonly waveCheckpoint: Checkpoint<WaveCheckpoint>;
  private readonly gates: AppGate[];
  private readonly verifiers: WaveVerifier[];
  /** What watches every synced app after the last wave (`watch=`). */
  private readonly watchVerifiers: WaveVerifier[];
  /** Waves whose watch failed and were let through or paused for, and a failed wave's rollback: for the summary. */
  private readonly outcomes: WaveOutcomes = { failures: [] };
  private watch: WatchState | undefined;
  private rollbackLine: string | undefined;
  private states = new Map<string, AppCheckpoint>();
  // Apps this attempt sent a POST for: never sent again by it, whatever the stored state says
  // (a Redis that lost its last second of writes can show one of them `pending` again).
  private readonly sent = new Set<string>();
  // Apps whose Argo CD state was read with a GET by this attempt, and when (ms, Redis time).
  private readonly checked = new Map<string, number>();
  // Argo CD's own list, read by a later attempt before it sends anything (see readInstances).
  private readonly listed = new Map<string, Application>();
  private unread = new Set<string>();
  private wake: (() => void) | undefined;
  // Set by an event that arrives while a tick is being processed, so the next sleep does not miss it.
  private dirty = false;

  constructor(
    private readonly ctx: ActionContext,
    private readonly input: BulkSyncInput,
    private readonly plan: StoredPlan,
  ) {
    this.runId = ctx.run.id;
    this.checkpoint = ctx.checkpoint<AppCheckpoint>();
    this.waveCheckpoint = ctx.checkpoint<WaveCheckpoint>('waves');
    this.gates = gatesFor(input);
    const planned = plan.waves.flatMap((w) => w.apps);
    this.verifiers = waveVerifiersFor(input, ctx.services, planned);
    this.watchVerifiers = watchVerifiersFor(input, ctx.services, planned);
  }

  async run(): Promise<StepOutcome> {
    await this.loadStates();
    await this.loadWaveFailures();
    // A later attempt (a worker died, stalled, or Redis restarted) reads Argo CD itself first: a sync
    // the last attempt sent may be missing from the checkpoint, and the mirror may not show it yet.
    const attempt = this.ctx.run.steps.find((s) => s.id === this.ctx.stepId)?.attempts ?? 1;
    this.unread = new Set(attempt > 1 ? [...this.states.values()].map((s) => s.instance) : []);
    await this.readInstances();
    // Wake on every mirror event for one of our apps; otherwise re-read the (in-memory) mirror each tick.
    const unsubscribe = this.ctx.services.fleet.subscribe((e) => 'app' in e && this.onApp(e));
    const abortWake = () => this.wake?.();
    this.ctx.signal.addEventListener('abort', abortWake);
    let currentWave = 0;
    try {
      for (let wave = 0; wave < this.plan.waves.length; wave++) {
        currentWave = wave;
        const stop = await this.runWave(wave);
        if (stop) return stop;
      }
      const stop = await this.watchAfterRollout();
      if (stop) return stop;
    } catch (err) {
      if (err instanceof LeaseLostError) {
        this.report(currentWave);
        return { status: 'interrupted', output: this.summary() };
      }
      throw err;
    } finally {
      unsubscribe();
      this.ctx.signal.removeEventListener('abort', abortWake);
    }
    return this.finish();
  }

  /** First attempt writes every app as pending; later attempts find their states. */
  private async loadStates() {
    const read = async () => new Map([...(await this.checkpoint.all())].filter(([k]) => !k.startsWith('wave:')));
    this.states = await read();
    const missing: { key: string; expected: undefined; value: AppCheckpoint }[] = [];
    this.plan.waves.forEach((w, wave) =>
      w.apps.forEach((a) => {
        if (!this.states.has(appKey(a)))
          missing.push({ key: appKey(a), expected: undefined, value: { state: 'pending', ...a, wave } });
      }),
    );
    for (const s of this.plan.skipped) {
      if (!this.states.has(appKey(s)))
        missing.push({
          key: appKey(s),
          expected: undefined,
          value: { state: 'skipped', ...s, wave: -1, reason: s.reason },
        });
    }
    if (missing.length) {
      await this.checkpoint.transitionMany(missing);
      this.states = await read();
    }
  }

  /** Waves an earlier attempt found failing after their gate (and acted on): the summary still names them. */
  private async loadWaveFailures() {
    for (const [key, w] of await this.waveCheckpoint.all()) {
      const wave = Number(key.slice('wave:'.length));
      if (w.state === 'failed' && w.failure && this.plan.waves[wave])
        this.outcomes.failures.push({
          wave,
          name: this.label(wave),
          reason: w.failure,
          ...(w.checks?.length ? { checks: w.checks } : {}),
        });
    }
  }

  private label(wave: number) {
    return waveLabel(wave, this.plan.waves.length, this.plan.waves[wave]?.name);
  }

  private summary() {
    return summarize(this.states, this.input.dryRun, this.outcomes);
  }

  /** Until its instance has been read, no app of it is sent (Argo CD unreachable: tried again each tick). */
  private async readInstances() {
    for (const instance of [...this.unread]) {
      try {
        // Read lean as it arrives, and only the run's apps kept: at 10,000 apps an instance's list is 58 MB of JSON.
        const list = await this.ctx.services.argocd.get(instance)?.listApplications({}, { each: leanApp });
        for (const app of list?.items ?? []) {
          const key = appKey({ instance, app: app.metadata.name });
          if (this.states.has(key)) this.listed.set(key, app);
        }
        this.unread.delete(instance);
      } catch {
        // next tick
      }
    }
  }

  private onApp(e: { app?: FleetApp }) {
    if (e.app && this.states.has(appKey({ instance: e.app.instance, app: e.app.app.metadata.name }))) {
      this.dirty = true;
      this.wake?.();
    }
  }

  private sleep(ms: number) {
    return new Promise<void>((resolve) => {
      if (this.dirty) return resolve();
      const done = () => {
        clearTimeout(t);
        this.wake = undefined;
        resolve();
      };
      const t = setTimeout(done, ms);
      this.wake = done;
    });
  }

  private live(a: PlannedApp): Application | undefined {
    const key = appKey(a);
    const fromMirror = () => this.ctx.services.fleet.appsNamed(a.app).find((f) => f.instance === a.instance)?.app;
    if (!this.listed.has(key)) return fromMirror();
    const mirrored = fromMirror();
    // The list answers "was it sent?"; the mirror, once it shows our operation, is as good and newer.
    return mirrored && ourOperation(mirrored, this.runId) ? mirrored : this.listed.get(key)!;
  }

  private windowFor(instance: string) {
    return postingWindowMs(this.ctx.services.config.instances.find((i) => i.name === instance)?.timeout ?? 30_000);
  }

  /**
   * One compare-and-set transition, from the state this attempt last saw. When another executor (or
   * a Redis that lost writes) changed it meanwhile, nothing is written and the stored entry is taken.
   * A lost lease throws LeaseLostError.
   */
  private async apply(key: string, event: AppEvent): Promise<boolean> {
    const s = this.states.get(key)!;
    const t = nextAppState(s, event);
    if (!t.ok) return false;
    if (await this.checkpoint.transition(key, s.state, t.next)) {
      this.states.set(key, t.next);
      return true;
    }
    const stored = await this.checkpoint.get(key);
    if (stored) this.states.set(key, stored);
    return false;
  }

  private async applyMany(changes: [string, AppEvent][]) {
    const writes: { key: string; expected: AppState; value: AppCheckpoint }[] = [];
    for (const [key, event] of changes) {
      const s = this.states.get(key)!;
      const t = nextAppState(s, event);
      if (t.ok) writes.push({ key, expected: s.state, value: t.next });
    }
    const written = await this.checkpoint.transitionMany(writes);
    for (const [i, w] of writes.entries()) {
      if (written[i]) this.states.set(w.key, w.value);
      else {
        const stored = await this.checkpoint.get(w.key);
        if (stored) this.states.set(w.key, stored);
      }
    }
  }

  private report(waveIndex: number) {
    this.ctx.progress(
      progressOf({
        states: this.states,
        waves: this.plan.waves,
        waveIndex,
        dryRun: this.input.dryRun,
        now: this.ctx.now(),
        watch: this.watch,
        rollbackLine: this.rollbackLine,
      }),
    );
  }

  /**
   * One wave: synced tick by tick until its gate is passed, then watched (when verifiers watch waves).
   * An outcome when the step stops inside it. A wave an earlier attempt saw through, or whose failure was
   * acted on, is passed over; one that was rolling back goes on rolling back.
   */
  private async runWave(wave: number): Promise<StepOutcome | undefined> {
    const at = await this.waveEntry(wave);
    if (at.state === 'passed' || at.state === 'failed') return undefined;
    if (at.state === 'rolling-back') return this.rollBack(wave, at.failure ?? 'failed', at.checks ?? []);
    const stop = await this.syncWave(wave, at.startedAt);
    if (stop) return stop;
    return this.verifyWave(wave);
  }

  private waveKeys(wave: number) {
    return this.plan.waves[wave].apps.map(appKey);
  }

  private members(wave: number) {
    return this.waveKeys(wave).map((k) => this.states.get(k)!);
  }

  /** Until every app of the wave has ended (its gate passed or its failure acted on); an outcome when the step stops. */
  private async syncWave(wave: number, started: number): Promise<StepOutcome | undefined> {
    const { maxUpdate = this.input.concurrency } = this.plan.waves[wave];
    const keys = this.waveKeys(wave);
    const members = () => this.members(wave);
    for (;;) {
      const stop = this.stopped(wave);
      if (stop) return stop;
      this.dirty = false;
      if (this.unread.size) await this.readInstances();
      const freed = await this.tick(keys, maxUpdate);
      if (this.ctx.now() - started > this.input.waveTimeout) await this.timeOut(keys);
      // The verdict before the wave's end: a failure of its last open app ends the wave too, and must be acted on.
      const verdict = waveVerdict(members());
      if (verdict.verdict === 'fail') {
        await this.applyMany(verdict.failed.map((s) => [appKey(s), { type: 'acknowledge' }]));
        if (this.input.onFailure !== 'continue') return this.appsFailed(wave, verdict.reasons);
      }
      // A wave whose apps have all ended goes on to the next; its failures count in the step's result.
      if (members().every((s) => TERMINAL.includes(s.state))) break;
      this.report(wave);
      // Slots just freed and apps waiting: start them now rather than on the next event or tick.
      if (freed && members().some((s) => s.state === 'pending')) continue;
      await this.sleep(500);
    }
    this.report(wave);
    return undefined;
  }

  /** The wave's checkpoint entry; the first attempt to reach the wave writes when it started, for its timeout. */
  private async waveEntry(wave: number): Promise<WaveCheckpoint> {
    const waveKey = `wave:${wave}`;
    const stored = await this.waveCheckpoint.get(waveKey);
    if (stored) return stored;
    const entry: WaveCheckpoint = { state: 'started', startedAt: this.ctx.now() };
    await this.waveCheckpoint.set(waveKey, entry);
    return entry;
  }

  private async setWave(wave: number, change: Partial<WaveCheckpoint>): Promise<WaveCheckpoint> {
    const entry = { ...(await this.waveEntry(wave)), ...change };
    delete entry.at;
    await this.waveCheckpoint.set(`wave:${wave}`, entry);
    return entry;
  }

  /** A milestone of a wave (a bake, a failure, a rollback) in the audit stream, and so in the change log and timelines. */
  private async milestone(wave: number | 'watch', result: string, message: string, params?: Record<string, unknown>) {
    await this.ctx.audit({
      kind: 'step.wave',
      who: 'rollcall',
      target: wave === 'watch' ? 'watch' : `wave ${wave + 1}`,
      result,
      message,
      ...(params ? { params } : {}),
    });
  }

  /**
   * A verifier that turned inconclusive, or passed again after a fail or an inconclusive, is recorded as it
   * happens (Prometheus went away mid-bake, came back); a first pass is said when the watch passes, a fail
   * when it fails.
   */
  private async recordChanges(
    label: string,
    wave: number | 'watch',
    changes: [NamedVerdict, NamedVerdict | undefined][],
  ) {
    for (const [now, before] of changes) {
      if (now.verdict === 'fail' || (now.verdict === 'pass' && !before)) continue;
      await this.milestone(
        wave,
        `${now.name} ${now.verdict}`,
        `${label}: ${now.name} ${now.verdict === 'pass' ? 'passes again' : 'inconclusive'}: ${now.reason}`,
        verdictParams([now]),
      );
    }
  }

  /**
   * A wave past its gate, under watch: with a bake, until the bake ends, every verifier passing throughout;
   * without one, until every verifier passes once (at the latest by the wave's timeout). The watch's start
   * is kept in the wave's checkpoint: a later attempt continues it, not from zero.
   */
  private async verifyWave(wave: number): Promise<StepOutcome | undefined> {
    const apps = this.members(wave).filter((s) => s.state === 'done');
    if (!this.verifiers.length || !apps.length) {
      if (this.verifiers.length) await this.setWave(wave, { state: 'passed' });
      return undefined;
    }
    const bake = this.input.bake;
    let entry = await this.waveEntry(wave);
    const names = this.verifiers.map((v) => v.name).join(', ');
    const what = bake > 0 ? `bake ${typedDuration(bake)}` : 'verification';
    if (entry.verifyStartedAt === undefined) {
      entry = await this.setWave(wave, { state: 'verifying', verifyStartedAt: this.ctx.now() });
      await this.milestone(
        wave,
        `${bake > 0 ? 'bake' : 'verification'} started`,
        `${this.label(wave)}: ${what} started (${names})`,
      );
    }
    const startedAt = entry.verifyStartedAt!;
    const endsAt = bake > 0 ? startedAt + bake : entry.startedAt + this.input.waveTimeout;
    const watch = new WaveWatch(this.verifiers, apps, startedAt, endsAt, bake > 0);
    const kind = bake > 0 ? 'bake' : 'verify';
    const changes: [NamedVerdict, NamedVerdict | undefined][] = [];
    try {
      for (;;) {
        this.watch = { wave, kind, endsAt, apps: apps.length, verdicts: watch.verdicts() };
        const stop = this.stopped(wave);
        if (stop) return stop;
        this.dirty = false;
        const verdict = await watch.look(this.ctx.now(), (now, before) => changes.push([now, before]));
        this.watch = { wave, kind, endsAt, apps: apps.length, verdicts: watch.verdicts() };
        this.report(wave);
        await this.recordChanges(this.label(wave), wave, changes.splice(0));
        if (verdict.verdict === 'fail') {
          const reason = `${what} failed: ${verdict.reason}`;
          await this.milestone(
            wave,
            `${kind === 'bake' ? 'bake' : 'verification'} failed`,
            `${this.label(wave)} ${reason}`,
            verdictParams(watch.verdicts()),
          );
          return this.watchFailed(wave, reason, failedChecksOf(verdict.failed));
        }
        if (verdict.verdict === 'pass') break;
        await this.sleep(500);
      }
    } finally {
      this.watch = undefined;
    }
    await this.setWave(wave, { state: 'passed' });
    const verdicts = watch
      .verdicts()
      .map((v) => `${v.name}: ${v.reason}`)
      .join('; ');
    await this.milestone(
      wave,
      `${kind === 'bake' ? 'bake' : 'verification'} passed`,
      `${this.label(wave)}: ${what} passed (${verdicts})`,
      verdictParams(watch.verdicts()),
    );
    this.report(wave);
    return undefined;
  }

  /**
   * One look at every app of the wave: uncertain POSTs verified, accepted syncs put to the gates,
   * pending apps sent while fewer than `maxUpdate` are in flight. How many slots it freed.
   */
  private async tick(keys: string[], maxUpdate: number): Promise<number> {
    let inFlight = keys.filter((k) => IN_FLIGHT.includes(this.states.get(k)!.state)).length;
    // Transitions read off the mirror go in one round trip per tick; the ones around a POST are written one by one, before moving on.
    const batch: [string, AppEvent][] = [];
    let freed = 0;
    const calls: Promise<void>[] = [];
    const uncertain = keys.filter((k) => ['posting', 'unknown'].includes(this.states.get(k)!.state));
    if (uncertain.length) {
      const redisNow = await this.ctx.redisNow();
      for (const key of uncertain) calls.push(this.verify(key, redisNow));
    }
    for (const key of keys) {
      const s = this.states.get(key)!;
      const app = this.live(s);
      if (s.state === 'accepted') {
        const v = appVerdict(app, this.runId, this.gates);
        if (v.verdict === 'wait') continue;
        batch.push([
          key,
          v.verdict === 'pass'
            ? { type: 'finished', succeeded: true }
            : { type: 'finished', succeeded: false, reason: v.reason },
        ]);
        freed++;
      } else if (s.state === 'pending' && inFlight < maxUpdate) {
        const next = this.dispatch(key, s, app);
        if (next === 'post') calls.push(this.post(key));
        else if (next) batch.push([key, next]);
        if (next === 'post' || next?.type === 'found') inFlight++;
      }
    }
    await Promise.all(calls);
    if (batch.length) await this.applyMany(batch);
    return freed;
  }

  /** What to do with a pending app that has a free slot: send it, record what the app shows, or leave it for now. */
  private dispatch(key: string, s: AppCheckpoint, app: Application | undefined): AppEvent | 'post' | undefined {
    if (this.unread.has(s.instance)) return undefined;
    if (!app) return { type: 'gone', reason: 'app no longer exists' };
    // Already ours (an earlier attempt got it through): never send twice.
    if (ourOperation(app, this.runId)) return { type: 'found' };
    if (this.sent.has(key)) return undefined; // sent by this attempt; its stored mark was lost: the mirror will show it
    const busy = foreignOperationRunning(app, this.runId);
    if (busy) return s.note !== `waiting: ${busy}` ? { type: 'waiting', note: `waiting: ${busy}` } : undefined;
    return 'post';
  }

  private async timeOut(keys: string[]) {
    const timeouts: [string, AppEvent][] = [];
    for (const key of keys) {
      const s = this.states.get(key)!;
      if (TERMINAL.includes(s.state)) continue;
      timeouts.push([key, { type: 'timedOut', reason: timeoutReason(s, this.live(s), this.runId, this.input.gate) }]);
    }
    await this.applyMany(timeouts);
  }

  /** Apps of the wave failed or timed out: the run pauses, fails, or rolls the wave back (onFailure; `continue` never gets here). */
  private async appsFailed(wave: number, names: string[]): Promise<StepOutcome> {
    this.report(wave);
    const text = `${names.length} app${names.length === 1 ? '' : 's'} failed in ${this.label(wave)}: ${names.slice(0, 5).join('; ')}${names.length > 5 ? ` and ${names.length - 5} more` : ''}`;
    if (this.input.onFailure === 'rollback') return this.startRollback(wave, text);
    await this.milestone(wave, 'failed', text);
    if (this.input.onFailure === 'abort') return { status: 'failed', error: text, output: this.summary() };
    return { status: 'paused', reason: text, output: this.summary() };
  }

  /** The wave's watch failed: acted on as onFailure says; a resumed or let-through wave is not watched again. */
  private async watchFailed(wave: number, reason: string, checks: FailedCheck[]): Promise<StepOutcome | undefined> {
    if (this.input.onFailure === 'rollback') return this.startRollback(wave, reason, checks);
    await this.setWave(wave, { state: 'failed', failure: reason, ...(checks.length ? { checks } : {}) });
    this.outcomes.failures.push({ wave, name: this.label(wave), reason, ...(checks.length ? { checks } : {}) });
    const text = `${this.label(wave)} failed: ${reason}`;
    if (this.input.onFailure === 'continue') return undefined;
    if (this.input.onFailure === 'abort') return { status: 'failed', error: text, output: this.summary() };
    return { status: 'paused', reason: text, output: this.summary() };
  }

  private async startRollback(wave: number, reason: string, checks: FailedCheck[] = []): Promise<StepOutcome> {
    await this.setWave(wave, { state: 'rolling-back', failure: reason, ...(checks.length ? { checks } : {}) });
    await this.milestone(wave, 'failed', `${this.label(wave)} failed: ${reason}; rolling back the apps it synced`);
    return this.rollBack(wave, reason, checks);
  }

  /**
   * onFailure=rollback: the wave's apps this run synced go back to their previous deployment, each once per
   * run (wave-rollback.ts), then the run stops, failed; later waves are never synced. Uncertain POSTs of the
   * wave are settled first, since whether they took decides what there is to roll back.
   */
  private async rollBack(wave: number, reason: string, checks: FailedCheck[] = []): Promise<StepOutcome> {
    const keys = this.waveKeys(wave);
    const uncertain = () => keys.some((k) => ['posting', 'unknown'].includes(this.states.get(k)!.state));
    this.rollbackLine = 'settling the syncs whose answer was lost before rolling back';
    while (uncertain()) {
      const stop = this.stopped(wave);
      if (stop) return stop;
      await this.tick(keys, 0);
      if (uncertain()) await this.sleep(500);
    }
    this.rollbackLine = this.input.dryRun ? 'would roll back the apps it synced' : 'rolling back the apps it synced';
    this.report(wave);
    const result = await rollBackWave(this.ctx, this.members(wave), this.input, (line) => {
      this.rollbackLine = line;
      this.report(wave);
    });
    const stop = this.stopped(wave);
    if (stop) return stop;
    this.outcomes.failures.push({ wave, name: this.label(wave), reason, ...(checks.length ? { checks } : {}) });
    this.outcomes.rollback = { ...result, wave };
    const rolled = rollbackText(result, this.input.dryRun);
    this.rollbackLine = rolled;
    await this.milestone(wave, this.input.dryRun ? 'would roll back' : 'rolled back', `${this.label(wave)}: ${rolled}`);
    this.report(wave);
    const later = this.plan.waves.length - wave - 1;
    return {
      status: 'failed',
      error: `${this.label(wave)} failed: ${reason}. ${rolled[0].toUpperCase()}${rolled.slice(1)}.${later ? ` The ${plural(later, 'later wave')} ${later === 1 ? 'was' : 'were'} not synced.` : ''}`,
      output: this.summary(),
    };
  }

  /**
   * Sends one app's sync. Order matters: the rate limiter first (an abort or pause while waiting
   * sends nothing), then the `posting` mark under the lease (refused once a pause, an abort or a
   * newer attempt took the lease), then a monotonic-clock check that this process was not frozen
   * past the posting window since the mark, then the POST.
   */
  private async post(key: string) {
    const planned = this.states.get(key)!;
    const api = this.ctx.services.argocd.get(planned.instance);
    if (!api) {
      await this.apply(key, { type: 'gone', reason: `no Argo CD client for instance ${planned.instance}` });
      return;
    }
    try {
      await this.ctx.limiter.acquire(planned.instance, this.ctx.signal);
    } catch {
      return; // aborted while waiting: nothing sent, nothing written
    }
    if (this.ctx.signal.aborted || this.states.get(key)!.state !== 'pending') return;
    const app = this.live(planned);
    if (!app) return;
    if (ourOperation(app, this.runId)) {
      await this.apply(key, { type: 'found' });
      return;
    }
    const before = performance.now();
    if (!(await this.apply(key, { type: 'claim' }))) return;
    if (this.ctx.signal.aborted || performance.now() - before > this.windowFor(planned.instance) / 2) return;
    const request: ApplicationSyncRequest = {
      name: planned.app,
      appNamespace: app.metadata.namespace,
      project: app.spec.project,
      prune: this.input.prune,
      dryRun: this.input.dryRun,
      ...(this.input.revision ? { revision: this.input.revision } : {}),
      infos: attributionInfos({
        runInfoName: RUN_INFO_NAME,
        runId: this.runId,
        user: this.ctx.run.requester,
        surface: this.ctx.run.surface,
      }),
    };
    this.sent.add(key);
    try {
      await api.sync(request);
    } catch (err) {
      await this.syncFailed(key, err);
      return;
    }
    await this.apply(key, { type: 'answered' });
    // Recorded without holding up the next POST; the engine's audit writer never throws.
    void this.ctx.audit({
      kind: 'argocd.sync',
      who: this.ctx.run.requester,
      target: key,
      params: this.syncParams(),
      result: 'accepted',
    });
  }

  private syncParams() {
    return { prune: this.input.prune, dryRun: this.input.dryRun, revision: this.input.revision };
  }

  /** A sync POST that failed: lost (verified later), refused while busy (tried again), or refused for good. */
  private async syncFailed(key: string, failure: unknown) {
    const e = failure instanceof ArgoError ? failure : undefined;
    const message = e?.argoMessage ?? (failure as Error).message;
    if (!e || e.maybeApplied || ['unavailable', 'rate_limited', 'timeout', 'network'].includes(e.kind)) {
      // The POST may have reached Argo CD: verified with a GET (now, and after the posting window), never re-sent blindly.
      await this.apply(key, { type: 'answerLost', note: message });
    } else if (e.kind === 'operation_in_progress') {
      // Refused on its only try: nothing was applied. Which operation runs is read off the app next tick.
      this.sent.delete(key);
      await this.apply(key, { type: 'busy', note: 'waiting: another operation is in progress' });
    } else {
      await this.apply(key, { type: 'refused', reason: message });
    }
    await this.ctx.audit({
      kind: 'argocd.sync',
      who: this.ctx.run.requester,
      target: key,
      params: this.syncParams(),
      result: `error: ${e?.kind ?? 'unknown'}`,
      message,
    });
  }

  /**
   * A `posting` or `unknown` app this attempt is not sending: did Argo CD take the sync? The mirror
   * first, then a GET at once and one more after the posting window; only that last one may
   * conclude the sync never took.
   */
  private async verify(key: string, redisNow: number) {
    const s = this.states.get(key)!;
    const app = this.live(s);
    if (app && ourOperation(app, this.runId)) {
      await this.apply(key, { type: 'found' });
      return;
    }
    const window = this.windowFor(s.instance);
    const windowPassed = redisNow > (s.at ?? 0) + window;
    const last = this.checked.get(key);
    // One GET as soon as the mark is seen, one after its window; none in between.
    if (last !== undefined && last >= (s.at ?? 0) && (!windowPassed || last > (s.at ?? 0) + window)) return;
    const api = this.ctx.services.argocd.get(s.instance);
    try {
      await this.ctx.assertLease();
      const fresh = await api!.getApplication({
        name: s.app,
        appNamespace: app?.metadata.namespace,
        project: app?.spec.project,
      });
      this.checked.set(key, redisNow);
      if (ourOperation(fresh, this.runId)) await this.apply(key, { type: 'found' });
      else if (windowPassed) {
        // Whether or not this attempt sent it, the window has passed with no trace of it.
        this.sent.delete(key);
        await this.apply(key, { type: 'notApplied', windowPassed });
      }
    } catch (err) {
      if (err instanceof LeaseLostError) throw err;
      // Argo CD is still failing: try again next tick.
    }
  }

  /**
   * `watch=`: after the last wave, every app this run synced stays under health and every check for the
   * watch's duration; its start is kept in the step's checkpoint, so a later attempt continues it. A regression
   * (a verifier failing) is said once in the run's thread, raised for the alert rules and audited, then acted
   * on as onRegression says. A verifier still inconclusive at the end is no regression (nothing is rolled back
   * for a Prometheus that went away), but the watch did not pass: the run ends failed saying so.
   */
  private async watchAfterRollout(): Promise<StepOutcome | undefined> {
    const apps = [...this.states.values()].filter((s) => s.state === 'done');
    if (!this.watchVerifiers.length || !apps.length) return undefined;
    const cp = this.ctx.checkpoint<WatchCheckpoint>('watch');
    let entry = await cp.get('watch');
    if (entry?.state === 'rolling-back') return this.rollBackAfterWatch(entry);
    if (entry?.state === 'ended') return this.watchEnded(entry);
    if (!entry) {
      entry = { state: 'watching', startedAt: this.ctx.now() };
      await cp.set('watch', entry);
      await this.milestone(
        'watch',
        'watch started',
        `${AFTER_ROLLOUT} started: ${plural(apps.length, 'synced app')} for ${typedDuration(this.input.watch)} (${this.watchVerifiers.map((v) => v.name).join(', ')})`,
      );
    }
    const endsAt = entry.startedAt + this.input.watch;
    const watch = new WaveWatch(this.watchVerifiers, apps, entry.startedAt, endsAt, true, 'watch');
    const last = this.plan.waves.length - 1;
    const changes: [NamedVerdict, NamedVerdict | undefined][] = [];
    // A regression an earlier attempt raised is cleared by the first look that finds none.
    let raised = entry.regression !== undefined;
    try {
      for (;;) {
        this.watch = { wave: last, kind: 'watch', endsAt, apps: apps.length, verdicts: watch.verdicts() };
        const stop = this.stopped(last);
        if (stop) return stop;
        this.dirty = false;
        const lookAt = this.ctx.now();
        const verdict = await watch.look(lookAt, (now, before) => changes.push([now, before]));
        this.watch = { wave: last, kind: 'watch', endsAt, apps: apps.length, verdicts: watch.verdicts() };
        this.report(last);
        await this.recordChanges(AFTER_ROLLOUT, 'watch', changes.splice(0));
        const failing = watch.verdicts().filter((v) => v.verdict === 'fail');
        if (failing.length) {
          entry = await this.regressed(cp, entry, { failing, watched: apps.length, endsAt, raised });
          raised = true;
          if (entry.state === 'rolling-back') return this.rollBackAfterWatch(entry);
          if (entry.state === 'ended') {
            this.watchEnded(entry);
            return {
              status: 'paused',
              reason: `${AFTER_ROLLOUT} found a regression: ${entry.regression}`,
              output: this.summary(),
            };
          }
        } else if (raised) {
          await this.ctx.services.regressions?.clear(regressionKey(this.runId));
          raised = false;
        }
        if (verdict.verdict === 'fail' && !failing.length) entry = { ...entry, unconfirmed: verdict.reason };
        // A regression under onRegression=notify is watched on to the end, where it may have passed again.
        if (lookAt >= endsAt) break;
        await this.sleep(500);
      }
    } finally {
      this.watch = undefined;
    }
    entry = { ...entry, state: 'ended' };
    await cp.set('watch', entry);
    await this.ctx.services.regressions?.clear(regressionKey(this.runId));
    const verdicts = watch
      .verdicts()
      .map((v) => `${v.name}: ${v.reason}`)
      .join('; ');
    await this.milestone(
      'watch',
      entry.regression || entry.unconfirmed ? 'watch failed' : 'watch passed',
      `${AFTER_ROLLOUT} ended: ${entry.regression ? `it found a regression (${entry.regression})` : entry.unconfirmed ? `not passed: ${entry.unconfirmed}` : `passed (${verdicts})`}`,
      verdictParams(watch.verdicts()),
    );
    return this.watchEnded(entry);
  }

  /** An ended watch: a regression or an unconfirmed end is a failure the summary names; the run goes on to its end. */
  private watchEnded(entry: WatchCheckpoint): undefined {
    const reason = entry.regression ?? entry.unconfirmed;
    if (reason)
      this.outcomes.failures.push({
        wave: this.plan.waves.length - 1,
        name: AFTER_ROLLOUT,
        reason: entry.regression ? `it found a regression: ${reason}` : reason,
        ...(entry.checks?.length ? { checks: entry.checks } : {}),
      });
    return undefined;
  }

  /**
   * The watch found apps failing: the first time, what it found is written to the checkpoint before anything
   * is said (a later attempt never says it twice), then posted in the run's thread, raised for the alert rules
   * and audited. Later looks that still fail only keep the regression raised. Returns the entry, whose state
   * says what comes next (`rolling-back`, `ended` for a pause, `watching`).
   */
  private async regressed(
    cp: Checkpoint<WatchCheckpoint>,
    entry: WatchCheckpoint,
    seen: { failing: NamedVerdict[]; watched: number; endsAt: number; raised: boolean },
  ): Promise<WatchCheckpoint> {
    const now = this.ctx.now();
    const regression = watchRegression({
      runId: this.runId,
      failed: seen.failing,
      watched: seen.watched,
      now,
      expiresAt: seen.endsAt + REGRESSION_GRACE_MS,
    });
    if (entry.regression !== undefined) {
      if (!seen.raised) await this.ctx.services.regressions?.raise(regression);
      return entry;
    }
    const onRegression = this.input.onRegression;
    const reason = seen.failing.map((v) => `${v.name}: ${v.reason}`).join('; ');
    const checks = seen.failing.flatMap(failedChecksOf);
    const next: WatchCheckpoint = {
      ...entry,
      state: onRegression === 'rollback' ? 'rolling-back' : onRegression === 'pause' ? 'ended' : 'watching',
      regression: reason,
      ...(checks.length ? { checks } : {}),
    };
    await cp.set('watch', next);
    await this.ctx.services.regressions?.raise(regression);
    await this.ctx.say(
      regressionReply({
        runId: this.runId,
        failed: seen.failing[0],
        watch: { startedAt: entry.startedAt, now, watched: seen.watched },
        onRegression,
      }),
    );
    const doing = {
      rollback: 'rolling back every app this run synced',
      pause: 'pausing the run',
      notify: 'watching on; the run will end failed',
    }[onRegression];
    await this.milestone(
      'watch',
      'regression',
      `${AFTER_ROLLOUT} found a regression ${formatDuration(now - entry.startedAt)} in: ${reason}; ${doing} (onRegression=${onRegression})`,
      verdictParams(seen.failing),
    );
    return next;
  }

  /**
   * onRegression=rollback: every app this run synced goes back to its previous deployment, each at most once
   * per run (wave-rollback.ts, the path a failed wave's rollback takes), then the run ends failed.
   */
  private async rollBackAfterWatch(entry: WatchCheckpoint): Promise<StepOutcome> {
    const last = this.plan.waves.length - 1;
    this.rollbackLine = 'a regression after the rollout: rolling back every app this run synced';
    this.report(last);
    const result = await rollBackWave(this.ctx, [...this.states.values()], this.input, (line) => {
      this.rollbackLine = line;
      this.report(last);
    });
    const stop = this.stopped(last);
    if (stop) return stop;
    const reason = entry.regression ?? 'a regression';
    this.outcomes.failures.push({
      wave: last,
      name: AFTER_ROLLOUT,
      reason: `it found a regression: ${reason}`,
      ...(entry.checks?.length ? { checks: entry.checks } : {}),
    });
    this.outcomes.rollback = { ...result, wave: last };
    const rolled = rollbackText(result, this.input.dryRun);
    this.rollbackLine = rolled;
    await this.ctx.services.regressions?.clear(regressionKey(this.runId));
    await this.milestone('watch', 'rolled back', `${AFTER_ROLLOUT}: ${rolled}`);
    this.report(last);
    return {
      status: 'failed',
      error: `${AFTER_ROLLOUT} found a regression: ${reason}. ${rolled[0].toUpperCase()}${rolled.slice(1)}.`,
      output: this.summary(),
    };
  }

  private stopped(wave: number): StepOutcome | undefined {
    if (!this.ctx.signal.aborted) return undefined;
    this.report(wave);
    const output = this.summary();
    const reason = String(this.ctx.signal.reason);
    if (reason === 'abort') return { status: 'aborted', output };
    if (reason === 'timeout') return { status: 'failed', error: 'bulk-sync step timed out', output };
    if (reason === 'lease-lost' || reason === 'stale') return { status: 'interrupted', output };
    return { status: 'paused', reason: reason === 'pause' ? 'paused by a user' : reason, output };
  }

  private finish(): StepOutcome {
    this.report(this.plan.waves.length - 1);
    const output = this.summary();
    const failed = [...this.states.values()].filter((s) => s.state === 'failed' || s.state === 'timeout');
    const waves = this.outcomes.failures;
    if (failed.length || waves.length)
      return {
        status: 'failed',
        error: [
          ...waves.map((w) => `${w.name} failed: ${w.reason}`),
          ...(failed.length
            ? [
                `${failed.length} app(s) did not sync: ${failed
                  .slice(0, 5)
                  .map((s) => `${s.app} (${s.reason})`)
                  .join('; ')}`,
              ]
            : []),
        ].join('; '),
        output,
      };
    return { status: 'succeeded', output };
  }
}
