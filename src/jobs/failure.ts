/**
 * The failure policy every job shares. BullMQ retries a job that throws, with the backoff of its options, until
 * its attempts are used up; an `UnrecoverableError` ends it at once; a `RateLimitError` thrown after
 * `queue.rateLimit(ms)` puts it back to waiting without using an attempt, and pauses the whole queue (the limit
 * is the upstream's or Google's, for every job alike). A failure is logged once: when the job ends (its last
 * attempt, or a permanent failure), or when it stops what it works on.
 */
import { type Job, type Queue, RateLimitError, UnrecoverableError } from 'bullmq';

/** How many times one job may be put back by rate limits before they count as failures. */
export const MAX_RATE_LIMIT_ROUNDS = 20;
/** The longest a queue pauses for one rate limit, whatever `Retry-After` asks. */
export const MAX_RATE_LIMIT_PAUSE_MS = 5 * 60_000;

/** A thrown value as an Error (anything else thrown becomes one with its text). */
export function asError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}

/** Whether this run is the job's last: no retry follows if it fails (`attemptsMade` counts the runs before it). */
export function isLastAttempt(job: Pick<Job, 'attemptsMade' | 'opts'>): boolean {
  return job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
}

/** What a processor throws for a failure: the error itself (retried with backoff), or one that ends the job. */
export function failWith(error: unknown, permanent: boolean): Error {
  return permanent ? new UnrecoverableError(asError(error).message) : asError(error);
}

/** Whether a job put back by rate limits `rounds` times may wait once more; past the bound it fails as any other. */
export function mayWaitAgain(rounds: number): boolean {
  return rounds <= MAX_RATE_LIMIT_ROUNDS;
}

/**
 * Pauses `queue` for `pauseMs` (at most {@link MAX_RATE_LIMIT_PAUSE_MS}) and answers what the processor throws,
 * so that the job goes back to waiting without using an attempt.
 */
export async function waitOutRateLimit(queue: Pick<Queue, 'rateLimit'>, pauseMs: number): Promise<RateLimitError> {
  await pauseQueue(queue, pauseMs);
  return new RateLimitError();
}

/** Pauses `queue` for `pauseMs` (at most {@link MAX_RATE_LIMIT_PAUSE_MS}): its workers take no job meanwhile. */
export async function pauseQueue(queue: Pick<Queue, 'rateLimit'>, pauseMs: number): Promise<void> {
  await queue.rateLimit(Math.min(pauseMs, MAX_RATE_LIMIT_PAUSE_MS));
}

/**
 * How long to pause for a rate limit: the `Retry-After` when one was sent, else `baseMs` doubling per round
 * spent waiting, ±50% jitter (workers that hit the limit together do not come back together); at most 5 min.
 */
export function rateLimitPause(
  retryAfterMs: number | undefined,
  rounds: number,
  baseMs: number,
  random: () => number = Math.random,
): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, MAX_RATE_LIMIT_PAUSE_MS);
  const exponential = Math.min(baseMs * 2 ** Math.max(0, rounds - 1), MAX_RATE_LIMIT_PAUSE_MS);
  return Math.round(Math.min(exponential * (0.5 + random()), MAX_RATE_LIMIT_PAUSE_MS));
}
