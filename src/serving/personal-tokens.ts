/**
 * Which subscription a personal feed token leads to. The answer is Redis's whenever Redis gives it in time, so
 * that a revoked or rotated token stops working at once. Apart from that, the last answer per token served is
 * kept in memory (by the token's hash: a feed URL is a secret, and memory dumps happen), and answered when Redis
 * does not: a calendar that polled its personal feed before an outage keeps getting it, stale marked, instead
 * of a 503, and without waiting for the 3 s command timeout (a paused Redis answers nothing until then).
 *
 * Memory answers a kept token only when Redis does not: this request's read failed (Redis's own word that it
 * cannot be read now), or has not answered within {@link ANSWER_WITHIN_MS}, or an earlier read did either and
 * the feed cache serves stale since (then no request waits, and the feed cache's background read ends that once
 * Redis answers). The last two only while every change to tokens Redis could have told this process of has been
 * heard ({@link PersonalTokens.heardAll}): the feed-updates channel is in place, or the connection to Redis is
 * down too; with the channel lost and the connection up (Redis may be up, with announcements lost), the read is
 * waited for until it answers or fails. Each change is announced on the channel by the script that makes it, in
 * the same step; Redis writes the announcement out to every subscriber in the same turn of its event loop as the
 * reply to whoever revoked, and the channel brings announcements in the order Redis ran the changes. So a token
 * revoked while the channel was in place, before Redis stopped answering this process, was dropped here before
 * memory could answer it. What no process can know is a revocation Redis makes while it cannot reach that
 * process at all (a network partition, Redis up for others): memory answers such a token until the process
 * reaches Redis again.
 *
 * An entry goes when Redis answers that the token is unknown, when a revocation, rotation or deletion of its
 * subscription is announced on the feed-updates channel, or when the least recently served tokens make room.
 * Announcements sent while the channel is lost are lost too. Redis answering while the channel is lost (a
 * read of this process succeeds: writes can happen unheard) and the channel coming back both make every kept
 * entry unconfirmed: never answered from memory until Redis has been asked again with the channel in place.
 * Once the feed cache is subscribed again, every unconfirmed hash is looked up in pipelines; one that Redis
 * no longer leads to the same subscription is dropped, the others are confirmed. A request's own read, made
 * while the channel stays in place throughout, confirms its token too. A lost channel alone keeps the entries
 * confirmed: it is what an outage looks like (Redis down, nothing can change), and when the outage needs them.
 */
import { LRUCache } from 'lru-cache';
import { withDeadline } from '../lib/deadline.ts';
import { DeadlineError } from '../lib/errors.ts';
import { isRedisFailure } from '../lib/redis-failure.ts';
import type { Logger } from '../logger.ts';
import { hashToken } from '../security/tokens.ts';
import type { FeedUpdate } from '../store/feed-updates.ts';
import type { SubscriptionStore } from '../store/subscription-store.ts';
import type { FeedCache } from './feed-cache.ts';

/** Tokens whose subscription is kept: each entry is two short strings, a few MiB for the whole map at most. */
const MAX_ENTRIES = 50_000;

/**
 * How long a request waits for Redis to say which subscription its token leads to before a kept answer is
 * given instead. A healthy Redis answers in well under a millisecond and a busy one (a fork, a long script) in
 * some hundreds; a second leaves half a second of the 1.5 s a personal feed is answered in at most.
 */
export const ANSWER_WITHIN_MS = 1_000;

/** What {@link PersonalTokens} reads and logs with. */
export interface PersonalTokensContext {
  subscriptions: Pick<SubscriptionStore, 'idByToken' | 'idsByTokenHash'>;
  /** The request connection (ioredis' client), whose `status` says whether Redis can be reached at all. */
  redis: { readonly status: string };
  logger: Pick<Logger, 'debug' | 'info' | 'warn'>;
}

/** The feed cache as the tokens follow it: its channel, and whether it serves stale because Redis does not answer. */
export type TokenCacheHooks = Pick<
  FeedCache,
  'onInvalidate' | 'onLive' | 'isLive' | 'servingStaleSince' | 'noteOutage'
>;

/** A token's subscription, and whether memory answered it because Redis did not (its feed is then served stale). */
export interface TokenMatch {
  id: string;
  fromMemory: boolean;
}

