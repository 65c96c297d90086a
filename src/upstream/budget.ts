/**
 * The one upstream budget, `UPSTREAM_RATE_LIMIT` requests per second over every process: a token bucket in
 * Redis that each request to the university takes a token from before it is sent, retries included. Refresh
 * jobs wait for their token; calls made inside an HTTP request wait briefly, then give up with
 * {@link UpstreamBudgetError} (answered 503 with Retry-After) so that a flood of sign-ups or searches cannot
 * spend the budget the refreshes need, nor hold requests open.
 */
import type { Redis } from 'ioredis';
import { type Bucket, RateLimitedError, TokenBuckets } from '../lib/rate-limit.ts';
import { type EndpointName, UpstreamBudgetError } from './errors.ts';

/** Takes a token of the budget before each request. */
export interface UpstreamBudget {
  /**
   * Resolves when the request may go. With `maxWaitMs`, rejects with {@link UpstreamBudgetError} at once when
   * the token would come later than that; without, waits as long as it takes (or until `signal` aborts).
   */
  take(
    endpoint: EndpointName,
    options: { maxWaitMs?: number | undefined; signal?: AbortSignal | undefined },
  ): Promise<void>;
}

/**
 * The bucket of `requestsPerSecond`: bursts of a tenth of a second's worth (at least one), like the refresh
 * queue's limiter, so that any second holds at most `rate + burst` requests over all processes.
 */
export function upstreamBucket(key: string, requestsPerSecond: number): Bucket {
  return { key, ratePerMs: requestsPerSecond / 1000, capacity: Math.max(1, Math.round(requestsPerSecond / 10)) };
}

/** The shared budget kept at `key` in Redis. */
export function redisUpstreamBudget(redis: Redis, key: string, requestsPerSecond: number): UpstreamBudget {
  const buckets = new TokenBuckets(redis);
  const shared = [upstreamBucket(key, requestsPerSecond)];
  return {
    async take(endpoint, { maxWaitMs, signal }) {
      try {
        await buckets.take(shared, {
          ...(maxWaitMs === undefined ? {} : { maxWaitMs }),
          ...(signal ? { signal } : {}),
        });
      } catch (error) {
        if (error instanceof RateLimitedError) throw new UpstreamBudgetError(endpoint, error.retryAfterMs);
        throw error;
      }
    },
  };
}
