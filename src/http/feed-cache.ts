/**
 * The API process's copy of stored feeds. Serving a feed from memory is what makes feeds fast: a hit touches
 * no Redis. Writers announce every stored feed on the feed-updates channel; the cache listens on its own
 * connection and drops what changed. Messages sent while that connection is down are lost, so the cache
 * empties itself on every (re)connect and caches nothing until it is subscribed again; entries also expire
 * after a minute as a safety net. Memory is bounded by a byte budget: the least recently served feeds go first.
 */
import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';
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
  /** How long an entry is trusted without hearing of a change, more than 0; default 60 s. */
  ttlMs?: number | undefined;
  /** Monotonic clock in ms, never 0 (lru-cache takes a start of 0 for "no TTL"); default `performance.now`. */
  clock?: (() => number) | undefined;
  /** Budget for the cached bytes (body + gzip + brotli of every entry); default 256 MiB. */
  maxBytes?: number | undefined;
}

/** Default byte budget: room for thousands of group feeds, far below what an API process may use. */
export const DEFAULT_FEED_CACHE_BYTES = 256 * 1024 * 1024;

interface Load {
  promise: Promise<StoredFeed | undefined>;
  /** Set when the source changed while it was being read: the result is answered but not kept. */
  outdated: boolean;
}

/** The bytes a feed holds in memory: its body and both compressed forms. */
export function feedBytes(feed: StoredFeed): number {
  return feed.body.length + feed.gzip.length + feed.brotli.length;
}

/**
 * In-process cache of stored feeds, one entry per source, invalidated through Redis pub/sub. The entries are an
 * `lru-cache` bounded by bytes and expiring after the TTL (a hit costs a fifth of what our own Map-based LRU
 * did); what is ours is when it may keep anything at all, and reads that an invalidation overtook.
 */
export class FeedCache {
  private readonly entries: LRUCache<SourceKey, StoredFeed>;
  private readonly loads = new Map<SourceKey, Load>();
  private readonly options: FeedCacheOptions;
  /** Told of every invalidation: a source, or undefined for everything. */
  private readonly listeners: ((source: SourceKey | undefined) => void)[] = [];
  /** True while the subscription is known to be in place; only then are entries kept. */
  private live = false;
  private stopped = false;

  constructor(options: FeedCacheOptions) {
    this.options = options;
    const clock = options.clock ?? (() => performance.now());
    this.entries = new LRUCache<SourceKey, StoredFeed>({
      // A feed larger than the whole budget is not kept (lru-cache refuses it): it is served from Redis each time.
      maxSize: options.maxBytes ?? DEFAULT_FEED_CACHE_BYTES,
      sizeCalculation: feedBytes,
      ttl: options.ttlMs ?? 60_000,
      perf: { now: clock },
      // lru-cache reads the clock once per millisecond; a clock of our own (tests move it by hand) is read every time.
      ttlResolution: options.clock === undefined ? 1 : 0,
    });
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
    const hit = this.entries.get(source);
    if (hit !== undefined) return hit;
    const pending = this.loads.get(source);
    if (pending !== undefined) return pending.promise;
    return this.load(source);
  }

  /**
   * Has `listener` told of every invalidation (a source, or undefined when everything is dropped), so that what
   * other caches keep per source follows the same channel.
   */
  onInvalidate(listener: (source: SourceKey | undefined) => void): void {
    this.listeners.push(listener);
  }

  /** Whether invalidations are being received now: other caches keep entries only then. */
  get isLive(): boolean {
    return this.live;
  }

  /** Drops one source (also called for every message on the channel). */
  invalidate(source: SourceKey): void {
    for (const listener of this.listeners) listener(source);
    this.entries.delete(source);
    const load = this.loads.get(source);
    if (load !== undefined) load.outdated = true;
  }

  /** Number of cached feeds. */
  get size(): number {
    return this.entries.size;
  }

  /** Bytes held by the cached feeds (never more than the budget). */
  get cachedBytes(): number {
    return this.entries.calculatedSize;
  }

  private load(source: SourceKey): Promise<StoredFeed | undefined> {
    const keep = this.live;
    const load: Load = { promise: this.options.feeds.get(source), outdated: false };
    this.loads.set(source, load);
    return load.promise
      .then((feed) => {
        if (feed !== undefined && keep && this.live && !load.outdated) this.entries.set(source, feed);
        return feed;
      })
      .finally(() => {
        if (this.loads.get(source) === load) this.loads.delete(source);
      });
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
    for (const listener of this.listeners) listener(undefined);
    this.entries.clear();
    for (const load of this.loads.values()) load.outdated = true;
  }
}
