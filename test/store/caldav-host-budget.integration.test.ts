/** The per-host CalDAV rate limit and cool-down, shared by two connections (two worker processes) on a real Redis. */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RateLimitedError } from '../../src/lib/errors.ts';
import { CalDavHostBudget, MAX_HOST_COOLDOWN_MS } from '../../src/store/caldav-host-budget.ts';
import { redisKeys } from '../../src/store/keys.ts';
import { deletePrefix, uniquePrefix } from '../support/service.ts';

const prefixes: string[] = [];
let redis: Redis;
let other: Redis;

/** A fresh key layout per test, so that buckets and cool-downs never carry over. */
function freshKeys() {
  const prefix = uniquePrefix('caldav-host');
  prefixes.push(prefix);
  return redisKeys(prefix);
}

/** Takes `count` tokens for `host` one after the other; the ms it took. */
async function takeMany(budget: CalDavHostBudget, host: string, count: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < count; i += 1) await budget.take(host);
  return performance.now() - started;
}

beforeAll(() => {
  redis = new Redis(inject('redisUrl'));
  other = new Redis(inject('redisUrl'));
});
afterAll(async () => {
  for (const prefix of prefixes) await deletePrefix(inject('redisUrl'), prefix);
  redis.disconnect();
  other.disconnect();
});

describe('CalDavHostBudget', () => {
  it('lets CALDAV_RATE_LIMIT requests a second through per host, over every process, and hosts apart', async () => {
    const keys = freshKeys();
    const one = new CalDavHostBudget(redis, keys, 40);
    const two = new CalDavHostBudget(other, keys, 40);
    // A burst of one second's worth from the first process empties the host's bucket for the second one too.
    const burst = await takeMany(one, 'caldav.yandex.ru', 40);
    expect(burst).toBeLessThan(400);
    const waited = await takeMany(two, 'caldav.yandex.ru', 20);
    // 20 more tokens refill in 500 ms at 40/s, counted from the burst's start: a burst slowed by a busy machine
    // has already refilled part of them (margin for timers on the low side).
    expect(burst + waited).toBeGreaterThan(480);
    expect(two.stats().waits).toBeGreaterThan(0);
    // Another host has a bucket of its own.
    expect(await takeMany(two, 'p62-caldav.icloud.com', 40)).toBeLessThan(400);
    expect(one.stats().taken + two.stats().taken).toBe(100);
  });

  it('holds every process to a host cool-down after a 429/503/504, and never shortens one', async () => {
    const keys = freshKeys();
    const one = new CalDavHostBudget(redis, keys, 100);
    const two = new CalDavHostBudget(other, keys, 100);
    expect(await one.coolDown('caldav.yandex.ru', 600)).toBe(600);
    // A shorter Retry-After seen by another worker leaves the longer cool-down running.
    expect(await two.coolDown('caldav.yandex.ru', 50)).toBeGreaterThan(450);
    const started = performance.now();
    await two.take('caldav.yandex.ru');
    expect(performance.now() - started).toBeGreaterThan(450);
    expect(await one.coolDownLeft('caldav.yandex.ru')).toBe(0);
    // Other hosts go on meanwhile.
    await one.coolDown('caldav.yandex.ru', 2_000);
    expect(await takeMany(one, 'caldav.fastmail.com', 5)).toBeLessThan(300);
  });

  it('refuses to wait in place for a cool-down longer than the caller allows, saying how long is left', async () => {
    const keys = freshKeys();
    const budget = new CalDavHostBudget(redis, keys, 100);
    // A server asking for a day gets the longest cool-down, not a day.
    expect(await budget.coolDown('caldav.yandex.ru', 86_400_000)).toBe(MAX_HOST_COOLDOWN_MS);
    const refusal = await budget.take('caldav.yandex.ru', { maxWaitMs: 1_000 }).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(RateLimitedError);
    expect((refusal as RateLimitedError).retryAfterMs).toBeGreaterThan(MAX_HOST_COOLDOWN_MS - 5_000);
    expect(budget.stats().taken).toBe(0);
  });

  it('stops waiting when its signal aborts', async () => {
    const keys = freshKeys();
    const budget = new CalDavHostBudget(redis, keys, 100);
    await budget.coolDown('caldav.yandex.ru', 5_000);
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('shutting down')), 100);
    const started = performance.now();
    await expect(budget.take('caldav.yandex.ru', { signal: controller.signal })).rejects.toThrow(/aborted/);
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});
