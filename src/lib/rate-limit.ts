/**
 * Token buckets shared by every process through Redis: a request takes a token from several buckets at once
 * (say one per client and one for everybody), in one script, or from none of them. The script reads the clock
 * with Redis `TIME`, so all processes agree on it whatever their own clocks say.
 *
 * A bucket is a small hash that expires once it would be full again: a missing bucket and a full one are the
 * same thing, so an idle client's bucket disappears by itself (Redis runs `noeviction`: keys made for many
 * client addresses must not pile up). A take that is refused writes nothing at all, so a flood that an
 * overall bucket refuses creates no per-client keys either.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { RateLimitedError } from './errors.ts';
import { loadScript } from './lua-script.ts';
import type { RedisClient } from './redis-target.ts';

/** One bucket: where it lives, how fast it refills and how many tokens it holds at most. */
export interface Bucket {
  key: string;
  /** Tokens added per millisecond. */
  ratePerMs: number;
  /** Tokens of a full bucket: the largest burst. */
  capacity: number;
  /**
   * Tokens a take must leave in the bucket (default 0, less than `capacity`): takers given a reserve wait while
   * others, given none, may still take the last tokens. That is how one kind of taker goes first on a shared
   * bucket: it finds the reserve there however many of the others are waiting.
   */
  reserve?: number;
}

/** `count` requests per `periodMs`, in bursts of up to `count`: how settings such as `30/1m` read. */
export interface Rate {
  count: number;
  periodMs: number;
}

/** A bucket at `key` that lets `rate.count` requests through per `rate.periodMs`, all at once if need be. */
export function bucket(key: string, rate: Rate): Bucket {
  return { key, ratePerMs: rate.count / rate.periodMs, capacity: rate.count };
}

/** Takes, checks, gives or charges tokens of several buckets in one step (token-buckets.lua). */
const SCRIPT = loadScript(import.meta.dirname, 'token-buckets');

/** Takes and gives back tokens of buckets kept in Redis. */
export class TokenBuckets {
  private readonly redis: RedisClient;
  private readonly now: (() => number) | undefined;
  private readonly sleepFor: (ms: number, signal?: AbortSignal) => Promise<void>;

  /**
   * `now` (epoch ms) and `sleepFor` are for tests that simulate minutes in milliseconds; by default Redis `TIME`
   * is the clock and {@link take} sleeps for real.
   */
  constructor(redis: RedisClient, now?: () => number, sleepFor?: (ms: number, signal?: AbortSignal) => Promise<void>) {
    this.redis = redis;
    this.now = now;
    this.sleepFor = sleepFor ?? ((ms, signal) => sleep(ms, undefined, signal ? { signal } : undefined));
  }

  /** Takes `cost` tokens from every bucket if all hold that many: 0; else takes none and answers the ms to wait. */
  async tryTake(buckets: readonly Bucket[], cost = 1): Promise<number> {
    return this.run('take', buckets, cost);
  }

  /** The ms until every bucket holds `cost` tokens (0: they do now), taking nothing and writing nothing. */
  async wouldTake(buckets: readonly Bucket[], cost = 1): Promise<number> {
    return this.run('check', buckets, cost);
  }

  /**
   * Takes `cost` tokens from every bucket even when it holds fewer, leaving a debt of at most its capacity that
   * refills before the next token: for a charge that is only known after the work it pays for.
   */
  async charge(buckets: readonly Bucket[], cost = 1): Promise<void> {
    await this.run('charge', buckets, cost);
  }

  /** Puts `amount` tokens back into every bucket (never above its capacity), e.g. when a charge is refunded. */
  async give(buckets: readonly Bucket[], amount = 1): Promise<void> {
    await this.run('give', buckets, amount);
  }

  /**
   * Waits until a token of every bucket is there and takes it; `onWait` hears of every wait (ms) before it
   * starts. When the wait would end later than `maxWaitMs` after the call, rejects at once with
   * {@link RateLimitedError} instead (no point in waiting to be refused).
   */
  async take(
    buckets: readonly Bucket[],
    options: { maxWaitMs?: number; signal?: AbortSignal; onWait?: (ms: number) => void } = {},
  ): Promise<void> {
    const { maxWaitMs = Number.POSITIVE_INFINITY, signal, onWait } = options;
    const started = performance.now();
    for (;;) {
      signal?.throwIfAborted();
      const wait = await this.tryTake(buckets);
      if (wait === 0) return;
      const left = maxWaitMs - (performance.now() - started);
      if (wait > left) throw new RateLimitedError(wait);
      onWait?.(wait);
      await this.sleepFor(wait, signal);
    }
  }

  private async run(
    mode: 'take' | 'check' | 'give' | 'charge',
    buckets: readonly Bucket[],
    cost: number,
  ): Promise<number> {
    if (buckets.length === 0) return 0;
    const args = buckets.flatMap((b) => [String(b.ratePerMs), String(b.capacity), String(b.reserve ?? 0)]);
    const now = this.now ? String(this.now()) : '';
    const keys = buckets.map((b) => b.key);
    return Number(await SCRIPT.run(this.redis, keys, [now, String(cost), mode, ...args]));
  }
}
