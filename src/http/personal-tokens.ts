/**
 * Which subscription a personal feed token leads to. The answer is always Redis's while Redis answers, so that
 * a revoked or rotated token stops working at once. Apart from that, the last answer per token served is kept
 * in memory (by the token's hash: a feed URL is a secret, and memory dumps happen), and is used only when this
 * very request's read of Redis fails: a calendar that polled its personal feed before an outage keeps getting
 * it, stale marked, instead of a 503. Never merely because other reads failed or the feed-updates channel was
 * lost a moment ago: Redis may be up, and the token revoked. An entry goes when Redis answers that the token is
 * unknown, when a revocation, rotation or deletion of its subscription is announced on the feed-updates
 * channel, or when the least recently served tokens make room.
 *
 * Announcements sent while the channel is lost are lost too. Redis answering while the channel is lost (a
 * read of this process succeeds: writes can happen unheard) and the channel coming back both make every kept
 * entry unconfirmed: never answered from memory until Redis has been asked again with the channel in place.
 * Once the feed cache is subscribed again, every unconfirmed hash is looked up in pipelines; one that Redis
 * no longer leads to the same subscription is dropped, the others are confirmed. A request's own read, made
 * while the channel stays in place throughout, confirms its token too. A lost channel alone keeps the entries
 * confirmed: it is what an outage looks like (Redis down, nothing can change), and when the outage needs them.
 */
import { LRUCache } from 'lru-cache';
import { isRedisFailure } from '../lib/redis-failure.ts';
import type { Logger } from '../logger.ts';
import { hashToken } from '../security/tokens.ts';
import type { FeedUpdate } from '../sources/feed-updates.ts';
import type { SubscriptionStore } from '../subscriptions/subscription-store.ts';
import type { FeedCache } from './feed-cache.ts';

/** Tokens whose subscription is kept: each entry is two short strings, a few MiB for the whole map at most. */
const MAX_ENTRIES = 50_000;

/** What {@link PersonalTokens} reads and logs with. */
export interface PersonalTokensContext {
  subscriptions: Pick<SubscriptionStore, 'idByToken' | 'idsByTokenHash'>;
  logger: Pick<Logger, 'debug' | 'info' | 'warn'>;
}

/** Token → subscription id lookups, with a last-good copy per served token for Redis outages. */
export class PersonalTokens {
  private readonly ctx: PersonalTokensContext;
  private readonly cache: Pick<FeedCache, 'isLive'>;
  /** Subscription id per token hash, as Redis last answered for a token that was served. */
  private readonly lastGood = new LRUCache<string, string>({
    max: MAX_ENTRIES,
    dispose: (id, hash) => {
      this.unconfirmed.delete(hash);
      const hashes = this.hashesOf.get(id);
      hashes?.delete(hash);
      if (hashes?.size === 0) this.hashesOf.delete(id);
    },
  });
  /** The token hashes kept per subscription id, so that an announcement for it drops them all. */
  private readonly hashesOf = new Map<string, Set<string>>();
  /** Kept hashes whose announcements may have been lost: never answered from memory until Redis confirms them. */
  private readonly unconfirmed = new Set<string>();
  /** Goes up with every lost channel: an answer read across one is not a confirmation. */
  private generation = 0;

  constructor(ctx: PersonalTokensContext, cache: Pick<FeedCache, 'onInvalidate' | 'onLive' | 'isLive'>) {
    this.ctx = ctx;
    this.cache = cache;
    cache.onInvalidate((update) => this.forget(update));
    cache.onLive(() => {
      this.unconfirmAll();
      void this.recheck();
    });
  }

  /**
   * The subscription id of `token`, or undefined when Redis does not know it. When Redis fails to answer this
   * read, what it last answered for a token served before (and confirmed since the channel was last lost); any
   * other token throws Redis's error.
   */
  async idOf(token: string): Promise<string | undefined> {
    const hash = hashToken(token);
    const generation = this.generation;
    const live = this.cache.isLive;
    try {
      const id = await this.ctx.subscriptions.idByToken(token);
      // Redis answers while the channel is lost: anything kept may have changed unheard.
      if (!this.cache.isLive) this.unconfirmAll();
      if (id === undefined) this.lastGood.delete(hash);
      else this.keep(hash, id, live && generation === this.generation);
      return id;
    } catch (error) {
      const kept = isRedisFailure(error) && !this.unconfirmed.has(hash) ? this.lastGood.get(hash) : undefined;
      if (kept === undefined) throw error;
      return kept;
    }
  }

  /** How many kept tokens wait for Redis to confirm them (for tests and logs). */
  get unconfirmedCount(): number {
    return this.unconfirmed.size;
  }

  private keep(hash: string, id: string, confirmed: boolean): void {
    this.lastGood.set(hash, id);
    const hashes = this.hashesOf.get(id) ?? new Set<string>();
    hashes.add(hash);
    this.hashesOf.set(id, hashes);
    if (confirmed) this.unconfirmed.delete(hash);
    else this.unconfirmed.add(hash);
  }

  /**
   * A revocation, rotation or deletion announced for a subscription drops every token of it kept here (the
   * ones still live are kept again at their next read). A lost channel (undefined) only marks that reads
   * from now on confirm nothing.
   */
  private forget(update: FeedUpdate | undefined): void {
    if (update === undefined) {
      this.generation += 1;
      return;
    }
    if (update.kind === 'feed' || !update.source.startsWith('personal:')) return;
    const id = update.source.slice('personal:'.length);
    const hashes = this.hashesOf.get(id);
    if (hashes === undefined) return;
    const tokens = hashes.size;
    for (const hash of [...hashes]) this.lastGood.delete(hash);
    this.hashesOf.delete(id);
    this.ctx.logger.debug({ subscription: id, tokens }, 'kept feed tokens dropped: they changed');
  }

  /** Every kept token waits for Redis to confirm it (announcements may have been lost). */
  private unconfirmAll(): void {
    for (const hash of this.lastGood.keys()) this.unconfirmed.add(hash);
  }

  /**
   * Asks Redis about every unconfirmed token, the channel being in place again (so that any later change is
   * heard): a token no longer leading to the subscription kept goes, the others are confirmed. Given up when
   * the channel is lost again meanwhile (the next subscription starts over); a failed read leaves the tokens
   * unconfirmed, to be confirmed by their next read.
   */
  private async recheck(): Promise<void> {
    const generation = this.generation;
    const hashes = [...this.unconfirmed];
    if (hashes.length === 0) return;
    let ids: (string | undefined)[];
    try {
      ids = await this.ctx.subscriptions.idsByTokenHash(hashes);
    } catch (error) {
      this.ctx.logger.warn(
        { err: error, tokens: hashes.length },
        'could not re-check kept feed tokens; they are not served from memory until read again',
      );
      return;
    }
    if (generation !== this.generation) return;
    let dropped = 0;
    hashes.forEach((hash, index) => {
      const kept = this.lastGood.peek(hash);
      if (kept === undefined) return;
      if (ids[index] === kept) {
        this.unconfirmed.delete(hash);
        return;
      }
      this.lastGood.delete(hash);
      dropped += 1;
    });
    this.ctx.logger.info({ tokens: hashes.length, dropped }, 'kept feed tokens re-checked after the channel was lost');
  }
}
