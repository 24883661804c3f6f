import { Queue, Worker } from 'bullmq';
import type { Logger } from 'pino';
import type { Services } from '../../commands/registry.js';
import type { Notifier } from '../../core/notifier.js';
import { composeDigest, recordPostedDigest } from '../../domain/alerts/digest.js';
import { digestReply } from '../../commands/digest.js';
import type { DigestConfig } from '../../infra/config/schema.js';
import { bullPrefix, closeRedis, createRedis, keyBase } from '../../infra/redis.js';

export const DIGEST_QUEUE = 'digests';
const SCHEDULER_PREFIX = 'digest:';

export interface DigestJob {
  name: string;
}

export interface DigestSchedules {
  /** The digest job schedulers now in Redis. */
  list(): Promise<{ id: string; pattern?: string; tz?: string; next?: number }[]>;
  /** Makes the schedulers in Redis match these digests: adds, changes and removes. */
  sync(digests: readonly DigestConfig[]): Promise<void>;
  stop(): Promise<void>;
}

/** A tick's claim lives this long: far longer than any redelivery of the tick's job. */
const TICK_CLAIM_SECONDS = 7 * 86_400;

/**
 * `digests:` as BullMQ job schedulers, one per digest (id `digest:<name>`), upserted at start so a
 * changed cron or time zone replaces the old one, and removed when the config no longer lists it.
 * BullMQ makes one job of each tick however many workers run; the tick is also claimed in Redis by the
 * job's id before posting, so a job redelivered after a worker died mid-post does not post twice.
 */
export async function startDigestSchedules(opts: {
  services: Services;
  notifier: () => Notifier | undefined;
  redisUrl: string;
  prefix: string;
  logger?: Logger;
  now?: () => Date;
}): Promise<DigestSchedules> {
  const queueConnection = createRedis(opts.redisUrl);
  const workerConnection = createRedis(opts.redisUrl);
  const claims = createRedis(opts.redisUrl);
  const queue = new Queue<DigestJob>(DIGEST_QUEUE, { connection: queueConnection, prefix: bullPrefix(opts.prefix) });
  const base = keyBase(opts.prefix);
  const { services } = opts;

  const schedules: DigestSchedules = {
    async list() {
      return (await queue.getJobSchedulers())
        .filter((s) => s.key.startsWith(SCHEDULER_PREFIX))
        .map((s) => ({ id: s.key, pattern: s.pattern ?? undefined, tz: s.tz ?? undefined, next: s.next ?? undefined }));
    },
    async sync(digests) {
      const wanted = new Map(digests.map((d) => [`${SCHEDULER_PREFIX}${d.name}`, d]));
      for (const [id, d] of wanted) {
        await queue.upsertJobScheduler(
          id,
          { pattern: d.cron, tz: d.tz },
          {
            name: 'digest',
            data: { name: d.name },
            opts: { removeOnComplete: { count: 50 }, removeOnFail: { count: 50 } },
          },
        );
      }
      for (const existing of await queue.getJobSchedulers()) {
        if (existing.key.startsWith(SCHEDULER_PREFIX) && !wanted.has(existing.key))
          await queue.removeJobScheduler(existing.key);
      }
    },
    async stop() {
      await worker.close();
      await queue.close();
      await closeRedis(workerConnection);
      await closeRedis(queueConnection);
      await closeRedis(claims);
    },
  };

  const worker = new Worker<DigestJob>(
    DIGEST_QUEUE,
    async (job) => {
      const digest = services.config.digests.find((d) => d.name === job.data.name);
      // Removed from the config since the tick was queued.
      if (!digest) return { skipped: 'not in config' };
      const notifier = opts.notifier();
      if (!notifier)
        throw new Error(
          'no Slack notifier in this process: the digest cannot be posted (is the `slack` section configured?)',
        );
      const claimed = await claims.set(
        `${base}digest:${digest.name}:tick:${job.id}`,
        '1',
        'EX',
        TICK_CLAIM_SECONDS,
        'NX',
      );
      if (claimed !== 'OK') return { skipped: 'tick already posted' };
      const now = opts.now?.() ?? new Date();
      const d = await composeDigest(services, digest, now);
      let ref;
      try {
        ref = await notifier.post({ channel: digest.channel }, digestReply(d, `digest ${digest.name}`));
      } catch (error) {
        // Not posted: the tick is free again for a retry.
        await claims.del(`${base}digest:${digest.name}:tick:${job.id}`);
        throw error;
      }
      await recordPostedDigest(services, digest, d);
      opts.logger?.info(
        { digest: digest.name, channel: digest.channel, attention: d.attention.length },
        'digest posted',
      );
      return { channel: ref.channel, ts: ref.ts };
    },
    { connection: workerConnection, prefix: bullPrefix(opts.prefix), concurrency: 1 },
  );
  worker.on('failed', (job, err) =>
    opts.logger?.warn({ digest: job?.data.name, err: err.message }, 'digest not posted'),
  );
  worker.on('error', (err) => opts.logger?.warn({ err: err.message }, 'digest worker error'));
  await schedules.sync(services.config.digests);
  return schedules;
}
