import { Queue, Worker, type Processor, type WorkerOptions } from 'bullmq';
import type { RedisClient } from './redis.js';
import { bullPrefix } from './redis.js';

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

export function createStepQueue(connection: RedisClient, prefix: string): Queue<StepJobData> {
  return new Queue<StepJobData>(QUEUES.steps, {
    connection,
    prefix: bullPrefix(prefix),
    defaultJobOptions: { removeOnComplete: { count: 1000, age: 7 * 86_400 }, removeOnFail: { count: 1000, age: 7 * 86_400 } },
  });
}

export function createStepWorker(
  connection: RedisClient,
  prefix: string,
  processor: Processor<StepJobData>,
  timing: WorkerTiming,
  extra: Partial<WorkerOptions> = {},
): Worker<StepJobData> {
  return new Worker<StepJobData>(QUEUES.steps, processor, {
    connection,
    prefix: bullPrefix(prefix),
    concurrency: 20,
    lockDuration: timing.lockDurationMs,
    stalledInterval: timing.stalledIntervalMs,
    maxStalledCount: timing.maxStalledCount,
    drainDelay: 1,
    ...extra,
  });
}
