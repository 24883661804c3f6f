/**
 * Simulated time. The controller reads only this clock, so a test can drive a sync or a whole
 * rollout deterministically (ManualClock) and `rollcall sim --speed 10` can run ten times faster
 * than the wall clock (ScaledClock).
 */
export interface SimClock {
  now(): Date;
  /** Moves simulated time forward by a simulated duration of `ms`. */
  advance(ms: number): void;
  /**
   * How long a simulated duration (a sync, a health settle, a retry backoff, a Rollout pause) lasts on
   * this clock, in its milliseconds: what the controller adds to `now()` for when something is due.
   */
  span(ms: number): number;
}

/** Time only moves when told to: for tests. */
export class ManualClock implements SimClock {
  private t: number;

  constructor(start: Date | number = Date.now()) {
    this.t = typeof start === 'number' ? start : start.getTime();
  }

  now(): Date {
    return new Date(this.t);
  }

  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`cannot move the simulated clock by ${ms} ms: it only moves forward`);
    this.t += ms;
  }

  span(ms: number): number {
    return ms;
  }
}

/**
 * Wall-clock time, with durations `speed` times shorter: at `--speed 10` a 5 s sync takes half a
 * second, and what the simulator stamps (startedAt, deployedAt, a health transition) is still the time
 * of day the bot beside it reads, so a change never shows up later than the command that caused it.
 * `frozen` stops it entirely: `--frozen` serves the fixture as-is, and timestamps written while frozen
 * are the start time.
 */
export class ScaledClock implements SimClock {
  private readonly realStart: number;
  private offset = 0;

  constructor(
    readonly speed = 1,
    readonly frozen = false,
    private readonly start: number = Date.now(),
    private readonly realNow: () => number = Date.now,
  ) {
    if (!(speed > 0)) throw new RangeError(`--speed must be a positive number, got ${speed}`);
    this.realStart = realNow();
  }

  now(): Date {
    const elapsed = this.frozen ? 0 : this.realNow() - this.realStart;
    return new Date(this.start + elapsed + this.offset);
  }

  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`cannot move the simulated clock by ${ms} ms: it only moves forward`);
    this.offset += this.span(ms);
  }

  span(ms: number): number {
    return ms / this.speed;
  }
}

/** Argo CD writes Kubernetes metav1.Time: RFC3339 with second precision. */
export function rfc3339(at: Date | number): string {
  const ms = typeof at === 'number' ? at : at.getTime();
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** Parses a Go duration ("5s", "1m30s", "500ms", "3m"). Returns undefined when it is not one. */
export function parseGoDuration(text: string | undefined): number | undefined {
  if (!text) return undefined;
  const re = /(\d+(?:\.\d+)?)(ms|h|m|s)/g;
  let total = 0;
  let consumed = 0;
  for (const m of text.matchAll(re)) {
    if (m.index !== consumed) return undefined;
    consumed += m[0].length;
    const n = Number(m[1]);
    total += m[2] === 'h' ? n * 3_600_000 : m[2] === 'm' ? n * 60_000 : m[2] === 's' ? n * 1000 : n;
  }
  return consumed === text.length && consumed > 0 ? total : undefined;
}
