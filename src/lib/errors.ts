/** Typed failures of the small helpers in `lib/`. */

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
