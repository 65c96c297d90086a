/**
 * Typed failures of the Google adapter. The adapter classifies every Google answer into one of these at its
 * boundary; callers branch on the class, never on message text. `cause` keeps the original error.
 */

import { CalendarError, type CalendarErrorDetails } from '../push/errors.ts';

/** What an adapter knows of a failed answer; every field may be unknown. */
export type GoogleErrorDetails = CalendarErrorDetails;

/** Base class: `status` is the HTTP status (if any), `reason` Google's `errors[0].reason` or OAuth `error`. */
export class GoogleError extends CalendarError {
  override name = 'GoogleError';
}

/** 429, or 403 `rateLimitExceeded` / `userRateLimitExceeded`: slow down, try again after `retryAfterMs`. */
export class GoogleRateLimitError extends GoogleError {
  override name = 'GoogleRateLimitError';
}

/** 403 `quotaExceeded` ("Calendar usage limits exceeded") and daily limits: retrying soon makes it worse. */
export class GoogleQuotaError extends GoogleError {
  override name = 'GoogleQuotaError';
}

/** The refresh token was revoked or expired (`invalid_grant`), or the grant lacks a scope: consent is needed again. */
export class GoogleConsentError extends GoogleError {
  override name = 'GoogleConsentError';
}

/** The calendar was deleted by its owner, or this account cannot reach it any more. */
export class CalendarGoneError extends GoogleError {
  override name = 'CalendarGoneError';
}

/** 409 on insert: the event id is taken (perhaps by a cancelled event). */
export class EventExistsError extends GoogleError {
  override name = 'EventExistsError';
}

/** 404 on an event that should be there. */
export class EventMissingError extends GoogleError {
  override name = 'EventMissingError';
}

/** 5xx, timeouts, resets: the same request may well succeed later. */
export class GoogleTransientError extends GoogleError {
  override name = 'GoogleTransientError';
}

/** Any other refusal (a 400 on our request, a 403 we do not know): retrying will not help. */
export class GooglePermanentError extends GoogleError {
  override name = 'GooglePermanentError';
}

/**
 * A permanent refusal of a write of one event (a 4xx of an event write that is not about the calendar, our
 * access to it, the grant or a limit; of the 403s only those known to concern one event): the event is the
 * problem, so the other events can still be written.
 */
export class EventRefusedError extends GooglePermanentError {
  override name = 'EventRefusedError';
}

/** Google push was asked for, but `GOOGLE_CLIENT_ID` / `GOOGLE_CLIENT_SECRET` are not configured. */
export class GoogleNotConfiguredError extends Error {
  override name = 'GoogleNotConfiguredError';

  constructor() {
    super('Google push is not configured: set GOOGLE_CLIENT_ID and GOOGLE_CLIENT_SECRET');
  }
}

/**
 * The OAuth callback cannot complete a consent: its `state` is malformed, unknown, expired or already used, it
 * carries no code, the person refused, or Google did not grant what push needs. The message says which.
 */
export class ConsentCallbackError extends Error {
  override name = 'ConsentCallbackError';
}
