import { setMaxListeners } from 'node:events';
import { DelayedError, type Job, type Queue, type Worker } from 'bullmq';
import { closest } from 'fastest-levenshtein';
import type { Redis } from 'ioredis';
import type { Services } from '../commands/registry.js';
import type { MessageRef } from '../core/notifier.js';
import { createStepQueue, createStepWorker, DEFAULT_TIMING, type StepJobData, type WorkerTiming } from '../jobs/queues.js';
import { InstanceRateLimiter, type RateLimit } from '../jobs/rate-limit.js';
import { closeRedis, createRedis } from '../jobs/redis.js';
import { findRunbookAction } from './actions/index.js';
import type { ActionPreview, RunTarget, StepOutcome } from './actions/types.js';
import { AuditLog, type AuditEvent } from './audit.js';
import { instanceUrls, refuseForeignRun } from './deployment.js';
import { loadRunbooks, SHIPPED_RUNBOOKS_DIR, substitute } from './loader.js';
import { AppLocks, LockConflictError } from './locks.js';
import { formatParam, parseParams } from './params.js';
import { assertMayApprove, assertMayOperate, assertMayRun } from './permissions.js';
import { progressLine, progressReply } from './replies.js';
import { isTerminal, previewExpired, PREVIEW_TTL_MS, RunStore, type Run, type RunProgress, type RunStatus, type StepState } from './run-store.js';
import type { Runbook } from './schema.js';
import type { ErrorCode } from '../core/error-codes.js';
import { isRollcallError, RollcallError } from '../core/errors.js';

export class RunStateError extends RollcallError {
  declare readonly code: 'invalid_state';
  constructor(message: string) {
    super('invalid_state', message);
  }
}

export class RunbookNotFoundError extends RollcallError {
  declare readonly code: 'unknown_runbook';
  constructor(
    readonly runbook: string,
    readonly known: string[],
  ) {
    const near = known.length ? closest(runbook, known) : undefined;
    super('unknown_runbook', `no runbook "${runbook}"${near ? ` (did you mean ${near}?)` : ''}; runbooks: ${known.join(', ') || 'none loaded'}`);
  }
}

export class PreviewError extends RollcallError {
  constructor(message: string, code: ErrorCode = 'preview_failed') {
    super(code, message);
  }
}

export interface StartRequest {
  runbook: string;
  params: Record<string, string>;
  user: string;
  channel?: string;
  threadTs?: string;
  surface: 'slack' | 'terminal';
  /**
   * Started by rollcall itself from a schedule in rollcall.yaml: whoever wrote the config decided it
   * may run, so the runners check is skipped (approvals, if the runbook needs them, still apply).
   */
  system?: boolean;
}

/** CONTRACTS H. */
export interface RunService {
  start(req: StartRequest): Promise<Run>;
  confirm(runId: string, user: string, where?: { channel?: string; threadTs?: string }): Promise<Run>;
  cancel(runId: string, user: string): Promise<Run>;
  approve(runId: string, user: string): Promise<Run>;
  pause(runId: string, user: string): Promise<Run>;
  resume(runId: string, user: string): Promise<Run>;
  abort(runId: string, user: string): Promise<Run>;
  get(runId: string): Promise<Run | undefined>;
  list(n?: number): Promise<Run[]>;
  /** Resolves when the run is terminal, or paused (nobody in a terminal will press Resume); rejects after timeoutMs. */
  waitForEnd(runId: string, timeoutMs: number): Promise<Run>;
  runbooks(): Runbook[];
  /** How many step workers (any process) are connected to this Redis right now. */
  workersOnline(): Promise<number>;
  audit: AuditLog;
}

