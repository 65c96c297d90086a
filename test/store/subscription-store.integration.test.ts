import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DecryptionError, SecretKeyMissingError } from '../../src/security/errors.ts';
import { hashToken } from '../../src/security/tokens.ts';
import { redisKeys } from '../../src/store/keys.ts';
import { MAX_LIVE_TOKENS, SubscriptionStore } from '../../src/store/subscription-store.ts';
import { SUBSCRIPTION_ID } from '../../src/timetable/source.ts';
import { deletePrefix, uniquePrefix } from '../support/service.ts';

const KEY = Buffer.alloc(32, 7);
const CREDENTIAL = 'uni-credential-4f9c2e7d1b';
const NOW = Date.UTC(2025, 9, 1, 8);

let redis: Redis;
const prefix = uniquePrefix('subs');
const keys = redisKeys(prefix);
let store: SubscriptionStore;

/** Every key and value under the prefix, as text (hash fields, values and keys alike). */
async function dumpPrefix(): Promise<string> {
  const lines: string[] = [];
  const found = await redis.keys(`${prefix}:*`);
  for (const key of found) {
    const type = await redis.type(key);
    lines.push(key);
    if (type === 'hash') lines.push(...Object.entries(await redis.hgetall(key)).flat());
    else if (type === 'string') lines.push((await redis.get(key)) ?? '');
    else lines.push(`<${type}>`);
  }
  return lines.join('\n');
}

beforeAll(() => {
  redis = new Redis(inject('redisUrl'));
  store = new SubscriptionStore(redis, keys, KEY);
});
afterAll(async () => {
  await deletePrefix(inject('redisUrl'), prefix);
  redis.disconnect();
});

