/**
 * One subscription per owner in the store: signing up again issues another feed token to the same
 * subscription (at most five live, the least recently used revoked; rotation replaces them all), simultaneous sign-ups end with one subscription, and
 * subscriptions made before owners were indexed keep working, the newest of each owner indexed.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SecretBox } from '../../src/security/secret-box.ts';
import { hashToken, randomToken } from '../../src/security/tokens.ts';
import { redisKeys } from '../../src/store/keys.ts';
import { MAX_LIVE_TOKENS, SubscriptionStore, URL_KEY_LENGTH } from '../../src/store/subscription-store.ts';
import { deletePrefix, uniquePrefix } from '../support/service.ts';

const KEY = Buffer.alloc(32, 9);
const NOW = Date.UTC(2025, 9, 1, 8);

let redis: Redis;
const prefix = uniquePrefix('owner');
const keys = redisKeys(prefix);
let store: SubscriptionStore;

beforeAll(() => {
  redis = new Redis(inject('redisUrl'));
  store = new SubscriptionStore(redis, keys, KEY);
});
afterAll(async () => {
  await deletePrefix(inject('redisUrl'), prefix);
  redis.disconnect();
});

const signUp = (upstreamUserId: number | null, credential: string, now = NOW) =>
  store.create({ credential, name: `n${now}`, upstreamUserId, now });

/** A subscription stored as before owners were indexed: one `tokenHash` field, no token set, no owner index. */
async function legacySubscription(upstreamUserId: number, createdAt: number): Promise<{ id: string; token: string }> {
  const id = randomToken(16);
  const token = randomToken();
  const tokenHash = hashToken(token);
  await redis.hset(keys.subscription(id), {
    id,
    source: `personal:${id}`,
    name: 'legacy',
    upstreamUserId: String(upstreamUserId),
    status: 'needs-credential',
    statusReason: 'rejected',
    createdAt: String(createdAt),
    updatedAt: String(createdAt),
    credential: new SecretBox(KEY).seal('old-credential', `subscription:${id}:credential`),
    credentialVersion: '3',
    tokenHash,
  });
  await redis.set(keys.subscriptionToken(tokenHash), id);
  return { id, token };
}

