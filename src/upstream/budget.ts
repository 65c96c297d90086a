/**
 * The one upstream budget, `UPSTREAM_RATE_LIMIT` requests per second over every process: a token bucket in
 * Redis that each request to the university takes a token from before it is sent, retries included. Refresh
 * jobs wait for their token; calls made inside an HTTP request wait briefly, then give up with
 * {@link UpstreamBudgetError} (answered 503 with Retry-After) so that a flood of sign-ups or searches cannot
 * spend the budget the refreshes need, nor hold requests open.
 *
 * A person waiting goes first: background takes leave a reserve in the bucket that only request-path takes
 * may spend, so however many refreshes are waiting for tokens, a sign-up finds one at once or after the next
 * refill, never behind them.
 */
import { RateLimitedError } from '../lib/errors.ts';
import { type Bucket, TokenBuckets } from '../lib/rate-limit.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import { type EndpointName, UpstreamBudgetError } from './errors.ts';

/** Who is taking: a call made while a person waits (`request`) or a refresh (`background`). */
export type BudgetPriority = 'request' | 'background';

/** Takes a token of the budget before each request. */
export interface UpstreamBudget {
  /**
   * Resolves when the request may go. With `maxWaitMs`, rejects with {@link UpstreamBudgetError} at once when
   * the token would come later than that; without, waits as long as it takes (or until `signal` aborts).
   * `background` takes (the default) leave the reserve alone.
   */
  take(
    endpoint: EndpointName,
    options: { maxWaitMs?: number | undefined; signal?: AbortSignal | undefined; priority?: BudgetPriority },
  ): Promise<void>;
}

/**
 * The bucket of `requestsPerSecond`, as each priority takes from it: bursts of a tenth of a second's worth (at
 * least two tokens), like the refresh queue's limiter, of which a quarter (at least one token) is the
 * reserve that background takes leave. Any second holds at most `rate + capacity` requests over all processes;
 * refreshes alone burst `capacity - reserve`.
 */
export function upstreamBuckets(key: string, requestsPerSecond: number): Record<BudgetPriority, Bucket> {
  const ratePerMs = requestsPerSecond / 1000;
  const capacity = Math.max(2, Math.round(requestsPerSecond / 10));
  const reserve = Math.max(1, Math.floor(capacity / 4));
  return {
    request: { key, ratePerMs, capacity },
    background: { key, ratePerMs, capacity, reserve },
  };
}

/** The shared budget kept at `key` in Redis. */
export function redisUpstreamBudget(redis: RedisClient, key: string, requestsPerSecond: number): UpstreamBudget {
  const buckets = new TokenBuckets(redis);
  const shared = upstreamBuckets(key, requestsPerSecond);
  return {
    async take(endpoint, { maxWaitMs, signal, priority = 'background' }) {
      try {
        await buckets.take([shared[priority]], {
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
