import type { Job, Processor, Queue, Worker, WorkerOptions } from 'bullmq';
import type { RedisClient } from './redis.js';
import { bullPrefix } from './redis.js';

/**
 * BullMQ, loaded by the first queue or worker a process makes rather than with this module: a bot holds no
 * queue until it starts its first run, and keeps the library's code out of memory until then.
 */
const bullmq = () => import('bullmq');

/** BullMQ's signal that a processor moved its job back to the delayed set itself (nothing failed). */
export async function delayedError(): Promise<Error> {
  return new (await bullmq()).DelayedError();
}

/** How long a worker waits for a job before it asks again (BullMQ's drainDelay), in seconds. */
const DRAIN_DELAY_S = 1;

/**
 * Gives a job this worker must not execute back to the queue for another worker, and throws the error that
 * tells BullMQ its processor moved the job.
 *
 * Why not simply delay it: every worker that knows when a delayed job falls due wakes at that moment, and Redis
 * then serves the older connection first, every time. The refusing worker always knows (BullMQ asks for its next
 * job the moment the processor returns, and the answer names the next due time), so it could win every round.
 * Here the job falls due after `delayMs`, shorter than DRAIN_DELAY_S, and the processor returns only after that:
 * in between, only the worker that Redis woke for the job knows the due time. With no other worker the job comes
 * back about once a second. Keep `delayMs` well under lockDuration / 4, or BullMQ tries to renew the lock of a job
 * this processor no longer holds.
 */
export async function handBack(job: Job, token: string | undefined, delayMs: number): Promise<never> {
  await job.moveToDelayed(Date.now() + delayMs, token);
  await new Promise((resolve) => setTimeout(resolve, delayMs + 100));
  throw await delayedError();
}

/** Queue names, one per role of work. Steps of runbook runs are consumed by `--role worker|all`. */
export const QUEUES = { steps: 'runbook-steps', schedules: 'schedules' } as const;

/**
 * Lock and stalled-check settings. They MUST be the same in every process: the stalled check
 * holds a Redis key for the checking worker's own stalledInterval, so one worker on the 30 s
 * default delays recovery for everyone. Worst-case recovery after a worker
 * dies is about lockDuration + 2 × stalledInterval.
 */
export interface WorkerTiming {
  /** @defaultValue 10000 */
  lockDurationMs: number;
  /** @defaultValue 5000 */
  stalledIntervalMs: number;
  /** How often a job may be recovered after its worker died before BullMQ fails it. @defaultValue 5 */
  maxStalledCount: number;
}

export const DEFAULT_TIMING: WorkerTiming = { lockDurationMs: 10_000, stalledIntervalMs: 5_000, maxStalledCount: 5 };

export interface StepJobData {
  runId: string;
  stepId: string;
  /** Bumped on every resume so a job left over from before a pause can tell it is stale. */
  generation: number;
}

export async function createStepQueue(connection: RedisClient, prefix: string): Promise<Queue<StepJobData>> {
  const { Queue } = await bullmq();
  return new Queue<StepJobData>(QUEUES.steps, {
    connection,
    prefix: bullPrefix(prefix),
    defaultJobOptions: {
      removeOnComplete: { count: 1000, age: 7 * 86_400 },
      removeOnFail: { count: 1000, age: 7 * 86_400 },
    },
  });
}

export async function createStepWorker(
  connection: RedisClient,
  prefix: string,
  processor: Processor<StepJobData>,
  timing: WorkerTiming,
  extra: Partial<WorkerOptions> = {},
): Promise<Worker<StepJobData>> {
  const { Worker } = await bullmq();
  return new Worker<StepJobData>(QUEUES.steps, processor, {
    connection,
    prefix: bullPrefix(prefix),
    concurrency: 20,
    lockDuration: timing.lockDurationMs,
    stalledInterval: timing.stalledIntervalMs,
    maxStalledCount: timing.maxStalledCount,
    drainDelay: DRAIN_DELAY_S,
    ...extra,
  });
}
