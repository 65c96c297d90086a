/**
 * Credentials the university accepted (at a sign-up or a credential replacement), remembered by a keyed digest
 * (HMAC-SHA256 under `SECRET_KEY`: without the key, nothing here can be checked against a guess) for
 * {@link KNOWN_CREDENTIAL_DAYS} after the last time it accepted one. Such a credential is never refused by the
 * sign-up failure limits (http/client-limits.ts): wrong guesses from an address, a campus NAT's say, must not
 * lock out the people behind it whose credentials work. It is still checked with the university each time,
 * so it answers no faster than a wrong one, and one the university stops accepting is forgotten at its first
 * refusal. A deleted subscription's credential is forgotten with it.
 *
 * One STRING with a TTL per credential: at most one per credential the university accepted within the
 * period, each written by a sign-up or replacement the sign-up limits admitted.
 *
 * Per client address, the distinct owners (university users) whose credentials the university accepted from it
 * recently are counted too (a ZSET of short keyed digests, a window long, bounded): a campus NAT that has shown
 * many students gets room for their typos in the failure budget (http/client-limits.ts); a lone guesser does
 * not, however many tokens of his own he sends.
 */
import { loadScript } from '../lib/lua-script.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import { keyedDigest } from '../security/tokens.ts';
import type { RedisKeys } from './keys.ts';

/** Days a credential stays known after the university last accepted it here: a term and a half. */
export const KNOWN_CREDENTIAL_DAYS = 180;

/** What the digest is for (the HMAC purpose): it matches no other digest made with the same key. */
const PURPOSE = 'known-credential';
/** The purpose of the digests counted per client: apart from the known credentials' own. */
const ACCEPTED_PURPOSE = 'accepted-from';
/** Hex digits kept of those digests: 64 bits tell a NAT's people apart, and reveal none. */
const ACCEPTED_DIGEST_LENGTH = 16;
/** Distinct owners kept per client at most: more than any budget grows with. */
export const MAX_ACCEPTED_PER_CLIENT = 1_000;

/** Adds to and counts a client's accepted credentials (accepted-from.lua). */
const ACCEPTED_FROM = loadScript(import.meta.dirname, 'accepted-from');

/** The credentials the university accepted, by keyed digest. */
export class KnownCredentials {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly secretKey: Buffer | undefined;

  /** Without `secretKey` (`SECRET_KEY` unset) no credential is known, and nothing is remembered. */
  constructor(redis: RedisClient, keys: RedisKeys, secretKey: Buffer | undefined) {
    this.redis = redis;
    this.keys = keys;
    this.secretKey = secretKey === undefined ? undefined : Buffer.from(secretKey);
  }

  /**
   * Whether the university accepted `credential` here within the period. One GET by the digest: the same work
   * whatever the answer, and no comparison of secrets that could leak through its timing.
   */
  async has(credential: string): Promise<boolean> {
    const key = this.key(credential);
    return key !== undefined && (await this.redis.exists(key)) === 1;
  }

  /** The university just accepted `credential`: known for {@link KNOWN_CREDENTIAL_DAYS} from now. */
  async remember(credential: string): Promise<void> {
    const key = this.key(credential);
    if (key !== undefined) await this.redis.set(key, '1', 'EX', KNOWN_CREDENTIAL_DAYS * 86_400);
  }

  /** `credential` was refused by the university, or its subscription deleted: no longer known. */
  async forget(credential: string): Promise<void> {
    const key = this.key(credential);
    if (key !== undefined) await this.redis.del(key);
  }

  /**
   * The university just accepted a credential of `owner` (`user:<id>`, or `credential:<credential>` for a
   * profile without a user id) from `client` (a key of http/client-address.ts): counted among the client's
   * distinct owners for `windowMs`. Resolves to how many it has now.
   */
  async acceptedFrom(client: string, owner: string, windowMs: number): Promise<number> {
    if (this.secretKey === undefined) return 0;
    const digest = keyedDigest(this.secretKey, ACCEPTED_PURPOSE, owner).slice(0, ACCEPTED_DIGEST_LENGTH);
    const args = ['add', String(windowMs), String(MAX_ACCEPTED_PER_CLIENT), digest];
    return Number(await ACCEPTED_FROM.run(this.redis, [this.keys.acceptedFrom(client)], args));
  }

  /** How many distinct owners the university accepted a credential of from `client` within the last `windowMs`. */
  async acceptedCount(client: string, windowMs: number): Promise<number> {
    const args = ['count', String(windowMs), String(MAX_ACCEPTED_PER_CLIENT)];
    return Number(await ACCEPTED_FROM.run(this.redis, [this.keys.acceptedFrom(client)], args));
  }

  private key(credential: string): string | undefined {
    if (this.secretKey === undefined) return undefined;
    return this.keys.knownCredential(keyedDigest(this.secretKey, PURPOSE, credential));
  }
}
