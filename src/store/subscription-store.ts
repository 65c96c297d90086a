/**
 * Personal subscriptions in Redis. One HASH per subscription holds its public fields and the university
 * credential sealed with the secret box (bound to the subscription id); a ZSET holds the SHA-256 of each of
 * its live secret feed tokens, scored by when each was last used, and a STRING keyed by each hash leads from a
 * feed URL to the subscription. Neither the credential nor a token is ever stored in plain text.
 *
 * Feed URLs and browser sessions are apart. A feed URL is what a calendar reads: at most {@link MAX_LIVE_TOKENS}
 * of them issued by sign-ups through the API, plus the page's own URL, the one the personal page shows every
 * browser signed in to it (its token sealed in the hash as `pageToken`, its hash as `pageTokenHash`: the page
 * must show it again, and only the secret box opens it). When a feed URL is read, when and by what kind of
 * client is kept in the hash (`read:<token hash>`, a word of a fixed list; see subscription-feed-urls.ts). A
 * browser session is what a sign-in on the page opens (subscription-sessions.ts): a sign-in therefore never
 * revokes a feed URL; the oldest session is closed instead. A new feed URL closes every session but the one that
 * asked for it. One owner (a university user, or an id-less credential) has one subscription: a STRING per owner
 * leads to it, and signing up again issues another token to it. A counter, `credentialVersion`, goes up with
 * every credential stored, so that a refresh can only reject the credential it actually used. Whatever stops
 * feed tokens from working (a revocation, a rotation, a deletion) is announced on the feed-updates channel by
 * the script that does it, in the same atomic step (see `store/feed-updates.ts`): API processes keep tokens in
 * memory for Redis outages, and must drop them.
 */

import { loadScript } from '../lib/lua-script.ts';
import { scanKeys } from '../lib/redis-scan.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import { SecretKeyMissingError } from '../security/errors.ts';
import { SecretBox } from '../security/secret-box.ts';
import { constantTimeEqual, hashToken, keyedDigest, randomToken } from '../security/tokens.ts';
import { SUBSCRIPTION_ID } from '../timetable/source.ts';
import type { SubscriberOptions } from '../timetable/types.ts';
import { SignUpContentionError } from './errors.ts';
import { type FeedUpdate, feedUpdateMessage } from './feed-updates.ts';
import type { RedisKeys } from './keys.ts';
import { type FeedUrlView, feedUrlViews, URL_KEY_LENGTH } from './subscription-feed-urls.ts';
import {
  CREATE_UNLESS_OWNED,
  DELETE_SUBSCRIPTION,
  DROP_OWNER,
  GONE,
  ISSUE_TOKEN,
  PAGE_TOKEN,
  REVOKE_TOKEN,
  ROTATE_TOKENS,
  STALE,
  TOUCH_TOKEN,
  TRIM_TOKENS,
} from './subscription-scripts.ts';
import { keptSession, SubscriptionSessions, type TokenHolder } from './subscription-sessions.ts';

/** `needs-credential`: the upstream rejected the stored credential; refreshes stop until it is replaced. */
export type SubscriptionStatus = 'active' | 'needs-credential';

/** A personal subscription as stored (the credential and the token are never part of it). */
export interface Subscription {
  id: string;
  /** `personal:<id>`. */
  source: string;
  /** Calendar name, from the upstream profile. */
  name: string;
  /** The university's id of the person; null when the university did not say (see {@link NewSubscription}). */
  upstreamUserId: number | null;
  status: SubscriptionStatus;
  statusReason?: string;
  /** The person's study group as the university's profile named it at sign-up, when it did. */
  group?: { id: number; name: string };
  /**
   * Feed options the owner saved: the feed URL without options of its own serves this variant, so calendars
   * subscribed already follow a change without subscribing again.
   */
  feedOptions?: SubscriberOptions;
  /**
   * When feed options were last saved or cleared (ms): the plain feed changed then, so its Last-Modified is
   * never older, or a client revalidating with If-Modified-Since would keep the feed it had.
   */
  feedOptionsSavedAt?: number;
  createdAt: number;
  updatedAt: number;
}

/** A subscription's saved feed options (none: the plain feed) and when they were last saved or cleared. */
export interface SavedFeedOptions {
  options?: SubscriberOptions;
  savedAt?: number;
}

/** What a new subscription is made of. */
export interface NewSubscription {
  credential: string;
  name: string;
  /**
   * Null when the university's profile has no user id: the subscription is then tied to its credential (a
   * keyed digest of it is stored), since nothing else tells whose it is.
   */
  upstreamUserId: number | null;
  /** The study group the profile names, when it gives its id and name. */
  group?: { id: number; name: string } | undefined;
  now: number;
}

