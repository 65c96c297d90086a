/**
 * Browser sessions of personal subscriptions: what a sign-in on the page opens. A session is a secret of its
 * own in the browser's cookie; Redis keeps its SHA-256 in a ZSET of the subscription's sessions, scored by when
 * it expires (at most {@link MAX_SESSIONS}), and a STRING with the same expiry leading to the subscription. A
 * session is renewed when it is used, at most once a day ({@link SESSION_RENEW_MS}), to {@link SESSION_DAYS}
 * days from then: a browser in use stays signed in, one forgotten on a lab computer is signed out
 * {@link SESSION_DAYS} days after its last use. A session is not a feed URL: opening one never revokes a URL a
 * calendar reads. The subscription store (subscription-store.ts) answers for them; rotating the feed URL (its
 * script) closes them too.
 */
import { loadScript } from '../lib/lua-script.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import { constantTimeEqual, hashToken, randomToken } from '../security/tokens.ts';
import { SUBSCRIPTION_ID } from '../timetable/source.ts';
import { SignUpContentionError } from './errors.ts';
import type { RedisKeys } from './keys.ts';
import { GONE, STALE } from './subscription-scripts.ts';

/** Browser sessions of one subscription at once; a sign-in beyond them closes the oldest. */
export const MAX_SESSIONS = 10;

/** Days a browser session lasts after its sign-in, or after its last use (renewed at most once a day). */
export const SESSION_DAYS = 90;

/** A session used is renewed once this much of its life has passed since it was opened or last renewed. */
export const SESSION_RENEW_MS = 86_400_000;

const SESSION_MS = SESSION_DAYS * 86_400_000;

/** How a holder proves it is signed in: by a live browser session, or (signed in before sessions) a live feed token. */
export type TokenHolder = { session: string } | { token: string };

/** Opens a browser session of a subscription, closing the oldest beyond the most (subscription-session.lua). */
const OPEN_SESSION = loadScript(import.meta.dirname, 'subscription-session');

/** Closes every browser session of a subscription but the holder's (subscription-close-sessions.lua). */
const CLOSE_OTHER_SESSIONS = loadScript(import.meta.dirname, 'subscription-close-sessions');

/** Renews a live browser session (subscription-renew-session.lua). */
const RENEW_SESSION = loadScript(import.meta.dirname, 'subscription-renew-session');

/** Answered by subscription-close-sessions.lua when the holder is not signed in. */
const NOT_HOLDER = -3;

/** How often a write is tried again after a sign-in got in between. */
const ATTEMPTS = 16;

/** The browser sessions of personal subscriptions. */
export class SubscriptionSessions {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;

  constructor(redis: RedisClient, keys: RedisKeys) {
    this.redis = redis;
    this.keys = keys;
  }

  /**
   * Opens a browser session of subscription `id` (a sign-in on the page), closing the oldest beyond
   * {@link MAX_SESSIONS}. Answers its secret, the only copy (the browser's cookie keeps it), or undefined when
   * the subscription is gone. Throws SignUpContentionError when other sign-ins kept getting in between.
   */
  async open(id: string, now: number): Promise<string | undefined> {
    if (!SUBSCRIPTION_ID.test(id)) return undefined;
    const token = randomToken();
    const sessionHash = hashToken(token);
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const open = await this.hashes(id);
      const result = await OPEN_SESSION.run(
        this.redis,
        [
          this.keys.subscription(id),
          this.keys.subscriptionSessions(id),
          this.keys.subscriptionSession(sessionHash),
          ...open.map((hash) => this.keys.subscriptionSession(hash)),
        ],
        [id, sessionHash, String(now), String(SESSION_MS), String(MAX_SESSIONS), ...open],
      );
      if (result === GONE) return undefined;
      if (result === STALE) continue;
      return token;
    }
    throw new SignUpContentionError();
  }

  /**
   * Whether `session` is a live browser session of subscription `id` (compared in constant time). A live one
   * used a day or more after it was opened or last renewed is renewed, to {@link SESSION_DAYS} days from `now`.
   */
  async verify(id: string, session: string, now?: number): Promise<boolean> {
    if (!SUBSCRIPTION_ID.test(id) || session === '') return false;
    const sessionHash = hashToken(session);
    const owner = await this.redis.get(this.keys.subscriptionSession(sessionHash));
    if (owner === null || !constantTimeEqual(owner, id)) return false;
    if (now !== undefined) {
      await RENEW_SESSION.run(
        this.redis,
        [this.keys.subscriptionSessions(id), this.keys.subscriptionSession(sessionHash)],
        [id, sessionHash, String(now), String(SESSION_MS), String(SESSION_RENEW_MS)],
      );
    }
    return true;
  }

  /** Closes a browser session of subscription `id` (its sign-out). No-op for one that is not live. */
  async close(id: string, session: string): Promise<void> {
    if (!(await this.verify(id, session))) return;
    const sessionHash = hashToken(session);
    await this.redis
      .multi()
      .del(this.keys.subscriptionSession(sessionHash))
      .zrem(this.keys.subscriptionSessions(id), sessionHash)
      .exec();
  }

  /**
   * Closes every browser session of subscription `id` but the holder's, and from then on a cookie holding a feed
   * token (from before sessions) no longer signs in to it. Resolves to how many sessions it closed, or undefined
   * when the holder is not signed in or the subscription is gone. Throws SignUpContentionError when sign-ins kept
   * getting in between.
   */
  async closeOthers(id: string, holder: TokenHolder, now: number): Promise<number | undefined> {
    if (!SUBSCRIPTION_ID.test(id)) return undefined;
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const open = await this.hashes(id);
      const result = Number(
        await CLOSE_OTHER_SESSIONS.run(
          this.redis,
          [
            this.keys.subscription(id),
            this.keys.subscriptionSessions(id),
            this.holderKey(holder),
            ...open.map((hash) => this.keys.subscriptionSession(hash)),
          ],
          [id, String(now), keptSession(holder), ...open],
        ),
      );
      if (result === STALE) continue;
      return result === GONE || result === NOT_HOLDER ? undefined : result;
    }
    throw new SignUpContentionError();
  }

  /** How many browser sessions of subscription `id` are open now. */
  async count(id: string, now: number): Promise<number> {
    if (!SUBSCRIPTION_ID.test(id)) return 0;
    return this.redis.zcount(this.keys.subscriptionSessions(id), `(${now}`, '+inf');
  }

  /**
   * Closes every browser session of a deleted subscription. Apart from the deletion: a session left by a sign-in
   * racing it leads to an id no subscription will have again (ids are random), and expires by itself.
   */
  async closeAll(id: string): Promise<void> {
    const open = await this.hashes(id);
    await this.redis.del(
      this.keys.subscriptionSessions(id),
      ...open.map((hash) => this.keys.subscriptionSession(hash)),
    );
  }

  /** The hashes of the sessions of subscription `id`, expired ones included (a script drops those). */
  hashes(id: string): Promise<string[]> {
    return this.redis.zrange(this.keys.subscriptionSessions(id), '0', '-1');
  }

  /** The index key that proves `holder` is signed in: its session's, or its feed token's. */
  holderKey(holder: TokenHolder): string {
    return 'session' in holder
      ? this.keys.subscriptionSession(hashToken(holder.session))
      : this.keys.subscriptionToken(hashToken(holder.token));
  }
}

/** The session hash a closing of sessions keeps: the holder's own, none for a holder by feed token. */
export function keptSession(holder: TokenHolder): string {
  return 'session' in holder ? hashToken(holder.session) : '';
}
