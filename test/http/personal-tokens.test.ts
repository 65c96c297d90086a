/**
 * The kept token → subscription map through a lost feed-updates channel, with a fake store and a fake cache:
 * a token kept before the channel was lost is not answered from memory until Redis confirms it again, so a
 * rotation whose announcement was lost never serves the old URL during a later outage.
 */
import { describe, expect, it } from 'vitest';
import { PersonalTokens } from '../../src/http/personal-tokens.ts';
import { RedisUnavailableError } from '../../src/lib/errors.ts';
import { createLogger } from '../../src/logger.ts';
import { hashToken } from '../../src/security/tokens.ts';
import type { FeedUpdate } from '../../src/sources/feed-updates.ts';

/** Redis as a map of token hash → subscription id; `down` makes every read fail as an outage does. */
class FakeStore {
  readonly byHash = new Map<string, string>();
  down = false;
  async idByToken(token: string): Promise<string | undefined> {
    if (this.down) throw new RedisUnavailableError('Redis is down');
    return this.byHash.get(hashToken(token));
  }
  async idsByTokenHash(hashes: readonly string[]): Promise<(string | undefined)[]> {
    if (this.down) throw new RedisUnavailableError('Redis is down');
    return hashes.map((hash) => this.byHash.get(hash));
  }
}

/** The feed cache's hooks, driven by hand. */
class FakeCache {
  isLive = true;
  private invalidate: ((update: FeedUpdate | undefined) => void)[] = [];
  private live: (() => void)[] = [];
  onInvalidate(listener: (update: FeedUpdate | undefined) => void): void {
    this.invalidate.push(listener);
  }
  onLive(listener: () => void): void {
    this.live.push(listener);
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
    for (const listener of this.live) listener();
  }
}

const ID = 'a'.repeat(22);

function setUp() {
  const store = new FakeStore();
  const cache = new FakeCache();
  const tokens = new PersonalTokens({ subscriptions: store, logger: createLogger({ level: 'silent' }) }, cache);
  const issue = (token: string, id = ID) => store.byHash.set(hashToken(token), id);
  const revoke = (token: string) => store.byHash.delete(hashToken(token));
  return { store, cache, tokens, issue, revoke };
}

describe('PersonalTokens', () => {
  it('answers a served token from memory when its own read fails and the channel went with Redis', async () => {
    const { store, cache, tokens, issue } = setUp();
    issue('T');
    expect(await tokens.idOf('T')).toBe(ID);
    cache.lose();
    store.down = true;
    expect(await tokens.idOf('T')).toBe(ID);
  });

  it('does not answer from memory a kept token once Redis answered with the channel lost', async () => {
    const { store, cache, tokens, issue, revoke } = setUp();
    issue('T');
    expect(await tokens.idOf('T')).toBe(ID);
    issue('OTHER', 'b'.repeat(22));
    cache.lose();
    // Rotated while nobody heard: the announcement is lost. Redis answers another read meanwhile.
    revoke('T');
    issue('NEW');
    expect(await tokens.idOf('OTHER')).toBe('b'.repeat(22));
    store.down = true;
    await expect(tokens.idOf('T')).rejects.toBeInstanceOf(RedisUnavailableError);
  });

  it('drops a token Redis no longer knows when re-checking once live again, and confirms the others', async () => {
    const { store, cache, tokens, issue, revoke } = setUp();
    issue('T');
    issue('KEPT', 'b'.repeat(22));
    expect(await tokens.idOf('T')).toBe(ID);
    expect(await tokens.idOf('KEPT')).toBe('b'.repeat(22));
    cache.lose();
    revoke('T');
    cache.subscribeAgain();
    await expect.poll(() => tokens.unconfirmedCount).toBe(0);
    store.down = true;
    await expect(tokens.idOf('T')).rejects.toBeInstanceOf(RedisUnavailableError);
    expect(await tokens.idOf('KEPT')).toBe('b'.repeat(22));
  });

  it('leaves tokens unconfirmed when the re-check fails; their next read confirms them', async () => {
    const { store, cache, tokens, issue } = setUp();
    issue('T');
    expect(await tokens.idOf('T')).toBe(ID);
    cache.lose();
    store.down = true;
    cache.subscribeAgain();
    await expect(tokens.idOf('T')).rejects.toBeInstanceOf(RedisUnavailableError);
    store.down = false;
    expect(await tokens.idOf('T')).toBe(ID);
    store.down = true;
    expect(await tokens.idOf('T')).toBe(ID);
  });

  it('does not take a read made while the channel was lost for a confirmation', async () => {
    const { store, cache, tokens, issue } = setUp();
    issue('T');
    cache.lose();
    expect(await tokens.idOf('T')).toBe(ID);
    store.down = true;
    await expect(tokens.idOf('T')).rejects.toBeInstanceOf(RedisUnavailableError);
  });

  it('drops every kept token of a subscription whose tokens changed', async () => {
    const { store, cache, tokens, issue } = setUp();
    issue('T');
    expect(await tokens.idOf('T')).toBe(ID);
    cache.announce({ kind: 'tokens', source: `personal:${ID}` });
    store.down = true;
    await expect(tokens.idOf('T')).rejects.toBeInstanceOf(RedisUnavailableError);
  });
});
