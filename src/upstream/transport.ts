/**
 * One HTTP exchange with the university API: send, read the body within a byte budget, decode it in its
 * charset, turn the status and body into JSON or a typed error. No retries here (see http.ts).
 */
import { type Dispatcher, request } from 'undici';
import type { Deadline } from '../lib/deadline.ts';
import { parseRetryAfter } from '../lib/retry-after.ts';
import { charsetOf, decodeBody } from './charset.ts';
import { upstreamErrorText } from './envelope.ts';
import {
  type EndpointName,
  UpstreamAuthError,
  UpstreamError,
  UpstreamHttpError,
  UpstreamNetworkError,
  UpstreamNotFoundError,
  UpstreamProtocolError,
  UpstreamRateLimitError,
  UpstreamTimeoutError,
} from './errors.ts';

/** Everything one exchange needs besides the request itself. */
export interface TransportContext {
  dispatcher: Dispatcher;
  maxResponseBytes: number;
  now: () => number;
  /** Told when a body was read as windows-1251 without being labelled so (see charset.ts), and why. */
  onCharsetFallback: (endpoint: EndpointName, reason: string) => void;
}

/** A fully built request. `headers` may hold the credential: they are never logged or put in an error. */
export interface PreparedRequest {
  endpoint: EndpointName;
  method: 'GET' | 'POST';
  url: URL;
  headers: Record<string, string>;
  body?: string;
  /** Whether 401/403 means "the credential was rejected" (the `@me` endpoints). */
  authenticated: boolean;
  /** The credential itself, only to scrub it from response text an upstream might echo it in. */
  secret?: string;
  signal?: AbortSignal;
  /** How long a try may wait for the shared budget (unset: as long as it takes); see CallOptions. */
  budgetWaitMs?: number;
  /** Bounds the whole call, waits included (see CallOptions); its expiry is an UpstreamTimeoutError. */
  deadline?: Deadline;
}

/** Endpoints whose only input is an id in the path. */
const ID_ENDPOINTS: ReadonlySet<EndpointName> = new Set(['groupSchedule', 'employeeSchedule']);

/** Error bodies are only read for their `error` text; more than this is not worth holding. */
const ERROR_BODY_LIMIT = 64 * 1024;
const SNIPPET_LENGTH = 200;

/** Errors that are our own mistakes or lifecycle (closed client), not the network's: passed through as-is. */
const NOT_NETWORK_CODES = new Set(['UND_ERR_INVALID_ARG', 'UND_ERR_DESTROYED', 'UND_ERR_CLOSED', 'ERR_INVALID_URL']);

function errorCode(err: unknown): string | undefined {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : undefined;
}

/** Maps an undici or socket error to a typed upstream error by its `code`; an abort yields the signal's reason. */
export function transportError(err: unknown, req: PreparedRequest, attempts: number): unknown {
  if (req.signal?.aborted) return req.signal.reason;
  if (err instanceof UpstreamError) return err;
  const code = errorCode(err);
  const options = { attempts, cause: err };
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'ETIMEDOUT') {
    return new UpstreamTimeoutError(req.endpoint, 'connect', options);
  }
  if (code === 'UND_ERR_HEADERS_TIMEOUT') return new UpstreamTimeoutError(req.endpoint, 'headers', options);
  if (code === 'UND_ERR_BODY_TIMEOUT') return new UpstreamTimeoutError(req.endpoint, 'body', options);
  if (code === undefined || NOT_NETWORK_CODES.has(code)) return err;
  return new UpstreamNetworkError(req.endpoint, code, options);
}

/** Drops a body we will not read: aborts the request (and its connection) without an unhandled 'error'. */
function discard(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => undefined);
  body.destroy();
}

/** Reads at most `limit` bytes; stops reading (and drops the connection) beyond it. */
async function readBody(body: Dispatcher.ResponseData['body'], limit: number) {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      discard(body);
      return { bytes: Buffer.concat(chunks), truncated: true };
    }
    chunks.push(chunk);
  }
  return { bytes: Buffer.concat(chunks), truncated: false };
}

