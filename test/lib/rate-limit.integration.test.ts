import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RateLimitedError } from '../../src/lib/errors.ts';
import { type Bucket, bucket, TokenBuckets } from '../../src/lib/rate-limit.ts';
import { deletePrefix, uniquePrefix } from '../support/service.ts';

const prefix = uniquePrefix('rate');
let redis: Redis;
let other: Redis;

beforeAll(() => {
  redis = new Redis(inject('redisUrl'));
  other = new Redis(inject('redisUrl'));
});
afterAll(async () => {
  await deletePrefix(inject('redisUrl'), prefix);
  redis.disconnect();
  other.disconnect();
});

let counter = 0;
/** A bucket of its own per call: tests never share state. */
function fresh(count: number, periodMs: number): Bucket {
  counter += 1;
  return bucket(`${prefix}:b${counter}`, { count, periodMs });
}

/** A clock the test moves by hand. */
function manualClock(start = 1_000_000): { now: () => number; time: number } {
  const clock = { time: start, now: () => clock.time };
  return clock;
}

describe('TokenBuckets', () => {
  it('lets a burst of `count` through, then answers how long until the next token', async () => {
    const clock = manualClock();
    const buckets = new TokenBuckets(redis, clock.now);
    const b = fresh(3, 60_000);
    expect(await Promise.all([1, 2, 3].map(() => buckets.tryTake([b])))).toEqual([0, 0, 0]);
    expect(await buckets.tryTake([b])).toBe(20_000);
    clock.time += 19_999;
    expect(await buckets.tryTake([b])).toBe(1);
    clock.time += 1;
    expect(await buckets.tryTake([b])).toBe(0);
  });

  it('keeps a reserve from takers given one, which takers given none may spend', async () => {
    const clock = manualClock();
    const buckets = new TokenBuckets(redis, clock.now);
    const open = fresh(4, 4_000);
    const reserved: Bucket = { ...open, reserve: 2 };
    // A full bucket of 4: a reserved taker gets 2, then waits until a third token is there.
    expect(await buckets.tryTake([reserved])).toBe(0);
    expect(await buckets.tryTake([reserved])).toBe(0);
    expect(await buckets.tryTake([reserved])).toBe(1_000);
    // The same bucket without the reserve: the last two tokens.
    expect(await buckets.tryTake([open])).toBe(0);
    expect(await buckets.tryTake([open])).toBe(0);
    expect(await buckets.tryTake([open])).toBe(1_000);
    // Empty: the reserved taker waits for the reserve to refill and its own token on top.
    expect(await buckets.tryTake([reserved])).toBe(3_000);
    clock.time += 1_000;
    expect(await buckets.tryTake([open])).toBe(0);
  });

  it('takes from every bucket or from none', async () => {
    const clock = manualClock();
    const buckets = new TokenBuckets(redis, clock.now);
    const client = fresh(5, 1_000);
    const total = fresh(1, 1_000);
    expect(await buckets.tryTake([client, total])).toBe(0);
    // The total bucket refuses: the client's token is not spent.
    expect(await buckets.tryTake([client, total])).toBe(1_000);
    const refused = fresh(5, 1_000);
    expect(await buckets.tryTake([refused, total])).toBe(1_000);
    expect(await redis.exists(refused.key)).toBe(0);
    // A second later the client's bucket is full again: five, no more.
    clock.time += 1_000;
    for (let i = 0; i < 5; i += 1) {
      expect(await buckets.tryTake([client])).toBe(0);
    }
    expect(await buckets.tryTake([client])).toBeGreaterThan(0);
  });

  it('gives tokens back, never above capacity, and drops a bucket that is full again', async () => {
    const clock = manualClock();
    const buckets = new TokenBuckets(redis, clock.now);
    const b = fresh(2, 60_000);
    await buckets.tryTake([b]);
    await buckets.tryTake([b]);
    expect(await buckets.tryTake([b])).toBeGreaterThan(0);
    await buckets.give([b]);
    expect(await buckets.tryTake([b])).toBe(0);
    await buckets.give([b], 10);
    expect(await redis.exists(b.key)).toBe(0);
    expect(await Promise.all([1, 2, 3].map(() => buckets.tryTake([b])))).toEqual([0, 0, 30_000]);
  });

  it('answers the wait without taking or writing anything (check)', async () => {
    const clock = manualClock();
    const buckets = new TokenBuckets(redis, clock.now);
    const b = fresh(2, 60_000);
    expect(await buckets.wouldTake([b])).toBe(0);
    expect(await buckets.wouldTake([b], 2)).toBe(0);
    expect(await redis.exists(b.key)).toBe(0);
    await buckets.tryTake([b]);
    // Full means holding its capacity: one token short, the bucket is full again in 30 s.
    expect(await buckets.wouldTake([b], 2)).toBe(30_000);
    expect(await buckets.wouldTake([b])).toBe(0);
    expect(await buckets.tryTake([b])).toBe(0);
    expect(await buckets.wouldTake([b])).toBe(30_000);
  });

  it('charges beyond what a bucket holds as a debt of at most its capacity', async () => {
    const clock = manualClock();
    const buckets = new TokenBuckets(redis, clock.now);
    const b = fresh(2, 60_000);
    await buckets.charge([b], 3);
    // Level -1: two tokens' refill (60 s) before the next one can be taken.
    expect(await buckets.tryTake([b])).toBe(60_000);
    await buckets.charge([b], 100);
    // The debt stops at minus the capacity: -2, three tokens' refill.
    expect(await buckets.tryTake([b])).toBe(90_000);
    expect(await redis.pttl(b.key)).toBeLessThanOrEqual(121_000);
  });

  it('expires a bucket when it would be full again, so idle clients leave nothing behind', async () => {
    const buckets = new TokenBuckets(redis);
    const b = fresh(10, 60_000);
    await buckets.tryTake([b]);
    const ttl = await redis.pttl(b.key);
    // One token short: full again after 6 s, plus a second's margin.
    expect(ttl).toBeGreaterThan(5_000);
    expect(ttl).toBeLessThanOrEqual(7_000);
  });

  it('holds the rate across processes that share Redis (Redis TIME)', async () => {
    const b = fresh(5, 250);
    const pair = [new TokenBuckets(redis), new TokenBuckets(other)];
    const started = performance.now();
    await Promise.all(Array.from({ length: 25 }, (_, i) => (pair[i % 2] as TokenBuckets).take([b])));
    // 5 at once, then 20 at 20/s: at least a second.
    expect(performance.now() - started).toBeGreaterThanOrEqual(950);
  });

  it('refuses at once when the wait would be longer than the caller may wait', async () => {
    const buckets = new TokenBuckets(redis);
    const b = fresh(1, 60_000);
    await buckets.take([b], { maxWaitMs: 0 });
    const started = performance.now();
    const refused = await buckets.take([b], { maxWaitMs: 2_000 }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect((refused as RateLimitedError).retryAfterMs).toBeGreaterThan(58_000);
    expect(performance.now() - started).toBeLessThan(500);
  });
});