export interface EngineOptions {
  role: 'all' | 'bot' | 'worker';
  redisUrl: string;
  prefix: string;
  /** Runbooks to serve; default: loaded from config.runbooksDir, else the shipped ones. */
  runbooks?: Map<string, Runbook>;
  timing?: Partial<WorkerTiming>;
  /** Minimum time between live-message updates. @defaultValue 3000 */
  progressIntervalMs?: number;
  /** How often a running step looks for pause/abort. @defaultValue 500 */
  controlPollMs?: number;
  /** Base of the exponential backoff between step retries. @defaultValue 2000 */
  retryBackoffMs?: number;
  /** Steps processed at once by this process. @defaultValue 20 */
  concurrency?: number;
  logger?: { info(o: unknown, m?: string): void; warn(o: unknown, m?: string): void; error(o: unknown, m?: string): void };
}

const ENGINE_USER = 'rollcall';

function jobId(runId: string, stepId: string, generation: number) {
  return `${runId}.${stepId}.${generation}`;
}

class Engine implements RunService {
  readonly store: RunStore;
  readonly locks: AppLocks;
  readonly audit: AuditLog;
  readonly limiter: InstanceRateLimiter;
  queue!: Queue<StepJobData>;
  worker?: Worker<StepJobData>;
  private readonly timing: WorkerTiming;
  private readonly lastNotified = new Map<string, { at: number; timer?: NodeJS.Timeout; pending?: Run }>();
  private readonly extraConnections: Redis[] = [];
  private stopping = false;

  constructor(
    private readonly services: Services,
    private readonly opts: EngineOptions,
    readonly redis: Redis,
    private readonly book: Map<string, Runbook>,
  ) {
    this.store = new RunStore(redis, opts.prefix);
    this.locks = new AppLocks(redis, opts.prefix);
    this.audit = new AuditLog(redis, opts.prefix);
    const limits = new Map<string, RateLimit>();
    for (const i of services.config.instances) limits.set(i.name, { max: i.rateLimit.max, perMs: i.rateLimit.per });
    this.limiter = new InstanceRateLimiter(redis, opts.prefix, limits);
    this.timing = { ...DEFAULT_TIMING, ...opts.timing };
  }

  async open(): Promise<void> {
    const queueConnection = createRedis(this.opts.redisUrl);
    this.extraConnections.push(queueConnection);
    this.queue = createStepQueue(queueConnection, this.opts.prefix);
    this.queue.on('error', (err) => this.opts.logger?.warn({ err: err.message }, 'runbook queue error'));
    if (this.opts.role !== 'bot') {
      const workerConnection = createRedis(this.opts.redisUrl);
      this.extraConnections.push(workerConnection);
      this.worker = createStepWorker(workerConnection, this.opts.prefix, (job, token, signal) => this.process(job, token, signal), this.timing, {
        concurrency: this.opts.concurrency ?? 20,
      });
      this.worker.on('error', (err) => this.opts.logger?.warn({ err: err.message }, 'runbook worker error'));
      await this.worker.waitUntilReady();
      await this.recover();
    }
  }

  async workersOnline(): Promise<number> {
    // BullMQ names its worker connections; CLIENT LIST finds them across processes.
    return (await this.queue.getWorkers()).length;
  }

  async close(): Promise<void> {
    this.stopping = true;
    for (const n of this.lastNotified.values()) clearTimeout(n.timer);
    if (this.worker) {
      // Long steps stop at their next checkpoint and are re-queued (see process), so close() need not wait minutes.
      this.worker.cancelAllJobs('shutdown');
      await this.worker.close();
    }
    await this.queue.close();
    for (const c of this.extraConnections) await closeRedis(c);
  }

  /** Closes without finishing anything: as if the process died (tests). */
  async crash(): Promise<void> {
    this.stopping = true;
    for (const n of this.lastNotified.values()) clearTimeout(n.timer);
    await this.worker?.close(true);
    await this.queue.close();
    for (const c of this.extraConnections) c.disconnect();
  }

  runbooks(): Runbook[] {
    return [...this.book.values()];
  }

  private runbook(name: string): Runbook {
    const rb = this.book.get(name);
    if (!rb) throw new RunbookNotFoundError(name, [...this.book.keys()]);
    return rb;
  }

  private async record(event: Omit<AuditEvent, 'at'>) {
    try {
      await this.audit.record(event);
    } catch (err) {
      this.opts.logger?.warn({ err: (err as Error).message }, 'audit write failed');
    }
  }

