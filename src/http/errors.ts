/**
 * How errors answer over HTTP: one catalog from the typed errors of every stage to a status and words, used by
 * the app's error handler (fastify keeps its own errors in one catalog the same way). Routes throw what the
 * stages throw; they make an {@link HttpError} themselves only for what is their own (a malformed parameter,
 * a missing token) or to word an error for their context where the catalog's words would mislead.
 */
import {
  CalendarGoneError,
  ConsentCallbackError,
  GoogleConsentError,
  GoogleNotConfiguredError,
  GooglePermanentError,
  GoogleQuotaError,
  GoogleRateLimitError,
  GoogleTransientError,
  TargetRemovedError,
} from '../google/errors.ts';
import { SourceNotFoundError, SourceNotReadyError, UnknownSubscriptionError } from '../jobs/errors.ts';
import { RateLimitedError, RedisFullError, RedisUnavailableError } from '../lib/errors.ts';
import { redisFailure } from '../lib/redis-failure.ts';
import { retryAfterSeconds, secondsText } from '../lib/retry-after.ts';
import { SecretKeyMissingError } from '../security/errors.ts';
import {
  CredentialNeededError,
  FeedUnavailableError,
  UnknownTimetableError,
  VariantRefusedError,
} from '../serving/errors.ts';
import { SignUpContentionError } from '../store/errors.ts';
import {
  CredentialCheckError,
  CredentialRefusedError,
  CredentialRejectedError,
  UnknownSourceError,
} from '../subscriptions/errors.ts';
import { InvalidSourceError } from '../timetable/errors.ts';
import {
  UpstreamBudgetError,
  UpstreamBusyError,
  UpstreamError,
  UpstreamRateLimitError,
  UpstreamTimeoutError,
} from '../upstream/errors.ts';

/** An error a route answers with a status and a JSON body `{ "error": message }` (and its `code`, if any). */
export class HttpError extends Error {
  override name = 'HttpError';
  readonly statusCode: number;
  /** Extra response headers, e.g. `Retry-After` or `WWW-Authenticate`. */
  readonly headers: Readonly<Record<string, string>>;
  /** A stable machine name of the error, for clients that branch on it (the message is for people). */
  readonly code: string | undefined;

  constructor(statusCode: number, message: string, headers: Readonly<Record<string, string>> = {}, code?: string) {
    super(message);
    this.statusCode = statusCode;
    this.headers = headers;
    this.code = code;
  }
}

/** The JSON body of an error answer. */
export function errorBody(error: HttpError): { error: string; code?: string } {
  return error.code === undefined ? { error: error.message } : { error: error.message, code: error.code };
}

/** `/metrics` was asked for without the `METRICS_TOKEN` it requires (`presented`: a wrong one was sent). */
export class MetricsTokenError extends Error {
  override name = 'MetricsTokenError';
  readonly presented: boolean;

  constructor(presented: boolean) {
    super(presented ? 'wrong metrics token' : 'metrics need Authorization: Bearer <METRICS_TOKEN>');
    this.presented = presented;
  }
}

/** A `Retry-After` header of whole seconds, at least one. */
function retryAfter(ms: number): Record<string, string> {
  return { 'retry-after': String(retryAfterSeconds(ms)) };
}

type ErrorClass<E extends Error> = abstract new (...args: never[]) => E;

/** One catalog entry: errors of `type` (subclasses included) answer as `answer` says. */
interface Entry {
  type: ErrorClass<Error>;
  answer: (error: Error) => HttpError;
}

function entry<E extends Error>(type: ErrorClass<E>, answer: (error: E) => HttpError): Entry {
  return { type, answer: answer as (error: Error) => HttpError };
}

/** How long a client is asked to wait while Redis is away: a restart from its AOF takes seconds. */
export const REDIS_RETRY_AFTER_MS = 5_000;
/** How long a client is asked to wait while Redis is full: an operator has to free memory or raise the limit. */
export const REDIS_FULL_RETRY_AFTER_MS = 60_000;

/** Said for every use of a secret that cannot be sealed or opened without `SECRET_KEY`. */
const SECRET_KEY_MISSING =
  'personal subscriptions and Google push need SECRET_KEY: credentials and refresh tokens are stored encrypted';

/**
 * The catalog, most specific class first (the first entry an error is an instance of answers). Messages of our
 * own errors never hold a secret; those of the upstream and of Google hold their own words, which never do.
 */