describe('SubscriptionStore', () => {
  it('creates a subscription with a 128-bit id and a 256-bit token, readable back', async () => {
    const { subscription, token } = await store.create({
      credential: CREDENTIAL,
      name: 'Расписание: Иванова Мария',
      upstreamUserId: 17,
      now: NOW,
    });
    expect(subscription.id).toMatch(SUBSCRIPTION_ID);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(subscription).toEqual({
      id: subscription.id,
      source: `personal:${subscription.id}`,
      name: 'Расписание: Иванова Мария',
      upstreamUserId: 17,
      status: 'active',
      createdAt: NOW,
      updatedAt: NOW,
    });
    expect(await store.get(subscription.id)).toEqual(subscription);
    expect(await store.idByToken(token)).toBe(subscription.id);
    expect(await store.verifyToken(subscription.id, token)).toBe(true);
    expect(await store.verifyToken(subscription.id, `${token}x`)).toBe(false);
    expect(await store.credentialOf(subscription.id)).toBe(CREDENTIAL);
  });

  it('keeps neither the credential nor the token in plain text, only the token hash', async () => {
    const { subscription, token } = await store.create({
      credential: CREDENTIAL,
      name: 'n',
      upstreamUserId: 18,
      now: NOW,
    });
    const dump = await dumpPrefix();
    expect(dump).toContain(subscription.id);
    expect(dump).not.toContain(CREDENTIAL);
    expect(dump).not.toContain(token);
    expect(dump).not.toContain(Buffer.from(CREDENTIAL).toString('base64url'));
    expect(dump).not.toContain(Buffer.from(CREDENTIAL).toString('base64'));
    expect(await redis.get(keys.subscriptionToken(hashToken(token)))).toBe(subscription.id);
    expect(await redis.hget(keys.subscription(subscription.id), 'credential')).toMatch(/^v1\./);
  });

  it('binds the sealed credential to its subscription', async () => {
    const a = await store.create({ credential: 'credential-of-a', name: 'a', upstreamUserId: 1, now: NOW });
    const b = await store.create({ credential: 'credential-of-b', name: 'b', upstreamUserId: 2, now: NOW });
    const sealedA = await redis.hget(keys.subscription(a.subscription.id), 'credential');
    await redis.hset(keys.subscription(b.subscription.id), 'credential', sealedA ?? '');
    await expect(store.credentialOf(b.subscription.id)).rejects.toThrow(DecryptionError);
  });

  it('marks a rejected credential and replaces it', async () => {
    const { subscription } = await store.create({ credential: CREDENTIAL, name: 'n', upstreamUserId: 19, now: NOW });
    await store.markNeedsCredential(
      subscription.id,
      'University API mySchedule: credential rejected, HTTP 401',
      NOW + 1000,
    );
    expect(await store.get(subscription.id)).toMatchObject({
      status: 'needs-credential',
      statusReason: 'University API mySchedule: credential rejected, HTTP 401',
      updatedAt: NOW + 1000,
    });
    await store.replaceCredential(subscription.id, 'new-credential-77', NOW + 2000);
    const replaced = await store.get(subscription.id);
    expect(replaced).toMatchObject({ status: 'active', updatedAt: NOW + 2000, createdAt: NOW });
    expect(replaced?.statusReason).toBeUndefined();
    expect(await store.credentialOf(subscription.id)).toBe('new-credential-77');
    expect(await dumpPrefix()).not.toContain('new-credential-77');
  });

  it('reads the credential with its version, which every stored credential changes', async () => {
    const { subscription } = await store.create({ credential: CREDENTIAL, name: 'n', upstreamUserId: 21, now: NOW });
    const first = await store.credentialFor(subscription.id);
    expect(first).toEqual({ credential: CREDENTIAL, version: expect.any(String) });
    await store.markNeedsCredential(subscription.id, 'rejected', NOW + 1000);
    expect((await store.credentialFor(subscription.id))?.version).toBe(first?.version);
    await store.replaceCredential(subscription.id, 'second-credential', NOW + 2000);
    const second = await store.credentialFor(subscription.id);
    expect(second?.credential).toBe('second-credential');
    expect(second?.version).not.toBe(first?.version);
    await store.replaceCredential(subscription.id, 'third-credential', NOW + 3000);
    expect((await store.credentialFor(subscription.id))?.version).not.toBe(second?.version);
    expect(await store.credentialFor('AAAAAAAAAAAAAAAAAAAAAA')).toBeUndefined();
  });

  it('lets a refresh reject only the credential it used, not one replaced meanwhile', async () => {
    const { subscription } = await store.create({ credential: CREDENTIAL, name: 'n', upstreamUserId: 22, now: NOW });
    // A refresh reads the credential, then the user replaces it while the upstream is answering.
    const used = await store.credentialFor(subscription.id);
    await store.replaceCredential(subscription.id, 'fresh-credential', NOW + 1000);
    expect(await store.markNeedsCredential(subscription.id, 'rejected', NOW + 2000, used?.version)).toBe(false);
    expect(await store.get(subscription.id)).toMatchObject({ status: 'active', updatedAt: NOW + 1000 });
    const current = await store.credentialFor(subscription.id);
    expect(await store.markNeedsCredential(subscription.id, 'rejected too', NOW + 3000, current?.version)).toBe(true);
    expect(await store.get(subscription.id)).toMatchObject({
      status: 'needs-credential',
      statusReason: 'rejected too',
    });
    // Without a version, the mark is unconditional (as before).
    await store.replaceCredential(subscription.id, 'another', NOW + 4000);
    expect(await store.markNeedsCredential(subscription.id, 'unconditional', NOW + 5000)).toBe(true);
    expect((await store.get(subscription.id))?.status).toBe('needs-credential');
  });

  it('treats a subscription stored before credential versions as version 0', async () => {
    const { subscription } = await store.create({ credential: CREDENTIAL, name: 'n', upstreamUserId: 23, now: NOW });
    await redis.hdel(keys.subscription(subscription.id), 'credentialVersion');
    const legacy = await store.credentialFor(subscription.id);
    expect(legacy).toEqual({ credential: CREDENTIAL, version: '0' });
    await store.replaceCredential(subscription.id, 'replaced', NOW + 1000);
    expect(await store.markNeedsCredential(subscription.id, 'late', NOW + 2000, '0')).toBe(false);
    expect((await store.credentialFor(subscription.id))?.version).not.toBe('0');
  });

  it('throws the secret box errors unchanged from credentialFor', async () => {
    const a = await store.create({ credential: 'credential-of-a', name: 'a', upstreamUserId: 24, now: NOW });
    const b = await store.create({ credential: 'credential-of-b', name: 'b', upstreamUserId: 25, now: NOW });
    const sealedA = await redis.hget(keys.subscription(a.subscription.id), 'credential');
    await redis.hset(keys.subscription(b.subscription.id), 'credential', sealedA ?? '');
    await expect(store.credentialFor(b.subscription.id)).rejects.toThrow(DecryptionError);
    const keyless = new SubscriptionStore(redis, keys, undefined);
    await expect(keyless.credentialFor(a.subscription.id)).rejects.toThrow(SecretKeyMissingError);
  });

  it('deletes the subscription and its token index, and later updates do not bring it back', async () => {
    const { subscription, token } = await store.create({
      credential: CREDENTIAL,
      name: 'n',
      upstreamUserId: 20,
      now: NOW,
    });
    expect(await store.delete(subscription.id)).toBe(true);
    expect(await store.delete(subscription.id)).toBe(false);
    expect(await store.get(subscription.id)).toBeUndefined();
    expect(await store.idByToken(token)).toBeUndefined();
    expect(await store.credentialOf(subscription.id)).toBeUndefined();
    expect(await store.markNeedsCredential(subscription.id, 'late', NOW)).toBe(false);
    await store.replaceCredential(subscription.id, 'late', NOW);
    expect(await redis.exists(keys.subscription(subscription.id), keys.subscriptionToken(hashToken(token)))).toBe(0);
  });

  it('answers nothing for unknown or malformed ids and tokens', async () => {
    expect(await store.get('AAAAAAAAAAAAAAAAAAAAAA')).toBeUndefined();
    expect(await store.get('../../etc')).toBeUndefined();
    expect(await store.idByToken('no-such-token')).toBeUndefined();
    expect(await store.idByToken('')).toBeUndefined();
    expect(await store.verifyToken('AAAAAAAAAAAAAAAAAAAAAA', 'x')).toBe(false);
  });

  it('keeps a null user id, and recognises the credential of such a subscription by a keyed digest only', async () => {
    const idless = await store.create({ credential: CREDENTIAL, name: 'n', upstreamUserId: null, now: NOW });
    expect(await store.get(idless.subscription.id)).toMatchObject({ upstreamUserId: null });
    expect(await store.isOwnCredential(idless.subscription.id, CREDENTIAL)).toBe(true);
    expect(await store.isOwnCredential(idless.subscription.id, `${CREDENTIAL}x`)).toBe(false);
    // Under another key the same credential is not recognised: the digest is keyed.
    const otherKey = new SubscriptionStore(redis, keys, Buffer.alloc(32, 8));
    expect(await otherKey.isOwnCredential(idless.subscription.id, CREDENTIAL)).toBe(false);
    // A subscription with a user id keeps no digest.
    const withId = await store.create({ credential: CREDENTIAL, name: 'n', upstreamUserId: 26, now: NOW });
    expect(await store.isOwnCredential(withId.subscription.id, CREDENTIAL)).toBe(false);
    expect(await redis.hget(keys.subscription(withId.subscription.id), 'credentialDigest')).toBeNull();
    expect(await store.isOwnCredential('../../etc', CREDENTIAL)).toBe(false);
    expect(await dumpPrefix()).not.toContain(CREDENTIAL);
  });

  it('refuses to store a credential without SECRET_KEY', async () => {
    const keyless = new SubscriptionStore(redis, keys, undefined);
    expect(keyless.canStoreCredentials).toBe(false);
    await expect(keyless.create({ credential: CREDENTIAL, name: 'n', upstreamUserId: 1, now: NOW })).rejects.toThrow(
      SecretKeyMissingError,
    );
  });
});

