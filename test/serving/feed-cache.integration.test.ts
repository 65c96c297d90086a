import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, inject, it, vi } from 'vitest';
import { RedisOutageLog } from '../../src/lib/redis-outage.ts';
import { silentLogger } from '../../src/logger.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { FeedCache } from '../../src/serving/feed-cache.ts';
import { FeedForms } from '../../src/serving/feed-forms.ts';
import { encodeFeed, FeedStore, type StoredFeed } from '../../src/store/feed-store.ts';
import { calendar } from '../http/helpers.ts';
import { testContext } from '../support/service.ts';

const SOURCE = 'group:42';
let ctx: ServiceContext;
let closeContext: () => Promise<void>;
let subscriber: Redis;
let cache: FeedCache;
// Not 0: lru-cache takes a start time of 0 for "no TTL".
let clock = 1_000;
/** Stores feeds without announcing them, as if the announcement had been lost. */
let silentStore: FeedStore;

async function store(marker: string, announce = true): Promise<string> {
  const feed = await encodeFeed(calendar(marker), Date.UTC(2025, 9, 1));
  await (announce ? ctx.feeds : silentStore).write(ctx.redis.multi(), SOURCE, feed).exec();
  return feed.etag;
}

beforeEach(async () => {
  ({ context: ctx, close: closeContext } = await testContext());
  silentStore = new FeedStore(ctx.redis, { ...ctx.keys, feedUpdates: `${ctx.keys.feedUpdates}:nobody` });
  subscriber = new Redis(inject('redisUrl'));
  cache = new FeedCache({
    feeds: ctx.feeds,
    subscriber,
    channel: ctx.keys.feedUpdates,
    logger: silentLogger(),
    outage: new RedisOutageLog(silentLogger()),
    ttlMs: 60_000,
    clock: () => clock,
  });
  await cache.start();
});
afterEach(async () => {
  await cache.stop();
  await closeContext();
});

