import type { RedisClient } from './redis.js';

export interface SharedSweepOptions {
  redis: RedisClient;
  /** The Redis key that says which process has this interval's sweep. */
  lockKey: string;
  everyMs: number;
  /** One pass; what it returns is not kept. */
  sweep: () => Promise<unknown>;
  /** Logged when a pass fails: `${name} failed`. */
  name: string;
  logger?: { warn(o: unknown, m?: string): void };
}

/**
 * A periodic pass that any number of processes may run, done by one of them per interval: each tick takes the
 * interval with SET NX (a little shorter than the interval, so the next tick is free), and a pass still running
 * when the next tick comes is not started twice in the same process.
 */
export class SharedSweep {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;

  constructor(private readonly opts: SharedSweepOptions) {}

  start(): void {
    this.timer = setInterval(() => this.trigger(), this.opts.everyMs);
    this.timer.unref?.();
    this.trigger();
  }

  trigger(): void {
    if (this.running) return;
    this.running = this.sweepIfOurs()
      .catch((err) => this.opts.logger?.warn({ err: (err as Error).message }, `${this.opts.name} failed`))
      .finally(() => {
        this.running = undefined;
      });
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  private async sweepIfOurs(): Promise<void> {
    const ttl = Math.max(100, this.opts.everyMs - 100);
    if ((await this.opts.redis.set(this.opts.lockKey, String(process.pid), 'PX', ttl, 'NX')) !== 'OK') return;
    await this.opts.sweep();
  }
}
