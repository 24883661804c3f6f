/**
 * Retry timing for Argo CD calls and watch reconnects: jittered exponential backoff, and
 * Retry-After (seconds or an HTTP date) on 429/503.
 */
export interface RetryPolicy {
  /** Extra attempts after the first. @defaultValue 3 */
  retries: number;
  /** First backoff. @defaultValue 250 */
  baseMs: number;
  /** Largest backoff. @defaultValue 4000 */
  maxMs: number;
  /** Largest wait a server's Retry-After can impose; a longer one is cut to this. @defaultValue 30000 */
  retryAfterCapMs?: number;
}

export const DEFAULT_RETRY: Required<RetryPolicy> = { retries: 3, baseMs: 250, maxMs: 4000, retryAfterCapMs: 30_000 };

/**
 * "Equal jitter": half the exponential step is fixed and half random, so concurrent clients
 * spread out but no retry fires immediately. `attempt` is 0 for the first retry.
 */
export function backoffDelay(
  attempt: number,
  policy: Pick<RetryPolicy, 'baseMs' | 'maxMs'>,
  random: () => number = Math.random,
): number {
  const step = Math.min(policy.maxMs, policy.baseMs * 2 ** attempt);
  return Math.round(step / 2 + random() * (step / 2));
}

/** Retry-After as milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now: number = Date.now()): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) return undefined;
  const trimmed = text.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/** The wait before the next attempt: the server's Retry-After (capped) if it gave one, else backoff. */
export function retryDelay(attempt: number, policy: RetryPolicy, retryAfterMs?: number, random?: () => number): number {
  if (retryAfterMs !== undefined)
    return Math.min(retryAfterMs, policy.retryAfterCapMs ?? DEFAULT_RETRY.retryAfterCapMs);
  return backoffDelay(attempt, policy, random);
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
