import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { BeforeRequest, CalendarClient, CalendarClientFactory } from '../../src/google/calendar-client.ts';
import { GoogleNotConfiguredError } from '../../src/google/errors.ts';
import { budgetKeyFor, createGoogleServices } from '../../src/google/google-services.ts';
import { redisKeys } from '../../src/store/keys.ts';
import { type BudgetClock, type BudgetLimits, bucketFor, RequestBudget } from '../../src/store/request-budget.ts';
import { deletePrefix, testConfig, uniquePrefix } from '../support/service.ts';

const MINUTE = 60_000;
const prefixes: string[] = [];
let redis: Redis;
let other: Redis;

/** A fresh key layout per test, so that buckets never carry over. */
function freshKeys() {
  const prefix = uniquePrefix('budget');
  prefixes.push(prefix);
  return redisKeys(prefix);
}

/** A simulated clock: sleeping advances it, so minutes pass in milliseconds. */
function simulatedClock(start: number): BudgetClock & { time: number } {
  const clock = {
    time: start,
    now: () => clock.time,
    sleep: async (ms: number) => {
      clock.time += ms;
    },
  };
  return clock;
}

/** The largest number of `times` inside any window `[t, t + width]` (both ends included: the strictest reading). */
function busiestWindow(times: readonly number[], width: number): number {
  let most = 0;
  let start = 0;
  for (let end = 0; end < times.length; end += 1) {
    while ((times[end] as number) - (times[start] as number) > width) start += 1;
    most = Math.max(most, end - start + 1);
  }
  return most;
}

