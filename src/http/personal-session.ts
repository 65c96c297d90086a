/**
 * The browser session of a personal timetable: after signing in on the page, the browser keeps the
 * subscription's id and the secret of a session of its own in an `HttpOnly` cookie (`tts-session`), so that the
 * personal page and its actions need no token in a URL. A session is not a feed URL: sessions live in a set of
 * their own (store/subscription-sessions.ts), expire on their own, and a sign-in never revokes a URL a calendar
 * reads. The page shows the subscription's own feed URL, whose token the store keeps sealed. The server decides
 * when a session ends (store/subscription-sessions.ts: 90 days after its last use); the cookie itself is kept
 * as long as browsers keep any ({@link MAX_AGE_SECONDS}), so that a session renewed by use keeps its cookie.
 *
 * Browsers signed in before sessions hold `tts-personal` = `<subscription id>.<feed token>`: they stay signed
 * in while that feed token works (the page shows its URL, as it did), until they sign in again or out, or a new
 * feed URL or «sign out on every other device» ends such sign-ins for the subscription. The cookies are
 * `SameSite=Lax`: another site's form posts arrive without them. Values are base64url.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FeedUrlView, Subscription, SubscriptionStore } from '../store/subscription-store.ts';
import { clearCookie, readCookie, setCookie } from './cookies.ts';
import type { PageDeps } from './pages.ts';

/** The session cookie: `<subscription id>.<session secret>`. */
export const SESSION_COOKIE = 'tts-session';
/** The cookie of browsers signed in before sessions: `<subscription id>.<feed token>`. */
export const PERSONAL_COOKIE = 'tts-personal';
/** 400 days, the most browsers keep a cookie (RFC 6265bis): a session ends on the server, used or not. */
const MAX_AGE_SECONDS = 400 * 24 * 3600;
const VALUE = /^([A-Za-z0-9_-]{16,64})\.([A-Za-z0-9_-]{16,128})$/;

export interface PersonalSession {
  subscription: Subscription;
  /** The feed token whose URL the page shows (`/feeds/personal/<token>.ics`): the subscription's own. */
  token: string;
  /** How this browser proves it is signed in: its session secret, or (signed in before sessions) its feed token. */
  holder: { session: string } | { token: string };
}

/** What reading a session checks it with (setting and clearing the cookie need only {@link PageDeps}). */
export interface PersonalSessionDeps extends PageDeps {
  readonly subscriptions: Pick<
    SubscriptionStore,
    'verifyToken' | 'verifyTokenHolder' | 'verifySession' | 'pageToken' | 'get' | 'feedUrls' | 'sessionCount'
  >;
  /** Epoch ms. */
  readonly now: () => number;
}

/** Remembers a signed-in session in this browser (and forgets a cookie from before sessions). */
export function setPersonalSession(ctx: PageDeps, reply: FastifyReply, id: string, session: string): void {
  setCookie(reply, ctx.config.publicUrl, SESSION_COOKIE, `${id}.${session}`, { maxAge: MAX_AGE_SECONDS });
  clearCookie(reply, ctx.config.publicUrl, PERSONAL_COOKIE);
}

/** Forgets it (sign out, or the subscription was deleted). */
export function clearPersonalSession(ctx: PageDeps, reply: FastifyReply): void {
  clearCookie(reply, ctx.config.publicUrl, PERSONAL_COOKIE);
  clearCookie(reply, ctx.config.publicUrl, SESSION_COOKIE);
}

/** The session secret and subscription id this browser's cookie holds, unchecked; undefined without one. */
export function sessionCookie(request: FastifyRequest): { id: string; session: string } | undefined {
  const match = VALUE.exec(readCookie(request.headers.cookie, SESSION_COOKIE) ?? '');
  if (match === null) return undefined;
  const [, id, session] = match as unknown as [string, string, string];
  return { id, session };
}

/**
 * True when this browser holds a sign-in cookie of either kind, live or not: a browser that has one but no live
 * session was signed out elsewhere (another device's «sign out everywhere else», a new feed URL, the
 * subscription deleted) or its session expired, and is told so rather than silently sent home.
 */
export function holdsSignInCookie(request: FastifyRequest): boolean {
  return sessionCookie(request) !== undefined || VALUE.test(readCookie(request.headers.cookie, PERSONAL_COOKIE) ?? '');
}

/**
 * The subscription this browser is signed in to, when its cookie holds a live session of an existing
 * subscription that has a page URL (or a live feed token, from before sessions); undefined otherwise (no
 * cookie, a closed or expired session, a revoked token, a deleted subscription).
 */
export async function readPersonalSession(
  ctx: PersonalSessionDeps,
  request: FastifyRequest,
): Promise<PersonalSession | undefined> {
  const current = sessionCookie(request);
  if (current !== undefined) {
    // A session in use is renewed (at most once a day): a browser used every week stays signed in.
    if (!(await ctx.subscriptions.verifySession(current.id, current.session, ctx.now()))) return undefined;
    const [subscription, token] = await Promise.all([
      ctx.subscriptions.get(current.id),
      ctx.subscriptions.pageToken(current.id),
    ]);
    if (subscription === undefined || token === undefined) return undefined;
    return { subscription, token, holder: { session: current.session } };
  }
  const match = VALUE.exec(readCookie(request.headers.cookie, PERSONAL_COOKIE) ?? '');
  if (match === null) return undefined;
  const [, id, token] = match as unknown as [string, string, string];
  if (!(await ctx.subscriptions.verifyTokenHolder(id, token))) return undefined;
  const subscription = await ctx.subscriptions.get(id);
  return subscription === undefined ? undefined : { subscription, token, holder: { token } };
}

/**
 * What the personal page's controls show the browser of `session`: the live feed URLs (the one this page shows
 * marked), and how many browsers are signed in (a browser signed in before sessions counts itself too).
 */
export async function personalControls(
  ctx: PersonalSessionDeps,
  session: PersonalSession,
): Promise<{ urls: FeedUrlView[]; browsers: number }> {
  const { id } = session.subscription;
  const [urls, sessions] = await Promise.all([
    ctx.subscriptions.feedUrls(id, session.token),
    ctx.subscriptions.sessionCount(id, ctx.now()),
  ]);
  return { urls, browsers: sessions + ('token' in session.holder ? 1 : 0) };
}
