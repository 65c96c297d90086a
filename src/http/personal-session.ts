/**
 * The browser session of a personal timetable: after signing in on the page, the browser keeps the
 * subscription's id and one of its feed tokens in an `HttpOnly` cookie, so that the personal page and its
 * actions need no token in a URL. The cookie is `SameSite=Lax`: another site's form posts arrive without it.
 * Value: `<subscription id>.<feed token>` (both base64url).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Subscription, SubscriptionStore } from '../store/subscription-store.ts';
import { clearCookie, readCookie, setCookie } from './cookies.ts';
import type { PageDeps } from './pages.ts';

export const PERSONAL_COOKIE = 'tts-personal';
/** A year: the feed URL it holds works until rotated or deleted anyway. */
const MAX_AGE_SECONDS = 365 * 24 * 3600;
const VALUE = /^([A-Za-z0-9_-]{16,64})\.([A-Za-z0-9_-]{16,128})$/;

export interface PersonalSession {
  subscription: Subscription;
  /** The feed token this browser holds (its feed URL is `/feeds/personal/<token>.ics`). */
  token: string;
}

/** What reading a session checks its token with (setting and clearing the cookie need only {@link PageDeps}). */
export interface PersonalSessionDeps extends PageDeps {
  readonly subscriptions: Pick<SubscriptionStore, 'verifyToken' | 'get'>;
}

/** Remembers a signed-in subscription in this browser. */
export function setPersonalSession(ctx: PageDeps, reply: FastifyReply, id: string, token: string): void {
  setCookie(reply, ctx.config.publicUrl, PERSONAL_COOKIE, `${id}.${token}`, { maxAge: MAX_AGE_SECONDS });
}

/** Forgets it (sign out, or the subscription was deleted). */
export function clearPersonalSession(ctx: PageDeps, reply: FastifyReply): void {
  clearCookie(reply, ctx.config.publicUrl, PERSONAL_COOKIE);
}

/**
 * The subscription this browser is signed in to, when its cookie holds a live token of an existing
 * subscription; undefined otherwise (no cookie, a revoked token, a deleted subscription).
 */
export async function readPersonalSession(
  ctx: PersonalSessionDeps,
  request: FastifyRequest,
): Promise<PersonalSession | undefined> {
  const match = VALUE.exec(readCookie(request.headers.cookie, PERSONAL_COOKIE) ?? '');
  if (match === null) return undefined;
  const [, id, token] = match as unknown as [string, string, string];
  if (!(await ctx.subscriptions.verifyToken(id, token))) return undefined;
  const subscription = await ctx.subscriptions.get(id);
  return subscription === undefined ? undefined : { subscription, token };
}
