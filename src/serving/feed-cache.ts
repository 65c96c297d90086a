/**
 * The API process's copy of stored feeds. Serving a feed from memory is what makes feeds fast: a hit touches
 * no Redis. Writers announce every stored feed on the feed-updates channel; the cache listens on its own
 * connection and stops trusting what changed. Messages sent while that connection is down are lost, so nothing
 * read before a (re)connect is trusted after it, nor anything until it is subscribed again; trust also ends
 * after a minute as a safety net.
 *
 * Every feed read is kept, trusted or not, as its last good copy: an untrusted one is never answered while Redis
 * works, but it is what a request gets while Redis is down or does not answer, marked stale since the outage
 * began, instead of an error. A personal feed token that Redis fails to look up, or not within a second, begins
 * the outage too (personal-tokens.ts). One read at a time tries Redis again in the background; the first that
 * succeeds ends the outage. A deleted personal subscription's last good copy goes when its deletion is announced.
 *
 * Memory is bounded by one byte budget (`FEED_CACHE_MB`) over everything kept: trusted feeds and last good copies
 * are the same entries, and the identity and brotli forms made on demand (feed-forms.ts) count once made; the
 * least recently served feeds go first. The cache fills three quarters of the budget ({@link FEED_CACHE_FILL}).
 */
import { LRUCache } from 'lru-cache';
import { DEFAULT_FEED_CACHE_MB } from '../config.ts';
import { closeRedis } from '../lib/redis-connection.ts';
import { isRedisFailure } from '../lib/redis-failure.ts';
import type { RedisOutageLog } from '../lib/redis-outage.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { Logger } from '../logger.ts';
import type { FeedStore, StoredFeed } from '../store/feed-store.ts';
import { type FeedUpdate, parseFeedUpdate } from '../store/feed-updates.ts';
import type { SourceKey } from '../timetable/source.ts';
import { FeedForms, type ServedFeed } from './feed-forms.ts';

/** What a {@link FeedCache} needs. */
export interface FeedCacheOptions {
  feeds: Pick<FeedStore, 'get'>;
  /** A connection of its own, put into subscriber mode (`duplicateRedis(ctx.redis, …)`); the cache closes it. */
  subscriber: RedisClient;
  channel: string;
  logger: Logger;
  /** The process's outage log: the subscriber's connection errors go there. */
  outage: RedisOutageLog;
  /** How long an entry is trusted without hearing of a change, more than 0; default 60 s. */
  ttlMs?: number | undefined;
  /** Monotonic clock in ms; default `performance.now`. */
  clock?: (() => number) | undefined;
  /**
   * Bytes of every feed kept, trusted or last good, in every form made, at most; default what the default
   * budget fills ({@link feedCacheFillBytes}).
   */
  maxBytes?: number | undefined;
  /** Wall clock in epoch ms, for the stale mark of copies served during an outage; default `Date.now`. */
  now?: (() => number) | undefined;
}

/** During an outage, Redis is tried again at most this often (in the background; nobody waits for it). */
const OUTAGE_RETRY_MS = 1_000;

/** First pause before a failed resubscription is tried again; it doubles up to 5 s. */
const RESUBSCRIBE_MS = 100;

/** Default byte budget: what it fills holds the gzip forms of 20,000 group feeds (about 180 of 192 MiB). */
export const DEFAULT_FEED_CACHE_BYTES = DEFAULT_FEED_CACHE_MB * 1024 * 1024;

/**
 * The share of the budget the cache fills with feeds. The rest pays for what keeping them costs beyond what is
 * counted: a dropped form's memory is freed only at V8's next collection, and the allocator keeps some of what
 * is freed between forms still kept. In the scale benchmark's 10,000-source step, with seven eighths filled, the
 * api took 1.15 bytes of RSS per byte counted above the same api serving with a 1 MiB cache, over the budget;
 * three quarters leaves room for a third more than counted (docs/design.md).
 */
export const FEED_CACHE_FILL = 3 / 4;

/** The bytes a cache under a budget of `budgetBytes` fills with feeds (see {@link FEED_CACHE_FILL}). */
export function feedCacheFillBytes(budgetBytes: number): number {
  return Math.floor(budgetBytes * FEED_CACHE_FILL);
}

