import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, inject, it, vi } from 'vitest';
import { FeedStore, encodeFeed } from '../../src/feeds/feed-store.ts';
import { FeedCache } from '../../src/http/feed-cache.ts';
import { silentLogger } from '../../src/logger.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { testContext } from '../support/service.ts';
import { calendar } from './helpers.ts';

const SOURCE = 'group:42';
let ctx: ServiceContext;
let closeContext: () => Promise<void>;
let subscriber: Redis;
let cache: FeedCache;
let clock = 0;
/** Stores feeds without announcing them, as if the announcement had been lost. */
let silentStore: FeedStore;

async function store(marker: string, announce = true): Promise<string> {
  const feed = encodeFeed(calendar(marker), Date.UTC(2025, 9, 1));
  await (announce ? ctx.feeds : silentStore).write(ctx.redis.multi(), SOURCE, feed).exec();
  return feed.etag;
}

beforeEach(async () => {
  ({ context: ctx, close: closeContext } = await testContext());
  silentStore = new FeedStore(ctx.redis, { ...ctx.keys, feedUpdates: `${ctx.keys.feedUpdates}:nobody` });
  subscriber = new Redis(inject('redisUrl'));
  cache = new FeedCache({ feeds: ctx.feeds, subscriber, channel: ctx.keys.feedUpdates, logger: silentLogger(), ttlMs: 60_000, clock: () => clock });
  await cache.start();
});
afterEach(async () => {
  await cache.stop();
  await closeContext();
});

describe('FeedCache', () => {
  it('keeps a feed until its change is announced', async () => {
    const first = await store('first');
    await sleep(50);
    expect((await cache.get(SOURCE))?.etag).toBe(first);
    const unannounced = await store('unannounced', false);
    expect((await cache.get(SOURCE))?.etag).toBe(first);
    const announced = await store('announced');
    await vi.waitFor(async () => expect((await cache.get(SOURCE))?.etag).toBe(announced), { timeout: 2_000, interval: 10 });
    expect(unannounced).not.toBe(announced);
  });

  it('forgets everything when its connection drops, and caches again once resubscribed', async () => {
    const id = await subscriber.client('ID');
    await store('before');
    await sleep(50);
    await cache.get(SOURCE);
    const missed = await store('missed while down', false);
    await ctx.redis.call('CLIENT', 'KILL', 'ID', String(id));
    await vi.waitFor(async () => expect((await cache.get(SOURCE))?.etag).toBe(missed), { timeout: 5_000, interval: 20 });
    await vi.waitFor(async () => {
      await cache.get(SOURCE);
      expect(cache.size).toBe(1);
    }, { timeout: 5_000, interval: 20 });
    const after = await store('after');
    await vi.waitFor(async () => expect((await cache.get(SOURCE))?.etag).toBe(after), { timeout: 2_000, interval: 10 });
  });

  it('lets entries expire as a safety net', async () => {
    const first = await store('first');
    await sleep(50);
    expect((await cache.get(SOURCE))?.etag).toBe(first);
    const second = await store('second', false);
    clock += 59_000;
    expect((await cache.get(SOURCE))?.etag).toBe(first);
    clock += 2_000;
    expect((await cache.get(SOURCE))?.etag).toBe(second);
  });

  it('does not keep a read that an announcement overtook', async () => {
    await store('first');
    await sleep(50);
    const reading = cache.get(SOURCE);
    cache.invalidate(SOURCE);
    await reading;
    expect(cache.size).toBe(0);
    expect(await cache.get(SOURCE)).toBeDefined();
    expect(cache.size).toBe(1);
  });

  it('reads through after it is stopped', async () => {
    await store('first');
    await cache.stop();
    expect(await cache.get(SOURCE)).toBeDefined();
    expect(cache.size).toBe(0);
  });
});
