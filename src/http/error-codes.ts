/**
 * Every code a JSON error answer can carry, with its status and what it means: the one list clients may branch
 * on (the message is for people, and comes in the language of the request). Like fastify's `FST_ERR_*`, a code
 * never changes meaning once published; docs/errors.md is generated from this table
 * (`node scripts/docs-errors.ts`), and a test keeps the two equal.
 */

/** What one code answers: its HTTP status and, for the docs, what it means and what a client can do. */
export interface ErrorCodeInfo {
  readonly status: number;
  readonly meaning: string;
}

/** A message in both languages of the service; values it embeds (ids, names, seconds) are the same in both. */
export type { Words } from '../lib/words.ts';

/** The catalog of codes, grouped as the docs show them. */
export const ERROR_CODES = {
  // Requests the server or a route cannot read.
  ROUTE_NOT_FOUND: {
    status: 404,
    meaning:
      'No route has this method and path (a `GET` of an unknown page under `/timetables/` is the HTML 404 page instead).',
  },
  MALFORMED_REQUEST: { status: 400, meaning: 'Node refused the HTTP request itself (its request line or headers).' },
  MALFORMED_URL: {
    status: 400,
    meaning: 'The URL has a broken percent-escape, or characters outside ASCII that are not percent-encoded.',
  },
  URL_TOO_LONG: { status: 414, meaning: 'An id or token in the path is longer than any real one.' },
  HEADERS_TOO_LARGE: { status: 431, meaning: 'The request headers are larger than the server reads.' },
  REQUEST_TIMEOUT: { status: 408, meaning: 'The request (headers or body) took too long to arrive.' },
  BODY_TOO_LARGE: { status: 413, meaning: 'The request body is larger than this route accepts.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, meaning: 'This route does not read a body of that Content-Type.' },
  BAD_REQUEST: {
    status: 400,
    meaning: 'Fastify refused the request before any route ran (a wrong Content-Length); another 4xx may be kept.',
  },
  INVALID_BODY: { status: 400, meaning: 'The request body is not JSON, or a field of it is missing or wrong.' },
  INVALID_QUERY: { status: 400, meaning: 'A query parameter is missing, given twice or out of range.' },
  INVALID_ID: { status: 400, meaning: 'An id in the path does not have the form of one (a number, a job id, …).' },
  INVALID_SOURCE: { status: 400, meaning: 'A source is not `group:<id>`, `employee:<id>` or a known subscription.' },
  FEED_TOO_LARGE: {
    status: 400,
    meaning: 'The feed options (a long title) would make the feed exceed its size limit.',
  },
  CROSS_ORIGIN_FORM: { status: 403, meaning: 'A page form was posted from another site.' },

  // Feeds and timetables.
  FEED_NOT_FOUND: {
    status: 404,
    meaning: 'No personal feed has this link: it is wrong, or the subscription was deleted.',
  },
  SOURCE_NOT_FOUND: { status: 404, meaning: 'The university does not know this group, teacher or subscription.' },
  TIMETABLE_NOT_LOADED: {
    status: 404,
    meaning: 'The timetable page has nothing to show yet: its feed was never fetched.',
  },
  TIMETABLE_NOT_READY: {
    status: 503,
    meaning: 'The timetable is being fetched or prepared; ask again after `Retry-After` seconds.',
  },
  VARIANTS_BUSY: {
    status: 503,
    meaning: 'Too many feed variants are being rendered at once; ask again after `Retry-After` seconds.',
  },
  ASSET_NOT_FOUND: {
    status: 404,
    meaning: 'No stylesheet, script or image has this name (the page is older than this release).',
  },
  RATE_LIMITED: {
    status: 429,
    meaning: 'Too many requests of this kind, from this address or overall; see `Retry-After`.',
  },

  // Subscriptions and sign-up.
  SUBSCRIPTION_NOT_FOUND: { status: 404, meaning: 'No subscription has this id.' },
  OWNER_UNAUTHORIZED: {
    status: 401,
    meaning: 'The token of the record (a feed token, a manage token) is missing or wrong.',
  },
  SIGN_IN_REQUIRED: { status: 401, meaning: 'This browser holds no personal timetable: sign in first.' },
  CREDENTIAL_REJECTED: { status: 401, meaning: 'The university rejected the credential offered.' },
  CREDENTIAL_REFUSED: {
    status: 403,
    meaning: "The credential may not replace the subscription's: rejected, or another university user's.",
  },
  CREDENTIAL_NEEDED: {
    status: 409,
    meaning: 'The university rejected the stored credential: send a new one with PATCH.',
  },
  CREDENTIAL_CHECK_FAILED: { status: 502, meaning: 'The university could not be asked whose the credential is.' },
  SIGN_UP_CONTENTION: { status: 503, meaning: 'Simultaneous sign-ups of one university user collided; try again.' },
  SECRET_KEY_MISSING: {
    status: 503,
    meaning: 'The service has no `SECRET_KEY`: personal subscriptions, calendar push and webhooks are off.',
  },

  // Push to a calendar of any kind (Google, CalDAV).
  TARGET_REMOVED: {
    status: 409,
    meaning: 'The push target was removed while it was being changed (a reconnect, a new password): connect again.',
  },

  // Google push.
  GOOGLE_NOT_CONFIGURED: { status: 503, meaning: 'Google push is not configured on this service.' },
  GOOGLE_CALLBACK_INVALID: {
    status: 400,
    meaning: 'The consent callback is malformed, expired, used or from another browser; start again.',
  },
  GOOGLE_CONSENT_REFUSED: {
    status: 400,
    meaning: 'Google refused access (consent denied, or a refresh token it refuses).',
  },
  TARGET_NOT_FOUND: { status: 404, meaning: 'No Google target has this id.' },
  CALENDAR_NOT_FOUND: { status: 400, meaning: 'The calendar was deleted or cannot be reached with this grant.' },
  CALENDAR_NOT_DELETED: {
    status: 502,
    meaning: 'The target was removed but its calendar could not be deleted; `calendarId` names it.',
  },
  GOOGLE_RATE_LIMITED: { status: 503, meaning: 'Google is rate limiting our requests; see `Retry-After`.' },
  GOOGLE_QUOTA_EXCEEDED: { status: 503, meaning: "The account's Google Calendar usage limits are exceeded for now." },
  GOOGLE_UNAVAILABLE: { status: 502, meaning: 'Google failed in a way that may pass; try again.' },
  GOOGLE_REFUSED: { status: 502, meaning: 'Google refused the request for good.' },

  // CalDAV push.
  CALDAV_URL_REFUSED: {
    status: 400,
    meaning: 'The server or calendar URL is not asked: not an `https://` URL, a login inside it, or a private address.',
  },
  CALDAV_CREDENTIALS_REFUSED: {
    status: 422,
    meaning: 'The CalDAV server refused the login or app password; nothing was stored.',
  },
  CALDAV_NO_CALENDAR: {
    status: 422,
    meaning:
      "The server makes no calendar for us; `calendars` lists the account's event calendars: send one as `calendarUrl`.",
  },
  CALDAV_CALENDAR_NOT_FOUND: {
    status: 422,
    meaning: '`calendarUrl` is no calendar for events that this account can reach.',
  },
  CALDAV_UNREACHABLE: {
    status: 502,
    meaning: 'The CalDAV server did not answer, or failed in a way that may pass; try again later.',
  },
  CALDAV_REFUSED: {
    status: 502,
    meaning: 'The CalDAV server refused the request for good (no CalDAV at this address, or access forbidden).',
  },
  CALDAV_RESPONSE_TOO_LARGE: {
    status: 502,
    meaning:
      'The CalDAV server sent an answer no real server sends: larger than its cap, or XML nested or packed ' +
      'beyond reason. It was refused unparsed; nothing was stored.',
  },
  CALDAV_TARGET_NOT_FOUND: { status: 404, meaning: 'No CalDAV target has this id.' },
  CALDAV_NOT_CLEANED: {
    status: 502,
    meaning: 'The target was removed, but what it wrote could not all be deleted; `calendarUrl` names the calendar.',
  },

  // Webhooks.
  WEBHOOK_URL_REFUSED: {
    status: 400,
    meaning:
      'The webhook URL is not taken: not an `http(s)://` URL, a login inside it, or a private or loopback address ' +
      '(allowed only with `WEBHOOK_ALLOW_PRIVATE=true`).',
  },
  WEBHOOK_NOT_FOUND: { status: 404, meaning: 'No webhook has this id.' },

  // The Telegram bot.
  TELEGRAM_NOT_CONFIGURED: {
    status: 503,
    meaning:
      'The Telegram bot is off (no `TELEGRAM_BOT_TOKEN`, or not in webhook mode), or Telegram did not say its name.',
  },
  TELEGRAM_WEBHOOK_UNAUTHORIZED: {
    status: 401,
    meaning: '`POST /telegram/webhook` came without the secret token header Telegram was given.',
  },

  // E-mail notifications.
  EMAIL_NOT_CONFIGURED: {
    status: 503,
    meaning: 'E-mail notifications are off: the service has no `SMTP_URL` or no `MAIL_FROM`.',
  },
  // The MAX bot.
  MAX_NOT_CONFIGURED: {
    status: 503,
    meaning: 'The MAX bot is off (no `MAX_BOT_TOKEN`, or not in webhook mode), or MAX did not say its name.',
  },
  MAX_WEBHOOK_UNAUTHORIZED: {
    status: 401,
    meaning: '`POST /max/webhook` came without the `X-Max-Bot-Api-Secret` header MAX was given.',
  },
  MAX_UPDATE_NOT_TAKEN: {
    status: 503,
    meaning: '`POST /max/webhook`: the update could not be queued (the database did not answer); MAX sends it again.',
  },

  // The university.
  UPSTREAM_BUSY: {
    status: 503,
    meaning: 'Too many requests to the university are under way or budgeted; see `Retry-After`.',
  },
  UPSTREAM_RATE_LIMITED: { status: 503, meaning: 'The university asked us to slow down; see `Retry-After`.' },
  UPSTREAM_TIMED_OUT: { status: 504, meaning: 'The university did not answer in time.' },
  UPSTREAM_UNAVAILABLE: { status: 502, meaning: 'The university failed or answered something unreadable.' },

  // The service itself.
  REDIS_UNAVAILABLE: { status: 503, meaning: "The service's database is not available; see `Retry-After`." },
  REDIS_FULL: { status: 503, meaning: "The service's database is full and refuses new data; nothing was lost." },
  NOT_READY: { status: 503, meaning: '`/readyz`: no worker is alive; `checks` says what was found.' },
  ADMIN_DISABLED: { status: 503, meaning: 'The admin routes are off: the service has no `ADMIN_TOKEN`.' },
  ADMIN_UNAUTHORIZED: { status: 401, meaning: 'An admin route was asked without the right `ADMIN_TOKEN`.' },
  JOB_NOT_FOUND: { status: 404, meaning: 'No job has this id (finished jobs are kept for a while only).' },
  METRICS_UNAUTHORIZED: { status: 401, meaning: '`/metrics` was asked without the right `METRICS_TOKEN`.' },
  NOT_PROXIED: { status: 404, meaning: 'The shipped nginx does not pass `/metrics` and the queue board through.' },
  INTERNAL_ERROR: {
    status: 500,
    meaning: 'Something failed on our side; it has been logged (a 5xx of fastify is kept).',
  },
} as const satisfies Record<string, ErrorCodeInfo>;

/** A code of the catalog. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** True when `code` is in the catalog. */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERROR_CODES, code);
}
