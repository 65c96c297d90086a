/**
 * The kept token → subscription map through a lost feed-updates channel and a Redis that fails or does not
 * answer, with a fake store and a fake cache: a token kept before the channel was lost is not answered from
 * memory until Redis confirms it again, so a rotation whose announcement was lost never serves the old URL
 * during a later outage; a late answer is not waited for while every announcement is heard, and waited for
 * otherwise. (test/http/personal-feed-outage.integration.test.ts does the same with a paused redis-server.)
 */
import { describe, expect, it } from 'vitest';
import { RedisUnavailableError } from '../../src/lib/errors.ts';
import { createLogger } from '../../src/logger.ts';
import { hashToken } from '../../src/security/tokens.ts';
import { PersonalTokens } from '../../src/serving/personal-tokens.ts';
import type { FeedUpdate } from '../../src/store/feed-updates.ts';

/**
 * Redis as a map of token hash → subscription id; `down` makes every read fail as an outage does, `paused`
 * leaves every read unanswered until `resume` answers them as the map then says.
 */
class FakeStore {
  readonly byHash = new Map<string, string>();
  down = false;
  paused = false;
  reads = 0;
  private waiting: (() => void)[] = [];
  async idByToken(token: string): Promise<string | undefined> {
    this.reads += 1;
    if (this.paused) await new Promise<void>((resume) => this.waiting.push(resume));
    if (this.down) throw new RedisUnavailableError('Redis is down');
    return this.byHash.get(hashToken(token));
  }
  async idsByTokenHash(hashes: readonly string[]): Promise<(string | undefined)[]> {
    if (this.down) throw new RedisUnavailableError('Redis is down');
    return hashes.map((hash) => this.byHash.get(hash));
  }
  resume(): void {
    this.paused = false;
    for (const resume of this.waiting.splice(0)) resume();
  }
}

/** The feed cache's hooks, driven by hand. */
class FakeCache {
  isLive = true;
  servingStaleSince: number | undefined;
  private invalidate: ((update: FeedUpdate | undefined) => void)[] = [];
  private live: (() => void)[] = [];
  onInvalidate(listener: (update: FeedUpdate | undefined) => void): void {
    this.invalidate.push(listener);
  }
  onLive(listener: () => void): void {
    this.live.push(listener);
  }
  noteOutage(): number {
    this.servingStaleSince ??= Date.now();
    return this.servingStaleSince;
  }
  announce(update: FeedUpdate): void {
    for (const listener of this.invalidate) listener(update);
  }
  lose(): void {
    this.isLive = false;
    for (const listener of this.invalidate) listener(undefined);
  }
  subscribeAgain(): void {
    for (const listener of this.invalidate) listener(undefined);
    this.isLive = true;
    this.servingStaleSince = undefined;
    for (const listener of this.live) listener();
  }
}

const ID = 'a'.repeat(22);

/** How long the tokens wait for the fake Redis here. */
const WITHIN_MS = 50;

function setUp() {
  const store = new FakeStore();
  const cache = new FakeCache();
  const redis = { status: 'ready' };
  const tokens = new PersonalTokens(
    { subscriptions: store, redis, logger: createLogger({ level: 'silent' }) },
    cache,
    WITHIN_MS,
  );
  const idOf = async (token: string) => (await tokens.find(token))?.id;
  const issue = (token: string, id = ID) => store.byHash.set(hashToken(token), id);
  const revoke = (token: string) => store.byHash.delete(hashToken(token));
  return { store, cache, redis, tokens, idOf, issue, revoke };
}

