/**
 * The API process's copy of stored feeds. Serving a feed from memory is what makes feeds fast: a hit touches
 * no Redis. Writers announce every stored feed on the feed-updates channel; the cache listens on its own
 * connection and drops what changed. Messages sent while that connection is down are lost, so the cache
 * empties itself on every (re)connect and caches nothing until it is subscribed again; entries also expire
 * after a minute as a safety net. Memory is bounded by a byte budget: the least recently served feeds go first.
 */
import type { Redis } from 'ioredis';
import type { FeedStore, StoredFeed } from '../feeds/feed-store.ts';
import type { Logger } from '../logger.ts';
import type { SourceKey } from '../sources/source.ts';

/** What a {@link FeedCache} needs. */
export interface FeedCacheOptions {
  feeds: Pick<FeedStore, 'get'>;
  /** A connection of its own, put into subscriber mode (e.g. `ctx.redis.duplicate()`); the cache closes it. */
  subscriber: Redis;
  channel: string;
  logger: Logger;
  /** How long an entry is trusted without hearing of a change; default 60 s. */
  ttlMs?: number | undefined;
  /** Monotonic clock in ms; default `performance.now`. */
  clock?: (() => number) | undefined;
  /** Budget for the cached bytes (body + gzip + brotli of every entry); default 256 MiB. */
  maxBytes?: number | undefined;
}

/** Default byte budget: room for thousands of group feeds, far below what an API process may use. */
export const DEFAULT_FEED_CACHE_BYTES = 256 * 1024 * 1024;

interface Entry {
  feed: StoredFeed;
  storedAt: number;
  bytes: number;
}

interface Load {
  promise: Promise<StoredFeed | undefined>;
  /** Set when the source changed while it was being read: the result is answered but not kept. */
  outdated: boolean;
}

/** In-process cache of stored feeds, one entry per source, invalidated through Redis pub/sub. */
export class FeedCache {
  /** In recency order: the Map's first entry is the least recently served one (evicted first). */
  private readonly entries = new Map<SourceKey, Entry>();
  private readonly loads = new Map<SourceKey, Load>();
  private readonly options: FeedCacheOptions;
  private readonly ttlMs: number;
  private readonly clock: () => number;
  private readonly maxBytes: number;
  private bytes = 0;
  /** True while the subscription is known to be in place; only then are entries kept. */
  private live = false;
  private stopped = false;

  constructor(options: FeedCacheOptions) {
    this.options = options;
    this.ttlMs = options.ttlMs ?? 60_000;
    this.clock = options.clock ?? (() => performance.now());
    this.maxBytes = options.maxBytes ?? DEFAULT_FEED_CACHE_BYTES;
  }

  /** Subscribes to the feed-updates channel; resolves once invalidations are being received. */
  async start(): Promise<void> {
    const { subscriber, channel, logger } = this.options;
    let failing = false;
    let dropped = false;
    subscriber.on('error', (error: Error) => {
      if (failing) return;
      failing = true;
      logger.warn(
        { err: error, connection: 'feed-updates' },
        'feed-updates connection failed; serving feeds from Redis until it is back',
      );
    });
    subscriber.on('message', (received: string, source: string) => {
      if (received === channel) this.invalidate(source);
    });
    subscriber.on('close', () => {
      dropped = true;
      this.goDark();
    });
    subscriber.on('ready', () => {
      failing = false;
      if (!dropped || this.stopped) return;
      dropped = false;
      void this.subscribe().catch((error: unknown) =>
        logger.warn({ err: error }, 'feed-updates resubscription failed'),
      );
    });
    await this.subscribe();
  }

  /** Unsubscribes and closes the connection; the cache then always reads through. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.goDark();
    await this.options.subscriber.quit().catch(() => this.options.subscriber.disconnect());
  }

  /** The stored feed of `source`: from memory when possible, else read from Redis (and kept while live). */
  async get(source: SourceKey): Promise<StoredFeed | undefined> {
    const entry = this.entries.get(source);
    if (entry !== undefined) {
      this.entries.delete(source);
      if (this.clock() - entry.storedAt < this.ttlMs) {
        // Re-inserted at the young end of the Map: a hit makes the entry the last to be evicted.
        this.entries.set(source, entry);
        return entry.feed;
      }
      this.bytes -= entry.bytes;
    }
    const pending = this.loads.get(source);
    if (pending !== undefined) return pending.promise;
    return this.load(source);
  }

  /** Drops one source (also called for every message on the channel). */
  invalidate(source: SourceKey): void {
    this.remove(source);
    const load = this.loads.get(source);
    if (load !== undefined) load.outdated = true;
  }

  /** Number of cached feeds. */
  get size(): number {
    return this.entries.size;
  }

  /** Bytes held by the cached feeds (never more than the budget). */
  get cachedBytes(): number {
    return this.bytes;
  }

  private load(source: SourceKey): Promise<StoredFeed | undefined> {
    const keep = this.live;
    const load: Load = { promise: this.options.feeds.get(source), outdated: false };
    this.loads.set(source, load);
    return load.promise
      .then((feed) => {
        if (feed !== undefined && keep && this.live && !load.outdated) this.keep(source, feed);
        return feed;
      })
      .finally(() => {
        if (this.loads.get(source) === load) this.loads.delete(source);
      });
  }

  /** Adds an entry at the young end, then evicts from the old end until the budget holds. */
  private keep(source: SourceKey, feed: StoredFeed): void {
    const bytes = feed.body.length + feed.gzip.length + feed.brotli.length;
    this.remove(source);
    // A feed larger than the whole budget is served from Redis every time rather than emptying the cache.
    if (bytes > this.maxBytes) return;
    this.entries.set(source, { feed, storedAt: this.clock(), bytes });
    this.bytes += bytes;
    for (const [oldest, entry] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= entry.bytes;
    }
  }

  private remove(source: SourceKey): void {
    const entry = this.entries.get(source);
    if (entry === undefined) return;
    this.entries.delete(source);
    this.bytes -= entry.bytes;
  }

  private async subscribe(): Promise<void> {
    await this.options.subscriber.subscribe(this.options.channel);
    if (this.stopped) return;
    // Anything read before the subscription was in place may have missed its invalidation.
    this.clear();
    this.live = true;
  }

  private goDark(): void {
    this.live = false;
    this.clear();
  }

  private clear(): void {
    this.entries.clear();
    this.bytes = 0;
    for (const load of this.loads.values()) load.outdated = true;
  }
}
