/**
 * Which subscription a personal feed token leads to. The answer is always Redis's while Redis answers, so that
 * a revoked or rotated token stops working at once. Apart from that, the last answer per token served is kept
 * in memory (by the token's hash: a feed URL is a secret, and memory dumps happen), and is used only when this
 * very request's read of Redis fails: a calendar that polled its personal feed before an outage keeps getting
 * it, stale marked, instead of a 503. Never merely because other reads failed or the feed-updates channel was
 * lost a moment ago: Redis may be up, and the token revoked. An entry goes when Redis answers that the token is
 * unknown, when a revocation, rotation or deletion of its subscription is announced on the feed-updates
 * channel, or when the least recently served tokens make room.
 */
import { LRUCache } from 'lru-cache';
import { isRedisFailure } from '../lib/redis-failure.ts';
import type { ServiceContext } from '../runtime/context.ts';
import { hashToken } from '../security/tokens.ts';
import type { FeedUpdate } from '../sources/feed-updates.ts';
import type { FeedCache } from './feed-cache.ts';

/** Tokens whose subscription is kept: each entry is two short strings, a few MiB for the whole map at most. */
const MAX_ENTRIES = 50_000;

/** Token → subscription id lookups, with a last-good copy per served token for Redis outages. */
export class PersonalTokens {
  private readonly ctx: Pick<ServiceContext, 'subscriptions' | 'logger'>;
  /** Subscription id per token hash, as Redis last answered for a token that was served. */
  private readonly lastGood = new LRUCache<string, string>({
    max: MAX_ENTRIES,
    dispose: (id, hash) => {
      const hashes = this.hashesOf.get(id);
      hashes?.delete(hash);
      if (hashes?.size === 0) this.hashesOf.delete(id);
    },
  });
  /** The token hashes kept per subscription id, so that an announcement for it drops them all. */
  private readonly hashesOf = new Map<string, Set<string>>();

  constructor(ctx: Pick<ServiceContext, 'subscriptions' | 'logger'>, cache: Pick<FeedCache, 'onInvalidate'>) {
    this.ctx = ctx;
    cache.onInvalidate((update) => this.forget(update));
  }

  /**
   * The subscription id of `token`, or undefined when Redis does not know it. When Redis fails to answer this
   * read, what it last answered for a token served before; a token never served throws Redis's error.
   */
  async idOf(token: string): Promise<string | undefined> {
    const hash = hashToken(token);
    try {
      const id = await this.ctx.subscriptions.idByToken(token);
      if (id === undefined) this.lastGood.delete(hash);
      else this.keep(hash, id);
      return id;
    } catch (error) {
      const kept = isRedisFailure(error) ? this.lastGood.get(hash) : undefined;
      if (kept === undefined) throw error;
      return kept;
    }
  }

  private keep(hash: string, id: string): void {
    this.lastGood.set(hash, id);
    const hashes = this.hashesOf.get(id) ?? new Set<string>();
    hashes.add(hash);
    this.hashesOf.set(id, hashes);
  }

  /**
   * A revocation, rotation or deletion announced for a subscription drops every token of it kept here (the
   * ones still live are kept again at their next read). A lost channel (undefined) keeps the map: it answers
   * only when Redis fails, which is when an outage needs it.
   */
  private forget(update: FeedUpdate | undefined): void {
    if (update === undefined || update.kind === 'feed' || !update.source.startsWith('personal:')) return;
    const id = update.source.slice('personal:'.length);
    const hashes = this.hashesOf.get(id);
    if (hashes === undefined) return;
    const tokens = hashes.size;
    for (const hash of [...hashes]) this.lastGood.delete(hash);
    this.hashesOf.delete(id);
    this.ctx.logger.debug({ subscription: id, tokens }, 'kept feed tokens dropped: they changed');
  }
}
