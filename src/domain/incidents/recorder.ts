import type { Logger } from 'pino';
import type { FleetEvent } from '../../fleet/events.js';
import type { FleetView } from '../../fleet/model.js';
import type { ChangeLog } from './change-log.js';
import { backfillChanges, changesOf, type ChangeRecord } from './changes.js';

export interface RecorderStats {
  /** Records this process appended (first to offer them). */
  recorded: number;
  /** Records another process (or an earlier backfill) had already appended. */
  duplicates: number;
  /** Fleet events seen. */
  events: number;
  /** Records waiting to be written. */
  pending: number;
  failures: number;
}

export interface ChangeRecorderOptions {
  logger?: Logger;
  /** Records are written in batches at most this far apart. @defaultValue 50 */
  flushMs?: number;
  /** A batch is written at once when it reaches this size. @defaultValue 500 */
  batchSize?: number;
  /** XTRIM of the log for quiet periods (writes trim as they go). @defaultValue 600000 */
  trimEveryMs?: number;
  now?: () => number;
}

/**
 * Writes every change the fleet view sees into the change log, always on in every worker.
 * Any number of processes run one; the log's per-change claim keeps each record once. On start,
 * and after an instance comes back, it backfills what Argo CD still knows (history, the last
 * operation, when health last changed), which the claim deduplicates against live records.
 */
export class ChangeRecorder {
  private readonly stats_: Omit<RecorderStats, 'pending'> = { recorded: 0, duplicates: 0, events: 0, failures: 0 };
  private buffer: ChangeRecord[] = [];
  private timer?: NodeJS.Timeout;
  private trimTimer?: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();
  private unsubscribe?: () => void;
  private readonly opts: Required<Omit<ChangeRecorderOptions, 'logger'>>;
  private readonly log?: Logger;

  constructor(
    private readonly fleet: FleetView,
    private readonly changeLog: ChangeLog,
    opts: ChangeRecorderOptions = {},
  ) {
    this.log = opts.logger?.child({ component: 'change-recorder' });
    this.opts = {
      flushMs: opts.flushMs ?? 50,
      batchSize: opts.batchSize ?? 500,
      trimEveryMs: opts.trimEveryMs ?? 600_000,
      now: opts.now ?? Date.now,
    };
  }

  /** Resolves when the start-up backfill is written (`start()` does not wait for it). */
  backfilled: Promise<void> = Promise.resolve();

  /**
   * Subscribes at once, so no live change is missed, then backfills the whole fleet as loaded now
   * in the background (a 10,000-app fleet takes seconds; a worker need not wait for it).
   */
  async start(): Promise<void> {
    this.unsubscribe = this.fleet.subscribe((event) => this.onEvent(event));
    this.trimTimer = setInterval(
      () => void this.changeLog.trim(this.opts.now()).catch(() => undefined),
      this.opts.trimEveryMs,
    );
    this.trimTimer.unref();
    this.backfilled = this.backfill();
  }

  async stop(): Promise<void> {
    this.unsubscribe?.();
    if (this.trimTimer) clearInterval(this.trimTimer);
    await this.backfilled;
    await this.flush();
  }

  stats(): RecorderStats {
    return { ...this.stats_, pending: this.buffer.length };
  }

  /** Waits until everything seen so far is written. */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.buffer;
    this.buffer = [];
    const previous = this.flushing;
    this.flushing = previous.then(() => this.write(batch));
    await this.flushing;
  }

  /** A batch at a time, written before the next is built: memory stays flat however large the fleet. */
  private async backfill(instance?: string): Promise<void> {
    const since = this.opts.now() - this.changeLog.retentionMs;
    let batch: ChangeRecord[] = [];
    // A copy: the mirror fills a removed app's place with its last app, so the live list read across these awaits
    // would skip an app moved behind the loop.
    for (const app of [...this.fleet.apps()]) {
      if (instance && app.instance !== instance) continue;
      batch.push(...backfillChanges(app, since));
      if (batch.length >= this.opts.batchSize) {
        await this.write(batch);
        batch = [];
      }
    }
    await this.write(batch);
  }

  private onEvent(event: FleetEvent): void {
    this.stats_.events++;
    this.enqueue(changesOf(event));
    // A relist after the gap reports what changed meanwhile; what Argo CD kept of the gap itself comes from the backfill.
    if (event.kind === 'instance-connected') void this.backfill(event.instance);
  }

  private enqueue(records: ChangeRecord[]): void {
    if (!records.length) return;
    this.buffer.push(...records);
    if (this.buffer.length >= this.opts.batchSize) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.opts.flushMs);
      this.timer.unref();
    }
  }

  private async write(batch: ChangeRecord[]): Promise<void> {
    for (let i = 0; i < batch.length; i += this.opts.batchSize) {
      const part = batch.slice(i, i + this.opts.batchSize);
      try {
        const added = await this.changeLog.record(part, this.opts.now());
        this.stats_.recorded += added;
        this.stats_.duplicates += part.length - added;
      } catch (error) {
        this.stats_.failures += part.length;
        // The change is still in Argo CD's history; the next backfill (start, reconnect) offers it again.
        this.log?.warn({ err: (error as Error).message, records: part.length }, 'change log write failed');
      }
    }
  }
}
