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
 * tells BullMQ its processor moved the job. The job becomes due again after `delayMs`, which must be shorter
 * than DRAIN_DELAY_S: the one worker Redis woke for it learns the due time and takes it then. This worker
 * learns the due time only if it asks for a job before then, and then, whenever two workers wake at the same
 * moment, Redis serves the older connection first, every time, which could starve the worker the job is meant
 * for. So the processor returns only once the job is due (its fetch loop is waiting out DRAIN_DELAY_S, and
 * BullMQ asks for this worker's next job the moment the processor returns). With no other worker the job comes
 * back here about once every DRAIN_DELAY_S.
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
 * default delays recovery for everyone (platform-facts §4). Worst-case recovery after a worker
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
    defaultJobOptions: { removeOnComplete: { count: 1000, age: 7 * 86_400 }, removeOnFail: { count: 1000, age: 7 * 86_400 } },
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
