import { formatDuration, typedDuration } from '../../core/format.js';
import { suggest } from '../../core/suggest.js';
import { setMaxListeners } from 'node:events';
import type { Job, Queue, Worker } from 'bullmq';
import type { RunbookServices as Services } from './services.js';
import type { MessageRef } from '../../core/notifier.js';
import type { Reply } from '../../core/reply.js';
import {
  createStepQueue,
  createStepWorker,
  DEFAULT_TIMING,
  delayedError,
  handBack,
  type StepJobData,
  type WorkerTiming,
} from '../../infra/queues.js';
import { InstanceRateLimiter, type RateLimit } from '../../infra/rate-limit.js';
import { assertPrefixFits, closeRedis, createRedis, rideOutRedis, type RedisClient } from '../../infra/redis.js';
import { findRunbookAction, runPausable } from './actions/index.js';
import type { ActionPreview, RunbookAction, RunTarget, StepOutcome } from './actions/types.js';
import { AuditLog, type AuditEvent } from '../audit/audit-log.js';
import { instanceUrls, refuseForeignRun } from './deployment.js';
import { loadRunbooks, SHIPPED_RUNBOOKS_DIR, substitute } from './loader.js';
import { AppLocks, LockConflictError } from './locks.js';
import { formatParam, parseParams } from './params.js';
import { assertMayApprove, assertMayOperate, assertMayRun } from './permissions.js';
import { NothingToDo, progressLine, progressReply } from './replies.js';
import { runEvent, stepOutcomeTransition, type RunEvent } from './run-machine.js';
import {
  isTerminal,
  LeaseLostError,
  previewExpired,
  PREVIEW_TTL_MS,
  RunStore,
  type Run,
  type RunProgress,
} from './run-store.js';
import type { Runbook } from './schema.js';
import type { ErrorCode } from '../../core/error-codes.js';
import { isRollcallError, RollcallError } from '../../core/errors.js';
import type { Surface } from '../../core/access.js';

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
    // The suggestion goes with the error, not in its text: a reply prints it once, under the message.
    super('unknown_runbook', `no runbook "${runbook}"; runbooks: ${known.join(', ') || 'none loaded'}`, {
      suggestions: suggest(runbook, known),
    });
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
  surface: Surface;
  /**
   * Started by rollcall itself from a schedule in rollcall.yaml: whoever wrote the config decided it
   * may run, so the runners check is skipped (approvals, if the runbook needs them, still apply).
   */
  system?: boolean;
}

/** What commands may do with runs, on every role: a bot starts and confirms them, workers run their steps. */
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
  /** The newest `n` runs of each of these runbooks, newest first, however many runs of others came since. */
  listOf(runbooks: readonly string[], n?: number): Promise<Run[]>;
  /** Resolves when the run is terminal, or paused (nobody in a terminal will press Resume); rejects after timeoutMs. */
  waitForEnd(runId: string, timeoutMs: number): Promise<Run>;
  runbooks(): Runbook[];
  /** How many step workers (any process) are connected to this Redis right now. */
  workersOnline(): Promise<number>;
  audit: AuditLog;
  /** instances[].rateLimit, shared by every process on this Redis: what loads an Argo CD instance waits its turn here. */
  limiter: Pick<InstanceRateLimiter, 'acquire'>;
}

export interface EngineOptions {
  role: 'all' | 'bot' | 'worker';
  redisUrl: string;
  prefix: string;
  /** Runbooks to serve; default: loaded from config.runbooksDir, else the shipped ones. */
  runbooks?: Map<string, Runbook>;
  timing?: Partial<WorkerTiming>;
  /** How long a running step's progress may wait before it is saved and offered to the notifier, which paces Slack (at most 1 s). @defaultValue 1000 */
  progressIntervalMs?: number;
  /** How often a running step looks for pause/abort. @defaultValue 500 */
  controlPollMs?: number;
  /** Base of the exponential backoff between step retries. @defaultValue 2000 */
  retryBackoffMs?: number;
  /** Steps processed at once by this process. @defaultValue 20 */
  concurrency?: number;
  logger?: {
    info(o: unknown, m?: string): void;
    warn(o: unknown, m?: string): void;
    error(o: unknown, m?: string): void;
  };
  /**
   * Execute only the runs handed to `adopt` (a terminal's `ask --wait`): another run's step is put
   * back on the queue untouched, for the workers configured to run it.
   */
  exclusive?: boolean;
  /**
   * The clock steps measure their own waits by (`ctx.now()`: a wave's timeout, a bake), in ms. Tests drive
   * it with the simulator's clock; leases, locks and checkpoint times stay on Redis' clock.
   * @defaultValue Date.now
   */
  clock?: () => number;
}