/** Trusted by no generation: a last good copy only. */
const UNTRUSTED = -1;

/** One feed kept: its last good copy, trusted while its generation is the cache's and its time has not run out. */
interface Kept {
  readonly feed: ServedFeed;
  /** The cache's generation when it was read, or {@link UNTRUSTED}. */
  generation: number;
  /** Monotonic ms until when it is trusted without hearing of a change. */
  readonly trustedUntil: number;
}

interface Load {
  promise: Promise<ServedFeed | undefined>;
  /** Set when the source changed while it was being read: the result is answered but not kept. */
  outdated: boolean;
  /** Set when the source's subscription was deleted while it was being read: not even its last good copy is kept. */
  gone: boolean;
}

/**
 * In-process cache of stored feeds, one entry per source, invalidated through Redis pub/sub. The entries are an
 * `lru-cache` bounded by bytes (a hit costs a fifth of what our own Map-based LRU did); what is ours is when an
 * entry may be trusted at all, and reads that an invalidation overtook.
 */
export class FeedCache {
  /** The last copy read of every feed, trusted or not. */
  private readonly kept: LRUCache<SourceKey, Kept>;
  /**
   * Raised whenever announcements may have been missed: entries read in an earlier generation are not trusted,
   * without touching each of them.
   */
  private generation = 0;
  private readonly ttlMs: number;
  /** Stale-marked copies of last good feeds, made once per copy and outage (headers are cached per object). */
  private readonly staleCopies = new WeakMap<ServedFeed, ServedFeed>();
  private readonly clock: () => number;
  /** Epoch ms since when Redis could not be read (the stale mark of what is served meanwhile); else undefined. */
  private outageSince: number | undefined;
  /** Monotonic ms before which a background read is not tried again during an outage. */
  private retryAt = 0;
  private readonly loads = new Map<SourceKey, Load>();
  private readonly options: FeedCacheOptions;
  /** Told of every invalidation: an update, or undefined for everything. */
  private readonly listeners: ((update: FeedUpdate | undefined) => void)[] = [];
  /** Told each time the subscription is in place again, after a lost channel or at start. */
  private readonly liveListeners: (() => void)[] = [];
  /** True while the subscription is known to be in place; only then are entries trusted. */
  private live = false;
  private stopped = false;

  constructor(options: FeedCacheOptions) {
    this.options = options;
    this.clock = options.clock ?? (() => performance.now());
    this.ttlMs = options.ttlMs ?? 60_000;
    this.kept = new LRUCache<SourceKey, Kept>({
      // A feed larger than what the cache fills is not kept (lru-cache refuses it): it is served from Redis each time.
      maxSize: options.maxBytes ?? feedCacheFillBytes(DEFAULT_FEED_CACHE_BYTES),
      sizeCalculation: (kept) => kept.feed.forms.bytes,
    });
  }

  /** Subscribes to the feed-updates channel; resolves once invalidations are being received. */
  async start(): Promise<void> {
    const { subscriber, channel, outage } = this.options;
    let dropped = false;
    subscriber.on('error', (error: Error) => outage.failed('feed-updates', error));
    subscriber.on('message', (received: string, source: string) => {
      if (received === channel) this.apply(parseFeedUpdate(source));
    });
    subscriber.on('close', () => {
      dropped = true;
      this.goDark();
      if (!this.stopped) this.noteOutage();
    });
    subscriber.on('ready', () => {
      outage.restored('feed-updates');
      if (!dropped || this.stopped) return;
      dropped = false;
      void this.resubscribe();
    });
    await this.subscribe();
  }

  /** Unsubscribes and closes the connection; the cache then always reads through. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.goDark();
    await closeRedis(this.options.subscriber);
  }

  /**
   * The stored feed of `source`: from memory when possible, else read from Redis (and kept while live). While
   * Redis cannot be read, its last good copy marked stale, when there is one; else Redis's error.
   */
  async get(source: SourceKey): Promise<ServedFeed | undefined> {
    const kept = this.kept.get(source);
    if (kept !== undefined && this.isTrusted(kept)) return kept.feed;
    if (this.outageSince !== undefined && kept !== undefined) {
      this.retryInBackground(source);
      return this.staleCopy(kept.feed, this.outageSince);
    }
    const pending = this.loads.get(source);
    if (pending !== undefined) return pending.promise;
    return this.load(source);
  }

