import { Queue, Worker } from 'bullmq';
import type { Logger } from 'pino';
import type { RollcallConfig } from '../config/schema.js';
import type { RunService } from '../runbooks/engine.js';
import { withAuditOrigin } from '../audit/audit-log.js';
import { QUEUES } from './queues.js';
import { bullPrefix, closeRedis, createRedis } from './redis.js';

/** Who the audit log and run messages name for a run rollcall started from a schedule. */
export const SCHEDULER_USER = 'rollcall-scheduler';

const BACKUP_PREFIX = 'backup-sealed-secrets-keys:';

export interface ScheduledJob {
  runbook: string;
  params: Record<string, string>;
}

export interface Schedules {
  /** The BullMQ job schedulers now in Redis (id, pattern, tz, next run). */
  list(): Promise<{ id: string; pattern?: string; tz?: string; next?: number }[]>;
  stop(): Promise<void>;
}

/**
 * The per-cluster key backups of `sealedSecrets.schedules`, as BullMQ job schedulers: one per
 * cluster, upserted at start (a changed cron replaces the old one) and removed when the config no
 * longer lists the cluster. Any number of workers may run this; BullMQ makes each tick one job, and
 * that job starts and confirms an ordinary backup run, so it is previewed, audited and shown in
 * `runs` like any other.
 */
export async function startSchedules(opts: { config: RollcallConfig; runs: RunService; redisUrl: string; prefix: string; logger?: Logger }): Promise<Schedules> {
  const queueConnection = createRedis(opts.redisUrl);
  const workerConnection = createRedis(opts.redisUrl);
  const queue = new Queue<ScheduledJob>(QUEUES.schedules, { connection: queueConnection, prefix: bullPrefix(opts.prefix) });
  const wanted = new Map(opts.config.sealedSecrets.schedules.map((s) => [`${BACKUP_PREFIX}${s.cluster}`, s]));
  for (const [id, s] of wanted) {
    await queue.upsertJobScheduler(
      id,
      { pattern: s.cron, tz: s.tz },
      { name: 'backup-sealed-secrets-keys', data: { runbook: 'backup-sealed-secrets-keys', params: { cluster: s.cluster } }, opts: { removeOnComplete: { count: 100 }, removeOnFail: { count: 100 } } },
    );
  }
  for (const existing of await queue.getJobSchedulers()) {
    const id = existing.key;
    if (id.startsWith(BACKUP_PREFIX) && !wanted.has(id)) await queue.removeJobScheduler(id);
  }
  const channel = opts.config.alerts.channel;
  const worker = new Worker<ScheduledJob>(
    QUEUES.schedules,
    (job) =>
      withAuditOrigin({ surface: 'schedule' }, async () => {
        const { runbook, params } = job.data;
        const run = await opts.runs.start({ runbook, params, user: SCHEDULER_USER, surface: channel ? 'slack' : 'terminal', channel, system: true });
        const confirmed = await opts.runs.confirm(run.id, SCHEDULER_USER);
        opts.logger?.info({ runbook, params, runId: run.id, status: confirmed.status }, 'scheduled run started');
        return { runId: run.id };
      }),
    { connection: workerConnection, prefix: bullPrefix(opts.prefix), concurrency: 1 },
  );
  worker.on('failed', (job, err) => opts.logger?.warn({ runbook: job?.data.runbook, params: job?.data.params, err: err.message }, 'scheduled run could not start'));
  worker.on('error', (err) => opts.logger?.warn({ err: err.message }, 'schedules worker error'));
  return {
    async list() {
      return (await queue.getJobSchedulers()).map((s) => ({ id: s.key, pattern: s.pattern ?? undefined, tz: s.tz ?? undefined, next: s.next ?? undefined }));
    },
    async stop() {
      await worker.close();
      await queue.close();
      await closeRedis(workerConnection);
      await closeRedis(queueConnection);
    },
  };
}
