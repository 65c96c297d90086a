/**
 * Finds the feed to answer a request with: the cached stored feed, a subscriber variant of it, or, for a source
 * nobody asked for yet, a refresh on demand that the request waits for. Also records that the feed is wanted,
 * throttled, so that a hot feed does not write to Redis on every request.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { LRUCache } from 'lru-cache';
import type { Config } from '../config.ts';
import { activateSource } from '../jobs/activation.ts';
import { enqueueRefresh, type Queues, refreshPending } from '../jobs/queues.ts';
import { RateLimitedError } from '../lib/errors.ts';
import { isRedisFailure } from '../lib/redis-failure.ts';
import { secondsWords } from '../lib/words.ts';
import type { Logger } from '../logger.ts';
import type { FeedStore } from '../store/feed-store.ts';
import type { GroupDirectory } from '../store/group-directory.ts';
import type { KnownEmployees } from '../store/known-employees.ts';
import type { SourceRegistry } from '../store/registry.ts';
import type { SubscriptionStore } from '../store/subscription-store.ts';
import { type SourceKey, sourceOf } from '../timetable/source.ts';
import type { FeedAdmissions } from './admission.ts';
import { CredentialNeededError, FeedUnavailableError, UnknownTimetableError } from './errors.ts';
import type { FeedCache } from './feed-cache.ts';
import type { ServedFeed } from './feed-forms.ts';
import type { SavedQuery } from './personal-feed-options.ts';
import { notKnownWords, sourceNames } from './source-words.ts';
import { VariantCache, type VariantCacheLimits } from './variant-cache.ts';
import type { ParsedSubscriberQuery } from './variant-query.ts';
import { renderSubscriberVariant, type VariantRenderDeps } from './variant-render.ts';

/**
 * Variants remembered as rendered before. Each took a client's token once; 10,000 is far more than the
 * subgroup, kind and alarm combinations real subscribers use, and an attacker pays for every one it adds.
 */
const KNOWN_VARIANTS = 10_000;

/** Tuning of feed serving; the defaults suit production, tests shorten the waits. */
export interface FeedProviderOptions {
  /** How long a first request waits for its on-demand refresh before answering 503; default 10 s. */
  demandWaitMs?: number;
  /** At most one registry write per source per this long; default 10 min (less when INACTIVE_AFTER is short). */
  touchEveryMs?: number;
  /** At most this many distinct sources fetched on demand at once by this process; default 200. */
  maxDemands?: number;
  variants?: VariantCacheLimits;
  /** Byte cap of every rendered variant; default four times its feed, at least 1 MiB (variant-render.ts). */
  maxVariantBytes?: number;
}

/**
 * Where a feed may come from: `redis` as usual (the cache's trusted copy, or a read), or `memory` when Redis did
 * not answer this request's other reads (a personal feed's token, personal-tokens.ts): then the last good copy,
 * marked stale, without waiting for Redis again.
 */
export type FeedFrom = 'redis' | 'memory';

/** Seconds a client is told to wait when the first fetch of a timetable takes longer than the request may. */
export const RETRY_AFTER_SECONDS = 10;
const FIRST_POLL_MS = 50;
const MAX_POLL_MS = 250;
const MAX_TOUCH_RECORDS = 50_000;

/**
 * What {@link FeedProvider} reads, queues and records with. It renders variants and reactivates sources, so it
 * holds what those need too.
 */
export type FeedProviderDeps = VariantRenderDeps &
  Parameters<typeof activateSource>[0] & {
    readonly config: Pick<Config, 'inactiveAfterMs' | 'feedPublicMaxAgeSeconds'> & Parameters<typeof enqueueRefresh>[1];
    readonly registry: Pick<SourceRegistry, 'missingReason' | 'isActive' | 'touch'>;
    readonly queues: Queues;
    readonly directory: Pick<GroupDirectory, 'has'>;
    readonly knownEmployees: Pick<KnownEmployees, 'has'>;
    readonly subscriptions: Pick<SubscriptionStore, 'get'>;
    readonly feeds: Pick<FeedStore, 'exists'>;
    readonly logger: Pick<Logger, 'info' | 'warn'>;
    readonly now: () => number;
  };

/**
 * Feeds for the feed routes: cache, variants, on-demand refresh and request bookkeeping. The timetable pages
 * share one instance, so that a first visit and a first feed request join the same fetch and the same cap.
 */
