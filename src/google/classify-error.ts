/**
 * Turns whatever the Google client libraries throw into the typed errors of `errors.ts`. Two shapes reach us,
 * both as gaxios `GaxiosError`s: Calendar API answers (`{"error":{"code","message","errors":[{"reason"}]}}`)
 * and token endpoint answers (`{"error":"invalid_grant","error_description":"…"}`); without a response it
 * is a network failure or our timeout. Messages name the operation and Google's own words, never a token.
 */
import { gaxios } from 'google-auth-library';
import { parseRetryAfter } from '../lib/retry-after.ts';
import {
  CalendarGoneError,
  EventExistsError,
  EventMissingError,
  EventRefusedError,
  GoogleConsentError,
  GoogleError,
  GooglePermanentError,
  GoogleQuotaError,
  GoogleRateLimitError,
  GoogleTransientError,
} from './errors.ts';

/** The requests the adapter makes, named like Google's API methods (`token.exchange`: the OAuth code exchange). */
export type GoogleOperation =
  | 'calendars.insert'
  | 'calendars.get'
  | 'calendars.delete'
  | 'calendars.patch'
  | 'events.insert'
  | 'events.get'
  | 'events.patch'
  | 'events.update'
  | 'events.delete'
  | 'events.list'
  | 'token.exchange';

/** What an answer said, in the parts classification needs. */
interface Failure {
  status: number | undefined;
  /** API: `errors[0].reason`; token endpoint: `error`; no response: the network error code. */
  reason: string | undefined;
  /** Google's message (`error.message` / `error_description`), or the network error's. */
  detail: string;
  /** True when the answer came from the token endpoint (a refresh inside any operation, or the code exchange). */
  token: boolean;
  retryAfterMs: number | undefined;
}

const RATE_LIMIT_REASONS = new Set(['rateLimitExceeded', 'userRateLimitExceeded']);
const QUOTA_REASONS = new Set(['quotaExceeded', 'dailyLimitExceeded', 'dailyLimitExceededUnreg']);
/** The grant lacks a scope we need: only a new consent can fix that. */
const SCOPE_REASONS = new Set(['insufficientPermissions', 'ACCESS_TOKEN_SCOPE_INSUFFICIENT']);
/** Operations whose 404 means the calendar itself is not there (or not reachable by this account). */
const CALENDAR_OPERATIONS = new Set<GoogleOperation>([
  'calendars.get',
  'calendars.delete',
  'calendars.insert',
  'calendars.patch',
  'events.insert',
  'events.list',
]);
/** Writes of one event: some of their 4xx answers concern that event alone (see {@link refusesOneEvent}). */
const EVENT_WRITES = new Set<GoogleOperation>(['events.insert', 'events.patch', 'events.update', 'events.delete']);
/**
 * 4xx answers to an event write that are about the grant (401), the calendar or our access to it (403, 404,
 * 410), the limits (429) or the connection (408), never about the event alone.
 */
const NOT_ONE_EVENT = new Set([401, 403, 404, 410, 429, 408]);
/**
 * 403 reasons known to concern one event (Google's "Shared properties can only be changed by the organizer").
 * Any other 403 on an event write (`forbidden`, `requiredAccessLevel`: we lost writer access) is about the calendar.
 */
const PER_EVENT_403 = new Set(['forbiddenForNonOrganizer']);
/** Form fields of token requests that are secrets; gaxios's own redactor leaves these in the error's config. */
const SECRET_FIELDS = ['refresh_token', 'code', 'code_verifier', 'client_secret', 'access_token', 'id_token'];

/**
 * Whether `error` is the Calendar API refusing the access token (401), as opposed to the token endpoint refusing the
 * grant.
 */
export function isAccessTokenRejected(error: unknown): boolean {
  if (!(error instanceof gaxios.GaxiosError)) return false;
  const failure = describe(error);
  return failure.status === 401 && !failure.token;
}

/**
 * The typed error for a failed `operation`. Google errors already typed pass through. Callers decide what
 * "not found" means for deletes and gets (success, undefined); here 404 and 410 become
 * {@link CalendarGoneError} for calendar-level operations and {@link EventMissingError} for event-level ones.
 */