/** A subscription with a feed token issued now: the only copy of the token there will ever be. */
export interface IssuedSubscription {
  subscription: Subscription;
  token: string;
  /** False when the owner already had this subscription (the token is then one more of its tokens). */
  created: boolean;
  /** How many of its least recently used tokens this issue revoked (beyond {@link MAX_LIVE_TOKENS}). */
  revoked: number;
  /**
   * For a sign-in on the page ({@link SubscriptionStore.create} with `page`): whether `token`, the page's own
   * URL, was issued now (false: the subscription had it, and this is its copy).
   */
  pageTokenIssued?: boolean;
}

/**
 * Feed tokens issued through the API that work at once; issuing one more revokes the least recently used. The
 * page's own URL is one more, never counted and never revoked by an issue.
 */
export const MAX_LIVE_TOKENS = 5;

export { type FeedUrlView, URL_KEY_LENGTH } from './subscription-feed-urls.ts';
export { MAX_SESSIONS, SESSION_DAYS, type TokenHolder } from './subscription-sessions.ts';

/**
 * How often a write guarded by `tokenSeq` is tried again after another write to the same subscription got in
 * between. Sign-ups of one owner take turns under a lock, so this only matters when the lock expired.
 */
const ATTEMPTS = 16;

/** What a credential digest is for (the HMAC purpose): recognising the credential of an id-less subscription. */
const CREDENTIAL_DIGEST_PURPOSE = 'subscription-credential';

/** Subscription ids: 16 random bytes (128 bits), base64url, 22 characters (see `SUBSCRIPTION_ID`). */
const ID_BYTES = 16;

/** Updates a subscription hash only while it exists and its credential version holds (subscription-update.lua). */
const UPDATE_IF_CURRENT = loadScript(import.meta.dirname, 'subscription-update');

/** How an update is guarded and what it changes besides its fields. */
interface UpdateOptions {
  /** Update only while the stored credential version is this one. */
  ifVersion?: string | undefined;
  /** A new credential is stored: bump the version. */
  bumpVersion?: boolean | undefined;
  /** Fields to delete. */
  remove?: readonly string[] | undefined;
}

/** A credential with the version it was stored under (pass the version back to `markNeedsCredential`). */
export interface VersionedCredential {
  credential: string;
  version: string;
}

/** The associated data that binds a sealed credential to its subscription. */
function credentialContext(id: string): string {
  return `subscription:${id}:credential`;
}

/** The associated data that binds the sealed page URL token to its subscription. */
function pageTokenContext(id: string): string {
  return `subscription:${id}:page-token`;
}

/** Personal subscriptions: create, look up by id or feed token, read the credential, mark, replace, delete. */
export class SubscriptionStore {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly box: SecretBox;
  private readonly secretKey: Buffer | undefined;
  private readonly sessions: SubscriptionSessions;

  /** `secretKey` is `Config.secretKey`; without it, anything touching a credential throws SecretKeyMissingError. */
  constructor(redis: RedisClient, keys: RedisKeys, secretKey: Buffer | undefined) {
    this.redis = redis;
    this.keys = keys;
    this.box = new SecretBox(secretKey);
    this.secretKey = secretKey === undefined ? undefined : Buffer.from(secretKey);
    this.sessions = new SubscriptionSessions(redis, keys);
  }

  /** Whether credentials can be stored (a `SECRET_KEY` is configured). */
  get canStoreCredentials(): boolean {
    return this.box.available;
  }

