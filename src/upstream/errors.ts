/**
 * Typed failures of the university API client. Callers branch on the class (and `retryable`), never on the
 * message text. Messages name the endpoint and carry the upstream's own `error` text; they never contain a
 * credential, a header or a request body.
 */

/** The six upstream operations, as named in logs, errors and the simulator's fault injection. */
export type EndpointName = 'groupSchedule' | 'employeeSchedule' | 'employeeSearch' | 'me' | 'mySchedule' | 'myPlan';

/** All endpoint names, in documentation order. */
export const ENDPOINT_NAMES: readonly EndpointName[] = [
  'employeeSchedule',
  'groupSchedule',
  'employeeSearch',
  'me',
  'mySchedule',
  'myPlan',
];

/** Options shared by every upstream error. */
export interface UpstreamErrorOptions {
  /** How many tries were made when this error was raised; default 1. */
  attempts?: number | undefined;
  cause?: unknown | undefined;
}

/**
 * How a timed-out request had got on: waiting for the connection, the headers or the body, each bounded on its
 * own, or `deadline`: the whole call (waits included) was given a bound and it passed.
 */
export type TimeoutPhase = 'connect' | 'headers' | 'body' | 'deadline';

const TIMED_OUT: Record<TimeoutPhase, string> = {
  connect: 'timed out waiting for the connection',
  headers: 'timed out waiting for the headers',
  body: 'timed out waiting for the body',
  deadline: 'no answer within the time a request may wait',
};

/** Why a response that arrived could not be used. */
export type ProtocolErrorReason = 'bad-json' | 'wrong-shape' | 'unsuccessful' | 'too-large';

function withAttempts(message: string, attempts: number): string {
  return attempts > 1 ? `${message} (after ${attempts} attempts)` : message;
}

function quoted(upstreamMessage: string | undefined): string {
  return upstreamMessage === undefined || upstreamMessage === '' ? '' : `: ${upstreamMessage}`;
}

/** Base class of every failure talking to the university API. */
export class UpstreamError extends Error {
  override name = 'UpstreamError';
  readonly endpoint: EndpointName;
  /** Whether trying again later may succeed (network trouble, timeouts, 5xx, 429). */
  readonly retryable: boolean;
  readonly attempts: number;

  constructor(endpoint: EndpointName, detail: string, retryable: boolean, options: UpstreamErrorOptions = {}) {
    const attempts = options.attempts ?? 1;
    super(withAttempts(`University API ${endpoint}: ${detail}`, attempts), { cause: options.cause });
    this.endpoint = endpoint;
    this.retryable = retryable;
    this.attempts = attempts;
  }
}

/** Options of {@link UpstreamHttpError} and its subclasses. */
export interface UpstreamHttpErrorOptions extends UpstreamErrorOptions {
  /** The upstream's `error` text, or a short snippet of a non-JSON body. */
  upstreamMessage?: string | undefined;
}

/** A non-2xx answer. Retryable iff 5xx (and 429, see {@link UpstreamRateLimitError}). */
export class UpstreamHttpError extends UpstreamError {
  override name = 'UpstreamHttpError';
  readonly status: number;
  readonly upstreamMessage: string | undefined;

  constructor(endpoint: EndpointName, status: number, options: UpstreamHttpErrorOptions = {}) {
    const retryable = status >= 500 || status === 429;
    super(endpoint, `HTTP ${status}${quoted(options.upstreamMessage)}`, retryable, options);
    this.status = status;
    this.upstreamMessage = options.upstreamMessage;
  }
}

/**
 * The group, employee or path does not exist: a 404, or a 400 of an endpoint whose only input is the id (the
 * upstream's "invalid identifier"). Never retried; a source that gets it is remembered as unknown.
 */
export class UpstreamNotFoundError extends UpstreamHttpError {
  override name = 'UpstreamNotFoundError';

  constructor(endpoint: EndpointName, options: UpstreamHttpErrorOptions & { status?: 400 | 404 } = {}) {
    super(endpoint, options.status ?? 404, options);
  }
}

/** 429: slow down. `retryAfterMs` is the upstream's `Retry-After`, when it sent one. */
export class UpstreamRateLimitError extends UpstreamHttpError {
  override name = 'UpstreamRateLimitError';
  readonly retryAfterMs: number | undefined;

