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
