/** Typed failures of feed serving; the HTTP error catalog (http/errors.ts) gives each its status and headers. */

/**
 * A feed that cannot be answered yet but soon can: its timetable is being fetched or prepared, or too many
 * fetches or renders are under way. The client is asked to come back in `retryAfterSeconds` (503).
 */
export class FeedUnavailableError extends Error {
  override name = 'FeedUnavailableError';
  readonly retryAfterSeconds: number;

  constructor(message: string, retryAfterSeconds: number) {
    super(message);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** The university does not know the timetable a feed was asked for; `message` names it and quotes the university (404). */
export class UnknownTimetableError extends Error {
  override name = 'UnknownTimetableError';
}

/** A personal feed that cannot be fetched until its subscription gets a new university credential (409). */
export class CredentialNeededError extends Error {
  override name = 'CredentialNeededError';
}

/**
 * Subscriber options a timetable cannot honour (a subgroup or kind of class it never had), or that would make
 * a variant larger than its cap; `message` says which (400).
 */
export class VariantRefusedError extends Error {
  override name = 'VariantRefusedError';
}
