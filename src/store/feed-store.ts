import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { brotliCompress, constants, gunzip, gzip } from 'node:zlib';
import type { ChainableCommander } from 'ioredis';
import { loadScript } from '../lib/lua-script.ts';
import { scanKeys } from '../lib/redis-scan.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { RedisKeys } from './keys.ts';

/** What answers conditional requests for a feed: the same whatever form its bytes are served in. */
export interface FeedValidators {
  /** Strong validator, quoted: `"…"`, the digest of the identity (uncompressed) body. */
  etag: string;
  /** Epoch ms, whole seconds (HTTP dates have no finer resolution). */
  lastModified: number;
  /** Set while the feed serves the last good data after failed refreshes: since when (epoch ms). */
  staleSince?: number | undefined;
}

/**
 * A rendered feed as stored: its gzip form only, and its validators. Most calendar clients ask for gzip; the api
 * makes the identity body and the brotli form from this one when a client asks for them (serving/feed-forms.ts).
 * Keeping one form instead of three made a median group's feed hash 6 KB instead of 186 KB.
 */
export interface StoredFeed extends FeedValidators {
  gzip: Buffer;
}

// Quality 5 compresses a median group's feed within 1 % of quality 9 at a seventh of the CPU (0.5 ms against
// 3.6 ms); at 9, compression was a third of a first refresh cycle's CPU (bench/RESULTS.md).
export const BROTLI_QUALITY = 5;

/** The strong ETag of a feed body: a digest of its bytes. */
export function etagOf(body: Buffer): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
}

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);
const brotliAsync = promisify(brotliCompress);

/** The compression running now, or the last one: each next one starts once it has ended. */
let lastCompression: Promise<unknown> = Promise.resolve();

/**
 * Runs `compress` on libuv's thread pool once every compression started before it has ended: an event loop stays
 * free meanwhile (a worker's starts the next rate-limited fetches, which it would otherwise start late; a first
 * refresh cycle compresses every feed). One at a time per process: brotli sets up megabytes of encoder state
 * per call, and a worker's 16 jobs compressing at once took 3 to 4 times the CPU of the same feeds one after
 * another (page faults and allocator contention on the pool's threads).
 */
function inTurn<T>(compress: () => Promise<T>): Promise<T> {
  const compressed = lastCompression.then(compress);
  lastCompression = compressed.catch(() => undefined);
  return compressed;
}

/**
 * The gzip and brotli encodings of a feed variant the api renders (see {@link inTurn}), each in memory of its own:
 * zlib hands out a slice of its 64 KiB output buffer, which a cache would keep whole while counting the slice.
 */
export function compressFeed(body: Buffer): Promise<{ gzip: Buffer; brotli: Buffer }> {
  return inTurn(async () => {
    const [gzipped, brotli] = await Promise.all([gzipAsync(body, { level: 9 }), brotliNow(body)]);
    return { gzip: ownBytes(gzipped), brotli: ownBytes(brotli) };
  });
}

/** The brotli encoding of a feed body (see {@link inTurn}), in memory of its own as {@link compressFeed}'s. */
export async function brotliFeed(body: Buffer): Promise<Buffer> {
  return ownBytes(await inTurn(() => brotliNow(body)));
}

function brotliNow(body: Buffer): Promise<Buffer> {
  return brotliAsync(body, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
      [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
    },
  });
}

/**
 * The identity body of a stored feed, decompressed on libuv's thread pool into one buffer (zlib's default 16 KiB
 * chunks, joined at the end, would leave ten times the body in garbage per feed). The buffer is one byte longer
 * than the trailer says, so that zlib sees the stream end before it fills it (a full buffer makes it allocate
 * another of the same size). A damaged trailer cannot make it allocate more than {@link MAX_FEED_BYTES}, and a
 * stream that inflates beyond that is refused.
 */
export async function feedBody(feed: Pick<StoredFeed, 'gzip'>): Promise<Buffer> {
  const chunkSize = Math.min(MAX_FEED_BYTES, Math.max(MIN_CHUNK, identityLength(feed.gzip) + 1));
  return gunzipAsync(feed.gzip, { chunkSize, maxOutputLength: MAX_FEED_BYTES });
}

/** zlib's smallest output chunk. */
const MIN_CHUNK = 64;

/** The largest identity body a stored feed may inflate to: hundreds of times a large teacher's feed. */
const MAX_FEED_BYTES = 64 * 1024 * 1024;

/**
 * The length of the identity body of a gzip form, without decompressing it: the gzip trailer's ISIZE (RFC 1952),
 * the length modulo 2^32, exact for the one-member streams {@link encodeFeed} writes of feeds under 4 GiB.
 */
export function identityLength(gzipped: Buffer): number {
  return gzipped.length < 4 ? 0 : gzipped.readUInt32LE(gzipped.length - 4);
}

/** Compresses a rendered feed and computes its validators. */
export async function encodeFeed(ics: string, lastModified: number, staleSince?: number): Promise<StoredFeed> {
  const body = Buffer.from(ics, 'utf8');
  // The digest is taken on the event loop while the thread pool compresses.
  const gzipped = inTurn(() => gzipAsync(body, { level: 9 }));
  const etag = etagOf(body);
  return {
    gzip: await gzipped,
    etag,
    lastModified: Math.floor(lastModified / 1000) * 1000,
    staleSince,
  };
}

