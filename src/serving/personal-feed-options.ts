/**
 * The saved feed options of personal subscriptions, as the personal feed route needs them on every request:
 * kept in memory per subscription, dropped when the feed-updates channel announces the subscription's source
 * (saving options announces it), and only kept while that channel is being heard (the feed cache says so).
 * A hit costs no Redis; the token lookup itself stays a Redis read while Redis answers, so a revoked feed URL
 * stops at once. The last options read per subscription are kept apart, and answered only while Redis cannot
 * be read or does not answer in time (see `personal-tokens.ts`): a personal feed served before an outage is
 * served during it as its owner saved it; a deleted subscription's go when its deletion is announced.
 */
import { LRUCache } from 'lru-cache';
import { isRedisFailure } from '../lib/redis-failure.ts';
import type { FeedUpdate } from '../store/feed-updates.ts';
import type { SubscriptionStore } from '../store/subscription-store.ts';
import type { FeedCache } from './feed-cache.ts';
import { type ParsedSubscriberQuery, subscriberQueryOf } from './variant-query.ts';

/** Subscriptions whose options are kept; each entry is a few hundred bytes at most. */
const MAX_ENTRIES = 50_000;

/** The options a personal feed URL without any of its own serves, and when they were last saved or cleared. */
export interface SavedQuery {
  query: ParsedSubscriberQuery;
  /** Undefined when they never were. */
  savedAt: number | undefined;
}

/** Where {@link PersonalFeedOptions} reads saved options. */
export interface PersonalFeedOptionsDeps {
  readonly subscriptions: Pick<SubscriptionStore, 'feedOptionsOf'>;
}

/** Saved options per subscription id, following the feed cache's invalidations. */
export class PersonalFeedOptions {
  private readonly ctx: PersonalFeedOptionsDeps;
  private readonly cache: FeedCache;
  private readonly entries: LRUCache<string, SavedQuery>;
  /** The last options read per subscription, trusted or not: answered only while Redis cannot be read. */
  private readonly lastGood = new LRUCache<string, SavedQuery>({ max: MAX_ENTRIES });
  /** Goes up with every invalidation: a read that one overtook is answered but not kept. */
  private generation = 0;

  constructor(ctx: PersonalFeedOptionsDeps, cache: FeedCache, ttlMs = 60_000) {
    this.ctx = ctx;
    this.cache = cache;
    this.entries = new LRUCache({ max: MAX_ENTRIES, ttl: ttlMs });
    cache.onInvalidate((source) => this.invalidate(source));
  }

  /** The saved options of subscription `id` with their canonical text (empty: none saved), and when saved. */
  async get(id: string): Promise<SavedQuery> {
    const hit = this.entries.get(id);
    if (hit !== undefined) return hit;
    const kept = this.lastGood.get(id);
    // Redis known to be away: no request waits for it (the feed cache tries it again in the background).
    if (kept !== undefined && this.cache.servingStaleSince !== undefined) return kept;
    const generation = this.generation;
    const live = this.cache.isLive;
    let read: Awaited<ReturnType<SubscriptionStore['feedOptionsOf']>>;
    try {
      read = await this.ctx.subscriptions.feedOptionsOf(id);
    } catch (error) {
      if (kept === undefined || !isRedisFailure(error)) throw error;
      return kept;
    }
    const parsed = { query: subscriberQueryOf(read.options ?? {}), savedAt: read.savedAt };
    // Unless a deletion overtook the read (it dropped the last good options).
    if (generation === this.generation || this.lastGood.has(id)) this.lastGood.set(id, parsed);
    // A save announced while reading may not be in what was read: keep only reads no announcement overtook.
    if (live && this.cache.isLive && generation === this.generation) this.entries.set(id, parsed);
    return parsed;
  }

  private invalidate(update: FeedUpdate | undefined): void {
    if (update === undefined) {
      this.generation++;
      this.entries.clear();
      return;
    }
    // Changed tokens leave the options as they were.
    if (update.kind === 'tokens' || !update.source.startsWith('personal:')) return;
    this.generation++;
    const id = update.source.slice('personal:'.length);
    this.entries.delete(id);
    if (update.kind === 'gone') this.lastGood.delete(id);
  }
}