describe('FeedCache', () => {
  it('keeps a feed until its change is announced', async () => {
    const first = await store('first', false);
    expect((await cache.get(SOURCE))?.etag).toBe(first);
    const unannounced = await store('unannounced', false);
    expect((await cache.get(SOURCE))?.etag).toBe(first);
    const announced = await store('announced');
    await vi.waitFor(async () => expect((await cache.get(SOURCE))?.etag).toBe(announced), {
      timeout: 2_000,
      interval: 10,
    });
    expect(unannounced).not.toBe(announced);
  });

  it('forgets everything when its connection drops, and caches again once resubscribed', async () => {
    const id = await subscriber.client('ID');
    await store('before', false);
    await cache.get(SOURCE);
    const missed = await store('missed while down', false);
    await ctx.redis.call('CLIENT', 'KILL', 'ID', String(id));
    await vi.waitFor(async () => expect((await cache.get(SOURCE))?.etag).toBe(missed), {
      timeout: 5_000,
      interval: 20,
    });
    await vi.waitFor(
      async () => {
        await cache.get(SOURCE);
        expect(cache.size).toBe(1);
      },
      { timeout: 5_000, interval: 20 },
    );
    const after = await store('after');
    await vi.waitFor(async () => expect((await cache.get(SOURCE))?.etag).toBe(after), { timeout: 2_000, interval: 10 });
  });

  it('tries a failed resubscription again until the cache is live', async () => {
    const id = await subscriber.client('ID');
    // Both SUBSCRIBEs after the reconnect fail: ioredis' own resubscription and the cache's first.
    const refused = new Error('ERR refused');
    const subscribe = vi.spyOn(subscriber, 'subscribe').mockRejectedValueOnce(refused).mockRejectedValueOnce(refused);
    await ctx.redis.call('CLIENT', 'KILL', 'ID', String(id));
    await vi.waitFor(() => expect(subscribe.mock.calls.length).toBeGreaterThanOrEqual(2), {
      timeout: 5_000,
      interval: 20,
    });
    await vi.waitFor(() => expect(cache.isLive).toBe(true), { timeout: 10_000, interval: 20 });
  });

  it('lets entries expire as a safety net', async () => {
    const first = await store('first', false);
    expect((await cache.get(SOURCE))?.etag).toBe(first);
    const second = await store('second', false);
    clock += 59_000;
    expect((await cache.get(SOURCE))?.etag).toBe(first);
    clock += 2_000;
    expect((await cache.get(SOURCE))?.etag).toBe(second);
  });

  it('keeps the forms made of a feed it reads again unchanged, and only then', async () => {
    await store('first', false);
    const first = await cache.get(SOURCE);
    const identity = await first?.forms.get('identity');
    clock += 61_000;
    const again = await cache.get(SOURCE);
    expect(again).not.toBe(first);
    expect(again?.forms.ready('identity')).toBe(identity);
    await store('changed');
    await vi.waitFor(async () => expect((await cache.get(SOURCE))?.etag).not.toBe(first?.etag), {
      timeout: 2_000,
      interval: 10,
    });
    expect((await cache.get(SOURCE))?.forms.ready('identity')).toBeUndefined();
  });

  it('does not keep a read that an announcement overtook', async () => {
    await store('first', false);
    const reading = cache.get(SOURCE);
    cache.invalidate(SOURCE);
    await reading;
    expect(cache.size).toBe(0);
    expect(await cache.get(SOURCE)).toBeDefined();
    expect(cache.size).toBe(1);
  });

  it('keeps within its byte budget, evicting the least recently served feed', async () => {
    const sizes = new Map<string, number>();
    for (const source of ['group:1', 'group:2', 'group:3']) {
      const feed = await encodeFeed(calendar(`feed of ${source}`), Date.UTC(2025, 9, 1));
      await ctx.feeds.write(ctx.redis.multi(), source, feed).exec();
      sizes.set(source, FeedForms.served(feed).forms.bytes);
    }
    const total = [...sizes.values()].reduce((sum, size) => sum + size, 0);
    // Room for any two of the three feeds, never for all three.
    const small = new FeedCache({
      feeds: ctx.feeds,
      subscriber: new Redis(inject('redisUrl')),
      channel: ctx.keys.feedUpdates,
      logger: silentLogger(),
      outage: new RedisOutageLog(silentLogger()),
      maxBytes: total - 1,
      clock: () => clock,
    });
    await small.start();
    try {
      await small.get('group:1');
      await small.get('group:2');
      await small.get('group:1');
      await small.get('group:3');
      expect(small.size).toBe(2);
      expect(small.cachedBytes).toBe((sizes.get('group:1') ?? 0) + (sizes.get('group:3') ?? 0));
      // Deleted behind the cache's back: what is still cached is still served, the evicted feed is gone.
      await ctx.redis.del(ctx.keys.feed('group:1'), ctx.keys.feed('group:2'), ctx.keys.feed('group:3'));
      expect(await small.get('group:1')).toBeDefined();
      expect(await small.get('group:3')).toBeDefined();
      expect(await small.get('group:2')).toBeUndefined();
    } finally {
      await small.stop();
    }
  });

  it('holds trusted and last good copies in one budget, with the forms made on demand counted', async () => {
    const sources = ['group:1', 'group:2'];
    const stored: StoredFeed[] = [];
    for (const source of sources) {
      const feed = await encodeFeed(calendar(`feed of ${source}`), Date.UTC(2025, 9, 1));
      await ctx.feeds.write(ctx.redis.multi(), source, feed).exec();
      stored.push(feed);
    }
    const [one, two] = stored.map((feed) => FeedForms.served(feed).forms.bytes) as [number, number];
    const identity = Buffer.byteLength(calendar('feed of group:1'));
    // Room for both feeds and one identity body, not for a second one.
    const budgeted = new FeedCache({
      feeds: ctx.feeds,
      subscriber: new Redis(inject('redisUrl')),
      channel: ctx.keys.feedUpdates,
      logger: silentLogger(),
      outage: new RedisOutageLog(silentLogger()),
      maxBytes: one + two + identity + Math.floor(identity / 2),
      clock: () => clock,
    });
    await budgeted.start();
    try {
      const first = await budgeted.get('group:1');
      await budgeted.get('group:2');
      expect(budgeted.cachedBytes).toBe(one + two);
      await first?.forms.get('identity');
      expect(budgeted.cachedBytes).toBe(one + two + identity);
      // No longer trusted, still the last good copy: counted once, not twice.
      budgeted.invalidate('group:1');
      expect(budgeted.size).toBe(1);
      expect(budgeted.keptCount).toBe(2);
      expect(budgeted.cachedBytes).toBe(one + two + identity);
      // Making a form beyond the budget evicts the least recently served feed.
      const second = await budgeted.get('group:2');
      await second?.forms.get('identity');
      expect(budgeted.cachedBytes).toBe(two + Buffer.byteLength(calendar('feed of group:2')));
      expect(budgeted.keptCount).toBe(1);
    } finally {
      await budgeted.stop();
    }
  });

  it('does not cache a feed larger than its whole budget', async () => {
    await store('too big');
    const tiny = new FeedCache({
      feeds: ctx.feeds,
      subscriber: new Redis(inject('redisUrl')),
      channel: ctx.keys.feedUpdates,
      logger: silentLogger(),
      outage: new RedisOutageLog(silentLogger()),
      maxBytes: 10,
    });
    await tiny.start();
    try {
      expect(await tiny.get(SOURCE)).toBeDefined();
      expect(tiny.size).toBe(0);
      expect(tiny.cachedBytes).toBe(0);
    } finally {
      await tiny.stop();
    }
  });

  it('reads through after it is stopped', async () => {
    await store('first');
    await cache.stop();
    expect(await cache.get(SOURCE)).toBeDefined();
    expect(cache.size).toBe(0);
  });
});