const CATALOG: readonly Entry[] = [
  entry(HttpError, (error) => error),
  entry(
    MetricsTokenError,
    (error) =>
      new HttpError(401, error.message, { 'www-authenticate': 'Bearer realm="metrics"' }, 'METRICS_UNAUTHORIZED'),
  ),
  entry(RateLimitedError, (error) => new HttpError(429, error.message, retryAfter(error.retryAfterMs))),
  entry(
    UpstreamBudgetError,
    (error) =>
      new HttpError(
        503,
        `too many requests to the university right now; try again in ${secondsText(error.retryAfterMs)}`,
        retryAfter(error.retryAfterMs),
      ),
  ),
  entry(
    FeedUnavailableError,
    (error) => new HttpError(503, error.message, { 'Retry-After': String(error.retryAfterSeconds) }),
  ),
  entry(UnknownTimetableError, (error) => new HttpError(404, error.message)),
  entry(CredentialNeededError, (error) => new HttpError(409, error.message)),
  entry(VariantRefusedError, (error) => new HttpError(400, error.message)),
  entry(InvalidSourceError, (error) => new HttpError(400, `source: ${error.message}`)),
  entry(UnknownSourceError, (error) => new HttpError(400, `source: ${error.message}`)),
  entry(UnknownSubscriptionError, (error) => new HttpError(404, error.message)),
  entry(SourceNotFoundError, (error) => new HttpError(404, error.message)),
  entry(SourceNotReadyError, (error) => new HttpError(503, error.message, retryAfter(error.retryAfterMs))),
  entry(SecretKeyMissingError, () => new HttpError(503, SECRET_KEY_MISSING)),
  entry(CredentialRejectedError, (error) => new HttpError(401, error.message)),
  entry(CredentialCheckError, (error) => new HttpError(502, error.message)),
  entry(CredentialRefusedError, (error) => new HttpError(403, error.message)),
  entry(SignUpContentionError, (error) => new HttpError(503, error.message, retryAfter(1_000))),
  entry(GoogleNotConfiguredError, (error) => new HttpError(503, error.message)),
  entry(ConsentCallbackError, (error) => new HttpError(400, error.message)),
  entry(TargetRemovedError, (error) => new HttpError(409, `${error.message}: connect again`)),
  entry(CalendarGoneError, () => new HttpError(400, 'the calendar was deleted or cannot be reached with this grant')),
  entry(
    GoogleConsentError,
    (error) => new HttpError(400, `Google refused access (${error.reason ?? 'consent'}): ${error.message}`),
  ),
  entry(
    GoogleRateLimitError,
    (error) =>
      new HttpError(503, 'Google is rate limiting requests: try again later', retryAfter(error.retryAfterMs ?? 60_000)),
  ),
  entry(
    GoogleQuotaError,
    () => new HttpError(503, 'Google calendar usage limits are exceeded for this account: try again in a few hours'),
  ),
  entry(GoogleTransientError, (error) => new HttpError(502, `Google failed, try again: ${error.message}`)),
  entry(GooglePermanentError, (error) => new HttpError(502, `Google refused the request: ${error.message}`)),
  entry(
    UpstreamRateLimitError,
    (error) =>
      new HttpError(
        503,
        `the university asked us to slow down: ${error.message}`,
        retryAfter(error.retryAfterMs ?? 10_000),
      ),
  ),
  entry(
    UpstreamBusyError,
    () =>
      new HttpError(
        503,
        'too many requests are waiting for the university right now; try again in a few seconds',
        retryAfter(5_000),
      ),
  ),
  entry(UpstreamTimeoutError, (error) => new HttpError(504, `the university did not answer in time: ${error.message}`)),
  entry(UpstreamError, (error) => new HttpError(502, `the university failed: ${error.message}`)),
  entry(
    RedisUnavailableError,
    () =>
      new HttpError(
        503,
        `the service's database is not available right now; try again in ${secondsText(REDIS_RETRY_AFTER_MS)}`,
        retryAfter(REDIS_RETRY_AFTER_MS),
      ),
  ),
  entry(
    RedisFullError,
    () =>
      new HttpError(
        503,
        "the service's database is full and refuses new data; nothing stored was lost, try again later",
        retryAfter(REDIS_FULL_RETRY_AFTER_MS),
      ),
  ),
];

/**
 * The answer to `error` when it is one of ours, or a failure of Redis itself as ioredis throws it (a lost
 * connection, a timeout, `maxmemory` reached: 503 with `Retry-After`); undefined for anything else (the
 * handler answers 500).
 */
export function toHttpError(error: unknown): HttpError | undefined {
  if (!(error instanceof Error)) return undefined;
  const typed = CATALOG.some(({ type }) => error instanceof type) ? error : (redisFailure(error) ?? error);
  return CATALOG.find(({ type }) => typed instanceof type)?.answer(typed);
}