  private stepInput(run: Run, runbook: Runbook, stepId: string): Record<string, unknown> {
    const step = runbook.steps.find((s) => s.id === stepId)!;
    const action = findRunbookAction(step.action)!;
    const raw = substitute(step.with, run.params);
    const parsed = action.input.safeParse(raw);
    if (!parsed.success) {
      throw new PreviewError(
        `step ${step.id} (${step.action}): ${parsed.error.issues.map((i) => `${i.path.join('.') || 'with'}: ${i.message}`).join('; ')}`,
        'invalid_params',
      );
    }
    return parsed.data;
  }

  async start(req: StartRequest): Promise<Run> {
    const runbook = this.runbook(req.runbook);
    try {
      if (!req.system) assertMayRun(req.user, runbook, this.services.config);
    } catch (err) {
      await this.record({ kind: 'run.refused', who: req.user, target: runbook.name, params: req.params, result: 'forbidden', message: (err as Error).message });
      throw err;
    }
    const params = parseParams(runbook, req.params);
    let run = await this.store.create({
      instanceUrls: instanceUrls(this.services.config),
      runbook: runbook.name,
      title: runbook.title,
      params,
      paramsText: Object.entries(params)
        .map(([k, v]) => `${k}=${formatParam(runbook.params[k], v)}`)
        .join(' '),
      requester: req.user,
      surface: req.surface,
      channel: req.channel,
      threadTs: req.threadTs,
      status: 'previewing',
      approvalsRequired: runbook.access.approval?.required ?? 0,
      approvals: [],
      steps: runbook.steps.map((s) => ({ id: s.id, action: s.action, status: 'pending', attempts: 0 })),
      generation: 0,
      targets: [],
    });
    try {
      const previews: ActionPreview[] = [];
      const byStep: Record<string, Record<string, unknown>> = {};
      for (const step of runbook.steps) {
        const action = findRunbookAction(step.action)!;
        const input = this.stepInput(run, runbook, step.id);
        if (!action.preview) continue;
        const p = await action.preview({ services: this.services, input, runId: run.id });
        previews.push(p);
        byStep[step.id] = p.data;
      }
      const targets = dedupeTargets(previews.flatMap((p) => p.targets));
      const conflicts = await this.locks.holders(targets, run.id);
      if (conflicts.length) throw new LockConflictError(conflicts);
      run = await this.store.update(run.id, (r) => ({
        ...r,
        status: 'awaiting-confirmation',
        targets,
        preview: {
          summary: previews.map((p) => p.summary).join('\n') || `${runbook.title}: ${runbook.steps.length} step(s)`,
          data: previews.length === 1 ? previews[0].data : { steps: previews.map((p) => p.data) },
          blocks: previews.flatMap((p) => p.blocks),
          byStep,
        },
      }));
      await this.record({ kind: 'run.start', who: req.user, runId: run.id, target: runbook.name, params });
      return run;
    } catch (err) {
      // Bad input (a selector matching nothing, a lock held elsewhere): there never was a run to list.
      // The attempt stays in the audit log, once.
      await this.store.discard(run.id, runbook.steps.map((s) => s.id));
      await this.record({ kind: 'run.refused', who: req.user, target: runbook.name, params, result: 'preview failed', message: (err as Error).message });
      throw err;
    }
  }

