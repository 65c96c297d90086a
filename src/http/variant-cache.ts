/**
 * Rendered subscriber variants (a feed with `?subgroup=…&title=…`), kept in a bounded LRU. Keys include the
 * base feed's ETag, so a new publication makes old variants unreachable and they age out on their own.
 */
import type { StoredFeed } from '../feeds/feed-store.ts';

/** Bounds of a {@link VariantCache}. */
export interface VariantCacheLimits {
  /** Default 500 variants. */
  maxEntries?: number;
  /** Body plus compressed forms, summed; default 64 MiB. */
  maxBytes?: number;
}

/** A least-recently-used map from variant key to rendered, compressed variant; concurrent renders shared. */
export class VariantCache {
  private readonly entries = new Map<string, StoredFeed>();
  private readonly renders = new Map<string, Promise<StoredFeed>>();
  private readonly maxEntries: number;
  private readonly maxBytes: number;
  private bytes = 0;

  constructor(limits: VariantCacheLimits = {}) {
    this.maxEntries = limits.maxEntries ?? 500;
    this.maxBytes = limits.maxBytes ?? 64 * 1024 * 1024;
  }

  /** The key of one variant of one publication of a source. */
  static key(source: string, baseEtag: string, canonicalOptions: string): string {
    return `${source}\n${baseEtag}\n${canonicalOptions}`;
  }

  /** The cached variant, or the one `render` makes (once, however many requests ask at the same time). */
  async get(key: string, render: () => Promise<StoredFeed>): Promise<StoredFeed> {
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      // Re-inserting moves the key to the young end of the Map's insertion order.
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit;
    }
    const pending = this.renders.get(key);
    if (pending !== undefined) return pending;
    const promise = render().then((variant) => {
      this.put(key, variant);
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

  private put(key: string, variant: StoredFeed): void {
    const size = sizeOf(variant);
    if (size > this.maxBytes) return;
    const previous = this.entries.get(key);
    if (previous !== undefined) this.bytes -= sizeOf(previous);
    this.entries.delete(key);
    this.entries.set(key, variant);
    this.bytes += size;
    for (const [oldKey, old] of this.entries) {
      if (this.entries.size <= this.maxEntries && this.bytes <= this.maxBytes) break;
      this.entries.delete(oldKey);
      this.bytes -= sizeOf(old);
    }
  }
}

function sizeOf(feed: StoredFeed): number {
  return feed.body.length + feed.gzip.length + feed.brotli.length;
}
