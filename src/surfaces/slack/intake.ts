import type { Server } from 'node:http';

/**
 * Acks before answers. Slack gives a request 3 seconds to be acknowledged; an answer may take longer, and a crowd
 * asking at once (everyone types `/argo status` when the alert fires) would otherwise have the later requests'
 * signature checks and 200s wait behind the earlier requests' answers on the one event loop. Answer work waits here
 * until no request is between arriving and its response being written, so intake always goes first.
 */
export class AckFirst {
  private open = 0;
  private waiting: (() => void)[] = [];

  /**
   * @param maxWaitMs Longest an answer waits for intake to go quiet: a steady stream of requests must not starve
   *   the answers.
   */
  constructor(private readonly maxWaitMs = 1000) {}

  /** Counts the requests of Bolt's HTTP receiver from the moment node has read their headers until they are answered. */
  watch(server: Server): void {
    server.prependListener('request', (_req, res) => {
      this.open++;
      res.once('close', () => {
        this.open--;
        if (this.open === 0) this.release();
      });
    });
  }

  /** Requests read but not yet answered. */
  get pending(): number {
    return this.open;
  }

  /**
   * Resolves once no request waits for its ack (at once when none does, as in Socket Mode where Slack's requests come
   * over one WebSocket), and always on a later turn of the event loop, after the I/O already there is read.
   */
  async quiet(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (this.open === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, this.maxWaitMs);
      timer.unref();
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.waiting.push(done);
    });
  }

  private release(): void {
    const waiting = this.waiting;
    this.waiting = [];
    // One turn later: acks of requests read in the same turn go out first.
    if (waiting.length) setImmediate(() => waiting.forEach((w) => w()));
  }
}