  async confirm(runId: string, user: string, where?: { channel?: string; threadTs?: string }): Promise<Run> {
    let run = await this.store.require(runId);
    const runbook = this.book.get(run.runbook);
    assertMayOperate(user, run, runbook, this.services.config, 'confirm');
    if (run.status !== 'awaiting-confirmation') throw new RunStateError(`run ${run.id} is ${run.status}; only a run awaiting confirmation can be confirmed`);
    // A preview shows the fleet as it was; confirming one from an hour ago would act on what it no longer shows.
    if (previewExpired(run)) {
      await this.store.update(runId, (r) => (r.status === 'awaiting-confirmation' ? { ...r, status: 'cancelled', error: 'preview expired', endedAt: new Date().toISOString() } : undefined));
      await this.record({ kind: 'run.end', who: ENGINE_USER, runId, result: 'cancelled', message: 'preview expired before confirmation' });
      throw new RunStateError(`the preview of run ${run.id} is older than ${PREVIEW_TTL_MS / 60_000} minutes and may no longer match the fleet; run the command again for a fresh preview`);
    }
    // Locks are taken at confirmation, not at preview: an abandoned preview must not block anyone.
    await this.locks.acquire(run.id, run.targets);
    run = await this.store.update(runId, (r) => {
      if (r.status !== 'awaiting-confirmation') return undefined;
      return {
        ...r,
        confirmedBy: user,
        confirmedAt: new Date().toISOString(),
        channel: r.channel ?? where?.channel,
        threadTs: r.threadTs ?? where?.threadTs,
        status: r.approvalsRequired > 0 ? 'awaiting-approval' : r.status,
      };
    });
    if (run.confirmedBy !== user) throw new RunStateError(`run ${run.id} is ${run.status}; it was changed while confirming`);
    await this.record({ kind: 'run.confirm', who: user, runId, target: run.runbook, params: run.params });
    if (run.status === 'awaiting-approval') {
      await this.postProgress(run);
      return run;
    }
    return this.begin(runId);
  }

  async approve(runId: string, user: string): Promise<Run> {
    let run = await this.store.require(runId);
    const runbook = this.runbook(run.runbook);
    if (run.status !== 'awaiting-approval') throw new RunStateError(`run ${run.id} is ${run.status}; it is not waiting for approval`);
    try {
      assertMayApprove(user, run, runbook, this.services.config);
    } catch (err) {
      await this.record({ kind: 'run.refused', who: user, runId, result: 'approval refused', message: (err as Error).message });
      throw err;
    }
    run = await this.store.update(runId, (r) => {
      if (r.status !== 'awaiting-approval' || r.approvals.some((a) => a.user === user)) return undefined;
      return { ...r, approvals: [...r.approvals, { user, at: new Date().toISOString() }] };
    });
    await this.record({ kind: 'run.approve', who: user, runId, result: `${run.approvals.length}/${run.approvalsRequired}` });
    if (run.approvals.length >= run.approvalsRequired && run.status === 'awaiting-approval') return this.begin(runId);
    await this.notify(run, true);
    return run;
  }

  private async begin(runId: string): Promise<Run> {
    const run = await this.store.update(runId, (r) => {
      if (r.status !== 'awaiting-confirmation' && r.status !== 'awaiting-approval') return undefined;
      return { ...r, status: 'running', startedAt: new Date().toISOString(), currentStep: r.steps[0].id };
    });
    if (run.status !== 'running') return run;
    await this.enqueue(run);
    if (run.progressMessage) await this.notify(run, true);
    else await this.postProgress(run);
    return (await this.store.get(runId)) ?? run;
  }

  private async enqueue(run: Run) {
    const runbook = this.runbook(run.runbook);
    const step = runbook.steps.find((s) => s.id === run.currentStep)!;
    await this.queue.add(
      step.action,
      { runId: run.id, stepId: step.id, generation: run.generation },
      {
        jobId: jobId(run.id, step.id, run.generation),
        attempts: step.retries + 1,
        backoff: { type: 'exponential', delay: this.opts.retryBackoffMs ?? 2000 },
      },
    );
  }

  async cancel(runId: string, user: string): Promise<Run> {
    const run = await this.store.require(runId);
    assertMayOperate(user, run, this.book.get(run.runbook), this.services.config, 'cancel');
    if (run.status === 'running' || run.status === 'paused') return this.abort(runId, user);
    if (isTerminal(run.status)) throw new RunStateError(`run ${run.id} already ended (${run.status})`);
    const next = await this.store.update(runId, (r) =>
      isTerminal(r.status) || r.status === 'running' || r.status === 'paused' ? undefined : { ...r, status: 'cancelled', endedBy: user, endedAt: new Date().toISOString() },
    );
    if (next.status !== 'cancelled') return this.abort(runId, user);
    await this.locks.release(runId, next.targets);
    await this.record({ kind: 'run.cancel', who: user, runId });
    await this.notify(next, true);
    return next;
  }

