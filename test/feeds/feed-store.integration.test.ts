import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StoredFeed } from '../../src/feeds/feed-store.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { testContext } from '../support/service.ts';

let ctx: ServiceContext;
let closeContext: () => Promise<void>;

beforeEach(async () => {
  ({ context: ctx, close: closeContext } = await testContext());
});
afterEach(async () => {
  await closeContext();
});

describe('FeedStore.get', () => {
  it('answers bytes that own their memory, not slices of a larger read the feed cache would keep alive', async () => {
    // Incompressible, and larger than one socket read: the reply arrives in several 64 KiB reads.
    const feeds: StoredFeed[] = ['group:1', 'group:2'].map(() => ({
      body: randomBytes(120_000),
      gzip: randomBytes(15_000),
      brotli: randomBytes(3_000),
      etag: `"${randomBytes(8).toString('hex')}"`,
      lastModified: Date.UTC(2025, 9, 1),
    }));
    const multi = ctx.redis.multi();
    ctx.feeds.write(multi, 'group:1', feeds[0] as StoredFeed);
    ctx.feeds.write(multi, 'group:2', feeds[1] as StoredFeed);
    await multi.exec();
    const read = await Promise.all([ctx.feeds.get('group:1'), ctx.feeds.get('group:2')]);
    for (const [index, feed] of read.entries()) {
      expect(feed).toEqual(feeds[index]);
      for (const bytes of [feed?.body, feed?.gzip, feed?.brotli])
        expect(bytes?.buffer.byteLength, 'bytes held for the buffer').toBe(bytes?.length);
    }
  });
});
