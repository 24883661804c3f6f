import { describe, expect, it, vi } from 'vitest';
import { LiveReadCut, withAnswerBudget, withinLiveBudget } from '../../src/commands/live.js';

describe('an answer budget cut', () => {
  it('starts no later read, even where the clock has not yet reached the deadline when the cut fires', async () => {
    // Node runs a timer by the event loop's time, which can lag the monotonic clock by the turn's length: the
    // cut can fire while performance.now() still shows budget left. Held still here, the clock shows it the whole time.
    const t0 = performance.now();
    const clock = vi.spyOn(performance, 'now').mockReturnValue(t0);
    try {
      await withAnswerBudget(50, async () => {
        await expect(withinLiveBudget('east', () => new Promise(() => {}))).rejects.toBeInstanceOf(LiveReadCut);
        const next = vi.fn(async () => 'read');
        await expect(withinLiveBudget('east', next)).rejects.toBeInstanceOf(LiveReadCut);
        expect(next).not.toHaveBeenCalled();
      });
      // Another answer has a budget of its own.
      await withAnswerBudget(50, async () => expect(await withinLiveBudget('east', async () => 'read')).toBe('read'));
    } finally {
      clock.mockRestore();
    }
  });
});