export class FeedProvider {
  /** How long its public feeds may be kept by caches, in seconds (their `Cache-Control: public, max-age`). */
  readonly publicMaxAge: number;
  private readonly ctx: FeedProviderDeps;
  private readonly cache: FeedCache;
  private readonly variants: VariantCache;
  private readonly limits: FeedAdmissions;
  private readonly demandWaitMs: number;
  private readonly touchEveryMs: number;
  private readonly maxDemands: number;
  private readonly maxVariantBytes: number | undefined;
  /** When each source's request was last written to the registry (ctx clock). */
  private readonly touched = new Map<SourceKey, number>();
  private readonly demands = new Map<SourceKey, Promise<ServedFeed>>();
  /** Variants (source and options, any publication) rendered by this process: rendering them again is free. */
  private readonly knownVariants = new LRUCache<string, true>({ max: KNOWN_VARIANTS });
  private saturationLoggedAt = -Infinity;

  constructor(ctx: FeedProviderDeps, cache: FeedCache, limits: FeedAdmissions, options: FeedProviderOptions = {}) {
    this.ctx = ctx;
    this.publicMaxAge = ctx.config.feedPublicMaxAgeSeconds;
    this.cache = cache;
    this.limits = limits;
    this.variants = new VariantCache(options.variants);
    this.demandWaitMs = options.demandWaitMs ?? 10_000;
    this.touchEveryMs = options.touchEveryMs ?? Math.min(10 * 60_000, Math.floor(ctx.config.inactiveAfterMs / 4));
    this.maxDemands = options.maxDemands ?? 200;
    this.maxVariantBytes = options.maxVariantBytes;
  }

  /** Its cache of rendered variants, read for the gauges of how full it is. */
  get variantCache(): Pick<VariantCache, 'cachedBytes' | 'budgetBytes' | 'size'> {
    return this.variants;
  }

  /**
   * The feed of `source` as the query asks for it, for the client at address `ip`; throws
   * {@link UnknownTimetableError} or {@link FeedUnavailableError} when there is none, RateLimitedError when
   * fetching it, or rendering a variant of it nobody asked for yet, would exceed the client's limits. From memory, marked stale, when `from` says so ({@link FeedFrom}).
   */
  async feedFor(
    source: SourceKey,
    query: ParsedSubscriberQuery,
    ip: string,
    from: FeedFrom = 'redis',
  ): Promise<ServedFeed> {
    const base = await this.baseFeed(source, ip, from);
    this.recordRequest(source);
    if (query.canonical === '') return base;
    // A variant rendered before is only rendered again because its timetable changed: every subscriber of it
    // polls it then, and behind one campus address that must not cost their limit. Only new ones do.
    const variant = `${source}\n${query.canonical}`;
    const feed = await this.variants.get(
      VariantCache.key(source, base.etag, query.canonical),
      () => renderSubscriberVariant(this.ctx, source, base, query, { capBytes: this.maxVariantBytes }),
      async () => (this.knownVariants.has(variant) ? undefined : this.limits.admit('variant-render', ip)),
    );
    this.knownVariants.set(variant, true);
    return staleAs(feed, base);
  }

  /**
   * The feed of `source` without subscriber options when memory holds a trusted copy, the request recorded as
   * {@link feedFor} records it; else undefined, and nothing done (the caller takes {@link feedFor}).
   */
  cachedFeed(source: SourceKey): ServedFeed | undefined {
    const feed = this.cache.trusted(source);
    if (feed !== undefined) this.recordRequest(source);
    return feed;
  }

  /**
   * A personal feed as its owner's saved options make it (the URL carries none of its own). Its Last-Modified
   * is never older than the save, so a client revalidating by date gets the change. A subscription has one
   * saved variant at a time, and its URL is a secret: rendering it costs no client limit (calendar services
   * poll many people's feeds from few addresses); the cap on renders at once still applies. `from` as for
   * {@link feedFor}.
   */
  async savedFeedFor(source: SourceKey, saved: SavedQuery, ip: string, from: FeedFrom = 'redis'): Promise<ServedFeed> {
    const notBefore = saved.savedAt ?? 0;
    if (saved.query.canonical !== '') {
      const base = await this.baseFeed(source, ip, from);
      this.recordRequest(source);
      // The save time is part of the key: options saved again as they once were are a change all the same.
      const feed = await this.variants.get(
        VariantCache.key(source, base.etag, `${saved.query.canonical}\n${notBefore}`),
        () =>
          renderSubscriberVariant(this.ctx, source, base, saved.query, { notBefore, capBytes: this.maxVariantBytes }),
      );
      return staleAs(feed, base);
    }
    const base = await this.feedFor(source, saved.query, ip, from);
    return notBefore > base.lastModified ? { ...base, lastModified: notBefore } : base;
  }

