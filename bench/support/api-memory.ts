/**
 * The footprint bound on the api's memory: with every feed published and requested, its RSS stays within the
 * feed cache's byte budget (`FEED_CACHE_MB`) plus a fixed baseline, what the api takes to serve the same
 * requests without keeping feeds.
 *
 * The baseline is measured, not taken idle: a fresh api with `FEED_CACHE_MB=` {@link BASELINE_CACHE_MB} is given
 * every feed twice, and its RSS read. Serving itself costs memory that no cache holds and that an idle api has
 * not yet paid: V8's young generation grown to its working size, garbage V8 collects only once it has piled up
 * (it starts a collection of Buffers after some 64 MiB more of them), the allocator's arenas of the requests'
 * buffers and of zlib's state. At 20,000 sources that is some 170 MiB above the idle api (~175 MiB) with a 1 MiB
 * cache (docs/design.md). The idle api's RSS was the first baseline tried: against it, an api keeping nothing
 * was already 170 MiB over, so it judged the cost of serving rather than the cache's. The baseline api misses
 * on every request and so also pays for forms made and dropped, which the measured api does too (not every
 * identity form fits its cache). The comparison with the idle RSS is still reported beside.
 */

/** `FEED_CACHE_MB` of the baseline api: the smallest budget the service takes, so that it keeps next to nothing. */
export const BASELINE_CACHE_MB = 1;

/** The api's RSS against its budget, MiB. */
export interface ApiMemoryVerdict {
  /** Budget plus baseline: what the RSS may reach. */
  limitMiB: number;
  /** How far below the limit the RSS stayed (negative: above it). */
  headroomMiB: number;
  within: boolean;
  /** `within budget + baseline`, or by how much it is over. */
  text: string;
}

/** Judges `cachedMiB` (every feed requested) against `budgetMiB` plus `baselineMiB` (the same served with nothing kept). */
export function apiMemoryVerdict(figures: {
  cachedMiB: number;
  baselineMiB: number;
  budgetMiB: number;
}): ApiMemoryVerdict {
  const limitMiB = figures.budgetMiB + figures.baselineMiB;
  const headroomMiB = limitMiB - figures.cachedMiB;
  // NaN (a process gone before it was measured) is never within.
  const within = headroomMiB >= 0;
  return {
    limitMiB,
    headroomMiB,
    within,
    text: within
      ? 'within budget + baseline'
      : Number.isNaN(headroomMiB)
        ? 'not measured'
        : `over budget + baseline by ${(-headroomMiB).toFixed(1)} MiB`,
  };
}

/**
 * The feed cache budget the benchmark passes to the api as `FEED_CACHE_MB`, MiB, from `--feed-cache-mb` (a
 * whole number of MiB, as the service reads it). The benchmark checks it against the budget the api reports
 * (`timetable_feed_cache_budget_bytes`).
 */
export function feedCacheBudgetMiB(flag: string | undefined): number {
  const value = Number(flag);
  if (flag === undefined || !Number.isSafeInteger(value) || value <= 0)
    throw new RangeError(`--feed-cache-mb needs a positive whole number of MiB, not ${flag}`);
  return value;
}
