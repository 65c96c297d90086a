import type { IncomingMessage } from 'node:http';

/** A response computed by a handler and written by the server. */
export interface Reply {
  status: number;
  /** Absent for 204 and for redirects. */
  body?: Buffer;
  headers?: Record<string, string>;
}

/** A JSON reply. */
export function json(status: number, value: unknown, headers?: Record<string, string>): Reply {
  const body = Buffer.from(JSON.stringify(value));
  return { status, body, headers: { 'content-type': 'application/json; charset=UTF-8', ...headers } };
}

// The gRPC-style `status` Google puts next to `code`; 410 has no exact match, Google's older bodies omit it.
const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ALREADY_EXISTS',
  410: 'FAILED_PRECONDITION',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
};

/** A Calendar API failure in Google's error shape; handlers throw it, the server writes it. */
export class ApiError extends Error {
  override name = 'ApiError';
  readonly status: number;
  readonly reason: string;
  readonly domain: string;
  /** The top-level `error.message` (Google sometimes words it differently from `errors[0].message`). */
  readonly topMessage: string;
  readonly headers: Record<string, string> | undefined;

  constructor(
    status: number,
    reason: string,
    message: string,
    options: { domain?: string; topMessage?: string; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.status = status;
    this.reason = reason;
    this.domain = options.domain ?? 'global';
    this.topMessage = options.topMessage ?? message;
    this.headers = options.headers;
  }

  /** `{"error":{"code","message","errors":[{domain,reason,message}],"status"}}`. */
  reply(): Reply {
    const error = {
      code: this.status,
      message: this.topMessage,
      errors: [{ domain: this.domain, reason: this.reason, message: this.message }],
      status: STATUS_TEXT[this.status] ?? 'UNKNOWN',
    };
    return json(this.status, { error }, this.headers);
  }
}

/** Canned Google errors, as the real API words them. */
export const apiErrors = {
  unauthenticated: () =>
    new ApiError(401, 'authError', 'Invalid Credentials', {
      topMessage: 'Request had invalid authentication credentials.',
      headers: { 'www-authenticate': 'Bearer realm="https://accounts.google.com/", error="invalid_token"' },
    }),
  insufficientPermissions: () =>
    new ApiError(403, 'insufficientPermissions', 'Insufficient Permission', {
      topMessage: 'Request had insufficient authentication scopes.',
    }),
  notFound: () => new ApiError(404, 'notFound', 'Not Found'),
  duplicate: () => new ApiError(409, 'duplicate', 'The requested identifier already exists.'),
  deleted: () => new ApiError(410, 'deleted', 'Resource has been deleted'),
  invalidId: () => new ApiError(400, 'invalid', 'Invalid resource id value.'),
  invalid: (message: string) => new ApiError(400, 'invalid', message),
  required: (message: string) => new ApiError(400, 'required', message),
  invalidParameter: (message: string) => new ApiError(400, 'invalidParameter', message),
  userRateLimit: () =>
    new ApiError(403, 'userRateLimitExceeded', 'User Rate Limit Exceeded', { domain: 'usageLimits' }),
  rateLimit: () => new ApiError(403, 'rateLimitExceeded', 'Rate Limit Exceeded', { domain: 'usageLimits' }),
  tooManyRequests: () =>
    new ApiError(429, 'rateLimitExceeded', 'Rate Limit Exceeded', {
      domain: 'usageLimits',
      headers: { 'retry-after': '1' },
    }),
  quota: () => new ApiError(403, 'quotaExceeded', 'Calendar usage limits exceeded.', { domain: 'usageLimits' }),
  forbidden: () => new ApiError(403, 'forbidden', 'Forbidden'),
  /** The account lost writer access to the calendar (the owner unshared it, or made it read-only). */
  requiredAccessLevel: () =>
    new ApiError(403, 'requiredAccessLevel', 'You need to have writer access to this calendar.', {
      domain: 'calendar',
    }),
  /** A change to an event this account did not organise (about that one event). */
  forbiddenForNonOrganizer: () =>
    new ApiError(
      403,
      'forbiddenForNonOrganizer',
      'Shared properties can only be changed by the organizer of the event.',
      { domain: 'calendar' },
    ),
  backend: (status: number) => new ApiError(status, 'backendError', 'Backend Error'),
};

/** An OAuth endpoint error: `{"error": code, "error_description": …}`. */
export function oauthError(status: number, error: string, description?: string): Reply {
  return json(status, description === undefined ? { error } : { error, error_description: description });
}

const MAX_BODY_BYTES = 1 << 20;

/** Reads a request body (at most 1 MiB; larger bodies are an ApiError 413). */
export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += buffer.length;
    if (size > MAX_BODY_BYTES) throw new ApiError(413, 'uploadTooLarge', 'Request Entity Too Large');
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Parses a JSON request body into an object; anything else is Google's 400 parseError. */
export function parseJsonObject(raw: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = raw.trim() === '' ? {} : JSON.parse(raw);
  } catch {
    throw new ApiError(400, 'parseError', 'Parse Error');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new ApiError(400, 'parseError', 'Parse Error');
  return value as Record<string, unknown>;
}