const ENGINE_USER = 'rollcall';
/** The reason a step's BullMQ signal carries when the worker could not renew the job's lock. */
const LOCK_LOST = 'lock-lost';

/** One attempt of one step, as claimed: the run it read when it took the lease, and what the step says. */
interface StepAttempt {
  runId: string;
  stepId: string;
  generation: number;
  run: Run;
  runbook: Runbook;
  action: RunbookAction;
  onFailure: 'abort' | 'pause' | 'continue';
  lease: string;
  attempt: number;
  timeoutMs?: number;
  deadline?: number;
}

interface StepControl {
  signal: AbortSignal;
  /** Clears the deadline timer and the control poll. */
  stop(): void;
}

interface ProgressSaver {
  fence: { token: string; level: 'report' };
  offer(p: RunProgress): void;
  /** Saves the last progress offered; never throws. */
  flush(): Promise<void>;
}

function jobId(runId: string, stepId: string, generation: number) {
  return `${runId}.${stepId}.${generation}`;
}

class Engine implements RunService {
  readonly store: RunStore;
  readonly locks: AppLocks;
  readonly audit: AuditLog;
  readonly limiter: InstanceRateLimiter;
  private queue?: Promise<Queue<StepJobData>>;
  worker?: Worker<StepJobData>;
  private readonly timing: WorkerTiming;
  private readonly extraConnections: RedisClient[] = [];
  private stopping = false;

  constructor(
    private readonly services: Services,
    private readonly opts: EngineOptions,
    readonly redis: RedisClient,
    private readonly book: Map<string, Runbook>,
  ) {
    this.store = new RunStore(redis, opts.prefix);
    this.locks = new AppLocks(redis, opts.prefix);
    this.audit = new AuditLog(redis, opts.prefix, undefined, opts.logger);
    const limits = new Map<string, RateLimit>();
    for (const i of services.config.instances) limits.set(i.name, { max: i.rateLimit.max, perMs: i.rateLimit.per });
    this.limiter = new InstanceRateLimiter(redis, opts.prefix, limits);
    this.timing = { ...DEFAULT_TIMING, ...opts.timing };
  }

  private redisDown: (err?: Error) => void = () => {};