/**
 * `bytes` in memory of their own. ioredis hands bulk replies out as slices of what it read from the socket
 * (64 KiB at a time), and zlib its output as slices of its 64 KiB output buffer: a feed form kept by the API's
 * feed cache would keep that whole buffer alive, bytes of other replies included, and the cache's byte budget
 * would count a fraction of the memory it holds (with 2,000 feeds requested the scale benchmark saw the api
 * grow by twice their bytes). One copy, outside the pool of small buffers for the same reason.
 */
function ownBytes(bytes: Buffer): Buffer {
  if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength) return bytes;
  const copy = Buffer.allocUnsafeSlow(bytes.length);
  bytes.copy(copy);
  return copy;
}

/**
 * Rendered feeds in Redis, one HASH per source (`gzip`, `etag`, `lastModified`, `staleSince`); every store is
 * announced on the feed-updates channel.
 */
export class FeedStore {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;

  constructor(redis: RedisClient, keys: RedisKeys) {
    this.redis = redis;
    this.keys = keys;
  }

  /**
   * The stored feed of a source, bytes and all. A hash stored before feeds kept one form may still hold `body`
   * and `brotli` besides `gzip` (until {@link dropRetiredForms}): they are not read.
   */
  async get(source: SourceKey): Promise<StoredFeed | undefined> {
    const [gzip, etag, lastModified, staleSince] = await this.redis.hmgetBuffer(
      this.keys.feed(source),
      'gzip',
      'etag',
      'lastModified',
      'staleSince',
    );
    if (!gzip || !etag || !lastModified) return undefined;
    const feed: StoredFeed = {
      gzip: ownBytes(gzip),
      etag: etag.toString(),
      lastModified: Number(lastModified.toString()),
    };
    if (staleSince) feed.staleSince = Number(staleSince.toString());
    return feed;
  }

  /**
   * Drops the identity body and brotli form from every feed hash stored before feeds kept their gzip form only
   * (a refresh that changes nothing does not rewrite its feed, so they would stay). Their gzip form and
   * validators stay as they are: no client sees a new ETag. Idempotent; resolves to how many hashes it shrank.
   */
  async dropRetiredForms(): Promise<number> {
    let shrunk = 0;
    for await (const batch of scanKeys(this.redis, this.keys.feed('*'), DROP_BATCH)) {
      if (batch.length === 0) continue;
      const pipeline = this.redis.pipeline();
      for (const key of batch) pipeline.hdel(key, ...RETIRED_FIELDS);
      for (const [error, removed] of (await pipeline.exec()) ?? []) {
        if (error) throw error;
        if (Number(removed) > 0) shrunk += 1;
      }
    }
    return shrunk;
  }

  /** The stored feed's ETag and stale mark, without its bytes; `etag` is undefined when there is no feed. */
  async validators(source: SourceKey): Promise<{ etag?: string; staleSince?: number }> {
    const [etag, staleSince] = await this.redis.hmget(this.keys.feed(source), 'etag', 'staleSince');
    return { ...(etag ? { etag } : {}), ...(staleSince ? { staleSince: Number(staleSince) } : {}) };
  }

  /**
   * Replaces the feed only if its ETag is still `expectedEtag` (atomically, in Redis): a write derived from an
   * older publication never overwrites a newer one. Resolves to whether it wrote.
   */
  async replaceIf(source: SourceKey, expectedEtag: string, feed: StoredFeed): Promise<boolean> {
    const fields = feedFields(feed);
    const written = await REPLACE_IF_SCRIPT.run(
      this.redis,
      [this.keys.feed(source), this.keys.feedUpdates],
      [expectedEtag, source, ...fields],
    );
    return written === 1;
  }

  /** Whether a feed exists, without reading it. */
  async exists(source: SourceKey): Promise<boolean> {
    return (await this.redis.exists(this.keys.feed(source))) === 1;
  }

  /** Queues the store of a feed (replacing the previous one whole) and its announcement on `multi`. */
  write(multi: ChainableCommander, source: SourceKey, feed: StoredFeed): ChainableCommander {
    const key = this.keys.feed(source);
    return multi
      .del(key)
      .hset(key, ...feedFields(feed))
      .publish(this.keys.feedUpdates, source);
  }
}

/** Replaces a feed while its ETag is the one expected, and announces it (feed-replace-if.lua). */
const REPLACE_IF_SCRIPT = loadScript(import.meta.dirname, 'feed-replace-if');

/** Fields of the feed hash before it kept the gzip form only. */
const RETIRED_FIELDS = ['body', 'brotli'];

/** Feed hashes asked for per SCAN step, and shrunk per pipeline, by {@link FeedStore.dropRetiredForms}. */
const DROP_BATCH = 500;

function feedFields(feed: StoredFeed): (string | Buffer)[] {
  const fields: (string | Buffer)[] = ['gzip', feed.gzip, 'etag', feed.etag, 'lastModified', String(feed.lastModified)];
  if (feed.staleSince !== undefined) fields.push('staleSince', String(feed.staleSince));
  return fields;
}