describe('one subscription per owner', () => {
  it('gives a repeated sign-up the same subscription, a new token and the newest credential', async () => {
    const first = await signUp(101, 'credential-1');
    expect(first).toMatchObject({ created: true, revoked: 0 });
    await store.markNeedsCredential(first.subscription.id, 'rejected', NOW + 1);
    const version = (await store.credentialFor(first.subscription.id))?.version;

    const again = await signUp(101, 'credential-2', NOW + 2);
    expect(again).toMatchObject({ created: false, revoked: 0 });
    expect(again.subscription).toMatchObject({ id: first.subscription.id, status: 'active', updatedAt: NOW + 2 });
    expect(again.subscription.statusReason).toBeUndefined();
    expect(again.token).not.toBe(first.token);
    expect(await store.credentialFor(first.subscription.id)).toEqual({
      credential: 'credential-2',
      version: String(Number(version) + 1),
    });
    for (const token of [first.token, again.token]) {
      expect(await store.idByToken(token)).toBe(first.subscription.id);
      expect(await store.verifyToken(first.subscription.id, token)).toBe(true);
    }
    expect(await redis.keys(`${prefix}:subscription:*`)).toHaveLength(1);
  });

  it(`keeps ${MAX_LIVE_TOKENS} live tokens: each one more revokes the least recently used (never used: the oldest) and removes its hash`, async () => {
    const issued = [];
    for (let i = 0; i < 10; i++) issued.push(await signUp(102, 'credential', NOW + i));
    const id = issued[0]?.subscription.id ?? '';
    expect(new Set(issued.map((one) => one.subscription.id))).toEqual(new Set([id]));
    expect(issued.map((one) => one.revoked)).toEqual([0, 0, 0, 0, 0, 1, 1, 1, 1, 1]);
    expect(await store.liveTokenCount(id)).toBe(MAX_LIVE_TOKENS);
    for (const [index, { token }] of issued.entries()) {
      const live = index >= 10 - MAX_LIVE_TOKENS;
      expect(await store.idByToken(token), `token ${index + 1}`).toBe(live ? id : undefined);
      expect(await store.verifyToken(id, token)).toBe(live);
      expect(await redis.exists(keys.subscriptionToken(hashToken(token)))).toBe(live ? 1 : 0);
    }
  });

  it('revokes the least recently used token: one whose feed was fetched outlives newer unused ones', async () => {
    const issued = [];
    for (let i = 0; i < MAX_LIVE_TOKENS; i++) issued.push(await signUp(104, 'credential', NOW + i));
    const id = issued[0]?.subscription.id ?? '';
    await store.recordTokenUse(id, issued[0]?.token ?? '', NOW + 10);
    const sixth = await signUp(104, 'credential', NOW + 11);
    expect(sixth.revoked).toBe(1);
    const live = await Promise.all([...issued, sixth].map(({ token }) => store.idByToken(token)));
    expect(live).toEqual([id, undefined, id, id, id, id]);
    // A use after revocation does not bring a token back.
    await store.recordTokenUse(id, issued[1]?.token ?? '', NOW + 12);
    expect(await store.liveTokenCount(id)).toBe(MAX_LIVE_TOKENS);
    expect(await redis.zscore(keys.subscriptionTokens(id), hashToken(issued[1]?.token ?? ''))).toBeNull();
  });

  it('keeps issue order among tokens issued within one millisecond', async () => {
    const issued = [];
    for (let i = 0; i <= MAX_LIVE_TOKENS; i++) issued.push(await signUp(107, 'credential', NOW));
    const live = await Promise.all(issued.map(({ token }) => store.idByToken(token)));
    expect(live.map((found) => found !== undefined)).toEqual([false, ...Array(MAX_LIVE_TOKENS).fill(true)]);
  });

  it('falls back to issue order for tokens scored before use times were kept', async () => {
    const issued = [];
    for (let i = 0; i < MAX_LIVE_TOKENS; i++) issued.push(await signUp(105, 'credential', NOW + i));
    const id = issued[0]?.subscription.id ?? '';
    // As stored before: each token scored by its issue number.
    for (const [index, { token }] of issued.entries())
      await redis.zadd(keys.subscriptionTokens(id), index + 1, hashToken(token));
    await store.recordTokenUse(id, issued[2]?.token ?? '', NOW + 10);
    await signUp(105, 'credential', NOW + 11);
    await signUp(105, 'credential', NOW + 12);
    const live = await Promise.all(issued.map(({ token }) => store.idByToken(token)));
    expect(live).toEqual([undefined, undefined, id, id, id]);
  });

  it('rotates every token of a subscription into one new one, for the holder of a live token only', async () => {
    const issued = [];
    for (let i = 0; i < 3; i++) issued.push(await signUp(106, 'credential', NOW + i));
    const id = issued[0]?.subscription.id ?? '';
    const token = await store.rotateToken(id, { token: issued[1]?.token ?? '' }, NOW + 5);
    expect(token).toBeDefined();
    for (const one of issued) expect(await store.idByToken(one.token)).toBeUndefined();
    expect(await store.idByToken(token ?? '')).toBe(id);
    expect(await store.liveTokenCount(id)).toBe(1);
    expect(await store.rotateToken(id, { token: issued[0]?.token ?? '' }, NOW + 6)).toBeUndefined();
    expect(await store.idByToken(token ?? '')).toBe(id);
  });

  it('ends simultaneous sign-ups of one owner with one subscription and five live tokens', async () => {
    const issued = await Promise.all(Array.from({ length: 10 }, (_, i) => signUp(103, `credential-${i}`)));
    const ids = new Set(issued.map((one) => one.subscription.id));
    expect(ids.size).toBe(1);
    expect(issued.filter((one) => one.created)).toHaveLength(1);
    const [id = ''] = ids;
    expect(await store.liveTokenCount(id)).toBe(MAX_LIVE_TOKENS);
    const live = await Promise.all(issued.map(({ token }) => store.idByToken(token)));
    expect(live.filter((found) => found === id)).toHaveLength(MAX_LIVE_TOKENS);
    expect(await redis.get(keys.subscriptionOwner('user:103'))).toBe(id);
  });

  it('ties a profile without a user id to its credential: the same one finds it, another makes another', async () => {
    const first = await signUp(null, 'idless-credential');
    const same = await signUp(null, 'idless-credential');
    const other = await signUp(null, 'another-idless-credential');
    expect(same).toMatchObject({ created: false, subscription: { id: first.subscription.id } });
    expect(other.created).toBe(true);
    expect(other.subscription.id).not.toBe(first.subscription.id);
    // The owner index is keyed by the keyed digest, never by the credential.
    expect((await redis.keys(`${prefix}:subscription-owner:*`)).join()).not.toContain('idless-credential');
  });

  it('deletes every token and the owner index: the next sign-up makes a new subscription', async () => {
    const first = await signUp(104, 'credential');
    const second = await signUp(104, 'credential');
    expect(await store.delete(first.subscription.id)).toBe(true);
    for (const { token } of [first, second]) expect(await store.idByToken(token)).toBeUndefined();
    expect(await redis.exists(keys.subscriptionTokens(first.subscription.id))).toBe(0);
    expect(await redis.exists(keys.subscriptionOwner('user:104'))).toBe(0);
    const third = await signUp(104, 'credential');
    expect(third.created).toBe(true);
    expect(third.subscription.id).not.toBe(first.subscription.id);
  });

  it('takes back one token without touching the others', async () => {
    const first = await signUp(105, 'credential');
    const second = await signUp(105, 'credential');
    await store.revokeToken(first.subscription.id, second.token);
    expect(await store.idByToken(second.token)).toBeUndefined();
    expect(await store.idByToken(first.token)).toBe(first.subscription.id);
    // A token of another subscription is not taken back by naming the wrong one.
    const stranger = await signUp(106, 'credential');
    await store.revokeToken(first.subscription.id, stranger.token);
    expect(await store.idByToken(stranger.token)).toBe(stranger.subscription.id);
  });
});