  /** Queue and worker errors: a lost connection is Redis being down (logged once by watchRedis), anything else is logged as it comes. */
  private queueError(what: string, err: Error) {
    if (
      /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|Connection is closed|connect ECONN|Stream isn't writeable/i.test(
        err.message,
      )
    )
      this.redisDown(err);
    else if (this.redisUp) this.opts.logger?.warn({ err: err.message }, what);
  }

  /** False from the moment the engine's Redis connection drops until it is ready again. */
  redisUp = true;
  private redisDownSince?: number;

  /** Logs Redis loss and recovery once each, not once per reconnect attempt. */
  private watchRedis() {
    const down = (this.redisDown = (err?: Error) => {
      if (!this.redisUp || this.stopping) return;
      this.redisUp = false;
      this.redisDownSince = Date.now();
      this.opts.logger?.error(
        { err: err?.message },
        `Redis unreachable: runbook runs are on hold meanwhile (no step starts, no run state is saved, and no Argo CD sync is sent, since each needs its mark in Redis first${this.opts.role === 'bot' ? '' : '; a running step waits at its next write'})`,
      );
    });
    this.redis.on('error', (err: Error) => down(err));
    this.redis.on('close', () => down());
    this.redis.on('ready', () => {
      if (this.redisUp) return;
      this.redisUp = true;
      this.opts.logger?.info(
        { downMs: Date.now() - (this.redisDownSince ?? Date.now()) },
        'Redis reachable again: runbook runs continue',
      );
    });
  }

  async open(): Promise<void> {
    this.watchRedis();
    if (this.opts.role !== 'bot') {
      await this.stepQueue();
      await this.startWorker();
      await this.recover();
    }
  }

  /** The step queue, on a connection of its own; a bot opens it when it first queues or inspects a step. */
  private stepQueue(): Promise<Queue<StepJobData>> {
    if (this.stopping && !this.queue)
      return Promise.reject(new RunStateError('the run engine is stopping: no step can be queued'));
    this.queue ??= (async () => {
      const connection = createRedis(this.opts.redisUrl);
      this.extraConnections.push(connection);
      const queue = await createStepQueue(connection, this.opts.prefix);
      queue.on('error', (err) => this.queueError('runbook queue error', err));
      return queue;
    })();
    return this.queue;
  }

  /**
   * The step worker, on a connection of its own. On a Redis Cluster, BullMQ's blocking fetch stays on a master
   * that died: after a failover the worker never takes a job again. A worker started afresh does, so the worker
   * is replaced when the Cluster drops a master (its steps were stopped already, when their locks could not be renewed).
   */
  private async startWorker(): Promise<void> {
    const workerConnection = createRedis(this.opts.redisUrl);
    this.extraConnections.push(workerConnection);
    const worker = await createStepWorker(
      workerConnection,
      this.opts.prefix,
      (job, token, signal) => this.process(job, token, signal),
      this.timing,
      {
        concurrency: this.opts.concurrency ?? 20,
      },
    );
    this.worker = worker;
    worker.on('error', (err) => this.queueError('runbook worker error', err));
    // BullMQ keeps running a processor whose lock it could not renew and hands the job to another
    // worker: stop ours before its next call (the lease shuts it out of Redis writes anyway).
    worker.on('lockRenewalFailed', (jobIds: string[]) => {
      for (const id of jobIds) {
        worker.cancelJob(id, LOCK_LOST);
        this.opts.logger?.warn(
          { jobId: id },
          'lost the lock of a runbook step (Redis unreachable or this worker stalled): stopping it before its next call; another worker continues it',
        );
      }
    });
    if (workerConnection.isCluster) {
      // Only a master leaving strands the blocking fetch; a replica leaving (BullMQ reads from masters) changes nothing.
      const nodeLeft = (node: { options: { readOnly?: boolean; port?: number } }) => {
        if (node.options.readOnly) {
          this.opts.logger?.info(
            { port: node.options.port },
            'a Redis Cluster replica left: the step worker carries on',
          );
          return;
        }
        workerConnection.off('-node', nodeLeft);
        if (this.stopping || this.worker !== worker) return;
        this.opts.logger?.warn(
          { port: node.options.port },
          'a Redis Cluster master left: starting the step worker afresh',
        );
        void (async () => {
          await worker.close(true).catch(() => undefined);
          const at = this.extraConnections.indexOf(workerConnection);
          if (at >= 0) this.extraConnections.splice(at, 1);
          workerConnection.disconnect();
          if (!this.stopping) await this.startWorker();
        })().catch((err: Error) =>
          this.opts.logger?.error({ err: err.message }, 'could not start the step worker afresh'),
        );
      };
      workerConnection.on('-node', nodeLeft);
    }
    await worker.waitUntilReady();
  }

  async workersOnline(): Promise<number> {
    // BullMQ names its worker connections; CLIENT LIST finds them across processes.
    return (await (await this.stepQueue()).getWorkers()).length;
  }

  async close(): Promise<void> {
    this.stopping = true;
    if (this.worker) {
      // Long steps stop at their next checkpoint and are re-queued (see process), so close() need not wait minutes.
      this.worker.cancelAllJobs('shutdown');
      await this.worker.close();
    }
    await (await this.queue)?.close();
    for (const c of this.extraConnections) await closeRedis(c);
  }

  /** Closes without finishing anything: as if the process died (tests). */
  async crash(): Promise<void> {
    this.stopping = true;
    await this.worker?.close(true);
    await (await this.queue)?.close();
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
      await this.record({
        kind: 'run.refused',
        who: req.user,
        target: runbook.name,
        params: req.params,
        result: 'forbidden',
        message: (err as Error).message,
      });
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
      // Every mutating step would do nothing: a run to confirm would only pretend there is work.
      if (previews.length && previews.every((p) => p.empty)) {
        throw new NothingToDo(runbook.name, runbook.title, previews.map((p) => p.summary).join('\n'), {
          data: previews.length === 1 ? previews[0].data : { steps: previews.map((p) => p.data) },
          blocks: previews.flatMap((p) => p.blocks),
        });
      }
      const targets = dedupeTargets(previews.flatMap((p) => p.targets));
      const conflicts = await this.locks.holders(targets, run.id);
      if (conflicts.length) throw new LockConflictError(conflicts);
      run = await this.store.update(run.id, (r) => ({
        ...(this.transit(r, { type: 'previewed' }) ?? r),
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
      // Bad input (a selector matching nothing, a lock held elsewhere) or nothing to do: there never was a run to list.
      // The attempt stays in the audit log, once.
      await this.store.discard(
        run,
        runbook.steps.map((s) => s.id),
      );
      const nothing = err instanceof NothingToDo;
      await this.record({
        kind: nothing ? 'run.noop' : 'run.refused',
        who: req.user,
        target: runbook.name,
        params,
        result: nothing ? 'nothing to do' : 'preview failed',
        message: (err as Error).message,
      });
      throw err;
    }
  }

  async confirm(runId: string, user: string, where?: { channel?: string; threadTs?: string }): Promise<Run> {
    let run = await this.store.require(runId);
    const runbook = this.book.get(run.runbook);
    assertMayOperate(user, run, runbook, this.services.config, 'confirm');
    if (run.status !== 'awaiting-confirmation')
      throw new RunStateError(`run ${run.id} is ${run.status}; only a run awaiting confirmation can be confirmed`);
    // A preview shows the fleet as it was; confirming one from an hour ago would act on what it no longer shows.
    if (previewExpired(run)) {
      await this.store.update(runId, (r) => this.transit(r, { type: 'expire', at: new Date().toISOString() }));
      await this.record({
        kind: 'run.end',
        who: ENGINE_USER,
        runId,
        result: 'cancelled',
        message: 'preview expired before confirmation',
      });
      throw new RunStateError(
        `the preview of run ${run.id} is older than ${formatDuration(PREVIEW_TTL_MS)} and may no longer match the fleet; run the command again for a fresh preview`,
      );
    }
    // Locks are taken at confirmation, not at preview: an abandoned preview must not block anyone.
    await this.locks.acquire(run.id, run.targets);
    run = await this.store.update(runId, (r) =>
      this.transit(r, {
        type: 'confirm',
        by: user,
        at: new Date().toISOString(),
        channel: where?.channel,
        threadTs: where?.threadTs,
      }),
    );
    if (run.confirmedBy !== user)
      throw new RunStateError(`run ${run.id} is ${run.status}; it was changed while confirming`);
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
    if (run.status !== 'awaiting-approval')
      throw new RunStateError(`run ${run.id} is ${run.status}; it is not waiting for approval`);
    try {
      assertMayApprove(user, run, runbook, this.services.config);
    } catch (err) {
      await this.record({
        kind: 'run.refused',
        who: user,
        runId,
        result: 'approval refused',
        message: (err as Error).message,
      });
      throw err;
    }
    run = await this.store.update(runId, (r) => {
      if (r.status !== 'awaiting-approval' || r.approvals.some((a) => a.user === user)) return undefined;
      return { ...r, approvals: [...r.approvals, { user, at: new Date().toISOString() }] };
    });
    await this.record({
      kind: 'run.approve',
      who: user,
      runId,
      result: `${run.approvals.length}/${run.approvalsRequired}`,
    });
    if (run.approvals.length >= run.approvalsRequired && run.status === 'awaiting-approval') return this.begin(runId);
    await this.notify(run, true);
    return run;
  }

  private async begin(runId: string): Promise<Run> {
    const run = await this.store.update(runId, (r) => this.transit(r, { type: 'begin', at: new Date().toISOString() }));
    if (run.status !== 'running') return run;
    await this.enqueue(run);
    if (run.progressMessage) await this.notify(run, true);
    else await this.postProgress(run);
    return (await this.store.get(runId)) ?? run;
  }

  private async enqueue(run: Run) {
    const runbook = this.runbook(run.runbook);
    const step = runbook.steps.find((s) => s.id === run.currentStep)!;
    await (
      await this.stepQueue()
    ).add(
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
      this.transit(r, { type: 'cancel', by: user, at: new Date().toISOString() }),
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
    if (run.status !== 'running')
      throw new RunStateError(`run ${run.id} is ${run.status}; only a running run can be paused`);
    if (!runPausable(run))
      throw new RunStateError(
        `run ${run.id} (${run.runbook}) cannot be paused: its step has nothing to hold for later (one short step, or one request Argo CD carries out on its own); abort it instead`,
      );
    // Revoking the lease in the same write: from this moment no call of the running attempt goes out.
    const next = await this.store.update(
      runId,
      (r) => this.transit(r, { type: 'pause', by: user, reason: 'paused by a user' }),
      { lease: 'revoke' },
    );
    await this.record({ kind: 'run.pause', who: user, runId });
    await this.notify(next, true);
    return next;
  }

  async resume(runId: string, user: string): Promise<Run> {
    const run = await this.store.require(runId);
    assertMayOperate(user, run, this.book.get(run.runbook), this.services.config, 'resume');
    if (run.status !== 'paused')
      throw new RunStateError(`run ${run.id} is ${run.status}; only a paused run can be resumed`);
    const next = await this.store.update(runId, (r) => this.transit(r, { type: 'resume' }));
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
    const next = await this.finish(runId, 'aborted', user, `aborted by ${user}`, true);
    await this.record({ kind: 'run.abort', who: user, runId });
    return next;
  }

  async get(runId: string) {
    return this.store.get(runId);
  }

  async list(n = 20) {
    return this.store.list(n);
  }

  async listOf(runbooks: readonly string[], n = 20) {
    return this.store.listOf(runbooks, n);
  }

  async waitForEnd(runId: string, timeoutMs: number): Promise<Run> {
    const deadline = Date.now() + timeoutMs;
    let run = await this.store.require(runId);
    // Waiting is what was asked for: a Redis restart meanwhile is waited out, as the run itself waits it out.
    return rideOutRedis(async () => {
      for (;;) {
        if (isTerminal(run.status) || run.status === 'paused') return run;
        if (Date.now() > deadline)
          throw new RunStateError(
            `run ${runId} is still ${run.status} after ${typedDuration(timeoutMs)}; follow it with /argo runs show ${runId}`,
          );
        await new Promise((r) => setTimeout(r, 200));
        run = await this.store.require(runId);
      }
    });
  }

  /** Applies a lifecycle event, or leaves the run as it is when the event does not apply to its state now. */
  private transit(r: Run, e: RunEvent): Run | undefined {
    const t = runEvent(r, e);
    return t.ok ? t.run : undefined;
  }

  /**
   * Terminal transition: status, step states, lease revoked (the running attempt, if any, makes no
   * further call), lock release, audit, final message. Idempotent.
   */
  private async finish(
    runId: string,
    status: 'succeeded' | 'failed' | 'aborted',
    by: string,
    error: string | undefined,
    abortSteps = false,
  ): Promise<Run> {
    const now = new Date().toISOString();
    const next = await this.store.update(
      runId,
      (r) => this.transit(r, { type: 'end', status, by, at: now, error, abortSteps }),
      { lease: 'revoke' },
    );
    if (next.endedAt === now) {
      await this.locks.release(runId, next.targets);
      await this.record({ kind: 'run.end', who: by, runId, result: status, message: error });
      await this.notify(next, true);
    }
    return next;
  }

  // ---------- worker side ----------

  /**
   * Re-queues the current step of running runs whose job vanished (e.g. Redis lost it). Read runbook by runbook: a
   * long run (a bake of hours) is found however many short runs of other runbooks started since.
   */
  private async recover() {
    const recent = await this.store.listOf(
      this.runbooks().map((r) => r.name),
      200,
    );
    for (const run of recent) {
      if (run.status !== 'running' || !run.currentStep) continue;
      const job = await (await this.stepQueue()).getJob(jobId(run.id, run.currentStep, run.generation));
      const state = job ? await job.getState() : 'missing';
      if (state === 'missing' || state === 'completed' || state === 'failed' || state === 'unknown') {
        const again = await this.store.update(run.id, (r) =>
          r.status === 'running' && r.generation === run.generation
            ? { ...r, generation: r.generation + 1 }
            : undefined,
        );
        if (again.generation !== run.generation) await this.enqueue(again);
      }
    }
  }

  /** Runs this process may execute when `exclusive`. */
  readonly adopted = new Set<string>();

  /**
   * One attempt of one step: claim the run and its lease, run the action with its control signal and
   * progress, then hand the job back (shutdown, a lost lease) or record the step's outcome.
   */
  private async process(job: Job<StepJobData>, token: string | undefined, bullSignal?: AbortSignal): Promise<string> {
    if (this.opts.exclusive && !this.adopted.has(job.data.runId)) return handBack(job, token, 250);
    const attempt = await this.claim(job, token);
    if (!attempt) return 'stale';
    const control = this.stepControl(attempt, bullSignal);
    const progress = this.progressSaver(attempt);
    let outcome = await this.runStep(job, attempt, control, progress);
    if (outcome === 'stale') return 'stale';
    await progress.flush();
    const settled = await this.settleInterrupted(job, token, attempt, control.signal, outcome);
    if (settled === 'stale') return 'stale';
    outcome = settled;
    if (control.signal.aborted && String(control.signal.reason) === 'timeout' && outcome.status !== 'failed') {
      outcome = {
        status: 'failed',
        error: `step ${attempt.stepId} timed out after ${typedDuration(attempt.timeoutMs ?? 0)}`,
        output: outcome.output,
      };
    }
    return this.finishStep(attempt, outcome);
  }

  /**
   * The run still wants this step of this generation, and this attempt now holds its lease: from here
   * on every write and call of the attempt is checked against it, and the previous holder (a stalled
   * worker whose job BullMQ handed over) is shut out of its next one. Undefined: the job is stale.
   */
  private async claim(job: Job<StepJobData>, token: string | undefined): Promise<StepAttempt | undefined> {
    const { runId, stepId, generation } = job.data;
    const current = await this.store.get(runId);
    if (!current || current.status !== 'running' || current.currentStep !== stepId || current.generation !== generation)
      return undefined;
    await refuseForeignRun(job, token, current, {
      config: this.services.config,
      audit: (e) => this.record(e),
      logger: this.opts.logger,
    });
    const runbook = this.runbook(current.runbook);
    const stepDef = runbook.steps.find((s) => s.id === stepId)!;
    const action = findRunbookAction(stepDef.action)!;
    const leased = await this.store.acquireLease(runId, stepId, generation);
    if (!leased) return undefined;
    const { run, token: lease } = leased;
    const step = run.steps.find((s) => s.id === stepId)!;
    const timeoutMs = stepDef.timeoutMs ?? action.defaultTimeoutMs;
    this.opts.logger?.info({ runId, stepId, attempt: step.attempts }, 'step attempt started');
    await this.record({
      kind: 'step.start',
      who: ENGINE_USER,
      runId,
      target: stepId,
      result: `attempt ${step.attempts}`,
    });
    return {
      runId,
      stepId,
      generation,
      run,
      runbook,
      action,
      onFailure: stepDef.onFailure,
      lease,
      attempt: step.attempts,
      timeoutMs,
      deadline: timeoutMs ? Date.parse(step.startedAt!) + timeoutMs : undefined,
    };
  }

  /** The attempt's abort signal: its deadline, a pause, an abort or a newer attempt seen in Redis, BullMQ losing the job or shutting down. */
  private stepControl(a: StepAttempt, bullSignal?: AbortSignal): StepControl {
    const control = new AbortController();
    // Every app of the step waiting on the rate limiter listens to this signal (up to `concurrency` at
    // once, each removed when it goes): more than Node's default 10 is expected, not a leak.
    setMaxListeners(0, control.signal);
    const timers: NodeJS.Timeout[] = [];
    if (a.deadline) timers.push(setTimeout(() => control.abort('timeout'), Math.max(0, a.deadline - Date.now())));
    // Pause and abort revoke the lease, so the next fenced write refuses at once; this poll only
    // wakes a step that is waiting on Argo CD rather than writing.
    const poll = setInterval(() => {
      void Promise.all([this.store.get(a.runId), this.store.leaseOf(a.runId)]).then(
        ([r, held]) => {
          if (!r || control.signal.aborted) return;
          if (r.status === 'paused') control.abort('pause');
          else if (isTerminal(r.status)) control.abort('abort');
          else if (r.generation !== a.generation || r.currentStep !== a.stepId) control.abort('stale');
          else if (held !== a.lease) control.abort('lease-lost');
        },
        () => {},
      );
    }, this.opts.controlPollMs ?? 500);
    timers.push(poll);
    bullSignal?.addEventListener('abort', () =>
      control.abort(bullSignal.reason === LOCK_LOST ? 'lease-lost' : 'shutdown'),
    );
    return { signal: control.signal, stop: () => timers.forEach((t) => clearTimeout(t)) };
  }

  /** Progress is saved at most every progressIntervalMs (and then offered to the notifier, which paces Slack itself). */
  private progressSaver(a: StepAttempt): ProgressSaver {
    const fence = { token: a.lease, level: 'report' as const };
    let lastProgress: RunProgress | undefined;
    let progressTimer: NodeJS.Timeout | undefined;
    const flushProgress = async () => {
      clearTimeout(progressTimer);
      progressTimer = undefined;
      if (!lastProgress) return;
      const p = lastProgress;
      lastProgress = undefined;
      const r = await this.store.update(a.runId, (x) => ({ ...x, progress: p }), { fence });
      await this.notify(r);
    };
    const flush = () =>
      flushProgress().catch((err: unknown) => {
        if (!(err instanceof LeaseLostError))
          this.opts.logger?.warn({ err: (err as Error).message, runId: a.runId }, 'could not save run progress');
      });
    return {
      fence,
      flush,
      offer: (p) => {
        lastProgress = p;
        progressTimer ??= setTimeout(() => void flush(), Math.min(1000, this.opts.progressIntervalMs ?? 1000));
      },
    };
  }

  /**
   * The action itself. An error with BullMQ attempts left (and no abort) is noted on the step and
   * rethrown, so BullMQ retries the job and the step continues from its checkpoint.
   */
  private async runStep(
    job: Job<StepJobData>,
    a: StepAttempt,
    control: StepControl,
    progress: ProgressSaver,
  ): Promise<StepOutcome | 'stale'> {
    const { runId, stepId, run, lease } = a;
    try {
      return await a.action.execute({
        run,
        stepId,
        input: this.stepInput(run, a.runbook, stepId),
        services: this.services,
        checkpoint: (part) => this.store.checkpoint(runId, stepId, lease, part),
        assertLease: () => this.store.assertLease(runId, lease),
        redisNow: () => this.store.now(),
        signal: control.signal,
        deadline: a.deadline,
        limiter: this.limiter,
        now: this.opts.clock ?? Date.now,
        audit: (e) => this.record({ ...e, runId }),
        progress: progress.offer,
        say: (reply) => this.say(runId, reply),
      });
    } catch (err) {
      if (err instanceof LeaseLostError) return { status: 'interrupted' };
      const attemptsLeft = (job.opts.attempts ?? 1) - (job.attemptsMade + 1);
      if (attemptsLeft > 0 && !control.signal.aborted) {
        control.stop();
        await progress.flush();
        try {
          await this.store.update(
            runId,
            (r) => ({
              ...r,
              steps: r.steps.map((s) =>
                s.id === stepId ? { ...s, error: `${(err as Error).message} (retrying)` } : s,
              ),
            }),
            { fence: progress.fence },
          );
        } catch (e) {
          if (e instanceof LeaseLostError) return 'stale';
          throw e;
        }
        throw err;
      }
      return { status: 'failed', error: (err as Error).message };
    } finally {
      control.stop();
    }
  }

  /**
   * An attempt that stopped for shutdown or lost its lease: the pause or abort that revoked the lease
   * becomes the outcome; otherwise the job goes back to the queue (throws BullMQ's DelayedError) so a
   * fresh attempt takes a new lease and continues from the checkpoint.
   */
  private async settleInterrupted(
    job: Job<StepJobData>,
    token: string | undefined,
    a: StepAttempt,
    signal: AbortSignal,
    outcome: StepOutcome,
  ): Promise<StepOutcome | 'stale'> {
    const reason = signal.aborted ? String(signal.reason) : undefined;
    if (reason === 'stale') return 'stale';
    if (reason === 'shutdown') {
      // Put the step back for any worker; its checkpoint lets the next one continue.
      await job.moveToDelayed(Date.now() + 100, token);
      throw await delayedError();
    }
    if (outcome.status !== 'interrupted' && reason !== 'lease-lost') return outcome;
    const now = await this.store.get(a.runId);
    const held = await this.store.leaseOf(a.runId);
    if (now?.status === 'paused' && held === `revoked:${a.lease}`)
      return { status: 'paused', reason: now.pausedReason ?? 'paused', output: outcome.output };
    if (now && isTerminal(now.status) && held === `revoked:${a.lease}`)
      return { status: 'aborted', output: outcome.output };
    this.opts.logger?.warn(
      { runId: a.runId, stepId: a.stepId, attempt: a.attempt },
      'step attempt lost its lease; it stopped before its next call',
    );
    // Nobody else may hold it (Redis lost the write that gave it out): while BullMQ still lets this
    // worker own the job, hand the job back so a fresh attempt takes a new lease.
    try {
      await job.moveToDelayed(Date.now() + 100, token);
    } catch {
      return 'stale'; // the job went to another worker, which holds the lease
    }
    throw await delayedError();
  }

  /** Records the step's end and applies its outcome to the run (next step, pause, or the run's end). */
  private async finishStep(a: StepAttempt, outcome: StepOutcome): Promise<string> {
    await this.record({
      kind: 'step.end',
      who: ENGINE_USER,
      runId: a.runId,
      target: a.stepId,
      result: outcome.status,
      message: 'error' in outcome ? outcome.error : undefined,
    });
    try {
      await this.applyOutcome(a.runId, a.stepId, a.generation, outcome, a.onFailure, a.lease);
    } catch (err) {
      if (err instanceof LeaseLostError) return 'stale';
      throw err;
    }
    return outcome.status;
  }

  private async applyOutcome(
    runId: string,
    stepId: string,
    generation: number,
    outcome: StepOutcome,
    onFailure: 'abort' | 'pause' | 'continue',
    lease: string,
  ) {
    const runbook = this.runbook((await this.store.require(runId)).runbook);
    const index = runbook.steps.findIndex((s) => s.id === stepId);
    const nextStep = runbook.steps[index + 1]?.id;
    const now = new Date().toISOString();
    let enqueueNext = false;
    let terminal: { status: 'succeeded' | 'failed' | 'aborted'; error?: string } | undefined;
    const run = await this.store.update(
      runId,
      (r) => {
        if (r.currentStep !== stepId || r.generation !== generation) return undefined;
        const t = stepOutcomeTransition(r, { stepId, nextStep, outcome, onFailure, by: ENGINE_USER, now });
        enqueueNext = t.enqueueNext;
        terminal = t.terminal;
        return t.run;
      },
      { fence: { token: lease, level: 'report' } },
    );
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

  /** A reply in the run's thread: under its live message, else where the run was asked for. */
  private async say(runId: string, reply: Reply): Promise<void> {
    const notifier = this.services.notifier;
    if (!notifier) return;
    try {
      const run = await this.store.get(runId);
      const ref = run?.progressMessage;
      const target = ref
        ? { channel: ref.channel, threadTs: ref.threadTs ?? ref.ts }
        : run?.channel
          ? { channel: run.channel, threadTs: run.threadTs }
          : undefined;
      if (target) await notifier.post(target, reply);
    } catch (err) {
      this.opts.logger?.warn({ err: (err as Error).message, runId }, 'could not post in the run thread');
    }
  }

  /**
   * Updates the one live message. The notifier paces and coalesces updates itself (latest content
   * wins); `fresh` re-reads the run first, for state changes made elsewhere.
   */
  private async notify(run: Run, fresh = false) {
    const notifier = this.services.notifier;
    if (!notifier || this.stopping) return;
    const latest = fresh ? ((await this.store.get(run.id)) ?? run) : run;
    const ref = latest.progressMessage;
    if (!ref) return;
    try {
      await notifier.update(ref, progressReply(latest));
    } catch (err) {
      this.opts.logger?.warn({ err: (err as Error).message, runId: run.id }, 'progress update failed');
    }
  }
}

function dedupeTargets(targets: RunTarget[]): RunTarget[] {
  const seen = new Map<string, RunTarget>();
  for (const t of targets) seen.set(`${t.instance}/${t.app}`, t);
  return [...seen.values()];
}

export interface EngineHandle {
  runs: RunService;
  /** Whether the engine's Redis connection is up right now (for readiness). */
  redisHealthy(): boolean;
  /** With `exclusive`: this process may execute the run's steps. */
  adopt(runId: string): void;
  stop(): Promise<void>;
  /** Tests: stop as if the process died (no graceful finish). */
  crash(): Promise<void>;
}

/** The run service (every role) and the step worker (roles all and worker). */
export async function startEngine(services: Services, opts: EngineOptions): Promise<EngineHandle> {
  assertPrefixFits(opts.redisUrl, opts.prefix);
  const book = opts.runbooks ?? loadDefaultRunbooks(services);
  const redis = createRedis(opts.redisUrl);
  const engine = new Engine(services, opts, redis, book);
  await engine.open();
  return {
    runs: engine,
    redisHealthy: () => engine.redisUp,
    adopt: (runId) => void engine.adopted.add(runId),
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
export async function runToCompletion(
  runs: RunService,
  runId: string,
  onLine: (line: string) => void,
  opts: RunToCompletionOptions = {},
): Promise<Run> {
  const deadline = Date.now() + (opts.timeoutMs ?? 3_600_000);
  let last = '';
  for (;;) {
    const run = await runs.get(runId);
    if (!run) throw new RunStateError(`run ${runId} disappeared`);
    const line = progressLine(run);
    if (line !== last) onLine(line);
    last = line;
    if (isTerminal(run.status) || run.status === 'paused') return run;
    if (Date.now() > deadline)
      throw new RunStateError(`run ${runId} is still ${run.status}; follow it with rollcall ask "runs show ${runId}"`);
    await new Promise((r) => setTimeout(r, opts.pollMs ?? 500));
  }
}