/** Token → subscription id lookups, with a last-good copy per served token for Redis outages. */
export class PersonalTokens {
  private readonly ctx: PersonalTokensContext;
  private readonly cache: TokenCacheHooks;
  private readonly answerWithinMs: number;
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
  /** Goes up with every token announcement heard; {@link announcedAt} holds its value per subscription. */
  private announcements = 0;
  /**
   * The announcement count when each subscription's tokens last changed, so that a read answered before a change
   * but arriving after its announcement (two connections, no order between them) is not kept as confirmed.
   */
  private readonly announcedAt = new LRUCache<string, number>({ max: MAX_ENTRIES });

  constructor(ctx: PersonalTokensContext, cache: TokenCacheHooks, answerWithinMs = ANSWER_WITHIN_MS) {
    this.ctx = ctx;
    this.cache = cache;
    this.answerWithinMs = answerWithinMs;
    cache.onInvalidate((update) => this.forget(update));
    cache.onLive(() => {
      this.unconfirmAll();
      void this.recheck();
    });
  }

  /**
   * The subscription of `token`, or undefined when Redis says it knows none. From memory when Redis does not
   * answer (see the module comment): then the feed cache serves stale from now on, if it did not already. A token
   * memory cannot answer waits for Redis, and throws Redis's error when it fails.
   */
  async find(token: string): Promise<TokenMatch | undefined> {
    const hash = hashToken(token);
    if (this.cache.servingStaleSince !== undefined && this.heardAll()) {
      const kept = this.confirmedId(hash);
      if (kept !== undefined) return { id: kept, fromMemory: true };
    }
    const read = this.read(token, hash);
    let id: string | undefined;
    try {
      id = await withDeadline(read, this.answerWithinMs);
    } catch (error) {
      if (!(error instanceof DeadlineError)) return this.failed(hash, error);
      // Late is not Redis's word that it cannot be read: memory answers only if nothing Redis could have told
      // this process went unheard; otherwise the read is waited for, as long as it takes to answer or fail.
      const kept = this.heardAll() ? this.confirmedId(hash) : undefined;
      if (kept !== undefined) return this.fromMemory(kept);
      try {
        id = await read;
      } catch (failure) {
        return this.failed(hash, failure);
      }
    }
    return id === undefined ? undefined : { id, fromMemory: false };
  }

  /** How many kept tokens wait for Redis to confirm them (for tests and logs). */
  get unconfirmedCount(): number {
    return this.unconfirmed.size;
  }

  /** The kept answer for a token whose own read failed on Redis (a closed connection, a timeout); else `error`. */
  private failed(hash: string, error: unknown): TokenMatch {
    const kept = isRedisFailure(error) ? this.confirmedId(hash) : undefined;
    if (kept === undefined) throw error;
    return this.fromMemory(kept);
  }

  /** `id` answered from memory: Redis does not answer, so the feed cache serves stale from now on, if not yet. */
  private fromMemory(id: string): TokenMatch {
    this.cache.noteOutage();
    return { id, fromMemory: true };
  }

  /**
   * Whether every change of tokens Redis could have told this process of has been heard: the feed-updates
   * channel is in place (announcements come on it in the order Redis made the changes), or this process's
   * connection to Redis is down too (nothing newer could be read either).
   */
  private heardAll(): boolean {
    return this.cache.isLive || this.ctx.redis.status !== 'ready';
  }

  /** The kept subscription of a token hash when memory may answer it: confirmed since the channel was lost. */
  private confirmedId(hash: string): string | undefined {
    return this.unconfirmed.has(hash) ? undefined : this.lastGood.get(hash);
  }

  /** Asks Redis about `token` and keeps its answer (confirmed when nothing that could change it went unheard). */
  private async read(token: string, hash: string): Promise<string | undefined> {
    const generation = this.generation;
    const announcements = this.announcements;
    const live = this.cache.isLive;
    const id = await this.ctx.subscriptions.idByToken(token);
    // Redis answers while the channel is lost: anything kept may have changed unheard.
    if (!this.cache.isLive) this.unconfirmAll();
    if (id === undefined) this.lastGood.delete(hash);
    else {
      const changed = (this.announcedAt.get(id) ?? -1) >= announcements;
      this.keep(hash, id, live && generation === this.generation && !changed);
    }
    return id;
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
    this.announcedAt.set(id, this.announcements);
    this.announcements += 1;
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