describe('subscriptions made before one per owner', () => {
  it('keep working; the newest of each owner is indexed, and its old token counts as its least recently used', async () => {
    const older = await legacySubscription(201, NOW - 2_000);
    const newer = await legacySubscription(201, NOW - 1_000);
    expect(await store.indexLegacyOwners()).toBeGreaterThanOrEqual(1);
    expect(await redis.get(keys.subscriptionOwner('user:201'))).toBe(newer.id);
    // Once per deployment: a second run reads nothing.
    expect(await store.indexLegacyOwners()).toBe(0);

    const issued = [];
    for (let i = 0; i < MAX_LIVE_TOKENS - 1; i++) issued.push(await signUp(201, 'new-credential'));
    expect(issued.every((one) => !one.created && one.subscription.id === newer.id)).toBe(true);
    expect(issued[0]?.subscription).toMatchObject({ status: 'active' });
    expect(await store.credentialFor(newer.id)).toEqual({ credential: 'new-credential', version: '7' });
    expect(await store.idByToken(newer.token)).toBe(newer.id);
    expect(await store.idByToken(older.token)).toBe(older.id);
    expect(await store.liveTokenCount(newer.id)).toBe(MAX_LIVE_TOKENS);

    const sixth = await signUp(201, 'new-credential');
    expect(sixth.revoked).toBe(1);
    expect(await store.idByToken(newer.token)).toBeUndefined();
    expect(await redis.hexists(keys.subscription(newer.id), 'tokenHash')).toBe(0);
    // The older subscription of the same person is left as it was, and deleting it leaves the index alone.
    expect(await store.delete(older.id)).toBe(true);
    expect(await store.idByToken(older.token)).toBeUndefined();
    expect(await redis.get(keys.subscriptionOwner('user:201'))).toBe(newer.id);
  });

  it('revokes its old single token from the list of feed URLs for good: listed no more, revoked only once', async () => {
    const { id, token } = await legacySubscription(9303, NOW - 5_000);
    const key = hashToken(token).slice(0, URL_KEY_LENGTH);
    expect((await store.feedUrls(id)).map((url) => url.key)).toEqual([key]);
    expect(await store.revokeFeedUrl(id, key)).toBe('other');
    expect(await store.verifyToken(id, token)).toBe(false);
    expect(await redis.hexists(keys.subscription(id), 'tokenHash')).toBe(0);
    expect(await store.feedUrls(id)).toEqual([]);
    expect(await store.liveTokenCount(id)).toBe(0);
    expect(await store.revokeFeedUrl(id, key)).toBeUndefined();
  });

  it('deletes a subscription with its old single token', async () => {
    const legacy = await legacySubscription(202, NOW);
    expect(await store.delete(legacy.id)).toBe(true);
    expect(await redis.exists(keys.subscription(legacy.id), keys.subscriptionToken(hashToken(legacy.token)))).toBe(0);
  });
});