  /**
   * Signs an owner up in the store: a new subscription with its first feed token, or, when this university
   * user (this credential, for a profile without a user id) has a subscription already, that one with one more
   * token, the least recently used revoked beyond {@link MAX_LIVE_TOKENS}, and `credential` stored as its
   * credential (the one just verified). Either way the returned token is the only copy there will ever be. With
   * `pending`, an existing subscription keeps all its tokens and may hold one more than the limit until
   * {@link trimTokens} (the caller first makes sure the new token will last: should it fail, revoking the new
   * token leaves the person's feed URLs as they were). Throws SignUpContentionError when other writes to the
   * same subscription kept getting in between.
   */
  async create(
    input: NewSubscription,
    options: { pending?: boolean; page?: boolean } = {},
  ): Promise<IssuedSubscription> {
    const owner = this.ownerOf(input.upstreamUserId, input.credential);
    const max = MAX_LIVE_TOKENS + (options.pending ? 1 : 0);
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const existing = await this.redis.get(this.keys.subscriptionOwner(owner));
      let issued: IssuedSubscription | undefined;
      if (existing === null) issued = await this.createUnlessOwned(owner, input, options.page ?? false);
      else if (options.page) issued = await this.signInExisting(existing, owner, input);
      else issued = await this.issueToken(existing, owner, input, max);
      if (issued !== undefined) return issued;
    }
    throw new SignUpContentionError();
  }

  /**
   * A sign-in on the page to the existing subscription `id` of `owner`: the credential just checked is stored
   * (as {@link issueToken} stores it) and the page's own URL is the token answered, issued now when the
   * subscription has none (no other token is revoked for it). Undefined when it is gone (its owner index is
   * then dropped): the caller reads again.
   */
  private async signInExisting(
    id: string,
    owner: string,
    input: NewSubscription,
  ): Promise<IssuedSubscription | undefined> {
    const fields = this.credentialFields(id, input);
    const remove = ['statusReason', ...(input.group ? [] : ['groupId', 'groupName'])];
    if (!(await this.update(id, fields, { bumpVersion: true, remove }))) {
      await DROP_OWNER.run(this.redis, [this.keys.subscriptionOwner(owner)], [id]);
      return undefined;
    }
    let token = await this.pageToken(id);
    let pageTokenIssued = false;
    if (token === undefined) {
      token = await this.issuePageToken(id, input.now);
      pageTokenIssued = true;
    }
    const subscription = await this.get(id);
    if (subscription === undefined || token === undefined) return undefined;
    return { subscription, token, created: false, revoked: 0, pageTokenIssued };
  }

  /**
   * The page's own feed token of subscription `id`, opened from its sealed copy; undefined when it has none (or
   * it no longer works, or cannot be opened under this SECRET_KEY).
   */
  async pageToken(id: string): Promise<string | undefined> {
    if (!SUBSCRIPTION_ID.test(id)) return undefined;
    const [sealed, hash] = await this.redis.hmget(this.keys.subscription(id), 'pageToken', 'pageTokenHash');
    if (!sealed || !hash) return undefined;
    let token: string;
    try {
      token = this.box.open(sealed, pageTokenContext(id));
    } catch {
      return undefined;
    }
    return hashToken(token) === hash ? token : undefined;
  }

  /**
   * Issues the page's own feed URL of subscription `id` unless it has one (then that one is answered, when it
   * can be opened): revokes nothing. Undefined when the subscription is gone.
   */
  async issuePageToken(id: string, now: number): Promise<string | undefined> {
    if (!SUBSCRIPTION_ID.test(id)) return undefined;
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const token = randomToken();
      const tokenHash = hashToken(token);
      const result = await PAGE_TOKEN.run(
        this.redis,
        [this.keys.subscription(id), this.keys.subscriptionTokens(id), this.keys.subscriptionToken(tokenHash)],
        [id, tokenHash, String(now), this.box.seal(token, pageTokenContext(id))],
      );
      if (result === GONE) return undefined;
      if (result === 1) return token;
      const kept = await this.pageToken(id);
      if (kept !== undefined) return kept;
      // A page URL that cannot be opened (sealed under another key): revoked, and issued anew.
      const hash = await this.redis.hget(this.keys.subscription(id), 'pageTokenHash');
      if (hash) await this.revokeByHash(id, hash);
    }
    throw new SignUpContentionError();
  }

  /** Opens a browser session of subscription `id` (subscription-sessions.ts `open`). */
  openSession(id: string, now: number): Promise<string | undefined> {
    return this.sessions.open(id, now);
  }

  /**
   * Whether `session` is a live browser session of subscription `id`; with `now`, one in use is renewed
   * (subscription-sessions.ts `verify`).
   */
  verifySession(id: string, session: string, now?: number): Promise<boolean> {
    return this.sessions.verify(id, session, now);
  }

  /** Closes a browser session of subscription `id` (its sign-out). No-op for one that is not live. */
  closeSession(id: string, session: string): Promise<void> {
    return this.sessions.close(id, session);
  }

  /**
   * Closes every browser session of subscription `id` but the holder's («sign out on every other device»);
   * undefined when the holder is not signed in (subscription-sessions.ts `closeOthers`).
   */
  closeOtherSessions(id: string, holder: TokenHolder, now: number): Promise<number | undefined> {
    return this.sessions.closeOthers(id, holder, now);
  }

  /** How many browser sessions of subscription `id` are open now. */
  sessionCount(id: string, now: number): Promise<number> {
    return this.sessions.count(id, now);
  }

  /**
   * Whether `token`, from the cookie of a browser signed in before sessions, still signs it in to subscription
   * `id`: a live feed token of it, while no rotation or «sign out on every other device» has closed such
   * sign-ins (`sessionsOnly`).
   */
  async verifyTokenHolder(id: string, token: string): Promise<boolean> {
    if (!(await this.verifyToken(id, token))) return false;
    return (await this.redis.hexists(this.keys.subscription(id), 'sessionsOnly')) === 0;
  }

  /**
   * The live feed URLs of subscription `id`: the one the page shows first (`shown`, the token it shows; the
   * page's own when omitted), then the most recently read first: for its owner to see which calendars read
   * which, and revoke one.
   */
  async feedUrls(id: string, shown?: string): Promise<FeedUrlView[]> {
    if (!SUBSCRIPTION_ID.test(id)) return [];
    const [{ tokens }, fields] = await Promise.all([
      this.tokenState(id),
      this.redis.hgetall(this.keys.subscription(id)),
    ]);
    return feedUrlViews(tokens, fields, shown === undefined ? undefined : hashToken(shown));
  }

  /**
   * Revokes the feed URL of subscription `id` that its owner names by `key` ({@link FeedUrlView.key}). Answers
   * `page` when that was the page's own URL (none is issued in its place here), `other` for another one,
   * undefined when no live URL has that key.
   */
  async revokeFeedUrl(id: string, key: string): Promise<'page' | 'other' | undefined> {
    if (!SUBSCRIPTION_ID.test(id) || !/^[0-9a-f]+$/.test(key) || key.length !== URL_KEY_LENGTH) return undefined;
    const { tokens } = await this.tokenState(id);
    const hash = tokens.find((candidate) => candidate.startsWith(key));
    if (hash === undefined) return undefined;
    const result = await this.revokeByHash(id, hash);
    if (result === 2) return 'page';
    return result === 1 ? 'other' : undefined;
  }

  /**
   * Who owns a subscription, as its owner index names it: `user:<id>`, or for a profile without a user id
   * `credential:<keyed digest>` (nothing else tells such people apart). Throws SecretKeyMissingError for the
   * latter without a `SECRET_KEY`.
   */
  ownerOf(upstreamUserId: number | null, credential: string): string {
    return upstreamUserId === null ? `credential:${this.credentialDigest(credential)}` : `user:${upstreamUserId}`;
  }

  /**
   * Takes back a token issued for an answer that was never given (the sign-up failed after it). No-op when the
   * token is not, or no longer, one of subscription `id`'s.
   */
  async revokeToken(id: string, token: string): Promise<void> {
    if (!SUBSCRIPTION_ID.test(id)) return;
    await this.revokeByHash(id, hashToken(token));
  }

  /** Revokes the token with hash `tokenHash` of subscription `id`: 2 when it was the page's URL, 1 another, 0 none. */
  private async revokeByHash(id: string, tokenHash: string): Promise<number> {
    const result = await REVOKE_TOKEN.run(
      this.redis,
      [this.keys.subscriptionTokens(id), this.keys.subscriptionToken(tokenHash), this.keys.subscription(id)],
      [tokenHash, id, ...this.announcement('tokens', id)],
    );
    return Number(result);
  }

  /**
   * Revokes the least recently used tokens of subscription `id` beyond {@link MAX_LIVE_TOKENS}, once the token
   * of a pending sign-up ({@link create}) is confirmed. Resolves to how many it revoked (0 when it is gone).
   * Throws SignUpContentionError when other token writes kept getting in between.
   */
  async trimTokens(id: string): Promise<number> {
    if (!SUBSCRIPTION_ID.test(id)) return 0;
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const { seq, tokens } = await this.tokenState(id);
      const result = await TRIM_TOKENS.run(
        this.redis,
        [
          this.keys.subscription(id),
          this.keys.subscriptionTokens(id),
          ...tokens.map((hash) => this.keys.subscriptionToken(hash)),
        ],
        [seq, String(tokens.length), ...tokens, String(MAX_LIVE_TOKENS), ...this.announcement('tokens', id)],
      );
      if (result === GONE) return 0;
      if (result === STALE) continue;
      return Number(result);
    }
    throw new SignUpContentionError();
  }

  /**
   * Replaces every feed token of subscription `id` with one new one, the page's own URL from now on, for the
   * holder of a live browser session (or of a live token, signed in before sessions): every old feed URL (a
   * leaked one included) stops working at once, and every browser session but the holder's is closed (a holder
   * by feed token keeps none: its caller opens it one). Answers the new token, or undefined when the holder's
   * session or token is not live for `id` or the subscription is gone. Throws SignUpContentionError when other
   * token writes or sign-ins kept getting in between.
   */
  async rotateToken(id: string, holder: TokenHolder, now: number): Promise<string | undefined> {
    if (!SUBSCRIPTION_ID.test(id)) return undefined;
    const token = randomToken();
    const tokenHash = hashToken(token);
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const { seq, tokens } = await this.tokenState(id);
      const sessions = await this.sessions.hashes(id);
      const result = await ROTATE_TOKENS.run(
        this.redis,
        [
          this.keys.subscription(id),
          this.keys.subscriptionTokens(id),
          this.sessions.holderKey(holder),
          this.keys.subscriptionToken(tokenHash),
          this.keys.subscriptionSessions(id),
          ...sessions.map((hash) => this.keys.subscriptionSession(hash)),
          ...tokens.map((hash) => this.keys.subscriptionToken(hash)),
        ],
        [
          id,
          seq,
          tokenHash,
          String(now),
          this.box.seal(token, pageTokenContext(id)),
          ...this.announcement('tokens', id),
          keptSession(holder),
          String(sessions.length),
          ...sessions,
        ],
      );
      if (result === STALE) continue;
      if (result !== 1) return undefined;
      return token;
    }
    throw new SignUpContentionError();
  }

  /**
   * Records that `token`, a live token of subscription `id`, was read at `now` by a client of kind `client` (a
   * word of a fixed list: serving/token-use.ts): issuing one more token beyond {@link MAX_LIVE_TOKENS} revokes
   * the least recently used, and its owner sees when and by what each URL was read. No-op for a token that is
   * not in the subscription's set (revoked meanwhile). One script; callers throttle it.
   */
  async recordTokenUse(id: string, token: string, now: number, client = 'other'): Promise<void> {
    if (!SUBSCRIPTION_ID.test(id) || !/^[a-z0-9-]{1,20}$/.test(client)) return;
    await TOUCH_TOKEN.run(
      this.redis,
      [this.keys.subscriptionTokens(id), this.keys.subscription(id)],
      [hashToken(token), String(now), client],
    );
  }

  /**
   * Saves the feed options of subscription `id` (none: the plain feed again). Resolves to whether it saved;
   * false when the subscription is gone.
   */
  async saveFeedOptions(id: string, options: SubscriberOptions, now: number): Promise<boolean> {
    const empty = Object.keys(options).length === 0;
    const set: Record<string, string> = { updatedAt: String(now), feedOptionsSavedAt: String(now) };
    if (!empty) set.feedOptions = JSON.stringify(options);
    return this.update(id, set, { remove: empty ? ['feedOptions'] : [] });
  }

  /** The saved feed options of subscription `id` and when they were saved (the personal feed's hot path asks). */
  async feedOptionsOf(id: string): Promise<SavedFeedOptions> {
    if (!SUBSCRIPTION_ID.test(id)) return {};
    const [text, savedAt] = await this.redis.hmget(this.keys.subscription(id), 'feedOptions', 'feedOptionsSavedAt');
    const options = parseFeedOptions(text);
    const at = Number(savedAt);
    return {
      ...(options !== undefined ? { options } : {}),
      ...(savedAt !== null && Number.isFinite(at) ? { savedAt: at } : {}),
    };
  }

  /** How many feed tokens of subscription `id` work now. */
  async liveTokenCount(id: string): Promise<number> {
    if (!SUBSCRIPTION_ID.test(id)) return 0;
    const [count, legacy] = await Promise.all([
      this.redis.zcard(this.keys.subscriptionTokens(id)),
      this.redis.hexists(this.keys.subscription(id), 'tokenHash'),
    ]);
    return count + legacy;
  }

  /** A new subscription with its first token, unless `owner` has one (then undefined: the caller reads it). */
  private async createUnlessOwned(
    owner: string,
    input: NewSubscription,
    page: boolean,
  ): Promise<IssuedSubscription | undefined> {
    const id = randomToken(ID_BYTES);
    const token = randomToken();
    const tokenHash = hashToken(token);
    const subscription: Subscription = {
      id,
      source: `personal:${id}`,
      name: input.name,
      upstreamUserId: input.upstreamUserId,
      status: 'active',
      ...(input.group ? { group: input.group } : {}),
      createdAt: input.now,
      updatedAt: input.now,
    };
    const fields = {
      ...toFields(subscription),
      credential: this.box.seal(input.credential, credentialContext(id)),
      credentialVersion: '1',
      ...(input.upstreamUserId === null ? { credentialDigest: this.credentialDigest(input.credential) } : {}),
      // Signed in on the page: its first token is the page's own URL.
      ...(page ? { pageToken: this.box.seal(token, pageTokenContext(id)), pageTokenHash: tokenHash } : {}),
    };
    const owned = await CREATE_UNLESS_OWNED.run(
      this.redis,
      [
        this.keys.subscriptionOwner(owner),
        this.keys.subscription(id),
        this.keys.subscriptionTokens(id),
        this.keys.subscriptionToken(tokenHash),
      ],
      [id, tokenHash, String(input.now), ...Object.entries(fields).flat()],
    );
    if (owned !== id) return undefined;
    return { subscription, token, created: true, revoked: 0, ...(page ? { pageTokenIssued: true } : {}) };
  }

  /**
   * One more token for the existing subscription `id` of `owner`, with the new credential and name. Undefined
   * when it changed meanwhile or is gone (its owner index is then dropped): the caller reads again.
   */
  private async issueToken(
    id: string,
    owner: string,
    input: NewSubscription,
    max: number,
  ): Promise<IssuedSubscription | undefined> {
    const { seq, tokens } = await this.tokenState(id);
    const token = randomToken();
    const tokenHash = hashToken(token);
    const fields = this.credentialFields(id, input);
    const result = await ISSUE_TOKEN.run(
      this.redis,
      [
        this.keys.subscription(id),
        this.keys.subscriptionTokens(id),
        this.keys.subscriptionToken(tokenHash),
        ...tokens.map((hash) => this.keys.subscriptionToken(hash)),
      ],
      [
        id,
        tokenHash,
        seq,
        String(tokens.length),
        ...tokens,
        String(input.now),
        String(max),
        ...Object.entries(fields).flat(),
        ...this.announcement('tokens', id),
      ],
    );
    if (result === GONE) await DROP_OWNER.run(this.redis, [this.keys.subscriptionOwner(owner)], [id]);
    if (result === GONE || result === STALE) return undefined;
    const subscription = await this.get(id);
    return subscription === undefined ? undefined : { subscription, token, created: false, revoked: Number(result) };
  }

  /**
   * The hash fields a sign-up or sign-in to the existing subscription `id` sets: the credential just checked
   * (sealed), the name and group its profile gives, and the status it makes active again.
   */
  private credentialFields(id: string, input: NewSubscription): Record<string, string> {
    return {
      credential: this.box.seal(input.credential, credentialContext(id)),
      name: input.name,
      status: 'active',
      updatedAt: String(input.now),
      ...(input.group ? groupFields(input.group) : {}),
    };
  }

  /**
   * The token counter and the live token hashes of `id`, least recently used first (one from before token sets
   * included).
   */
  private async tokenState(id: string): Promise<{ seq: string; tokens: string[] }> {
    const [seq, legacy] = await this.redis.hmget(this.keys.subscription(id), 'tokenSeq', 'tokenHash');
    const live = await this.redis.zrange(this.keys.subscriptionTokens(id), '0', '-1');
    // Read apart, but a change between the two reads raises tokenSeq, which the script checks.
    const tokens = legacy && !live.includes(legacy) ? [legacy, ...live] : live;
    return { seq: seq ?? '0', tokens };
  }

  /** The subscription, or undefined when there is none (a malformed id included). */
  async get(id: string): Promise<Subscription | undefined> {
    if (!SUBSCRIPTION_ID.test(id)) return undefined;
    const fields = await this.redis.hgetall(this.keys.subscription(id));
    return fields.id === undefined ? undefined : fromFields(fields);
  }

  /** The id of the subscription whose secret feed token this is. Looked up by hash: the token is not stored. */
  async idByToken(token: string): Promise<string | undefined> {
    if (token === '') return undefined;
    return (await this.redis.get(this.keys.subscriptionToken(hashToken(token)))) ?? undefined;
  }

  /**
   * The subscription id each token hash leads to (undefined where none), in order: one pipeline of GETs per
   * {@link HASHES_PER_PIPELINE} hashes, for an API process re-checking the tokens it kept in memory.
   */
  async idsByTokenHash(hashes: readonly string[]): Promise<(string | undefined)[]> {
    const ids: (string | undefined)[] = [];
    for (let start = 0; start < hashes.length; start += HASHES_PER_PIPELINE) {
      const pipeline = this.redis.pipeline();
      for (const hash of hashes.slice(start, start + HASHES_PER_PIPELINE))
        pipeline.get(this.keys.subscriptionToken(hash));
      for (const [error, value] of (await pipeline.exec()) ?? []) {
        if (error !== null) throw error;
        ids.push(typeof value === 'string' ? value : undefined);
      }
    }
    return ids;
  }

  /**
   * Whether `token` is a live feed token of subscription `id` (the id its index leads to, compared in constant
   * time).
   */
  async verifyToken(id: string, token: string): Promise<boolean> {
    if (!SUBSCRIPTION_ID.test(id)) return false;
    const owner = await this.idByToken(token);
    return owner !== undefined && constantTimeEqual(owner, id);
  }

  /** The decrypted credential; undefined when the subscription does not exist. Throws DecryptionError on tampering. */
  async credentialOf(id: string): Promise<string | undefined> {
    return (await this.credentialFor(id))?.credential;
  }

  /**
   * The decrypted credential and its version, read together; undefined when the subscription does not exist.
   * Throws the secret box's DecryptionError (tampered, or sealed under another key) or SecretKeyMissingError
   * unchanged: neither goes away by retrying.
   */
  async credentialFor(id: string): Promise<VersionedCredential | undefined> {
    if (!SUBSCRIPTION_ID.test(id)) return undefined;
    const [sealed, version] = await this.redis.hmget(this.keys.subscription(id), 'credential', 'credentialVersion');
    if (sealed === null || sealed === undefined) return undefined;
    return { credential: this.box.open(sealed, credentialContext(id)), version: version ?? '0' };
  }

  /**
   * Whether `credential` is the one an id-less subscription was made with (or last given), by its keyed digest,
   * compared in constant time. False for a subscription with a user id (no digest is kept for it) or none.
   */
  async isOwnCredential(id: string, credential: string): Promise<boolean> {
    if (!SUBSCRIPTION_ID.test(id)) return false;
    const stored = await this.redis.hget(this.keys.subscription(id), 'credentialDigest');
    return stored !== null && constantTimeEqual(stored, this.credentialDigest(credential));
  }

  /**
   * The upstream rejected the credential: refreshes stop until the user replaces it. With `version` (from
   * {@link credentialFor}), only if that credential is still the stored one: a refresh that began before a
   * replacement must not reject the new credential. Resolves to whether it marked; false if deleted.
   */
  async markNeedsCredential(id: string, reason: string, now: number, version?: string): Promise<boolean> {
    const set = { status: 'needs-credential', statusReason: reason, updatedAt: String(now) };
    return this.update(id, set, { ifVersion: version });
  }

  /**
   * Stores a new (already verified) credential under a new version and makes the subscription active again. No-op if
   * deleted.
   */
  async replaceCredential(id: string, credential: string, now: number): Promise<void> {
    const sealed = this.box.seal(credential, credentialContext(id));
    await this.update(
      id,
      { credential: sealed, status: 'active', updatedAt: String(now) },
      { bumpVersion: true, remove: ['statusReason'] },
    );
  }

  /**
   * Indexes the owners of the subscriptions made before one person had one subscription, once per deployment
   * (a marker key remembers it): each owner is led to their newest. An owner already indexed (someone signed up
   * meanwhile) keeps their index. Resolves to how many owners it indexed. Idempotent, so processes starting
   * together may all run it.
   */
  async indexLegacyOwners(): Promise<number> {
    if ((await this.redis.exists(this.keys.subscriptionOwnersIndexed)) === 1) return 0;
    const newest = new Map<string, Newest>();
    for await (const batch of scanKeys(this.redis, this.keys.subscription('*'), SCAN_COUNT)) {
      for (const found of await readOwners(this.redis, batch)) {
        const seen = newest.get(found.owner);
        if (seen === undefined || found.createdAt > seen.createdAt) newest.set(found.owner, found);
      }
    }
    let indexed = 0;
    for (const [owner, { id }] of newest) {
      if ((await this.redis.set(this.keys.subscriptionOwner(owner), id, 'NX')) !== null) indexed += 1;
    }
    await this.redis.set(this.keys.subscriptionOwnersIndexed, '1');
    return indexed;
  }

  /**
   * Removes the subscription, all its tokens and its owner index (when it leads here: an older subscription of
   * the same person is not indexed). True if it existed. (The caller removes the source.)
   */
  async delete(id: string): Promise<boolean> {
    if (!SUBSCRIPTION_ID.test(id)) return false;
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const [userId, digest] = await this.redis.hmget(this.keys.subscription(id), 'upstreamUserId', 'credentialDigest');
      const owner = storedOwner(userId, digest);
      const { seq, tokens } = await this.tokenState(id);
      const keys = [
        this.keys.subscription(id),
        this.keys.subscriptionTokens(id),
        ...tokens.map((hash) => this.keys.subscriptionToken(hash)),
        ...(owner === undefined ? [] : [this.keys.subscriptionOwner(owner)]),
      ];
      const args = [id, seq, String(tokens.length), ...this.announcement('gone', id)];
      const result = await DELETE_SUBSCRIPTION.run(this.redis, keys, args);
      if (result === STALE) continue;
      if (result === 1) await this.sessions.closeAll(id);
      return result === 1;
    }
    throw new SignUpContentionError();
  }

  /**
   * The channel and message a script passes to PUBLISH (its last two ARGV) when it stops feed tokens of
   * subscription `id` from working (or deletes it), so that API processes drop what they keep of it for Redis
   * outages. Published by the script itself: the change and its announcement happen together or not at all.
   */
  private announcement(kind: Exclude<FeedUpdate['kind'], 'feed'>, id: string): [string, string] {
    return [this.keys.feedUpdates, feedUpdateMessage({ kind, source: `personal:${id}` })];
  }

  private credentialDigest(credential: string): string {
    if (this.secretKey === undefined) throw new SecretKeyMissingError();
    return keyedDigest(this.secretKey, CREDENTIAL_DIGEST_PURPOSE, credential);
  }

  private async update(id: string, set: Record<string, string>, options: UpdateOptions): Promise<boolean> {
    if (!SUBSCRIPTION_ID.test(id)) return false;
    const remove = options.remove ?? [];
    const args = [
      options.ifVersion ?? '',
      options.bumpVersion ? '1' : '0',
      String(remove.length),
      ...remove,
      ...Object.entries(set).flat(),
    ];
    return (await UPDATE_IF_CURRENT.run(this.redis, [this.keys.subscription(id)], [...args])) === 1;
  }
}

