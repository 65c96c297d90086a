/**
 * Issue 16's bound on the api's memory: with every feed published and requested, its RSS stays within the
 * feed cache's byte budget (`FEED_CACHE_MB`) plus a fixed baseline, the RSS of the same api idle (code, heap,
 * connections: what it holds before serving a feed).
 */

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

/** Judges `cachedMiB` (every feed requested) against `budgetMiB` plus `baselineMiB` (the idle api's RSS). */
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
 * The feed cache budget the benchmark starts the api with, MiB: `FEED_CACHE_MB` of its environment (a whole
 * number of MiB, as the service reads it).
 */
export function feedCacheBudgetMiB(env: Readonly<Record<string, string | undefined>>): number {
  const value = Number(env.FEED_CACHE_MB);
  if (env.FEED_CACHE_MB === undefined || !Number.isSafeInteger(value) || value <= 0)
    throw new RangeError(
      `the api's environment needs FEED_CACHE_MB as a positive whole number, not ${env.FEED_CACHE_MB}`,
    );
  return value;
}