  constructor(endpoint: EndpointName, options: UpstreamHttpErrorOptions & { retryAfterMs?: number | undefined } = {}) {
    super(endpoint, 429, options);
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** 401/403 on an `@me` endpoint: the credential is missing, invalid or revoked. Never retried. */
export class UpstreamAuthError extends UpstreamError {
  override name = 'UpstreamAuthError';
  readonly status: number;
  readonly upstreamMessage: string | undefined;

  constructor(endpoint: EndpointName, status: number, options: UpstreamHttpErrorOptions = {}) {
    super(endpoint, `credential rejected, HTTP ${status}${quoted(options.upstreamMessage)}`, false, options);
    this.status = status;
    this.upstreamMessage = options.upstreamMessage;
  }
}

/** No connection, no headers or no body within the configured time. Retryable. */
export class UpstreamTimeoutError extends UpstreamError {
  override name = 'UpstreamTimeoutError';
  readonly phase: TimeoutPhase;

  constructor(endpoint: EndpointName, phase: TimeoutPhase, options: UpstreamErrorOptions = {}) {
    super(endpoint, TIMED_OUT[phase], true, options);
    this.phase = phase;
  }
}

/** The connection failed or broke (refused, reset, closed mid-body…). Retryable. */
export class UpstreamNetworkError extends UpstreamError {
  override name = 'UpstreamNetworkError';
  /** The system or undici error code, e.g. `ECONNREFUSED`, `UND_ERR_SOCKET`; `UNKNOWN` when there was none. */
  readonly code: string;

  constructor(endpoint: EndpointName, code: string, options: UpstreamErrorOptions = {}) {
    super(endpoint, `network error ${code}`, true, options);
    this.code = code;
  }
}

const PROTOCOL_DETAIL: Record<ProtocolErrorReason, string> = {
  'bad-json': 'response is not valid JSON',
  'wrong-shape': 'response has an unexpected shape',
  unsuccessful: 'upstream reported failure',
  'too-large': 'response is too large',
};

/** Options of {@link UpstreamProtocolError}. */
export interface UpstreamProtocolErrorOptions extends UpstreamErrorOptions {
  upstreamMessage?: string | undefined;
  /** Extra words for the message, e.g. which field was wrong; never response data beyond a short excerpt. */
  detail?: string | undefined;
}

/** A response arrived but cannot be used. Not retried by the client: the same request gives the same answer. */
export class UpstreamProtocolError extends UpstreamError {
  override name = 'UpstreamProtocolError';
  readonly reason: ProtocolErrorReason;
  readonly upstreamMessage: string | undefined;

  constructor(endpoint: EndpointName, reason: ProtocolErrorReason, options: UpstreamProtocolErrorOptions = {}) {
    const extra = options.detail === undefined ? '' : ` (${options.detail})`;
    super(endpoint, `${PROTOCOL_DETAIL[reason]}${extra}${quoted(options.upstreamMessage)}`, false, options);
    this.reason = reason;
    this.upstreamMessage = options.upstreamMessage;
  }
}

/** An id from the outside is not a positive integer; raised before any URL is built. */
/**
 * What an id from the outside may be, in words for error messages: a positive JavaScript safe integer, so that
 * it survives JSON and arithmetic unchanged (2^53 itself does not: it equals 2^53 + 1 as a double).
 */
export const ID_RANGE = `a whole number from 1 to ${Number.MAX_SAFE_INTEGER}`;

export class InvalidIdError extends Error {
  override name = 'InvalidIdError';
  readonly field: string;
  readonly value: unknown;

  constructor(field: string, value: unknown) {
    super(`${field} must be ${ID_RANGE}, got ${describeValue(value)}`);
    this.field = field;
    this.value = value;
  }
}

/** A short, log-safe rendering of a value for error messages: strings quoted, long values cut. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  let text: string;
  try {
    text = typeof value === 'string' ? JSON.stringify(value) : String(JSON.stringify(value) ?? typeof value);
  } catch {
    text = typeof value;
  }
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/**
 * A request-path call found the shared upstream budget (`UPSTREAM_RATE_LIMIT`) used up for longer than it may
 * wait; nothing was sent. Not an {@link UpstreamError}: the university did not fail, we chose not to ask it.
 */
export class UpstreamBudgetError extends Error {
  override name = 'UpstreamBudgetError';
  readonly endpoint: EndpointName;
  /** When a token of the budget will be there again. */
  readonly retryAfterMs: number;

  constructor(endpoint: EndpointName, retryAfterMs: number) {
    super(`University API ${endpoint}: our request budget is in use, next free in ${retryAfterMs} ms`);
    this.endpoint = endpoint;
    this.retryAfterMs = retryAfterMs;
  }
}

/**
 * Too many calls made inside requests (sign-up, teacher search) are waiting for the university already: this
 * one was not sent, either at once (the line was full) or after waiting for a place until its deadline.
 * Callers answer 503 with `Retry-After` instead of piling up connections and memory.
 */
export class UpstreamBusyError extends Error {
  override name = 'UpstreamBusyError';
  readonly endpoint: EndpointName;
  /** How long the caller should wait before asking again. */
  readonly retryAfterMs: number;

  constructor(endpoint: EndpointName, inFlight: number, retryAfterMs = 5_000) {
    super(`University API ${endpoint}: ${inFlight} requests are waiting for the university already`);
    this.endpoint = endpoint;
    this.retryAfterMs = retryAfterMs;
  }
}
