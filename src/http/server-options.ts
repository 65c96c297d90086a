/**
 * The HTTP server's own limits, shared by the API app and a worker's operations app: how long a client may take
 * to send a request, how long a kept-alive connection stays open (how many it holds, and when an idle one is
 * closed: connection-limits.ts), and how the errors fastify and Node answer by themselves (malformed request
 * lines, over-long ids) are worded: as everywhere else, `{ "error": "…", "code": "…" }`.
 */
import type { ServerOptions as NodeServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import type { Config } from '../config.ts';
import { ERROR_CODES, type ErrorCode } from './error-codes.ts';

/** The config fields the server limits are read from. */
export type ServerLimits = Pick<Config, 'httpRequestTimeoutMs' | 'httpHeadersTimeoutMs' | 'httpKeepAliveTimeoutMs'>;

/**
 * Longest path parameter the router accepts (fastify's default is 100): personal feed tokens are at most 128
 * characters, plus `.ics`. Longer ones are refused with 414 before any route runs.
 */
export const MAX_PARAM_LENGTH = 160;

/** Node checks request and header deadlines on a timer; this often, at most. */
const MAX_CHECK_INTERVAL_MS = 30_000;

/** The fastify options {@link serverOptions} sets (spread into `Fastify({...})`). */
export interface ServerOptions {
  requestTimeout: number;
  connectionTimeout: number;
  keepAliveTimeout: number;
  http: NodeServerOptions;
  routerOptions: { maxParamLength: number };
  clientErrorHandler: (error: Error & { code?: string }, socket: Socket) => void;
}

/** Fastify options that bound a request's time on the wire. */
export function serverOptions(limits: ServerLimits): ServerOptions {
  return {
    requestTimeout: limits.httpRequestTimeoutMs,
    // No socket timeout: each request armed one and every read and write re-armed it. The connection table
    // closes idle connections (HTTP_IDLE_TIMEOUT) instead, looking at their traffic now and then
    // (connection-limits.ts).
    connectionTimeout: 0,
    keepAliveTimeout: limits.httpKeepAliveTimeoutMs,
    http: {
      requestTimeout: limits.httpRequestTimeoutMs,
      headersTimeout: limits.httpHeadersTimeoutMs,
      // The deadlines are only as precise as this timer: a quarter of the shortest keeps them within 25%.
      connectionsCheckingInterval: Math.min(MAX_CHECK_INTERVAL_MS, Math.ceil(limits.httpHeadersTimeoutMs / 4)),
    },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    clientErrorHandler: answerClientError,
  };
}

/**
 * Code and words of a request Node could not parse or that took too long, by Node's error code. English only:
 * nothing of the request (its Accept-Language) has been read.
 */
function describeClientError(code: string | undefined): { code: ErrorCode; message: string } {
  switch (code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { code: 'REQUEST_TIMEOUT', message: 'the request took too long to arrive' };
    case 'HPE_HEADER_OVERFLOW':
      return { code: 'HEADERS_TOO_LARGE', message: 'the request headers are too large' };
    case 'HPE_INVALID_URL':
      // Node refuses raw bytes above ASCII in a request target, whatever the client meant.
      return {
        code: 'MALFORMED_URL',
        message:
          'malformed URL: characters outside ASCII must be percent-encoded (curl: -G --data-urlencode "exclude=лекция")',
      };
    default:
      return { code: 'MALFORMED_REQUEST', message: 'malformed HTTP request' };
  }
}

const REASONS: Readonly<Record<number, string>> = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Too Large' };

/**
 * Answers a request Node's parser refused (fastify's default answers its own JSON shape). Written straight to
 * the socket: there is no request object, and the connection is closed after it.
 */
function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const { code, message } = describeClientError(error.code);
  const status = ERROR_CODES[code].status;
  const body = JSON.stringify({ error: message, code });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${REASONS[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}