  async pause(runId: string, user: string): Promise<Run> {
    const run = await this.store.require(runId);
    assertMayOperate(user, run, this.book.get(run.runbook), this.services.config, 'pause');
    if (run.status !== 'running') throw new RunStateError(`run ${run.id} is ${run.status}; only a running run can be paused`);
    const next = await this.store.update(runId, (r) => (r.status === 'running' ? { ...r, status: 'paused', pausedBy: user, pausedReason: 'paused by a user' } : undefined));
    await this.record({ kind: 'run.pause', who: user, runId });
    await this.notify(next, true);
    return next;
  }

  async resume(runId: string, user: string): Promise<Run> {
    const run = await this.store.require(runId);
    assertMayOperate(user, run, this.book.get(run.runbook), this.services.config, 'resume');
    if (run.status !== 'paused') throw new RunStateError(`run ${run.id} is ${run.status}; only a paused run can be resumed`);
    const next = await this.store.update(runId, (r) =>
      r.status === 'paused' ? { ...r, status: 'running', pausedBy: undefined, pausedReason: undefined, generation: r.generation + 1 } : undefined,
    );
    if (next.status !== 'running') return next;
    await this.record({ kind: 'run.resume', who: user, runId });
    await this.enqueue(next);
    await this.notify(next, true);
    return next;
  }

  async abort(runId: string, user: string): Promise<Run> {
    const run = await this.store.require(runId);
    assertMayOperate(user, run, this.book.get(run.runbook), this.services.config, 'abort');
    if (isTerminal(run.status)) throw new RunStateError(`run ${run.id} already ended (${run.status})`);
    const next = await this.finish(runId, 'aborted', user, `aborted by ${user}`, (s) => (s.status === 'running' || s.status === 'paused' ? 'aborted' : s.status));
    await this.record({ kind: 'run.abort', who: user, runId });
    return next;
  }

  async get(runId: string) {
    return this.store.get(runId);
  }

  async list(n = 20) {
    return this.store.list(n);
  }

