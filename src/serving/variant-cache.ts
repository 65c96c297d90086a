/**
 * Rendered subscriber variants (a feed with `?subgroup=…&title=…`), kept in a bounded LRU (`lru-cache`, by
 * count and bytes). Keys include the base feed's ETag, so a new publication makes old variants unreachable
 * and they age out on their own. Concurrent requests for one variant share one render.
 */
import { LRUCache } from 'lru-cache';
import { secondsWords } from '../lib/words.ts';
import type { Admission } from './admission.ts';
import { FeedUnavailableError } from './errors.ts';
import type { ServedFeed } from './feed-forms.ts';

/** Bounds of a {@link VariantCache}. */
export interface VariantCacheLimits {
  /** Default 500 variants. */
  maxEntries?: number | undefined;
  /** Body plus compressed forms, summed; default 64 MiB. */
  maxBytes?: number | undefined;
  /** Different variants rendered at once by this process; default 4. Beyond, a new one answers 503. */
  maxRenders?: number | undefined;
}

/** Seconds a client is told to wait when too many variants are being rendered. */
export const RENDER_RETRY_SECONDS = 2;

/** A least-recently-used map from variant key to rendered, compressed variant; concurrent renders shared. */
export class VariantCache {
  private readonly entries: LRUCache<string, ServedFeed>;
  private readonly renders = new Map<string, Promise<ServedFeed>>();
  private readonly maxRenders: number;

  constructor(limits: VariantCacheLimits = {}) {
    this.maxRenders = limits.maxRenders ?? 4;
    this.entries = new LRUCache<string, ServedFeed>({
      max: limits.maxEntries ?? 500,
      // A variant larger than the whole budget is rendered for its request and not kept.
      maxSize: limits.maxBytes ?? 64 * 1024 * 1024,
      sizeCalculation: (variant) => variant.forms.bytes,
    });
  }

  /** The key of one variant of one publication of a source. */
  static key(source: string, baseEtag: string, canonicalOptions: string): string {
    return `${source}\n${baseEtag}\n${canonicalOptions}`;
  }

  /**
   * The cached variant, or the one `render` makes (once, however many requests ask at the same time). A render
   * costs CPU and memory in proportion to the timetable, and anyone can ask for new variants: `admit` (the
   * client's limit) is asked before a render starts, never for a hit or a render under way; beyond `maxRenders`
   * different ones at once, a request for another is refused (FeedUnavailableError, a 503) rather than queued. Such
   * a refusal, here or by `render` (its timetable is not ready), renders nothing, so the admission is refunded.
   */
  async get(
    key: string,
    render: () => Promise<ServedFeed>,
    admit: () => Promise<Admission | undefined> = async () => undefined,
  ): Promise<ServedFeed> {
    const ready = this.lookup(key);
    if (ready !== undefined) return ready;
    const admission = await admit();
    // Another request may have started or finished this variant meanwhile: it is then shared, and free.
    const meanwhile = this.lookup(key);
    if (meanwhile !== undefined) {
      await admission?.refund();
      return meanwhile;
    }
    try {
      return await this.start(key, render);
    } catch (error) {
      if (error instanceof FeedUnavailableError) await admission?.refund();
      throw error;
    }
  }

  /** The cached variant, or the render of it under way. */
  private lookup(key: string): ServedFeed | Promise<ServedFeed> | undefined {
    return this.entries.get(key) ?? this.renders.get(key);
  }

  private async start(key: string, render: () => Promise<ServedFeed>): Promise<ServedFeed> {
    if (this.renders.size >= this.maxRenders) {
      throw new FeedUnavailableError(
        'VARIANTS_BUSY',
        {
          en: `too many feed variants are being prepared; try again in ${RENDER_RETRY_SECONDS} seconds`,
          ru: `сейчас готовится слишком много вариантов лент; попробуйте снова через ${secondsWords(RENDER_RETRY_SECONDS * 1000).ru}`,
        },
        RENDER_RETRY_SECONDS,
      );
    }
    const promise = render().then((variant) => {
      this.entries.set(key, variant);
      return variant;
    });
    this.renders.set(key, promise);
    try {
      return await promise;
    } finally {
      this.renders.delete(key);
    }
  }

  /** Number of cached variants. */
  get size(): number {
    return this.entries.size;
  }

  /** Bytes held by the cached variants: every form of each, and its fixed overhead (never more than the budget). */
  get cachedBytes(): number {
    return this.entries.calculatedSize;
  }

  /** The byte budget the least recently used variants are evicted at. */
  get budgetBytes(): number {
    return this.entries.maxSize;
  }
}