describe('PersonalTokens', () => {
  it('answers a served token from memory when its own read fails and the channel went with Redis', async () => {
    const { store, cache, idOf, issue } = setUp();
    issue('T');
    expect(await idOf('T')).toBe(ID);
    cache.lose();
    store.down = true;
    expect(await idOf('T')).toBe(ID);
  });

  it('does not answer from memory a kept token once Redis answered with the channel lost', async () => {
    const { store, cache, idOf, issue, revoke } = setUp();
    issue('T');
    expect(await idOf('T')).toBe(ID);
    issue('OTHER', 'b'.repeat(22));
    cache.lose();
    // Rotated while nobody heard: the announcement is lost. Redis answers another read meanwhile.
    revoke('T');
    issue('NEW');
    expect(await idOf('OTHER')).toBe('b'.repeat(22));
    store.down = true;
    await expect(idOf('T')).rejects.toBeInstanceOf(RedisUnavailableError);
  });

  it('drops a token Redis no longer knows when re-checking once live again, and confirms the others', async () => {
    const { store, cache, tokens, idOf, issue, revoke } = setUp();
    issue('T');
    issue('KEPT', 'b'.repeat(22));
    expect(await idOf('T')).toBe(ID);
    expect(await idOf('KEPT')).toBe('b'.repeat(22));
    cache.lose();
    revoke('T');
    cache.subscribeAgain();
    await expect.poll(() => tokens.unconfirmedCount).toBe(0);
    store.down = true;
    await expect(idOf('T')).rejects.toBeInstanceOf(RedisUnavailableError);
    expect(await idOf('KEPT')).toBe('b'.repeat(22));
  });

  it('leaves tokens unconfirmed when the re-check fails; their next read confirms them', async () => {
    const { store, cache, idOf, issue } = setUp();
    issue('T');
    expect(await idOf('T')).toBe(ID);
    cache.lose();
    store.down = true;
    cache.subscribeAgain();
    await expect(idOf('T')).rejects.toBeInstanceOf(RedisUnavailableError);
    store.down = false;
    expect(await idOf('T')).toBe(ID);
    store.down = true;
    expect(await idOf('T')).toBe(ID);
  });

  it('does not take a read made while the channel was lost for a confirmation', async () => {
    const { store, cache, idOf, issue } = setUp();
    issue('T');
    cache.lose();
    expect(await idOf('T')).toBe(ID);
    store.down = true;
    await expect(idOf('T')).rejects.toBeInstanceOf(RedisUnavailableError);
  });

  it('drops every kept token of a subscription whose tokens changed', async () => {
    const { store, cache, idOf, issue } = setUp();
    issue('T');
    expect(await idOf('T')).toBe(ID);
    cache.announce({ kind: 'tokens', source: `personal:${ID}` });
    store.down = true;
    await expect(idOf('T')).rejects.toBeInstanceOf(RedisUnavailableError);
  });

  it('answers a kept token from memory when Redis does not answer in time, and then without asking', async () => {
    const { store, cache, tokens, issue } = setUp();
    issue('T');
    expect(await tokens.find('T')).toEqual({ id: ID, fromMemory: false });
    store.paused = true;
    const started = performance.now();
    expect(await tokens.find('T')).toEqual({ id: ID, fromMemory: true });
    expect(performance.now() - started).toBeLessThan(WITHIN_MS + 500);
    // The feed cache now serves stale: the next requests do not wait, nor pile reads onto Redis.
    expect(cache.servingStaleSince).toBeDefined();
    const reads = store.reads;
    expect(await tokens.find('T')).toEqual({ id: ID, fromMemory: true });
    expect(store.reads).toBe(reads);
    store.resume();
  });

  it('never answers a token revoked before Redis stopped answering, though it was served', async () => {
    const { store, cache, tokens, issue, revoke } = setUp();
    issue('T');
    issue('KEPT', 'b'.repeat(22));
    expect((await tokens.find('T'))?.fromMemory).toBe(false);
    expect((await tokens.find('KEPT'))?.fromMemory).toBe(false);
    revoke('T');
    cache.announce({ kind: 'tokens', source: `personal:${ID}` });
    store.paused = true;
    expect(await tokens.find('KEPT')).toEqual({ id: 'b'.repeat(22), fromMemory: true });
    const revoked = tokens.find('T');
    store.resume();
    expect(await revoked).toBeUndefined();
  });

  it('waits for a late answer when the channel is lost and the connection is up', async () => {
    const { store, cache, tokens, issue, revoke } = setUp();
    issue('T');
    await tokens.find('T');
    cache.lose();
    // Revoked while nobody heard, and Redis slow: memory must not answer for it.
    revoke('T');
    store.paused = true;
    const answer = tokens.find('T');
    await new Promise((resolve) => setTimeout(resolve, WITHIN_MS * 4));
    store.resume();
    expect(await answer).toBeUndefined();
  });

  it('answers from memory at once while the connection is down and the outage known', async () => {
    const { store, cache, redis, tokens, issue } = setUp();
    issue('T');
    await tokens.find('T');
    cache.lose();
    cache.noteOutage();
    redis.status = 'reconnecting';
    store.paused = true;
    expect(await tokens.find('T')).toEqual({ id: ID, fromMemory: true });
    expect(store.reads).toBe(1);
    store.resume();
  });

  it('does not confirm an answer read before a change whose announcement came first', async () => {
    const { store, cache, tokens, issue, revoke } = setUp();
    issue('T');
    store.paused = true;
    const read = tokens.find('T');
    // Redis answered the read, then revoked the token; the announcement overtakes the answer.
    revoke('T');
    cache.announce({ kind: 'tokens', source: `personal:${ID}` });
    issue('T');
    store.resume();
    expect((await read)?.id).toBe(ID);
    store.down = true;
    await expect(tokens.find('T')).rejects.toBeInstanceOf(RedisUnavailableError);
  });
});
