/**
 * The cookie that binds a Google consent to the browser that started it (login CSRF: without it, a consent URL
 * made by one person and opened by another would connect the second person's Google account to the first
 * person's request). One cookie per consent, named after its state, so that two tabs can consent at once.
 * Parsed and written here: @fastify/cookie is not a dependency, and one cookie needs a few lines.
 *
 * The cookie is host-only and Google sends the browser back to PUBLIC_URL's host, so it must be set on that
 * host: a connect reached on another name of the service (`127.0.0.1` for `localhost`) is first redirected
 * there, or every consent would fail as "started in another browser".
 */
import type { FastifyReply } from 'fastify';
import { CONSENT_TTL_SECONDS } from '../google/oauth-state.ts';
import { hashToken } from '../security/tokens.ts';

/** The path the cookie is sent on: the Google routes only. */
const COOKIE_PATH = '/google';

/**
 * The cookie name of the consent of `state`: a prefix of a digest of the state (the state itself stays secret),
 * in its own domain so that it says nothing about the Redis key, which is the state's plain digest.
 */
export function consentCookieName(state: string): string {
  return `tts-consent-${hashToken(`consent-cookie:${state}`).slice(0, 16)}`;
}

/** Sets the consent cookie; `Secure` when the service is reached over https. */
export function setConsentCookie(reply: FastifyReply, state: string, nonce: string, publicUrl: string): void {
  const secure = publicUrl.startsWith('https:') ? '; Secure' : '';
  reply.header(
    'set-cookie',
    `${consentCookieName(state)}=${nonce}; Max-Age=${CONSENT_TTL_SECONDS}; Path=${COOKIE_PATH}; HttpOnly; SameSite=Lax${secure}`,
  );
}

/** Expires the consent cookie of `state` (it is single use, like the state). */
export function clearConsentCookie(reply: FastifyReply, state: string, publicUrl: string): void {
  const secure = publicUrl.startsWith('https:') ? '; Secure' : '';
  reply.header(
    'set-cookie',
    `${consentCookieName(state)}=; Max-Age=0; Path=${COOKIE_PATH}; HttpOnly; SameSite=Lax${secure}`,
  );
}

/** The value of cookie `name` in a `Cookie` header, or undefined. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const pair of header.split(';')) {
    const equals = pair.indexOf('=');
    if (equals > 0 && pair.slice(0, equals).trim() === name) return pair.slice(equals + 1).trim();
  }
  return undefined;
}

/** Query parameter a connect redirected to PUBLIC_URL's host carries, so that it is never redirected twice. */
export const PUBLIC_HOST_MARK = 'public-host';

/**
 * Whether `host`, a request's (its `Host` header, or `X-Forwarded-Host` from a trusted proxy), is PUBLIC_URL's:
 * compared as URL.host writes them (lower case, the scheme's default port dropped).
 */
export function isPublicHost(publicUrl: string, host: string | undefined): boolean {
  if (host === undefined) return false;
  const { protocol, host: publicHost } = new URL(publicUrl);
  try {
    return new URL(`${protocol}//${host}`).host === publicHost;
  } catch {
    return false;
  }
}

/**
 * The same connect request (`url`: its path and query) on PUBLIC_URL's host, marked; undefined when it carries
 * the mark already: a proxy that rewrites `Host` (nginx's default) would otherwise send the browser round in
 * circles.
 */
export function publicHostRedirect(publicUrl: string, url: string): string | undefined {
  const query = url.includes('?') ? url.slice(url.indexOf('?') + 1) : '';
  if (new URLSearchParams(query).has(PUBLIC_HOST_MARK)) return undefined;
  return `${publicUrl}/google/connect?${query === '' ? '' : `${query}&`}${PUBLIC_HOST_MARK}=1`;
}
