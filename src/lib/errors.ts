/** Typed failures of the small helpers in `lib/`. */

/** A wait that took longer than it may. */
export class DeadlineError extends Error {
  override name = 'DeadlineError';
}
