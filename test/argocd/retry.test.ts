import { describe, expect, it } from 'vitest';
import { backoffDelay, parseRetryAfter, retryDelay } from '../../src/infra/argocd/retry.js';

describe('backoff', () => {
  const policy = { retries: 5, baseMs: 100, maxMs: 1000, retryAfterCapMs: 5000 };

  it('doubles per attempt, half fixed and half jitter, up to maxMs', () => {
    expect(backoffDelay(0, policy, () => 0)).toBe(50);
    expect(backoffDelay(0, policy, () => 1)).toBe(100);
    expect(backoffDelay(2, policy, () => 0)).toBe(200);
    expect(backoffDelay(2, policy, () => 0.5)).toBe(300);
    expect(backoffDelay(10, policy, () => 1)).toBe(1000);
    expect(backoffDelay(10, policy, () => 0)).toBe(500);
  });

  it('prefers the server’s Retry-After, capped', () => {
    expect(retryDelay(0, policy, 2000)).toBe(2000);
    expect(retryDelay(0, policy, 60_000)).toBe(5000);
    expect(retryDelay(1, policy, undefined, () => 0)).toBe(100);
  });
});

describe('Retry-After', () => {
  it('reads delta-seconds', () => {
    expect(parseRetryAfter('3')).toBe(3000);
    expect(parseRetryAfter(['1.5'])).toBe(1500);
  });

  it('reads an HTTP date relative to now', () => {
    const now = Date.parse('2026-12-02T18:00:00Z');
    expect(parseRetryAfter('Wed, 02 Dec 2026 18:00:07 GMT', now)).toBe(7000);
    expect(parseRetryAfter('Wed, 02 Dec 2026 17:59:00 GMT', now)).toBe(0);
  });

  it('ignores absent or unreadable values', () => {
    expect(parseRetryAfter(undefined)).toBeUndefined();
    expect(parseRetryAfter('soon')).toBeUndefined();
  });
});
