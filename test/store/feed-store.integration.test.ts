import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { dropRetiredFeedForms } from '../../src/jobs/feed-forms-migration.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { encodeFeed, etagOf, identityLength, type StoredFeed } from '../../src/store/feed-store.ts';
import { testContext } from '../support/service.ts';
import { memoryLogger } from '../upstream/local-server.ts';

let ctx: ServiceContext;
let closeContext: () => Promise<void>;
let logs: () => string;

beforeEach(async () => {
  const { logger, output } = memoryLogger();
  logs = output;
  ({ context: ctx, close: closeContext } = await testContext({}, { logger }));
});
afterEach(async () => {
  await closeContext();
});

/** Stores a feed hash as the versions before one stored form wrote it: identity body, gzip and brotli. */
async function storeOldFormat(source: string, ics: string): Promise<{ etag: string; gzip: Buffer }> {
  const body = Buffer.from(ics);
  const old = { gzip: gzipSync(body), etag: etagOf(body) };
  await ctx.redis.hset(ctx.keys.feed(source), {
    body,
    gzip: old.gzip,
    brotli: randomBytes(200),
    etag: old.etag,
    lastModified: String(Date.UTC(2025, 9, 1)),
  });
  return old;
}

describe('FeedStore', () => {
  it('answers bytes that own their memory, not slices of a larger read the feed cache would keep alive', async () => {
    // Incompressible, and larger than one socket read: the reply arrives in several 64 KiB reads.
    const feeds: StoredFeed[] = ['group:1', 'group:2'].map(() => ({
      gzip: randomBytes(120_000),
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
      expect(feed?.gzip.buffer.byteLength, 'bytes held for the buffer').toBe(feed?.gzip.length);
    }
  });

  it('stores the gzip form only, with the ETag of the identity body and its length in the gzip trailer', async () => {
    const ics = `BEGIN:VCALENDAR\r\n${'X-LINE:расписание\r\n'.repeat(500)}END:VCALENDAR\r\n`;
    const feed = await encodeFeed(ics, Date.UTC(2025, 9, 1, 12, 0, 0, 700));
    await ctx.feeds.write(ctx.redis.multi(), 'group:1', feed).exec();
    expect((await ctx.redis.hkeys(ctx.keys.feed('group:1'))).sort()).toEqual(['etag', 'gzip', 'lastModified']);
    expect(feed.etag).toBe(etagOf(Buffer.from(ics)));
    expect(feed.lastModified).toBe(Date.UTC(2025, 9, 1, 12, 0, 0));
    expect(identityLength(feed.gzip)).toBe(Buffer.byteLength(ics));
  });

  it('reads a feed stored in the old layout as it was stored', async () => {
    const old = await storeOldFormat('group:7', 'BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n');
    expect(await ctx.feeds.get('group:7')).toEqual({ ...old, lastModified: Date.UTC(2025, 9, 1) });
  });
});

describe('dropRetiredFeedForms', () => {
  it('drops the identity body and brotli form of old feeds once, keeping what is served and its validators', async () => {
    const sources = Array.from({ length: 1_200 }, (_, index) => `group:${index + 1}`);
    const stored = new Map<string, { etag: string; gzip: Buffer }>();
    for (const source of sources)
      stored.set(source, await storeOldFormat(source, `BEGIN:VCALENDAR\r\nX-N:${source}\r\n`));
    const current = await encodeFeed('BEGIN:VCALENDAR\r\nX-N:current\r\nEND:VCALENDAR\r\n', Date.UTC(2025, 9, 2));
    await ctx.feeds.write(ctx.redis.multi(), 'employee:1', current).exec();
    // Another key under the prefix, with a field of the same name: not a feed, not touched.
    await ctx.redis.hset(ctx.keys.source('group:1'), { body: 'kept' });

    expect(await dropRetiredFeedForms(ctx)).toBe(sources.length);
    expect(logs()).toContain('"feeds":1200');
    for (const source of sources) {
      expect((await ctx.redis.hkeys(ctx.keys.feed(source))).sort()).toEqual(['etag', 'gzip', 'lastModified']);
      expect(await ctx.feeds.get(source)).toEqual({ ...stored.get(source), lastModified: Date.UTC(2025, 9, 1) });
    }
    expect(await ctx.feeds.get('employee:1')).toEqual(current);
    expect(await ctx.redis.hget(ctx.keys.source('group:1'), 'body')).toBe('kept');

    // Once per deployment, and harmless when run again.
    expect(await dropRetiredFeedForms(ctx)).toBe(0);
    await storeOldFormat('group:9999', 'BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n');
    expect(await ctx.feeds.dropRetiredForms()).toBe(1);
    expect(await ctx.feeds.dropRetiredForms()).toBe(0);
  });

  it('returns at once while another worker holds the migration, dropping nothing', async () => {
    await storeOldFormat('group:1', 'BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n');
    await ctx.redis.set(ctx.keys.lock('feed-forms-migration'), 'another worker', 'PX', 60_000);
    expect(await dropRetiredFeedForms(ctx)).toBe(0);
    expect((await ctx.redis.hkeys(ctx.keys.feed('group:1'))).sort()).toEqual([
      'body',
      'brotli',
      'etag',
      'gzip',
      'lastModified',
    ]);
  });
});
