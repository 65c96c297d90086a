/**
 * The cookie that binds a Google consent to the browser that started it (login CSRF: without it, a consent URL
 * made by one person and opened by another would connect the second person's Google account to the first
 * person's request). One cookie per consent, named after its state, so that two tabs can consent at once.
 * Parsed and written here: @fastify/cookie is not a dependency, and one cookie needs a few lines.
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
