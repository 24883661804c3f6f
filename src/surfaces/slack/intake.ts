import type { Server } from 'node:http';

/**
 * Acks before answers. Slack gives a request 3 seconds to be acknowledged; an answer may take longer, and a crowd
 * asking at once (everyone types `/argo status` when the alert fires) would otherwise have the later requests'
 * signature checks and 200s wait behind the earlier requests' answers on the one event loop. Answer work waits here
 * until no request is between arriving and its response being written, so intake always goes first. Where answers
 * start (`allQuiet`: a computation that may hold the event loop for tens of milliseconds) it also waits for the crowd
 * to settle, for a while.
 *
 * Answer work also goes a slice at a time: callers of `quiet()` go one after another, and once a turn of the event
 * loop has run answer work for `sliceMs` the next caller waits for a turn of its own, with the I/O that arrived
 * meanwhile read in between. Fifty answers rendered and posted in one turn would hold a request that arrives during
 * them for as long as all fifty take; so it waits for one slice (and the step that ends it) at most, while steps
 * too small to matter share a turn instead of paying for one each.
 */
export class AckFirst {
  private open = 0;
  private waiting: (() => void)[] = [];
  /** When the last request arrived (performance.now()). */
  private lastArrival = -Infinity;
  /** The turn of the last caller of quiet(): the next one starts after it. */
  private queue: Promise<void> = Promise.resolve();
  /** When the turn now running answer work began it (performance.now()). */
  private sliceStarted = -Infinity;
  /** What the callers of allQuiet() wait for together, while they wait. */
  private gate: Promise<void> | undefined;

  /**
   * @param maxWaitMs Longest an answer waits for intake to go quiet: a steady stream of requests must not starve
   *   the answers.
   * @param settleMs How long after the last request arrived intake counts as settled where answers start: a crowd's
   *   requests come in waves a few milliseconds apart, and a computation started between two waves holds the second.
   * @param sliceMs How long one turn of the event loop may run answer steps one after another; 0: one step a turn.
   * @param settleForMs How long answers wait for intake to settle before they start anyway (while no request is
   *   open): people who read the same alert at their own pace ask a few milliseconds apart for a second or more, and
   *   a stream that never settles would hold every answer until its last request.
   */
  constructor(
    private readonly maxWaitMs = 1000,
    private readonly settleMs = 0,
    private readonly sliceMs = 0,
    private readonly settleForMs = maxWaitMs,
  ) {}

  /** Counts the requests of Bolt's HTTP receiver from the moment node has read their headers until they are answered. */
  watch(server: Server): void {
    server.prependListener('request', (_req, res) => {
      this.open++;
      this.lastArrival = performance.now();
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
   * over one WebSocket), after the previous caller's, and on a later turn of the event loop than that one's unless
   * its turn has run answer work for less than the slice, after the I/O already there is read. For steps no longer
   * than a slice: a request arriving meanwhile waits for one at most.
   */
  quiet(): Promise<void> {
    // The longest wait runs from the call: answers queued behind others must not each wait it anew.
    const asked = performance.now();
    const turn = this.queue.then(() => this.quietOnce(asked + this.maxWaitMs, asked));
    this.queue = turn;
    return turn;
  }

  /**
   * Resolves, for all its callers in one turn, once intake is quiet and every step queued by quiet() has had its
   * turn: where answers start. The askers of a crowd then run their commands together, so a shared answer is
   * computed once for all of them, not again for those whose turn came after the fleet changed.
   */
  allQuiet(): Promise<void> {
    this.gate ??= this.openGate().finally(() => (this.gate = undefined));
    return this.gate;
  }

  private async openGate(): Promise<void> {
    const asked = performance.now();
    const deadline = asked + this.maxWaitMs;
    const settleUntil = asked + this.settleForMs;
    for (;;) {
      const tail = this.queue;
      await tail;
      await this.quietOnce(deadline, settleUntil);
      // Steps queued meanwhile (requests that arrived) go first, unless answers have waited long enough.
      if (tail === this.queue || performance.now() >= Math.min(deadline, settleUntil)) return;
    }
  }

  /** Waits until no request is open and, before `settleUntil`, none arrived within the settle time. */
  private async quietOnce(deadline: number, settleUntil: number): Promise<void> {
    // Within the slice of the turn that ran the previous step, and intake still quiet: this step goes on in it.
    if (this.settled(settleUntil) && performance.now() - this.sliceStarted < this.sliceMs) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    for (;;) {
      const now = performance.now();
      if (this.settled(settleUntil)) {
        this.sliceStarted = now;
        return;
      }
      const left = deadline - now;
      if (left <= 0) return;
      const settling = Math.min(this.settleMs - (now - this.lastArrival), settleUntil - now);
      await this.nextChange(this.open === 0 ? Math.min(left, settling) : left);
    }
  }

  /** No request waits for its ack and, before `settleUntil`, none arrived within the settle time. */
  private settled(settleUntil: number): boolean {
    const now = performance.now();
    return this.open === 0 && (now >= settleUntil || now - this.lastArrival >= this.settleMs);
  }

  /** Resolves when the last open request is answered, or after `ms`. */
  private nextChange(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, Math.max(1, ms));
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
