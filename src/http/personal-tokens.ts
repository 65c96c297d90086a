/**
 * Which subscription a personal feed token leads to. The answer is always Redis's while Redis can be read, so
 * that a revoked or rotated token stops working at once. Apart from that, the last answer per token served is
 * kept in memory (by the token's hash: a feed URL is a secret, and memory dumps happen), and is used only while
 * Redis cannot be read: a calendar that polled its personal feed before an outage keeps getting it, stale
 * marked, instead of a 503. Redis announces no token revocations, so an entry goes when Redis answers that the
 * token is unknown, or when the least recently served tokens make room.
 */
import { LRUCache } from 'lru-cache';
import { isRedisFailure } from '../lib/redis-failure.ts';
import type { ServiceContext } from '../runtime/context.ts';
import { hashToken } from '../security/tokens.ts';
import type { FeedCache } from './feed-cache.ts';

/** Tokens whose subscription is kept: each entry is two short strings, a few MiB for the whole map at most. */
const MAX_ENTRIES = 50_000;

/** Token → subscription id lookups, with a last-good copy per served token for Redis outages. */
export class PersonalTokens {
  private readonly ctx: Pick<ServiceContext, 'subscriptions'>;
  private readonly cache: Pick<FeedCache, 'servingStaleSince'>;
  /** Subscription id per token hash, as Redis last answered for a token that was served. */
  private readonly lastGood = new LRUCache<string, string>({ max: MAX_ENTRIES });

  constructor(ctx: Pick<ServiceContext, 'subscriptions'>, cache: Pick<FeedCache, 'servingStaleSince'>) {
    this.ctx = ctx;
    this.cache = cache;
  }

  /**
   * The subscription id of `token`, or undefined when Redis does not know it. While the feed cache serves
   * stale copies (Redis known to be away), a token served before answers from memory at once, without waiting
   * for Redis; one never served throws Redis's error, as it does when Redis fails on the way.
   */
  async idOf(token: string): Promise<string | undefined> {
    const hash = hashToken(token);
    if (this.cache.servingStaleSince !== undefined) {
      const kept = this.lastGood.get(hash);
      if (kept !== undefined) return kept;
    }
    try {
      const id = await this.ctx.subscriptions.idByToken(token);
      if (id === undefined) this.lastGood.delete(hash);
      else this.lastGood.set(hash, id);
      return id;
    } catch (error) {
      const kept = isRedisFailure(error) ? this.lastGood.get(hash) : undefined;
      if (kept === undefined) throw error;
      return kept;
    }
  }
}
