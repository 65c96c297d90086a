import type { IncomingMessage } from 'node:http';
import { BodyTooLargeError } from './errors.ts';

/** A response computed by a route, written (or deliberately mangled by a fault) by the server. */
export interface Reply {
  status: number;
  /** JSON body; absent for 204. */
  body?: Buffer;
  headers?: Record<string, string>;
}

/** A JSON reply; `value` may already be a serialized body. */
export function json(status: number, value: unknown, headers?: Record<string, string>): Reply {
  const body = Buffer.isBuffer(value) ? value : Buffer.from(JSON.stringify(value));
  return headers ? { status, body, headers } : { status, body };
}

/** A 204 reply. */
export function noContent(): Reply {
  return { status: 204 };
}

/** The error shape of section 7: a single `error` field. */
export function errorReply(status: number, message: string): Reply {
  return json(status, { error: message });
}

/** The error shape used by the timetable endpoints: `success: false` and `error`. */
export function failureReply(status: number, message: string): Reply {
  return json(status, { success: false, error: message });
}

const MAX_BODY_BYTES = 1 << 20;

/** Reads a request body (at most 1 MiB). */
export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += buffer.length;
    if (size > MAX_BODY_BYTES) throw new BodyTooLargeError('request body larger than 1 MiB');
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}

/** Parses an optional JSON body: `undefined` for an empty body, `{ error }` when it is not JSON. */
export async function readJson(req: IncomingMessage): Promise<{ value: unknown } | { error: string }> {
  const raw = (await readBody(req)).toString('utf8');
  if (raw.trim() === '') return { value: undefined };
  try {
    return { value: JSON.parse(raw) as unknown };
  } catch (error) {
    return { error: `Некорректный JSON в теле запроса: ${(error as Error).message}` };
  }
}
