/** Typed failures of the small helpers in `lib/`. */
import { retryAfterSeconds } from './retry-after.ts';

/** A wait that took longer than it may. */
export class DeadlineError extends Error {
  override name = 'DeadlineError';
}

/**
 * Redis did not answer (refused, timed out, wrong password). The message names the address without its
 * credentials and what to check; a command prints it as one line, with no stack trace.
 */
export class RedisUnreachableError extends Error {
  override name = 'RedisUnreachableError';
}

/**
 * Redis cannot take the command now: the connection is down or reconnecting, the server is loading its data
 * or does not answer in time (paused, overloaded). Transient: the same request later may well succeed.
 */
export class RedisUnavailableError extends Error {
  override name = 'RedisUnavailableError';
}

/**
 * Redis refused a write because `maxmemory` is reached under `noeviction`: nothing stored was lost, and
 * writes work again once memory is freed or the limit raised (no restart needed).
 */
export class RedisFullError extends Error {
  override name = 'RedisFullError';
}

/** No place was free and none came free in time (or the line was full). */
export class NoSlotError extends Error {
  override name = 'NoSlotError';
  /** Callers holding a place when this one was refused. */
  readonly busy: number;

  constructor(busy: number, why: 'line full' | 'gave up') {
    super(`all ${busy} places are taken (${why})`);
    this.busy = busy;
  }
}

/** A request refused by a rate limit; `retryAfterMs` is when a token will be there again. */
export class RateLimitedError extends Error {
  override name = 'RateLimitedError';
  readonly retryAfterMs: number;

  constructor(retryAfterMs: number, message = `rate limit reached; try again in ${retryAfterSeconds(retryAfterMs)} s`) {
    super(message);
    this.retryAfterMs = retryAfterMs;
  }
}

/** A packed value of a format version this release does not know (written by a newer one, see packed-json.ts). */
export class PackedFormatError extends Error {
  override name = 'PackedFormatError';
}