/** Takes from `budgets` in turn (two workers sharing the bucket) until `until`; the grant times. */
async function hammer(
  budgets: RequestBudget[],
  clock: { time: number },
  key: string,
  until: number,
): Promise<number[]> {
  const grants: number[] = [];
  for (let i = 0; clock.time < until; i += 1) {
    await (budgets[i % budgets.length] as RequestBudget).take(key);
    grants.push(clock.time);
  }
  return grants;
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

describe('bucketFor', () => {
  it('sizes the burst so that no 60 s can hold more than Google’s 600 less a margin of 30', () => {
    expect(bucketFor({ userPerMinute: 500 })).toEqual({ ratePerMs: 500 / MINUTE, capacity: 70 });
    expect(bucketFor({ userPerMinute: 550 })).toEqual({ ratePerMs: 550 / MINUTE, capacity: 20 });
    expect(bucketFor({ userPerMinute: 120 }).capacity).toBe(100);
    expect(bucketFor({ userPerMinute: 570 }).capacity).toBe(1);
  });
});

describe('RequestBudget', () => {
  it.each([500, 550, 569, 120])(
    'never lets one user exceed 570 requests in any 60 s (%i/min, two workers sharing it)',
    async (userPerMinute) => {
      const keys = freshKeys();
      const clock = simulatedClock(Date.UTC(2025, 9, 1));
      const limits: BudgetLimits = { userPerMinute, globalPerSecond: 10_000 };
      const budgets = [new RequestBudget(redis, keys, limits, clock), new RequestBudget(other, keys, limits, clock)];
      const start = clock.time;
      const grants = await hammer(budgets, clock, 'user:burst', start + 5 * MINUTE);
      const capacity = bucketFor(limits).capacity;
      expect(busiestWindow(grants, MINUTE)).toBeLessThanOrEqual(570);
      // Not vacuous: the busiest minute holds (nearly: waits are whole ms) the burst plus a minute's refill,
      expect(busiestWindow(grants, MINUTE)).toBeGreaterThanOrEqual(Math.floor(0.98 * (capacity + userPerMinute)));
      expect(grants.filter((at) => at < start + 1)).toHaveLength(capacity);
      // and the long-run rate is the configured one.
      expect(grants.length).toBeGreaterThanOrEqual(Math.floor(0.98 * (capacity + 5 * userPerMinute)));
      expect(grants.length).toBeLessThanOrEqual(capacity + 5 * userPerMinute + 1);
    },
  );

  it('answers how long to wait, and a refused user takes nothing from the global bucket', async () => {
    const keys = freshKeys();
    const clock = simulatedClock(Date.UTC(2025, 9, 1));
    const budget = new RequestBudget(redis, keys, { userPerMinute: 500, globalPerSecond: 100 }, clock);
    for (let i = 0; i < 70; i += 1) expect(await budget.tryTake('user:a')).toBe(0);
    expect(await budget.tryTake('user:a')).toBe(120);
    expect(await budget.tryTake('user:a')).toBe(120);
    // 30 global tokens are left: user b gets them, then waits for the global bucket (1/100 s).
    for (let i = 0; i < 30; i += 1) expect(await budget.tryTake('user:b')).toBe(0);
    expect(await budget.tryTake('user:b')).toBe(10);
    clock.time += 120;
    expect(await budget.tryTake('user:a')).toBe(0);
  });

  it('shares the global rate between users and between processes (Redis TIME)', async () => {
    const keys = freshKeys();
    const limits = { userPerMinute: 500, globalPerSecond: 20 };
    const budgets = [new RequestBudget(redis, keys, limits), new RequestBudget(other, keys, limits)];
    const started = performance.now();
    await Promise.all(Array.from({ length: 40 }, (_, i) => (budgets[i % 2] as RequestBudget).take(`user:${i}`)));
    const elapsed = performance.now() - started;
    // 20 at once, then 20 more at 20/s.
    expect(elapsed).toBeGreaterThanOrEqual(900);
    expect(elapsed).toBeLessThan(3_000);
    const stats = budgets.map((budget) => budget.stats());
    expect(stats.reduce((sum, s) => sum + s.taken, 0)).toBe(40);
    expect(stats.reduce((sum, s) => sum + s.waits, 0)).toBeGreaterThan(0);
  });

  it('limits one user with the real clock and lets its bucket expire', async () => {
    const keys = freshKeys();
    const budget = new RequestBudget(redis, keys, { userPerMinute: 120, globalPerSecond: 1_000 });
    const started = performance.now();
    // A burst of 100 at once, then two more at 2/s.
    for (let i = 0; i < 100; i += 1) await budget.take('user:real');
    expect(performance.now() - started).toBeLessThan(500);
    await budget.take('user:real');
    await budget.take('user:real');
    expect(performance.now() - started).toBeGreaterThanOrEqual(900);
    const ttl = await redis.pttl(keys.googleBudget('user:real'));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(51_000);
  });

  it('stops waiting when aborted', async () => {
    const keys = freshKeys();
    const budget = new RequestBudget(redis, keys, { userPerMinute: 1, globalPerSecond: 1_000 });
    while ((await budget.tryTake('user:slow')) === 0);
    const controller = new AbortController();
    const waiting = budget.take('user:slow', controller.signal);
    setTimeout(() => controller.abort(), 50);
    await expect(waiting).rejects.toThrow(/abort/i);
    await expect(budget.take('user:slow', AbortSignal.abort())).rejects.toThrow(/abort/i);
  });

  it('keeps the global bucket’s name for itself', async () => {
    const budget = new RequestBudget(redis, freshKeys(), { userPerMinute: 500, globalPerSecond: 100 });
    await expect(budget.take('global')).rejects.toThrow(RangeError);
  });
});

describe('createGoogleServices', () => {
  const TOKEN = '1//0refresh-token-for-services';

  it('gives calendars whose every request first takes from the grant’s budget', async () => {
    const seen: { token: string; before: BeforeRequest }[] = [];
    const factory: CalendarClientFactory = (token, before) => {
      seen.push({ token, before });
      return {} as CalendarClient;
    };
    const config = testConfig({ GOOGLE_USER_RATE_LIMIT: '500' });
    const services = createGoogleServices({ config, redis, keys: redisKeys(config.redisPrefix), factory });
    prefixes.push(config.redisPrefix);
    expect(services.configured).toBe(true);
    expect(services.oauth).toBeUndefined();
    services.calendar(TOKEN, 'user:42');
    expect(seen.map((call) => call.token)).toEqual([TOKEN]);
    for (let i = 0; i < 3; i += 1) await seen[0]?.before();
    expect(services.budget.stats().taken).toBe(3);
    // 70 (the burst at 500/min) less 3, plus whatever refilled meanwhile (0.0083 per ms).
    const left = Number(await redis.hget(redisKeys(config.redisPrefix).googleBudget('user:42'), 'tokens'));
    expect(left).toBeGreaterThanOrEqual(67);
    expect(left).toBeLessThan(97);
  });

  it('refuses calendars without client credentials, and builds OAuth with them', () => {
    const bare = testConfig();
    const services = createGoogleServices({ config: bare, redis, keys: redisKeys(bare.redisPrefix) });
    expect(services.configured).toBe(false);
    expect(() => services.calendar(TOKEN, 'user:42')).toThrow(GoogleNotConfiguredError);
    const withClient = testConfig({
      GOOGLE_CLIENT_ID: 'client-id.apps.googleusercontent.com',
      GOOGLE_CLIENT_SECRET: 'client-secret',
    });
    const configured = createGoogleServices({ config: withClient, redis, keys: redisKeys(withClient.redisPrefix) });
    expect(configured.configured).toBe(true);
    expect(configured.oauth).toBeDefined();
    expect(configured.calendar(TOKEN, 'user:42')).toBeDefined();
  });

  it('keys budgets by Google user, else by a digest of the token (never the token)', () => {
    expect(budgetKeyFor('1170001', TOKEN)).toBe('user:1170001');
    const byToken = budgetKeyFor(undefined, TOKEN);
    expect(byToken).toMatch(/^token:[0-9a-f]{16}$/);
    expect(byToken).toBe(budgetKeyFor(undefined, TOKEN));
    expect(byToken).not.toBe(budgetKeyFor(undefined, `${TOKEN}x`));
    expect(byToken).not.toContain(TOKEN.slice(4, 12));
  });
});
