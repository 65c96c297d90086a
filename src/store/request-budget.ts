/**
 * How fast we may talk to Google, shared by every worker process through Redis. Two token buckets, taken
 * from together (`lib/rate-limit.ts`): one per Google user (`googleBudget(key)`, key `user:<sub>` or
 * `token:<hash16>`) and one for the whole service (`googleBudget('global')`). The buckets read the clock
 * with Redis `TIME`, so all workers agree on it whatever their own clocks say.
 *
 * Google allows 600 requests per minute per user, counted over any 60 s. A bucket refilling at `r` per
 * second with capacity `c` lets through at most `c + 60 r` requests in any 60 s (both ends included). We
 * count a request when we take its token, Google when it arrives, and latency jitter can bunch arrivals
 * together; so the user bucket keeps a margin of 30 requests: capacity `570 - userPerMinute` (at most 100,
 * at least 1). With the default 500/min: bursts of 70, never more than 570 in any minute by our count.
 * `GOOGLE_USER_RATE_LIMIT` is capped at 570 for the same reason. The global bucket (requests per second,
 * capacity one second's worth)
 * keeps the whole service under the project's rate.
 */
import { type Bucket, TokenBuckets } from '../lib/rate-limit.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { RedisKeys } from './keys.ts';

/** Google's own limit: requests per user per minute. */
export const GOOGLE_USER_LIMIT_PER_MINUTE = 600;

/** The name of the service-wide bucket (user budget keys always have a `user:` or `token:` prefix). */
const GLOBAL_BUCKET = 'global';

/** Requests per minute per user kept free below Google's limit, for arrival jitter. */
export const USER_LIMIT_MARGIN = 30;

/** Largest burst a single user may make. */
const MAX_USER_BURST = 100;

/** The two rates. */
export interface BudgetLimits {
  /** Requests per minute per Google user (at most 600, Google's limit). */
  userPerMinute: number;
  /** Requests per second over all users. */
  globalPerSecond: number;
}

/** Test hooks: a clock (epoch ms, instead of Redis TIME) and a sleep, to simulate minutes in milliseconds. */
export interface BudgetClock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** What this process's `take` calls did so far. */
export interface BudgetStats {
  taken: number;
  /** Times a caller had to wait, and for how long in total (ms). */
  waits: number;
  waitedMs: number;
}

/** A token-bucket rate limit per Google user and overall, shared through Redis. */
export class RequestBudget {
  private readonly buckets: TokenBuckets;
  private readonly keys: RedisKeys;
  private readonly user: Omit<Bucket, 'key'>;
  private readonly global: Bucket;
  private readonly counters: BudgetStats = { taken: 0, waits: 0, waitedMs: 0 };

  /** `clock` is for tests only; by default the buckets run on Redis `TIME` and callers sleep for real. */
  constructor(redis: RedisClient, keys: RedisKeys, limits: BudgetLimits, clock?: BudgetClock) {
    this.buckets = clock
      ? new TokenBuckets(
          redis,
          () => clock.now(),
          (ms, signal) => clock.sleep(ms, signal),
        )
      : new TokenBuckets(redis);
    this.keys = keys;
    this.user = bucketFor(limits);
    const global = { ratePerMs: limits.globalPerSecond / 1000, capacity: limits.globalPerSecond };
    this.global = { key: keys.googleBudget(GLOBAL_BUCKET), ...global };
  }

  /** Waits until one request for `budgetKey` fits both budgets, and counts it. Rejects when `signal` aborts. */
  async take(budgetKey: string, signal?: AbortSignal): Promise<void> {
    const onWait = (ms: number) => {
      this.counters.waits += 1;
      this.counters.waitedMs += ms;
    };
    await this.buckets.take(this.bucketsOf(budgetKey), signal ? { signal, onWait } : { onWait });
    this.counters.taken += 1;
  }

  /** Takes a token now if there is one in both buckets: 0, else the ms to wait. */
  async tryTake(budgetKey: string): Promise<number> {
    return this.buckets.tryTake(this.bucketsOf(budgetKey));
  }

  /** The user's bucket and the global one. */
  private bucketsOf(budgetKey: string): Bucket[] {
    if (budgetKey === GLOBAL_BUCKET)
      throw new RangeError(`budget key "${GLOBAL_BUCKET}" is reserved for the global bucket`);
    return [{ key: this.keys.googleBudget(budgetKey), ...this.user }, this.global];
  }

  /** A copy of this process's counters. */
  stats(): BudgetStats {
    return { ...this.counters };
  }
}

/**
 * The user bucket for a rate: refills at `userPerMinute` per minute, capacity so that no 60 s exceeds 570 (see the
 * module comment).
 */
export function bucketFor(limits: Pick<BudgetLimits, 'userPerMinute'>): { ratePerMs: number; capacity: number } {
  const capacity = Math.max(
    1,
    Math.min(MAX_USER_BURST, GOOGLE_USER_LIMIT_PER_MINUTE - USER_LIMIT_MARGIN - limits.userPerMinute),
  );
  return { ratePerMs: limits.userPerMinute / 60_000, capacity };
}