export function classifyGoogleError(error: unknown, operation: GoogleOperation): GoogleError {
  if (error instanceof GoogleError) return error;
  if (!(error instanceof gaxios.GaxiosError)) {
    // Not an HTTP exchange at all (a bug, or the library refusing our call): retrying will not help.
    return new GooglePermanentError(`Google ${operation}: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  }
  scrubSecrets(error);
  const failure = describe(error);
  if (failure.status === undefined) {
    return new GoogleTransientError(`Google ${operation}: ${failure.detail}`, { reason: failure.reason, cause: error });
  }
  return failure.token
    ? classifyTokenFailure(failure, operation, error)
    : classifyApiFailure(failure, operation, error);
}

function classifyTokenFailure(failure: Failure, operation: GoogleOperation, cause: unknown): GoogleError {
  const { status, reason } = failure;
  const message = `Google ${operation}: token endpoint answered HTTP ${status} ${reason ?? ''}${quoted(failure.detail)}`;
  const details = { status, reason, cause };
  if (reason === 'invalid_grant') return new GoogleConsentError(message, details);
  if (status === 429) return new GoogleRateLimitError(message, { ...details, retryAfterMs: failure.retryAfterMs });
  if (status !== undefined && (status >= 500 || status === 408)) return new GoogleTransientError(message, details);
  // invalid_client, unauthorized_client, invalid_request: our client settings are wrong, not the user's grant.
  return new GooglePermanentError(message, details);
}

function classifyApiFailure(failure: Failure, operation: GoogleOperation, cause: unknown): GoogleError {
  const status = failure.status ?? 0;
  const reason = failure.reason;
  const message = `Google ${operation}: HTTP ${status}${reason === undefined ? '' : ` ${reason}`}${quoted(failure.detail)}`;
  const details = { status, reason, cause };
  if (status === 429 || (status === 403 && reason !== undefined && RATE_LIMIT_REASONS.has(reason))) {
    return new GoogleRateLimitError(message, { ...details, retryAfterMs: failure.retryAfterMs });
  }
  if (status === 403 && reason !== undefined && QUOTA_REASONS.has(reason))
    return new GoogleQuotaError(message, details);
  if (status === 401 || (status === 403 && reason !== undefined && SCOPE_REASONS.has(reason)))
    return new GoogleConsentError(message, details);
  // A calendar this account may no longer read (the owner unshared it) is, for us, a calendar gone.
  if (status === 403 && operation === 'calendars.get') return new CalendarGoneError(message, details);
  if (status === 404 || status === 410) {
    return CALENDAR_OPERATIONS.has(operation)
      ? new CalendarGoneError(message, details)
      : new EventMissingError(message, details);
  }
  if (status === 409 && operation === 'events.insert') return new EventExistsError(message, details);
  if (status >= 500 || status === 408) return new GoogleTransientError(message, details);
  if (EVENT_WRITES.has(operation) && refusesOneEvent(status, reason)) return new EventRefusedError(message, details);
  return new GooglePermanentError(message, details);
}

/**
 * Whether an answer to an event write refuses that event alone (400 invalid or required, 409 on patch or update,
 * 412, 413, 422…, or a 403 {@link PER_EVENT_403}), so that the other events can still be written.
 */
function refusesOneEvent(status: number, reason: string | undefined): boolean {
  if (status === 403) return reason !== undefined && PER_EVENT_403.has(reason);
  return status >= 400 && status < 500 && !NOT_ONE_EVENT.has(status);
}

function describe(error: InstanceType<typeof gaxios.GaxiosError>): Failure {
  const response = error.response;
  if (response === undefined) {
    const code = typeof error.code === 'string' ? error.code : undefined;
    const detail = code === 'TimeoutError' ? 'timed out' : `network error ${code ?? 'UNKNOWN'}: ${error.message}`;
    return { status: undefined, reason: code, detail, token: false, retryAfterMs: undefined };
  }
  const retryAfterMs = parseRetryAfter(response.headers?.get('retry-after') ?? null, Date.now());
  const data: unknown = response.data;
  const body = isRecord(data) ? data : {};
  if (typeof body.error === 'string') {
    const detail = typeof body.error_description === 'string' ? body.error_description : '';
    return { status: response.status, reason: body.error, detail, token: true, retryAfterMs };
  }
  const apiError = isRecord(body.error) ? body.error : {};
  const first = Array.isArray(apiError.errors) && isRecord(apiError.errors[0]) ? apiError.errors[0] : {};
  const reason = typeof first.reason === 'string' ? first.reason : undefined;
  const detail =
    typeof apiError.message === 'string' ? apiError.message : typeof data === 'string' ? data.slice(0, 200) : '';
  return { status: response.status, reason, detail, token: false, retryAfterMs };
}

/**
 * Blanks secret form fields in the error's request (a refresh token, an authorization code and its
 * verifier), which gaxios's default redactor leaves in place. The error is kept as `cause` and may be logged.
 */
function scrubSecrets(error: InstanceType<typeof gaxios.GaxiosError>): void {
  for (const config of [error.config, error.response?.config]) {
    if (config === undefined) continue;
    for (const value of [config.data, config.body]) {
      if (value instanceof URLSearchParams) {
        for (const field of SECRET_FIELDS) if (value.has(field)) value.set(field, '[redacted]');
      }
    }
    // A form body the library serialised to a string itself.
    const body = config.body;
    if (typeof body === 'string' && SECRET_FIELDS.some((field) => body.includes(`${field}=`)))
      config.body = '[redacted]';
  }
}

function quoted(detail: string): string {
  return detail === '' ? '' : `: ${detail}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
