/**
 * Typed failures of the CalDAV adapter. The adapter classifies every answer into one of these at its boundary;
 * callers branch on the class, never on message text. `cause` keeps the original error; no message ever holds
 * the password or an Authorization header.
 */

import { CalendarError, type CalendarErrorDetails } from '../push/errors.ts';

/**
 * What the adapter knows of a failed answer; every field may be unknown. `reason` is the server's own words,
 * when short and safe to show (a DAV precondition element, a status text).
 */
export interface CalDavErrorDetails extends CalendarErrorDetails {
  /** The host that answered (rate limits and cool-downs are per host). */
  host?: string | undefined;
}

/** Base class. */
export class CalDavError extends CalendarError {
  override name = 'CalDavError';
  readonly host: string | undefined;

  constructor(message: string, details: CalDavErrorDetails = {}) {
    super(message, details);
    this.host = details.host;
  }
}

/** 401: the server refused the login or the app password; the target waits for a new one. */
export class CalDavAuthError extends CalDavError {
  override name = 'CalDavAuthError';
}

/** 403 on the calendar or the account (not on one resource): paused with the reason. */
export class CalDavForbiddenError extends CalDavError {
  override name = 'CalDavForbiddenError';
}

/** 507 on a write: the account's storage is full; paused with the reason. */
export class CalDavQuotaError extends CalDavError {
  override name = 'CalDavQuotaError';
}

/** 429, 503 and 504: slow down and try again, after `Retry-After` when the server sent one. */
export class CalDavRateLimitError extends CalDavError {
  override name = 'CalDavRateLimitError';
}

/** Other 5xx, timeouts, resets, DNS: the same request may well succeed later. */
export class CalDavTransientError extends CalDavError {
  override name = 'CalDavTransientError';
}

/**
 * A request the server did not finish within the total deadline (`CALDAV_REQUEST_TIMEOUT`): a server that
 * trickles its answer a byte at a time would otherwise hold a connect page or a worker's push slot for good.
 */
export class CalDavTimeoutError extends CalDavTransientError {
  override name = 'CalDavTimeoutError';
  readonly timeoutMs: number;

  constructor(message: string, details: CalDavErrorDetails & { timeoutMs: number }) {
    super(message, details);
    this.timeoutMs = details.timeoutMs;
  }
}

/**
 * A push job past its whole budget (`CALDAV_PUSH_JOB_TIMEOUT`), or a connect past twice the request deadline:
 * transient, so the push is tried again later (what it wrote is indexed and not written again).
 */
export class CalDavBudgetError extends CalDavTimeoutError {
  override name = 'CalDavBudgetError';
}

/** Any other refusal of our request (a 400, a redirect loop, an answer we cannot read): retrying will not help. */
export class CalDavPermanentError extends CalDavError {
  override name = 'CalDavPermanentError';
}

/** The calendar collection is gone (404/410) or is no calendar. */
export class CalDavCalendarGoneError extends CalDavError {
  override name = 'CalDavCalendarGoneError';
}

/** The server does not let us make a calendar (MKCALENDAR 403/405/501): the person picks or gives one. */
export class MkcalendarRefusedError extends CalDavError {
  override name = 'MkcalendarRefusedError';
}

/** 412 on `If-None-Match: *`: a resource of that name exists. */
export class ResourceExistsError extends CalDavError {
  override name = 'ResourceExistsError';
}

/** 412 on `If-Match`: the resource changed since we read its ETag (a person edited it). */
export class EtagMismatchError extends CalDavError {
  override name = 'EtagMismatchError';
}

/** 404 on an update of a resource that should be there. */
export class ResourceMissingError extends CalDavError {
  override name = 'ResourceMissingError';
}

/** 409 `no-uid-conflict`: another resource of the calendar holds the UID (one we did not write). */
export class UidConflictError extends CalDavError {
  override name = 'UidConflictError';
}

/**
 * A permanent refusal of one resource (400, 403, 415, 422 on a PUT; a 412 a GET shows was no edit, as Xandikos
 * answers for data it cannot read): the resource is the problem, the others can still be written.
 */
export class ResourceRefusedError extends CalDavPermanentError {
  override name = 'ResourceRefusedError';
}

/**
 * The server's address is one this service may not reach: a loopback, private, link-local or otherwise internal
 * address (a guard against being pointed at the service's own network), unless private hosts are allowed.
 */
export class CalDavAddressRefusedError extends CalDavPermanentError {
  override name = 'CalDavAddressRefusedError';
}

/**
 * What an answer went past: its size in bytes, the nesting of its XML, the number of its elements; or it holds a
 * document type or another markup declaration, which no CalDAV server sends.
 */
export type CalDavAnswerMeasure = 'bytes' | 'depth' | 'elements' | 'declaration';

/**
 * An answer no real CalDAV server sends: larger than the cap of its kind of request (a few hundred KB for
 * discovery, `CALDAV_MAX_RESPONSE_MB` for a listing), or XML nested or packed beyond reason. It is refused before
 * it is parsed: parsing it would stall the process and take hundreds of MB.
 */
export class CalDavResponseTooLargeError extends CalDavPermanentError {
  override name = 'CalDavResponseTooLargeError';
  readonly measure: CalDavAnswerMeasure;
  readonly limit: number;
  /** Bytes read when the answer was refused (the whole answer's when its shape was). */
  readonly bytesRead: number;

  constructor(
    message: string,
    details: CalDavErrorDetails & { measure: CalDavAnswerMeasure; limit: number; bytesRead: number },
  ) {
    super(message, details);
    this.measure = details.measure;
    this.limit = details.limit;
    this.bytesRead = details.bytesRead;
  }
}
