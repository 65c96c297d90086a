/**
 * Rejects with {@link DeadlineError} when `promise` takes longer than `ms`. The promise itself runs on (Redis
 * commands and shutdown steps cannot be cancelled); the timer never keeps the process alive.
 */
import { DeadlineError } from './errors.ts';
export async function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(`no answer within ${ms} ms`)), ms);
    timer.unref();
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A time by which a piece of work must be over, started once and handed down through every stage of it (a
 * queue, a rate-limit wait, an HTTP exchange), so that the stages share one bound instead of each having its
 * own: `signal` aborts when it passes (undici and timers take it), `remainingMs()` says what is left.
 */
export interface Deadline {
  /** Aborts, with a `TimeoutError` DOMException, once the deadline has passed. */
  readonly signal: AbortSignal;
  /** The whole allowance, for messages. */
  readonly ms: number;
  /** Milliseconds left, never below 0. */
  remainingMs(): number;
}

/** A deadline `ms` from now (a monotonic clock; the timer never keeps the process alive). */
export function startDeadline(ms: number): Deadline {
  const endsAt = performance.now() + ms;
  return {
    signal: AbortSignal.timeout(ms),
    ms,
    remainingMs: () => Math.max(0, endsAt - performance.now()),
  };
}