describe('SubscriptionStore announcements', () => {
  /** Messages heard on the feed-updates channel while `act` runs, once `expected` many arrived. */
  async function heard(expected: number, act: () => Promise<void>): Promise<string[]> {
    const listener = new Redis(inject('redisUrl'));
    const messages: string[] = [];
    listener.on('message', (_channel: string, message: string) => messages.push(message));
    try {
      await listener.subscribe(keys.feedUpdates);
      await act();
      await expect.poll(() => messages.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(expected);
      return messages;
    } finally {
      listener.disconnect();
    }
  }

  it('announces revocations, rotations, trims and deletions from the scripts that make them', async () => {
    const input = { credential: CREDENTIAL, name: 'announced', upstreamUserId: 9101, now: NOW };
    const { subscription, token } = await store.create(input);
    const id = subscription.id;
    const messages = await heard(5, async () => {
      const second = await store.create(input);
      await store.revokeToken(id, second.token);
      const rotated = await store.rotateToken(id, { token }, NOW + 1);
      expect(rotated).toBeDefined();
      // The rotated token is the page's own URL from now on: not counted against the API's tokens.
      for (let i = 0; i < MAX_LIVE_TOKENS; i++) await store.create({ ...input, now: NOW + 2 + i });
      // One beyond the limit: the least recently used goes.
      expect((await store.create({ ...input, now: NOW + 10 })).revoked).toBe(1);
      await store.create({ ...input, now: NOW + 11 }, { pending: true });
      expect(await store.trimTokens(id)).toBe(1);
      expect(await store.delete(id)).toBe(true);
    });
    expect(messages).toEqual([
      `tokens personal:${id}`,
      `tokens personal:${id}`,
      `tokens personal:${id}`,
      `tokens personal:${id}`,
      `gone personal:${id}`,
    ]);
  });

  it('needs no PUBLISH of its own: a delete succeeds though the client cannot publish', async () => {
    const client = new Redis(inject('redisUrl'));
    client.publish = () => Promise.reject(new Error('Connection is closed.'));
    try {
      const own = new SubscriptionStore(client, keys, KEY);
      const { subscription } = await own.create({ credential: CREDENTIAL, name: 'x', upstreamUserId: 9102, now: NOW });
      const messages = await heard(1, async () => {
        expect(await own.delete(subscription.id)).toBe(true);
      });
      expect(messages).toEqual([`gone personal:${subscription.id}`]);
    } finally {
      client.disconnect();
    }
  });
});
