/** Backoff arithmetic, `Retry-After` parsing and the default abortable sleep. */
import { setTimeout as delay } from 'node:timers/promises';

/** Retry settings with every default filled in. */
export interface RetryPolicy {
  /** Total tries, first one included. */
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** A longer `Retry-After` is not waited for: the rate-limit error is thrown at once. */
  maxRetryAfterMs: number;
}

/** Defaults of {@link RetryPolicy}. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  attempts: 4,
  baseDelayMs: 250,
  maxDelayMs: 10_000,
  maxRetryAfterMs: 30_000,
};

/**
 * Exponential backoff with full jitter: `random() * min(maxDelay, base * 2^retryIndex)`, where retryIndex is
 * 0 before the first retry.
 */
export function backoffDelay(policy: RetryPolicy, retryIndex: number, random: () => number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retryIndex);
  return Math.round(random() * ceiling);
}

/** Sleeps `ms`; rejects with the signal's reason as soon as the signal aborts. */
export async function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  signal?.throwIfAborted();
  try {
    await delay(ms, undefined, signal ? { signal } : undefined);
  } catch (err) {
    // timers/promises rejects with its own AbortError; callers expect the reason they aborted with.
    if (signal?.aborted) throw signal.reason;
    throw err;
  }
}