  /**
   * Resolves once the public or personal `source` has a feed, fetching it first as a first feed request does
   * (same joining, cap and limits); throws {@link UnknownTimetableError} when the university does not know it,
   * {@link FeedUnavailableError} when the fetch did not end in time or too many are under way, RateLimitedError
   * beyond the client's limits.
   */
  async requireFeed(source: SourceKey, ip: string): Promise<void> {
    if ((await this.cache.get(source)) === undefined) await this.onDemand(source, ip);
  }

  /**
   * The stored feed of `source`: its last good copy, marked stale, when `from` is memory and memory holds one;
   * else the cache's, or a refresh on demand when there is none.
   */
  private async baseFeed(source: SourceKey, ip: string, from: FeedFrom): Promise<ServedFeed> {
    const kept = from === 'memory' ? this.cache.lastGood(source) : undefined;
    return kept ?? (await this.cache.get(source)) ?? (await this.onDemand(source, ip));
  }

  /**
   * First request for a source without a feed: fetch it now; concurrent requests share one wait, claimed before
   * anything is awaited so that they never race. Anyone can ask for any id, so the number of distinct sources
   * waited for at once is capped: beyond it, 503 at once. A request that starts a fetch of a public timetable
   * counts against its client's first-request limits; one that joins a fetch under way (in this process, or
   * queued by a request whose wait ended) or asks for an id known to be missing costs nothing.
   */
  private onDemand(source: SourceKey, ip: string): Promise<ServedFeed> {
    const pending = this.demands.get(source);
    if (pending !== undefined) return this.join(pending, source, ip);
    if (this.demands.size >= this.maxDemands) {
      this.noteSaturation();
      return Promise.reject(
        new FeedUnavailableError(
          'UPSTREAM_BUSY',
          {
            en: `too many timetables are being fetched from the university right now; try again in ${RETRY_AFTER_SECONDS} seconds`,
            ru: `сейчас из университета загружается слишком много расписаний; попробуйте снова через ${secondsWords(RETRY_AFTER_SECONDS * 1000).ru}`,
          },
          RETRY_AFTER_SECONDS,
        ),
      );
    }
    const demand = this.startDemand(source, ip).finally(() => this.demands.delete(source));
    this.demands.set(source, demand);
    return demand;
  }

  /** Waits for a fetch another request started; when its client was over its limits, tries on this one's own. */
  private async join(pending: Promise<ServedFeed>, source: SourceKey, ip: string): Promise<ServedFeed> {
    try {
      return await pending;
    } catch (error) {
      if (error instanceof RateLimitedError) return this.onDemand(source, ip);
      throw error;
    }
  }

  /**
   * Admits the request that starts the fetch of `source` (a public one only, and only when none is queued). An
   * id the university already said it does not know answers 404 from memory, costing nothing; one that nothing
   * vouches for may not take the last half of the overall first-request limit (client-limits.ts).
   */
  private async startDemand(source: SourceKey, ip: string): Promise<ServedFeed> {
    if (!source.startsWith('personal:')) {
      const missing = await this.ctx.registry.missingReason(source);
      if (missing !== undefined) throw notKnown(source, missing);
      if (!(await refreshPending(this.ctx.queues, source)))
        await this.limits.admit('first-request', ip, { likelyReal: await this.likelyReal(source) });
    }
    return this.fetchOnDemand(source);
  }

  /**
   * Whether the university has vouched for a public source's id: a group in the group directory (fed by
   * published timetables, sign-ups' profiles and the admin's import), a teacher named in a published timetable
   * or found by the teacher search.
   */
  private async likelyReal(source: SourceKey): Promise<boolean> {
    const { kind, id } = sourceOf(source);
    if (kind === 'group') return this.ctx.directory.has(Number(id));
    if (kind === 'employee') return this.ctx.knownEmployees.has(Number(id));
    return true;
  }

  /**
   * Queues a refresh and waits for its feed. The source is not activated here: an id nobody has verified
   * must not become a periodic refresh; the worker registers a public source after its first good fetch.
   */
  private async fetchOnDemand(source: SourceKey): Promise<ServedFeed> {
    const missing = await this.ctx.registry.missingReason(source);
    if (missing !== undefined) throw notKnown(source, missing);
    await this.refuseRejectedCredential(source);
    const now = this.ctx.now();
    // Counts as this request's registry write: the first requests after the feed arrives do not write again.
    this.markTouched(source, now);
    await enqueueRefresh(this.ctx.queues, this.ctx.config, source, { reason: 'demand', now });
    this.ctx.logger.info({ source }, 'first request for a timetable: fetching it on demand');
    return this.waitForFeed(source);
  }

