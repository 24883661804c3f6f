import { describe, expect, it } from 'vitest';
import { ManualClock, ScaledClock } from '../../src/sim/clock.js';

describe('the simulator clock', () => {
  it('at --speed reads the time of day and shortens durations: what it stamps never runs ahead of the bot', () => {
    let real = Date.parse('2026-12-04T18:00:00Z');
    const clock = new ScaledClock(10, false, real, () => real);
    real += 8 * 60_000;
    // Eight real minutes later it is eight minutes later, not eighty.
    expect(clock.now().toISOString()).toBe('2026-12-04T18:08:00.000Z');
    // A 5 s sync is due half a second from now; advancing by 5 simulated seconds takes half a second.
    expect(clock.span(5000)).toBe(500);
    clock.advance(5000);
    expect(clock.now().toISOString()).toBe('2026-12-04T18:08:00.500Z');
  });

  it('stands still when frozen, and a manual clock moves only by what it is told, durations as given', () => {
    let real = Date.parse('2026-12-04T18:00:00Z');
    const frozen = new ScaledClock(10, true, real, () => real);
    real += 60_000;
    expect(frozen.now().toISOString()).toBe('2026-12-04T18:00:00.000Z');
    const manual = new ManualClock(Date.parse('2026-12-04T18:00:00Z'));
    expect(manual.span(5000)).toBe(5000);
    manual.advance(5000);
    expect(manual.now().toISOString()).toBe('2026-12-04T18:00:05.000Z');
  });
});
