import { Queue, Worker } from 'bullmq';
import type { Logger } from 'pino';
import type { CommandScheduleConfig, RollcallConfig } from '../../infra/config/schema.js';
import { dispatch } from '../../commands/index.js';
import type { CommandContext, Services } from '../../commands/registry.js';
import { runOf } from '../../commands/replies.js';
import { SCHEDULER } from '../../core/access.js';
import { QUEUES } from '../../infra/queues.js';
import { bullPrefix, closeRedis, createRedis } from '../../infra/redis.js';

/**
 * A chat command on a cron (config `schedules`): each tick dispatches `command` on the `schedule` surface,
 * as `as` when given (ordinary permission checks) or else as the scheduler, and posts the answer to
 * `channel` through the Notifier.
 */
export type Schedule = CommandScheduleConfig;

/** The job each tick makes: what to run and where to say it. */
interface ScheduleTick {
  id: string;
  command: string;
  channel?: string;
  as?: string;
}

export interface Schedules {
  /**
   * Makes the schedules in Redis exactly `schedules`: each one upserted (a changed cron or command replaces
   * the old one), every other schedule removed.
   */
  upsertSchedules(schedules: readonly Schedule[]): Promise<void>;
  /** The BullMQ job schedulers now in Redis (id, pattern, tz, next run). */
  list(): Promise<{ id: string; pattern?: string; tz?: string; next?: number }[]>;
  stop(): Promise<void>;
}

const BACKUP_RUNBOOK = 'backup-sealed-secrets-keys';

/** The key backups of `sealedSecrets.schedules`: one schedule per cluster, running the backup runbook. */
export function backupSchedules(config: Pick<RollcallConfig, 'sealedSecrets' | 'alerts'>): Schedule[] {
  return config.sealedSecrets.schedules.map((s) => ({
    id: `${BACKUP_RUNBOOK}:${s.cluster}`,
    cron: s.cron,
    tz: s.tz,
    command: `run ${BACKUP_RUNBOOK} cluster=${s.cluster}`,
    ...(config.alerts.channel ? { channel: config.alerts.channel } : {}),
  }));
}

/** Every schedule the config asks for: `schedules` and the key backups. */
export function configuredSchedules(config: RollcallConfig): Schedule[] {
  return [...config.schedules, ...backupSchedules(config)];
}

/**
 * Runs schedules as BullMQ job schedulers. Any number of processes may run this: BullMQ makes one job of
 * each tick (its id is the scheduler's and the tick's time), so a tick runs once however many workers
 * there are. A command that starts a run answers with the run; the engine posts and updates that run's
 * live message in `channel`, so the tick does not post it a second time.
 */
export async function startSchedules(opts: {
  services: Services;
  redisUrl: string;
  prefix: string;
  logger?: Logger;
}): Promise<Schedules> {
  const queueConnection = createRedis(opts.redisUrl);
  const workerConnection = createRedis(opts.redisUrl);
  const queue = new Queue<ScheduleTick>(QUEUES.schedules, {
    connection: queueConnection,
    prefix: bullPrefix(opts.prefix),
  });
  const worker = new Worker<ScheduleTick>(
    QUEUES.schedules,
    async (job) => {
      const { id, command, channel, as } = job.data;
      const ctx: CommandContext = {
        services: opts.services,
        user: as ?? SCHEDULER,
        surface: 'schedule',
        channel,
        assumeYes: true,
      };
      const reply = await dispatch(command, ctx);
      if (!reply.ok) opts.logger?.warn({ schedule: id, command, error: reply.error }, 'scheduled command failed');
      const startedRun = runOf(reply) !== undefined;
      if (channel && opts.services.notifier && !(startedRun && reply.ok))
        await opts.services.notifier.post({ channel }, reply);
      return { ok: reply.ok, ...(reply.error ? { error: reply.error.code } : {}) };
    },
    { connection: workerConnection, prefix: bullPrefix(opts.prefix), concurrency: 1 },
  );
  worker.on('failed', (job, err) =>
    opts.logger?.warn(
      { schedule: job?.data.id, command: job?.data.command, err: err.message },
      'scheduled command could not run',
    ),
  );
  worker.on('error', (err) => opts.logger?.warn({ err: err.message }, 'schedules worker error'));
  return {
    async upsertSchedules(schedules) {
      const wanted = new Set(schedules.map((s) => s.id));
      for (const s of schedules) {
        await queue.upsertJobScheduler(
          s.id,
          { pattern: s.cron, tz: s.tz },
          {
            name: s.id,
            data: {
              id: s.id,
              command: s.command,
              ...(s.channel ? { channel: s.channel } : {}),
              ...(s.as ? { as: s.as } : {}),
            },
            opts: { removeOnComplete: { count: 100 }, removeOnFail: { count: 100 } },
          },
        );
      }
      for (const existing of await queue.getJobSchedulers())
        if (!wanted.has(existing.key)) await queue.removeJobScheduler(existing.key);
    },
    async list() {
      return (await queue.getJobSchedulers()).map((s) => ({
        id: s.key,
        pattern: s.pattern ?? undefined,
        tz: s.tz ?? undefined,
        next: s.next ?? undefined,
      }));
    },
    async stop() {
      await worker.close();
      await queue.close();
      await closeRedis(workerConnection);
      await closeRedis(queueConnection);
    },
  };
}