/** The public fields as hash fields. */
function toFields(subscription: Subscription): Record<string, string> {
  const fields: Record<string, string> = {
    id: subscription.id,
    source: subscription.source,
    name: subscription.name,
    upstreamUserId: subscription.upstreamUserId === null ? '' : String(subscription.upstreamUserId),
    status: subscription.status,
    createdAt: String(subscription.createdAt),
    updatedAt: String(subscription.updatedAt),
  };
  if (subscription.statusReason !== undefined) fields.statusReason = subscription.statusReason;
  if (subscription.group !== undefined) Object.assign(fields, groupFields(subscription.group));
  return fields;
}

/** The hash fields of a subscription's group. */
function groupFields(group: { id: number; name: string }): Record<string, string> {
  return { groupId: String(group.id), groupName: group.name };
}

/** A stored hash back into a subscription; secret fields are left behind. */
function fromFields(fields: Record<string, string>): Subscription {
  const id = fields.id ?? '';
  const subscription: Subscription = {
    id,
    source: fields.source ?? `personal:${id}`,
    name: fields.name ?? '',
    upstreamUserId: fields.upstreamUserId ? Number(fields.upstreamUserId) : null,
    status: fields.status === 'needs-credential' ? 'needs-credential' : 'active',
    createdAt: Number(fields.createdAt),
    updatedAt: Number(fields.updatedAt),
  };
  if (fields.statusReason !== undefined) subscription.statusReason = fields.statusReason;
  const feedOptions = parseFeedOptions(fields.feedOptions);
  if (feedOptions !== undefined) subscription.feedOptions = feedOptions;
  const savedAt = Number(fields.feedOptionsSavedAt);
  if (fields.feedOptionsSavedAt !== undefined && Number.isFinite(savedAt)) subscription.feedOptionsSavedAt = savedAt;
  const groupId = Number(fields.groupId);
  if (Number.isSafeInteger(groupId) && groupId > 0 && fields.groupName)
    subscription.group = { id: groupId, name: fields.groupName };
  return subscription;
}

