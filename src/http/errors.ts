/**
 * How errors answer over HTTP: one catalog from the typed errors of every stage to a code of error-codes.ts
 * (and so a status) and words in Russian and English, used by the app's error handler (fastify keeps its own
 * errors in one catalog the same way). Routes throw what the stages throw; they make an {@link HttpError}
 * themselves only for what is their own (a malformed parameter, a missing token) or to word an error for their
 * context where the catalog's words would mislead.
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
} from '../google/errors.ts';
import { SourceNotFoundError, SourceNotReadyError, UnknownSubscriptionError } from '../jobs/errors.ts';
import { RateLimitedError, RedisFullError, RedisUnavailableError } from '../lib/errors.ts';
import { redisFailure } from '../lib/redis-failure.ts';
import { retryAfterSeconds, secondsText } from '../lib/retry-after.ts';
import { type Lang, secondsWords } from '../lib/words.ts';
import { TargetRemovedError } from '../push/errors.ts';
import { SecretKeyMissingError } from '../security/errors.ts';
import {
  CredentialNeededError,
  FeedUnavailableError,
  UnknownTimetableError,
  VariantRefusedError,
} from '../serving/errors.ts';
import { sourceNames } from '../serving/source-words.ts';
import { SignUpContentionError } from '../store/errors.ts';
import {
  ConfirmationsLimitError,
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
import { ERROR_CODES, type ErrorCode, type Words } from './error-codes.ts';

/**
 * An error a route answers: the status of its `code` in the catalog (error-codes.ts), and a JSON body
 * `{ "error": words in the language of the request, "code" }`. `message` holds the English words (for logs
 * and for code that shows them as they are).
 */
export class HttpError extends Error {
  override name = 'HttpError';
  readonly statusCode: number;
  /** A stable machine name of the error, for clients that branch on it (the words are for people). */
  readonly code: ErrorCode;
  /** The words in each language of the service. */
  readonly words: Words;
  /** Extra response headers, e.g. `Retry-After` or `WWW-Authenticate`. */
  readonly headers: Readonly<Record<string, string>>;

  /**
   * `status` is the code's own; only the codes that pass on someone else's status (fastify's refusals, the
   * fallback 500) give another.
   */
  constructor(
    code: ErrorCode,
    words: Words,
    headers: Readonly<Record<string, string>> = {},
    status: number = ERROR_CODES[code].status,
  ) {
    super(words.en);
    this.code = code;
    this.words = words;
    this.headers = headers;
    this.statusCode = status;
  }
}

/** The JSON body of an error answer, worded in `lang`. */
export function errorBody(error: HttpError, lang: Lang): { error: string; code: ErrorCode } {
  return { error: error.words[lang], code: error.code };
}

