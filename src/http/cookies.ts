/**
 * Cookies of the pages, written by hand (one `Set-Cookie` per call; @fastify/cookie would parse every
 * request's cookies, feeds included). Every cookie is `SameSite=Lax`, `Secure` when PUBLIC_URL is https, and
 * `HttpOnly` unless said otherwise.
 */
import type { FastifyReply } from 'fastify';

export { readCookie } from './consent-cookie.ts';

/** The language a visitor chose with `?lang=` on a page: the pages and the JSON errors answer in it. */
export const LANG_COOKIE = 'lang';

export interface CookieOptions {
  /** Seconds; 0 expires the cookie. Absent: a session cookie. */
  maxAge?: number;
  /** Default `/`. */
  path?: string;
  /** Default true. */
  httpOnly?: boolean;
  /** Default `Lax`. `Strict` keeps a cookie off every request that another site starts. */
  sameSite?: 'Lax' | 'Strict';
}

/** Adds a `Set-Cookie` header; `value` must already be cookie-safe (base64url, digits, letters). */
export function setCookie(
  reply: FastifyReply,
  publicUrl: string,
  name: string,
  value: string,
  options: CookieOptions = {},
): void {
  const parts = [`${name}=${value}`, `Path=${options.path ?? '/'}`, `SameSite=${options.sameSite ?? 'Lax'}`];
  if (options.maxAge !== undefined) parts.push(`Max-Age=${options.maxAge}`);
  if (options.httpOnly ?? true) parts.push('HttpOnly');
  if (publicUrl.startsWith('https:')) parts.push('Secure');
  reply.header('set-cookie', parts.join('; '));
}

/** Expires cookie `name` on `path`. */
export function clearCookie(reply: FastifyReply, publicUrl: string, name: string, path = '/'): void {
  setCookie(reply, publicUrl, name, '', { maxAge: 0, path });
}