  /** Logs that the on-demand cap was reached, at most once a minute (it is reached under a flood of requests). */
  private noteSaturation(): void {
    const at = performance.now();
    if (at - this.saturationLoggedAt < 60_000) return;
    this.saturationLoggedAt = at;
    this.ctx.logger.warn(
      { demands: this.demands.size },
      'too many timetables fetched on demand at once: refusing more for now',
    );
  }

  /** A personal source whose credential the university rejected cannot be fetched: say so at once. */
  private async refuseRejectedCredential(source: SourceKey): Promise<void> {
    const { kind, id } = sourceOf(source);
    if (kind !== 'personal') return;
    if ((await this.ctx.subscriptions.get(id))?.status !== 'needs-credential') return;
    // The subscription id may be shown; the feed URL's token may not (it is the feed's only secret).
    throw new CredentialNeededError({
      en: `this subscription needs a new university credential: send it with PATCH /api/subscriptions/${id}`,
      ru: `этой подписке нужен новый токен университета: отправьте его запросом PATCH /api/subscriptions/${id}`,
    });
  }

  /**
   * Polls the stores with a short backoff until the feed appears, or the upstream's "not found", or (for a
   * personal source) the rejection of its credential.
   */
  private async waitForFeed(source: SourceKey): Promise<ServedFeed> {
    const deadline = performance.now() + this.demandWaitMs;
    let delay = FIRST_POLL_MS;
    for (;;) {
      const [exists, missing] = await Promise.all([
        this.ctx.feeds.exists(source),
        this.ctx.registry.missingReason(source),
      ]);
      if (missing !== undefined) throw notKnown(source, missing);
      if (!exists) await this.refuseRejectedCredential(source);
      const feed = exists ? await this.cache.get(source) : undefined;
      if (feed !== undefined) return feed;
      const left = deadline - performance.now();
      if (left <= 0) break;
      await sleep(Math.min(delay, left));
      delay = Math.min(delay * 2, MAX_POLL_MS);
    }
    // `group 4242`, `employee 17`, or `this subscription` (never its id: personal URLs are secret).
    const names = sourceNames(source);
    throw new FeedUnavailableError(
      'TIMETABLE_NOT_READY',
      {
        en: `the timetable of ${names.en} is being fetched from the university; try again in ${RETRY_AFTER_SECONDS} seconds`,
        ru: `расписание ${names.ruGenitive} загружается из университета; попробуйте снова через ${secondsWords(RETRY_AFTER_SECONDS * 1000).ru}`,
      },
      RETRY_AFTER_SECONDS,
    );
  }

  /**
   * Notes that the feed was requested, at most once per source per `touchEveryMs`, without delaying the answer.
   * A source deactivated for lack of requests is reactivated and refreshed; its old feed is served meanwhile.
   */
  private recordRequest(source: SourceKey): void {
    const now = this.ctx.now();
    const last = this.touched.get(source);
    if (last !== undefined && now - last < this.touchEveryMs) return;
    this.markTouched(source, now);
    this.touch(source, now).catch((error: unknown) => {
      // While Redis is away, every request would log this again: one missed record in a period is harmless.
      if (isRedisFailure(error)) return;
      this.touched.delete(source);
      this.ctx.logger.warn({ err: error, source }, 'could not record a feed request');
    });
  }

  private async touch(source: SourceKey, now: number): Promise<void> {
    if (await this.ctx.registry.isActive(source)) {
      await this.ctx.registry.touch(source, now);
      return;
    }
    await activateSource(this.ctx, source);
    await enqueueRefresh(this.ctx.queues, this.ctx.config, source, { reason: 'demand', now });
    this.ctx.logger.info({ source }, 'inactive timetable requested again: reactivated');
  }

  private markTouched(source: SourceKey, now: number): void {
    if (this.touched.size >= MAX_TOUCH_RECORDS) this.forgetOldTouches(now);
    this.touched.set(source, now);
  }

  private forgetOldTouches(now: number): void {
    for (const [source, at] of this.touched) {
      if (now - at >= this.touchEveryMs) this.touched.delete(source);
    }
  }
}

/** A variant rendered before an outage is served from memory as it was: it is as stale as its base. */
function staleAs(feed: ServedFeed, base: ServedFeed): ServedFeed {
  return base.staleSince !== undefined && feed.staleSince === undefined
    ? { ...feed, staleSince: base.staleSince }
    : feed;
}

function notKnown(source: SourceKey, upstreamText: string): UnknownTimetableError {
  return new UnknownTimetableError(notKnownWords(source, upstreamText));
}
