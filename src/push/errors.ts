/** Failures of the push core that mean the same for every calendar kind. */

/** A push target was removed while it was being used (a push ran, or a reconnect was under way). */
export class TargetRemovedError extends Error {
  override name = 'TargetRemovedError';

  constructor(id: string) {
    super(`push target ${id} was removed meanwhile`);
  }
}

/** What a calendar server's failed answer tells: every field may be unknown. */
export interface CalendarErrorDetails {
  /** The HTTP status, if any. */
  status?: number | undefined;
  /** The server's own reason (Google's `errors[0].reason`, a DAV precondition, a status text). */
  reason?: string | undefined;
  /** What the server asked us to wait (`Retry-After`), when it said: a rate limit's, or a 503's. */
  retryAfterMs?: number | undefined;
  cause?: unknown;
}

/**
 * Base of every calendar kind's typed failures (`GoogleError`, `CalDavError`): the status, the server's reason
 * and the wait it asked for, the original error kept as ES2022 `cause`. Each kind's classes extend it and keep their own names.
 */
export class CalendarError extends Error {
  override name = 'CalendarError';
  readonly status: number | undefined;
  readonly reason: string | undefined;
  readonly retryAfterMs: number | undefined;

  constructor(message: string, details: CalendarErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.status = details.status;
    this.reason = details.reason;
    this.retryAfterMs = details.retryAfterMs;
  }
}