/** The 404 of a path no route has (`admin`: under `/admin`, past the admin token check); the query is left out. */
export function routeNotFound(request: { method: string; url: string }, admin = false): HttpError {
  const where = `${request.method} ${request.url.split('?', 1)[0]}`;
  return new HttpError(
    'ROUTE_NOT_FOUND',
    admin
      ? { en: `no admin route ${where}`, ru: `нет адреса администратора ${where}` }
      : { en: `no route ${where}`, ru: `нет адреса ${where}` },
  );
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

/** A rate limit of this service refusing a client, with words saying which one (client-limits.ts). */
export class ClientLimitError extends RateLimitedError {
  override name = 'ClientLimitError';
  readonly words: Words;

  constructor(retryAfterMs: number, words: Words) {
    super(retryAfterMs, words.en);
    this.words = words;
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
const SECRET_KEY_MISSING: Words = {
  en: 'personal subscriptions, calendar push and webhooks need SECRET_KEY: the secrets they keep are stored encrypted',
  ru: 'для личных подписок, отправки в календари и вебхуков нужен SECRET_KEY: их секреты хранятся только зашифрованными',
};

/** A subscription id as the messages quote it: a long one is cut (it may be anything a client sent). */
function clippedId(id: string): string {
  return id.length > 40 ? `${id.slice(0, 37)}...` : id;
}

/**
 * The catalog, most specific class first (the first entry an error is an instance of answers). Messages of our
 * own errors never hold a secret; those of the upstream and of Google hold their own words, which never do,
 * and are quoted as they are in both languages.
 */
const CATALOG: readonly Entry[] = [
  entry(HttpError, (error) => error),
  entry(
    MetricsTokenError,
    (error) =>
      new HttpError(
        'METRICS_UNAUTHORIZED',
        {
          en: error.message,
          ru: error.presented ? 'неверный токен метрик' : 'метрики требуют Authorization: Bearer <METRICS_TOKEN>',
        },
        { 'www-authenticate': 'Bearer realm="metrics"' },
      ),
  ),
  entry(ClientLimitError, (error) => new HttpError('RATE_LIMITED', error.words, retryAfter(error.retryAfterMs))),
  entry(
    ConfirmationsLimitError,
    (error) =>
      new HttpError(
        'RATE_LIMITED',
        {
          en: `${error.message}; try again in ${secondsText(error.retryAfterMs)}`,
          ru: `на этот адрес уже отправлено несколько писем с подтверждением; проверьте почту (и папку «Спам») или попробуйте снова через ${secondsWords(error.retryAfterMs).ru}`,
        },
        retryAfter(error.retryAfterMs),
      ),
  ),
  entry(
    RateLimitedError,
    (error) =>
      new HttpError(
        'RATE_LIMITED',
        {
          en: error.message,
          ru: `слишком много запросов; попробуйте снова через ${secondsWords(error.retryAfterMs).ru}`,
        },
        retryAfter(error.retryAfterMs),
      ),
  ),
  entry(
    FeedUnavailableError,
    (error) => new HttpError(error.code, error.words, { 'Retry-After': String(error.retryAfterSeconds) }),
  ),
  entry(UnknownTimetableError, (error) => new HttpError('SOURCE_NOT_FOUND', error.words)),
  entry(CredentialNeededError, (error) => new HttpError('CREDENTIAL_NEEDED', error.words)),
  entry(VariantRefusedError, (error) => new HttpError(error.code, error.words)),
  entry(UpstreamBudgetError, (error) => {
    const wait = secondsWords(error.retryAfterMs);
    return new HttpError(
      'UPSTREAM_BUSY',
      {
        en: `too many requests to the university right now; try again in ${wait.en}`,
        ru: `сейчас слишком много запросов к университету; попробуйте снова через ${wait.ru}`,
      },
      retryAfter(error.retryAfterMs),
    );
  }),
  entry(
    InvalidSourceError,
    (error) =>
      new HttpError('INVALID_SOURCE', {
        en: `source: ${error.message}`,
        ru: `source: неверный источник (${error.message})`,
      }),
  ),
  entry(
    UnknownSourceError,
    (error) =>
      new HttpError('INVALID_SOURCE', {
        en: `source: ${error.message}`,
        ru: `source: такой подписки нет (${error.message})`,
      }),
  ),
  entry(
    UnknownSubscriptionError,
    (error) =>
      new HttpError('SUBSCRIPTION_NOT_FOUND', {
        en: error.message,
        ru: `нет подписки с id "${clippedId(error.subscription)}"`,
      }),
  ),
  entry(SourceNotFoundError, (error) => {
    const names = sourceNames(error.source);
    const detail = error.upstreamText === '' ? '' : `: ${error.upstreamText}`;
    return new HttpError('SOURCE_NOT_FOUND', {
      en: error.message,
      ru: `университет не знает ${names.ruAccusative}${detail}`,
    });
  }),
  entry(SourceNotReadyError, (error) => {
    const names = sourceNames(error.source, true);
    return new HttpError(
      'TIMETABLE_NOT_READY',
      {
        en: error.message,
        ru: `расписание ${names.ruGenitive} ещё не получено из университета; попробуйте снова через ${secondsWords(error.retryAfterMs).ru}`,
      },
      retryAfter(error.retryAfterMs),
    );
  }),
  entry(SecretKeyMissingError, () => new HttpError('SECRET_KEY_MISSING', SECRET_KEY_MISSING)),
  entry(
    CredentialRejectedError,
    (error) => new HttpError('CREDENTIAL_REJECTED', { en: error.message, ru: 'университет не принял этот токен' }),
  ),
  entry(CredentialCheckError, (error) => {
    const cause = error.cause instanceof Error ? error.cause.message : '';
    return new HttpError('CREDENTIAL_CHECK_FAILED', {
      en: error.message,
      ru: `не удалось проверить токен в университете: ${cause}`,
    });
  }),
  entry(
    CredentialRefusedError,
    (error) =>
      new HttpError('CREDENTIAL_REFUSED', {
        en: error.message,
        ru: 'этот токен не может заменить токен подписки: университет его не принял, или он принадлежит другому пользователю университета',
      }),
  ),
  entry(
    SignUpContentionError,
    (error) =>
      new HttpError(
        'SIGN_UP_CONTENTION',
        {
          en: error.message,
          ru: 'слишком много одновременных входов этого пользователя университета: попробуйте снова через мгновение',
        },
        retryAfter(1_000),
      ),
  ),
  entry(
    GoogleNotConfiguredError,
    (error) =>
      new HttpError('GOOGLE_NOT_CONFIGURED', {
        en: error.message,
        ru: 'отправка в Google Календарь не настроена: задайте GOOGLE_CLIENT_ID и GOOGLE_CLIENT_SECRET',
      }),
  ),
  entry(
    ConsentCallbackError,
    (error) =>
      new HttpError('GOOGLE_CALLBACK_INVALID', {
        en: error.message,
        ru: `ответ Google о доступе не принят, ничего не подключено (${error.message})`,
      }),
  ),
  entry(
    TargetRemovedError,
    (error) =>
      new HttpError('TARGET_REMOVED', {
        en: `${error.message}: connect again`,
        ru: `подключение календаря удалено тем временем (${error.message}): подключите снова`,
      }),
  ),
  entry(
    CalendarGoneError,
    () =>
      new HttpError('CALENDAR_NOT_FOUND', {
        en: 'the calendar was deleted or cannot be reached with this grant',
        ru: 'календарь удалён или недоступен с этим разрешением',
      }),
  ),
  entry(GoogleConsentError, (error) => {
    const reason = error.reason ?? 'consent';
    return new HttpError('GOOGLE_CONSENT_REFUSED', {
      en: `Google refused access (${reason}): ${error.message}`,
      ru: `Google отказал в доступе (${reason}): ${error.message}`,
    });
  }),
  entry(
    GoogleRateLimitError,
    (error) =>
      new HttpError(
        'GOOGLE_RATE_LIMITED',
        {
          en: 'Google is rate limiting requests: try again later',
          ru: 'Google ограничивает частоту запросов: попробуйте позже',
        },
        retryAfter(error.retryAfterMs ?? 60_000),
      ),
  ),
  entry(
    GoogleQuotaError,
    () =>
      new HttpError('GOOGLE_QUOTA_EXCEEDED', {
        en: 'Google calendar usage limits are exceeded for this account: try again in a few hours',
        ru: 'лимиты Google Календаря для этого аккаунта исчерпаны: попробуйте через несколько часов',
      }),
  ),
  entry(
    GoogleTransientError,
    (error) =>
      new HttpError('GOOGLE_UNAVAILABLE', {
        en: `Google failed, try again: ${error.message}`,
        ru: `сбой Google, попробуйте снова: ${error.message}`,
      }),
  ),
  entry(
    GooglePermanentError,
    (error) =>
      new HttpError('GOOGLE_REFUSED', {
        en: `Google refused the request: ${error.message}`,
        ru: `Google отклонил запрос: ${error.message}`,
      }),
  ),
  entry(
    UpstreamRateLimitError,
    (error) =>
      new HttpError(
        'UPSTREAM_RATE_LIMITED',
        {
          en: `the university asked us to slow down: ${error.message}`,
          ru: `университет просит нас делать запросы реже: ${error.message}`,
        },
        retryAfter(error.retryAfterMs ?? 10_000),
      ),
  ),
  entry(
    UpstreamBusyError,
    () =>
      new HttpError(
        'UPSTREAM_BUSY',
        {
          en: 'too many requests are waiting for the university right now; try again in a few seconds',
          ru: 'сейчас слишком много запросов ждут ответа университета; попробуйте снова через несколько секунд',
        },
        retryAfter(5_000),
      ),
  ),
  entry(
    UpstreamTimeoutError,
    (error) =>
      new HttpError('UPSTREAM_TIMED_OUT', {
        en: `the university did not answer in time: ${error.message}`,
        ru: `университет не ответил вовремя: ${error.message}`,
      }),
  ),
  entry(
    UpstreamError,
    (error) =>
      new HttpError('UPSTREAM_UNAVAILABLE', {
        en: `the university failed: ${error.message}`,
        ru: `сбой на стороне университета: ${error.message}`,
      }),
  ),
  entry(RedisUnavailableError, () => {
    const wait = secondsWords(REDIS_RETRY_AFTER_MS);
    return new HttpError(
      'REDIS_UNAVAILABLE',
      {
        en: `the service's database is not available right now; try again in ${wait.en}`,
        ru: `база данных сервиса сейчас недоступна; попробуйте снова через ${wait.ru}`,
      },
      retryAfter(REDIS_RETRY_AFTER_MS),
    );
  }),
  entry(
    RedisFullError,
    () =>
      new HttpError(
        'REDIS_FULL',
        {
          en: "the service's database is full and refuses new data; nothing stored was lost, try again later",
          ru: 'база данных сервиса заполнена и не принимает новые данные; ничего сохранённого не потеряно, попробуйте позже',
        },
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