  /**
   * The last good copy of `source`, trusted or not, marked stale, while Redis is known not to answer (an outage is
   * on) and memory holds one; else undefined. Nothing waits for Redis: one read tries it again in the background,
   * as {@link get} does during an outage. For a personal feed whose token was answered from memory because Redis
   * did not answer it (personal-tokens.ts): even a trusted copy is then served marked, since Redis was not asked.
   */
  lastGood(source: SourceKey): ServedFeed | undefined {
    const since = this.outageSince;
    const kept = since === undefined ? undefined : this.kept.get(source);
    if (since === undefined || kept === undefined) return undefined;
    this.retryInBackground(source);
    return this.staleCopy(kept.feed, since);
  }

  /**
   * The trusted copy of `source` when memory holds one, as {@link get} answers it first; else undefined (nothing is
   * read). For answers that must not wait: the fast path of feed-fast-path.ts.
   */
  trusted(source: SourceKey): ServedFeed | undefined {
    const kept = this.kept.get(source);
    return kept !== undefined && this.isTrusted(kept) ? kept.feed : undefined;
  }

  /**
   * Has `listener` told of every update heard (or undefined when everything trusted is dropped: the channel was
   * lost), so that what other caches keep per source follows the same channel.
   */
  onInvalidate(listener: (update: FeedUpdate | undefined) => void): void {
    this.listeners.push(listener);
  }

  /**
   * Has `listener` told each time invalidations are received again (the subscription is in place, at start
   * and after every lost channel), so that other caches can re-check, against Redis, what they kept while
   * announcements may have been lost.
   */
  onLive(listener: () => void): void {
    this.liveListeners.push(listener);
  }

  /** Epoch ms since when feeds are served from their last good copies because Redis cannot be read, if they are. */
  get servingStaleSince(): number | undefined {
    return this.outageSince;
  }

  /**
   * Records that Redis cannot be read (from now, unless already) and delays the next background read; answers
   * since when. Also for reads of others that Redis failed or did not answer in time (personal-tokens.ts): what is
   * kept is served stale from then on, until a read succeeds.
   */
  noteOutage(): number {
    this.retryAt = this.clock() + OUTAGE_RETRY_MS;
    if (this.outageSince === undefined) {
      this.outageSince = (this.options.now ?? Date.now)();
      this.options.logger.warn('Redis cannot be read: serving the last good copies of feeds, marked stale');
    }
    return this.outageSince;
  }

  /** Whether invalidations are being received now: other caches keep entries only then. */
  get isLive(): boolean {
    return this.live;
  }

  /** Drops one source, as a message announcing its stored feed does. */
  invalidate(source: SourceKey): void {
    this.apply({ kind: 'feed', source });
  }

  /** Number of trusted feeds (counted one by one: for tests). */
  get size(): number {
    let trusted = 0;
    for (const kept of this.kept.values()) if (this.isTrusted(kept)) trusted += 1;
    return trusted;
  }

  /** Bytes held by every feed kept, trusted or last good (never more than the budget). */
  get cachedBytes(): number {
    return this.kept.calculatedSize;
  }

  /** Number of feeds kept, trusted or last good (what {@link cachedBytes} counts), without walking them. */
  get keptCount(): number {
    return this.kept.size;
  }

  private isTrusted(kept: Kept): boolean {
    return kept.generation === this.generation && this.clock() < kept.trustedUntil;
  }