/** Saved feed options back from their JSON; undefined when none are saved (or the field is unreadable). */
function parseFeedOptions(text: string | null | undefined): SubscriberOptions | undefined {
  if (text === null || text === undefined || text === '') return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null ? (parsed as SubscriberOptions) : undefined;
  } catch {
    return undefined;
  }
}

/** Token hashes looked up per pipeline: a few tens of KiB per round trip. */
const HASHES_PER_PIPELINE = 500;

/** Subscriptions read per SCAN step when indexing older subscriptions by owner. */
const SCAN_COUNT = 500;

/** The newest subscription seen so far of one owner. */
interface Newest {
  id: string;
  createdAt: number;
}

/**
 * The owner a stored subscription is indexed under, from its hash fields: `user:<id>`, `credential:<digest>`
 * for a profile without a user id, undefined for neither.
 */
function storedOwner(userId: string | null | undefined, digest: string | null | undefined): string | undefined {
  if (userId) return `user:${userId}`;
  return digest ? `credential:${digest}` : undefined;
}

/** The owner and creation time of each subscription hash in `batch` (hashes without an owner are left out). */
async function readOwners(redis: RedisClient, batch: readonly string[]): Promise<(Newest & { owner: string })[]> {
  const pipeline = redis.pipeline();
  for (const key of batch) pipeline.hmget(key, 'id', 'upstreamUserId', 'credentialDigest', 'createdAt');
  const results = (await pipeline.exec()) ?? [];
  const owners: (Newest & { owner: string })[] = [];
  for (const [error, value] of results) {
    if (error !== null) throw error;
    const [id, userId, digest, createdAt] = value as (string | null)[];
    const owner = storedOwner(userId, digest);
    if (!id || owner === undefined) continue;
    owners.push({ id, owner, createdAt: Number(createdAt) || 0 });
  }
  return owners;
}
