/**
 * How fast we may talk to one CalDAV server, shared by every worker process through Redis. Each server host
 * (`host[:port]` of a calendar URL: iCloud's partition hosts each count alone) has a token bucket of
 * `CALDAV_RATE_LIMIT` requests per second, capacity one second's worth (`lib/rate-limit.ts`, on Redis `TIME`).
 * Hosts that answered 429, 503 or 504 also cool down: a STRING with a TTL (the server's `Retry-After`, else the
 * caller's backoff) that every request to the host waits out, whichever worker and target it comes from.
 *
 * A cool-down longer than a request should wait in place (`maxWaitMs`) is not waited out: {@link take}
 * rejects with {@link RateLimitedError} carrying the time left, and the caller puts its job aside until then
 * instead of holding a worker slot that pushes to other hosts could use.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { RateLimitedError } from '../lib/errors.ts';
import { loadScript } from '../lib/lua-script.ts';
import { type Bucket, TokenBuckets } from '../lib/rate-limit.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { RedisKeys } from './keys.ts';

/** Extends a host's cool-down to at least a given time (caldav-host-cooldown.lua). */
const COOL_DOWN = loadScript(import.meta.dirname, 'caldav-host-cooldown');

/** The longest cool-down a host is given, whatever its `Retry-After` asks (the job waits; nobody else should). */
export const MAX_HOST_COOLDOWN_MS = 5 * 60_000;

/** The longest a request waits in place for a host's cool-down by default. */
export const DEFAULT_MAX_COOLDOWN_WAIT_MS = 10_000;

/** What this process's `take` calls did so far. */
export interface HostBudgetStats {
  taken: number;
  /** Times a caller waited (for a token or a cool-down), and for how long in total (ms). */
  waits: number;
  waitedMs: number;
}

/** A per-host request rate and cool-down for CalDAV servers, shared through Redis. */
export class CalDavHostBudget {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly buckets: TokenBuckets;
  private readonly ratePerMs: number;
  private readonly capacity: number;
  private readonly counters: HostBudgetStats = { taken: 0, waits: 0, waitedMs: 0 };

  /** `perSecond` is `CALDAV_RATE_LIMIT`: requests per second per host. */
  constructor(redis: RedisClient, keys: RedisKeys, perSecond: number) {
    this.redis = redis;
    this.keys = keys;
    this.buckets = new TokenBuckets(redis);
    this.ratePerMs = perSecond / 1000;
    this.capacity = Math.max(1, perSecond);
  }

  /**
   * Waits until a request to `host` may go: its cool-down over, then a token of its bucket taken. Rejects with
   * {@link RateLimitedError} (the ms left) when the cool-down has more than `maxWaitMs` left, and with the
   * signal's reason when it aborts.
   */
  async take(host: string, options: { signal?: AbortSignal; maxWaitMs?: number } = {}): Promise<void> {
    const { signal, maxWaitMs = DEFAULT_MAX_COOLDOWN_WAIT_MS } = options;
    const bucket = this.bucketOf(host);
    for (;;) {
      signal?.throwIfAborted();
      const cooling = await this.coolDownLeft(host);
      if (cooling > maxWaitMs) throw new RateLimitedError(cooling, `${host} is cooling down`);
      const wait = cooling > 0 ? cooling : await this.buckets.tryTake([bucket]);
      if (wait === 0) {
        this.counters.taken += 1;
        return;
      }
      this.counters.waits += 1;
      this.counters.waitedMs += wait;
      await sleep(wait, undefined, signal ? { signal } : undefined);
    }
  }

  /**
   * Makes `host` cool down for at least `ms` (at most {@link MAX_HOST_COOLDOWN_MS}); a longer cool-down running
   * already stays. Resolves to the ms it has left.
   */
  async coolDown(host: string, ms: number): Promise<number> {
    const wanted = Math.max(1, Math.min(Math.round(ms), MAX_HOST_COOLDOWN_MS));
    return Number(await COOL_DOWN.run(this.redis, [this.keys.caldavHostCooldown(host)], [String(wanted)]));
  }

  /** The ms `host`'s cool-down has left (0: none). */
  async coolDownLeft(host: string): Promise<number> {
    return Math.max(0, await this.redis.pttl(this.keys.caldavHostCooldown(host)));
  }

  /** A copy of this process's counters. */
  stats(): HostBudgetStats {
    return { ...this.counters };
  }

  private bucketOf(host: string): Bucket {
    return { key: this.keys.rateLimit(`caldav-host:${host}`), ratePerMs: this.ratePerMs, capacity: this.capacity };
  }
}