  async waitForEnd(runId: string, timeoutMs: number): Promise<Run> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const run = await this.store.require(runId);
      if (isTerminal(run.status) || run.status === 'paused') return run;
      if (Date.now() > deadline) throw new RunStateError(`run ${runId} is still ${run.status} after ${Math.round(timeoutMs / 1000)}s; follow it with /argo runs show ${runId}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** Terminal transition: status, step states, lock release, audit, final message. Idempotent. */
  private async finish(runId: string, status: RunStatus, by: string, error: string | undefined, stepStatus?: (s: StepState) => StepState['status']): Promise<Run> {
    const now = new Date().toISOString();
    const next = await this.store.update(runId, (r) =>
      isTerminal(r.status)
        ? undefined
        : {
            ...r,
            status,
            endedBy: by,
            endedAt: now,
            error: error ?? r.error,
            steps: stepStatus ? r.steps.map((s) => ({ ...s, status: stepStatus(s), endedAt: s.endedAt ?? (s.status === 'running' ? now : undefined) })) : r.steps,
          },
    );
    if (next.endedAt === now) {
      await this.locks.release(runId, next.targets);
      await this.record({ kind: 'run.end', who: by, runId, result: status, message: error });
      await this.notify(next, true);
    }
    return next;
  }

  // ---------- worker side ----------

  /** Re-queues the current step of running runs whose job vanished (e.g. Redis lost it). */
  private async recover() {
    for (const run of await this.store.list(200)) {
      if (run.status !== 'running' || !run.currentStep) continue;
      const job = await this.queue.getJob(jobId(run.id, run.currentStep, run.generation));
      const state = job ? await job.getState() : 'missing';
      if (state === 'missing' || state === 'completed' || state === 'failed' || state === 'unknown') {
        const again = await this.store.update(run.id, (r) => (r.status === 'running' && r.generation === run.generation ? { ...r, generation: r.generation + 1 } : undefined));
        if (again.generation !== run.generation) await this.enqueue(again);
      }
    }
  }

  private async process(job: Job<StepJobData>, token: string | undefined, bullSignal?: AbortSignal): Promise<string> {
    const { runId, stepId, generation } = job.data;
    let run = await this.store.get(runId);
    if (!run || run.status !== 'running' || run.currentStep !== stepId || run.generation !== generation) return 'stale';
    await refuseForeignRun(job, token, run, { config: this.services.config, audit: (e) => this.record(e), logger: this.opts.logger });
    const runbook = this.runbook(run.runbook);
    const stepDef = runbook.steps.find((s) => s.id === stepId)!;
    const action = findRunbookAction(stepDef.action)!;
    const startedAt = run.steps.find((s) => s.id === stepId)?.startedAt ?? new Date().toISOString();
    run = await this.store.update(runId, (r) => ({
      ...r,
      steps: r.steps.map((s) => (s.id === stepId ? { ...s, status: 'running', attempts: s.attempts + 1, startedAt } : s)),
    }));
    const attempt = run.steps.find((s) => s.id === stepId)!.attempts;
    await this.record({ kind: 'step.start', who: ENGINE_USER, runId, target: stepId, result: `attempt ${attempt}` });

    const control = new AbortController();
    // Every app of the step waiting on the rate limiter listens to this signal (up to `concurrency` at
    // once, each removed when it goes): more than Node's default 10 is expected, not a leak.
    setMaxListeners(0, control.signal);
    const timeoutMs = stepDef.timeoutMs ?? action.defaultTimeoutMs;
    const deadline = timeoutMs ? Date.parse(startedAt) + timeoutMs : undefined;
    const timers: NodeJS.Timeout[] = [];
    if (deadline) timers.push(setTimeout(() => control.abort('timeout'), Math.max(0, deadline - Date.now())));
    const poll = setInterval(() => {
      void this.store.get(runId).then((r) => {
        if (!r || control.signal.aborted) return;
        if (r.status === 'paused') control.abort('pause');
        else if (isTerminal(r.status)) control.abort('abort');
        else if (r.generation !== generation || r.currentStep !== stepId) control.abort('stale');
      }, () => {});
    }, this.opts.controlPollMs ?? 500);
    timers.push(poll);
    bullSignal?.addEventListener('abort', () => control.abort('shutdown'));

    let outcome: StepOutcome;
    let lastProgress: RunProgress | undefined;
    let progressTimer: NodeJS.Timeout | undefined;
    const flushProgress = async () => {
      clearTimeout(progressTimer);
      progressTimer = undefined;
      if (!lastProgress) return;
      const p = lastProgress;
      const r = await this.store.update(runId, (x) => ({ ...x, progress: p }));
      await this.notify(r, false);
    };
    try {
      outcome = await action.execute({
        run,
        stepId,
        input: this.stepInput(run, runbook, stepId),
        services: this.services,
        checkpoint: this.store.checkpoint(runId, stepId) as never,
        signal: control.signal,
        deadline,
        limiter: this.limiter,
        now: () => Date.now(),
        audit: (e) => this.record({ ...e, runId }),
        progress: (p) => {
          lastProgress = p;
          progressTimer ??= setTimeout(() => void flushProgress().catch(() => {}), Math.min(1000, this.opts.progressIntervalMs ?? 3000));
        },
      });
    } catch (err) {
      outcome = { status: 'failed', error: (err as Error).message };
      const attemptsLeft = (job.opts.attempts ?? 1) - (job.attemptsMade + 1);
      if (attemptsLeft > 0 && !control.signal.aborted) {
        for (const t of timers) clearTimeout(t);
        await flushProgress().catch(() => {});
        await this.store.update(runId, (r) => ({ ...r, steps: r.steps.map((s) => (s.id === stepId ? { ...s, error: `${(err as Error).message} (retrying)` } : s)) }));
        throw err;
      }
    } finally {
      for (const t of timers) clearTimeout(t);
    }
    await flushProgress().catch(() => {});

    const reason = control.signal.aborted ? String(control.signal.reason) : undefined;
    if (reason === 'stale') return 'stale';
    if (reason === 'shutdown') {
      // Put the step back for any worker; its checkpoint lets the next one continue.
      await job.moveToDelayed(Date.now() + 100, token);
      throw new DelayedError();
    }
    if (reason === 'timeout' && outcome.status !== 'failed') {
      outcome = { status: 'failed', error: `step ${stepId} timed out after ${Math.round((timeoutMs ?? 0) / 1000)}s`, output: outcome.output };
    }
    await this.record({ kind: 'step.end', who: ENGINE_USER, runId, target: stepId, result: outcome.status, message: 'error' in outcome ? outcome.error : undefined });
    await this.applyOutcome(runId, stepId, generation, outcome, stepDef.onFailure);
    return outcome.status;
  }

  private async applyOutcome(runId: string, stepId: string, generation: number, outcome: StepOutcome, onFailure: 'abort' | 'pause' | 'continue') {
    const runbook = this.runbook((await this.store.require(runId)).runbook);
    const index = runbook.steps.findIndex((s) => s.id === stepId);
    const nextStep = runbook.steps[index + 1]?.id;
    const now = new Date().toISOString();
    const stepStatus: StepState['status'] =
      outcome.status === 'succeeded' ? 'succeeded' : outcome.status === 'failed' ? 'failed' : outcome.status === 'paused' ? 'paused' : 'aborted';
    const error = outcome.status === 'failed' ? outcome.error : undefined;
    let enqueueNext = false;
    let terminal: { status: RunStatus; error?: string } | undefined;
    const run = await this.store.update(runId, (r) => {
      if (r.currentStep !== stepId || r.generation !== generation) return undefined;
      const steps = r.steps.map((s) =>
        s.id === stepId
          ? { ...s, status: stepStatus, output: outcome.output ?? s.output, error, endedAt: stepStatus === 'paused' ? undefined : now }
          : s,
      );
      const next: Run = { ...r, steps };
      if (isTerminal(r.status)) return next;
      const advance = outcome.status === 'succeeded' || (outcome.status === 'failed' && onFailure === 'continue');
      if (outcome.status === 'paused' || (outcome.status === 'failed' && onFailure === 'pause')) {
        if (r.status === 'running') {
          next.status = 'paused';
          next.pausedBy = ENGINE_USER;
          next.pausedReason = outcome.status === 'paused' ? outcome.reason : `step ${stepId} failed: ${error}`;
        }
        // Resuming re-runs this step from its checkpoint.
        if (outcome.status === 'failed') next.steps = next.steps.map((s) => (s.id === stepId ? { ...s, status: 'paused' } : s));
        return next;
      }
      if (outcome.status === 'aborted') {
        terminal = { status: 'aborted' };
        return next;
      }
      if (advance && nextStep) {
        next.currentStep = nextStep;
        enqueueNext = r.status === 'running';
        return next;
      }
      if (advance) {
        const anyFailed = steps.some((s) => s.status === 'failed');
        terminal = anyFailed ? { status: 'failed', error: steps.filter((s) => s.error).map((s) => `${s.id}: ${s.error}`).join('; ') } : { status: 'succeeded' };
        return next;
      }
      terminal = { status: 'failed', error: `step ${stepId} failed: ${error}` };
      return next;
    });
    if (enqueueNext) await this.enqueue(run);
    if (terminal) await this.finish(runId, terminal.status, ENGINE_USER, terminal.error);
    else if (run.status === 'paused') await this.notify(run, true);
  }

  // ---------- the live message ----------

  private async postProgress(run: Run) {
    const notifier = this.services.notifier;
    if (!notifier || !run.channel) return;
    try {
      const ref: MessageRef = await notifier.post({ channel: run.channel, threadTs: run.threadTs }, progressReply(run));
      await this.store.update(run.id, (r) => ({ ...r, progressMessage: ref }));
    } catch (err) {
      this.opts.logger?.warn({ err: (err as Error).message, runId: run.id }, 'could not post the progress message');
    }
  }

  /**
   * Updates the one live message, at most every progressIntervalMs; intermediate states coalesce
   * into a trailing update. `force` (state changes, the summary) skips the wait and replaces any
   * pending progress.
   */
  private async notify(run: Run, force: boolean) {
    const notifier = this.services.notifier;
    if (!notifier || this.stopping) return;
    const fresh = force ? ((await this.store.get(run.id)) ?? run) : run;
    const ref = fresh.progressMessage;
    if (!ref) return;
    const interval = this.opts.progressIntervalMs ?? 3000;
    const entry = this.lastNotified.get(run.id) ?? { at: 0 };
    this.lastNotified.set(run.id, entry);
    const send = async (r: Run) => {
      entry.at = Date.now();
      entry.pending = undefined;
      try {
        await notifier.update(ref, progressReply(r));
      } catch (err) {
        this.opts.logger?.warn({ err: (err as Error).message, runId: r.id }, 'progress update failed');
      }
      if (isTerminal(r.status)) {
        clearTimeout(entry.timer);
        this.lastNotified.delete(r.id);
      }
    };
    const wait = entry.at + interval - Date.now();
    // A state change (paused, resumed, ended) goes to the notifier at once: it coalesces and rate-limits
    // itself with the latest content winning, so holding it here only let an older "running" win.
    if (wait <= 0 || force) {
      clearTimeout(entry.timer);
      entry.timer = undefined;
      await send(fresh);
      return;
    }
    entry.pending = fresh;
    entry.timer ??= setTimeout(() => {
      entry.timer = undefined;
      if (entry.pending && !this.stopping) void send(entry.pending);
    }, wait);
  }
}

function dedupeTargets(targets: RunTarget[]): RunTarget[] {
  const seen = new Map<string, RunTarget>();
  for (const t of targets) seen.set(`${t.instance}/${t.app}`, t);
  return [...seen.values()];
}

export interface EngineHandle {
  runs: RunService;
  stop(): Promise<void>;
  /** Tests: stop as if the process died (no graceful finish). */
  crash(): Promise<void>;
}

/** CONTRACTS H: the run service (every role) and the step worker (roles all/worker). */
export async function startEngine(services: Services, opts: EngineOptions): Promise<EngineHandle> {
  const book = opts.runbooks ?? loadDefaultRunbooks(services);
  const redis = createRedis(opts.redisUrl);
  const engine = new Engine(services, opts, redis, book);
  await engine.open();
  return {
    runs: engine,
    stop: async () => {
      await engine.close();
      await closeRedis(redis);
    },
    crash: async () => {
      await engine.crash();
      redis.disconnect();
    },
  };
}

function loadDefaultRunbooks(services: Services): Map<string, Runbook> {
  const dir = services.config.runbooksDir;
  try {
    return loadRunbooks(dir);
  } catch (err) {
    if (isRollcallError(err, 'runbook_dir_empty')) return loadRunbooks(SHIPPED_RUNBOOKS_DIR);
    throw err;
  }
}

export interface RunToCompletionOptions {
  timeoutMs?: number;
  pollMs?: number;
}

/**
 * Terminal `ask --yes --wait`: follows a run, printing a line whenever its state or counts change,
 * and returns the final run (terminal, or paused with the reason).
 */
export async function runToCompletion(runs: RunService, runId: string, onLine: (line: string) => void, opts: RunToCompletionOptions = {}): Promise<Run> {
  const deadline = Date.now() + (opts.timeoutMs ?? 3_600_000);
  let last = '';
  for (;;) {
    const run = await runs.get(runId);
    if (!run) throw new RunStateError(`run ${runId} disappeared`);
    const line = progressLine(run);
    if (line !== last) onLine(line);
    last = line;
    if (isTerminal(run.status) || run.status === 'paused') return run;
    if (Date.now() > deadline) throw new RunStateError(`run ${runId} is still ${run.status}; follow it with rollcall ask "runs show ${runId}"`);
    await new Promise((r) => setTimeout(r, opts.pollMs ?? 500));
  }
}