  private load(source: SourceKey): Promise<ServedFeed | undefined> {
    const keep = this.live;
    const read = this.options.feeds.get(source).then(
      (stored) => {
        this.endOutage();
        if (stored === undefined || load.gone) {
          this.kept.delete(source);
          return undefined;
        }
        const feed = this.served(source, stored);
        this.kept.set(source, {
          feed,
          generation: keep && this.live && !load.outdated ? this.generation : UNTRUSTED,
          trustedUntil: this.clock() + this.ttlMs,
        });
        // Counted again as its forms are made: a copy with the new size replaces the entry (lru-cache sizes on set).
        feed.forms.onGrow = () => {
          const now = this.kept.peek(source);
          if (now?.feed === feed) this.kept.set(source, { ...now });
        };
        return feed;
      },
      (error: unknown) => {
        if (!isRedisFailure(error)) throw error;
        const since = this.noteOutage();
        const kept = this.kept.get(source);
        if (kept === undefined) throw error;
        return this.staleCopy(kept.feed, since);
      },
    );
    const load: Load = { promise: read, outdated: false, gone: false };
    this.loads.set(source, load);
    return read.finally(() => {
      if (this.loads.get(source) === load) this.loads.delete(source);
    });
  }

  /**
   * `stored` as served. Read again with the same ETag (its trust ran out, or another feed was announced), it is
   * the same bytes: the forms made of the copy kept are kept too, rather than made again every minute.
   */
  private served(source: SourceKey, stored: StoredFeed): ServedFeed {
    const before = this.kept.peek(source)?.feed;
    if (before === undefined || before.etag !== stored.etag) return FeedForms.served(stored);
    const { gzip: _same, ...validators } = stored;
    return { ...validators, forms: before.forms };
  }

  /** Starts a read of `source` that nobody waits for, unless one is under way or one failed a moment ago. */
  private retryInBackground(source: SourceKey): void {
    if (this.loads.has(source) || this.clock() < this.retryAt) return;
    this.retryAt = this.clock() + OUTAGE_RETRY_MS;
    this.load(source).catch(() => undefined);
  }

  /**
   * Follows one message of the channel. A changed feed drops the trusted copy; a deleted subscription also its
   * last good one (nobody may be served it, even during an outage); changed tokens touch no feed.
   */
  private apply(update: FeedUpdate): void {
    for (const listener of this.listeners) listener(update);
    if (update.kind === 'tokens') return;
    const { source } = update;
    if (update.kind === 'gone') this.kept.delete(source);
    else {
      const kept = this.kept.peek(source);
      if (kept !== undefined) kept.generation = UNTRUSTED;
    }
    const load = this.loads.get(source);
    if (load === undefined) return;
    load.outdated = true;
    if (update.kind === 'gone') load.gone = true;
  }

  private endOutage(): void {
    if (this.outageSince === undefined) return;
    this.outageSince = undefined;
    this.options.logger.info('Redis can be read again: feeds are served fresh');
  }

  /** `feed` marked stale since `since`, or since earlier when it was stale already. */
  private staleCopy(feed: ServedFeed, since: number): ServedFeed {
    const made = this.staleCopies.get(feed);
    if (made !== undefined && made.staleSince === Math.min(feed.staleSince ?? since, since)) return made;
    const copy = { ...feed, staleSince: Math.min(feed.staleSince ?? since, since) };
    this.staleCopies.set(feed, copy);
    return copy;
  }

  /**
   * Subscribes again after a reconnect, trying until it works (with backoff) or the connection drops again (its
   * next `ready` starts over): one failed SUBSCRIBE must not leave the cache dark for good.
   */
  private async resubscribe(): Promise<void> {
    const { subscriber, logger } = this.options;
    for (let attempt = 0; !this.stopped; attempt++) {
      try {
        await this.subscribe();
        return;
      } catch (error) {
        if (attempt % 12 === 0) logger.warn({ err: error }, 'feed-updates resubscription failed; trying again');
        // Lost again: the next 'ready' resubscribes.
        if (subscriber.status !== 'ready') return;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(RESUBSCRIBE_MS * 2 ** attempt, 5_000)));
    }
  }

  private async subscribe(): Promise<void> {
    await this.options.subscriber.subscribe(this.options.channel);
    if (this.stopped) return;
    this.endOutage();
    // Anything read before the subscription was in place may have missed its invalidation.
    this.clear();
    this.live = true;
    for (const listener of this.liveListeners) listener();
  }

  private goDark(): void {
    this.live = false;
    this.clear();
  }

  private clear(): void {
    for (const listener of this.listeners) listener(undefined);
    this.generation += 1;
    for (const load of this.loads.values()) load.outdated = true;
  }
}