function messageOf(bodyText: string): string | undefined {
  try {
    const fromJson = upstreamErrorText(JSON.parse(bodyText));
    if (fromJson !== undefined) return fromJson;
  } catch {
    // Not JSON: fall back to a snippet of the text.
  }
  const snippet = bodyText.replace(/\s+/g, ' ').trim().slice(0, SNIPPET_LENGTH);
  return snippet === '' ? undefined : snippet;
}

interface StatusContext {
  req: PreparedRequest;
  res: Dispatcher.ResponseData;
  bodyText: string;
  nowMs: number;
  attempts: number;
}

function statusError({ req, res, bodyText, nowMs, attempts }: StatusContext): UpstreamError {
  const { endpoint } = req;
  const status = res.statusCode;
  const options = { attempts, upstreamMessage: messageOf(bodyText) };
  if (req.authenticated && (status === 401 || status === 403)) return new UpstreamAuthError(endpoint, status, options);
  if (status === 404) return new UpstreamNotFoundError(endpoint, options);
  // The id is all these endpoints take: a 400 ("invalid identifier") will not change on a retry, like a 404.
  if (status === 400 && ID_ENDPOINTS.has(endpoint)) return new UpstreamNotFoundError(endpoint, { ...options, status });
  if (status === 429) {
    const retryAfterMs = parseRetryAfter(res.headers['retry-after'], nowMs);
    return new UpstreamRateLimitError(endpoint, { ...options, retryAfterMs });
  }
  return new UpstreamHttpError(endpoint, status, options);
}

async function readErrorBody(res: Dispatcher.ResponseData, limit: number): Promise<string> {
  try {
    const { bytes } = await readBody(res.body, Math.min(limit, ERROR_BODY_LIMIT));
    // Decoded like any body, so that a windows-1251 error text reaches the message readable; no warning here,
    // the error itself is what gets reported.
    return decodeBody(bytes, charsetOf(res.headers['content-type'])).text;
  } catch {
    // The status alone is the error; a broken error body adds nothing worth a different error class.
    return '';
  }
}

function tooLarge(req: PreparedRequest, limit: number, attempts: number): UpstreamProtocolError {
  return new UpstreamProtocolError(req.endpoint, 'too-large', { attempts, detail: `more than ${limit} bytes` });
}

/** Response text with any echo of the request's credential replaced, before it can reach an error or a log. */
function scrub(text: string, req: PreparedRequest): string {
  return req.secret ? text.replaceAll(req.secret, '[redacted]') : text;
}

async function exchange(ctx: TransportContext, req: PreparedRequest, attempts: number): Promise<unknown> {
  const res = await request(req.url, {
    dispatcher: ctx.dispatcher,
    method: req.method,
    headers: req.headers,
    body: req.body ?? null,
    signal: req.signal ?? null,
  });
  if (res.statusCode < 200 || res.statusCode > 299) {
    const bodyText = scrub(await readErrorBody(res, ctx.maxResponseBytes), req);
    throw statusError({ req, res, bodyText, nowMs: ctx.now(), attempts });
  }
  const declared = Number(res.headers['content-length']);
  if (declared > ctx.maxResponseBytes) {
    discard(res.body);
    throw tooLarge(req, ctx.maxResponseBytes, attempts);
  }
  const { bytes, truncated } = await readBody(res.body, ctx.maxResponseBytes);
  if (truncated) throw tooLarge(req, ctx.maxResponseBytes, attempts);
  const { text, fallback } = decodeBody(bytes, charsetOf(res.headers['content-type']));
  if (fallback !== undefined) ctx.onCharsetFallback(req.endpoint, fallback);
  try {
    return JSON.parse(scrub(text, req)) as unknown;
  } catch {
    // No `cause`: JSON.parse's message quotes the body, and bodies never reach a log line.
    throw new UpstreamProtocolError(req.endpoint, 'bad-json', { attempts, detail: `${text.length} characters` });
  }
}

/** Performs one exchange and returns the parsed JSON body of a 2xx answer; throws typed errors otherwise. */
export async function sendOnce(ctx: TransportContext, req: PreparedRequest, attempts: number): Promise<unknown> {
  try {
    return await exchange(ctx, req, attempts);
  } catch (err) {
    throw transportError(err, req, attempts);
  }
}
