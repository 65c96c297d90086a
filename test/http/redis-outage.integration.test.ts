/**
 * The API through Redis faults, against a redis-server of the test's own: killed (`kill -9`) and started again
 * from its AOF, paused (`SIGSTOP`), and full (`maxmemory` under `noeviction`). Feeds served before keep being
 * served from memory, marked stale; writes answer 503 with Retry-After; everything recovers by itself.
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import { until } from '../support/poll.ts';
import { type RedisProcess, startRedisProcess } from '../support/redis-process.ts';
import { TEST_ADMIN_TOKEN } from '../support/service.ts';
import { simControl } from '../upstream/sim-control.ts';
import { calendar, startTestApp, storeFeed, type TestApp } from './helpers.ts';

const FEED_URL = '/feeds/groups/4242.ics';
/** Long enough that only an invalidation, never the expiry, can make the cache read a feed again. */
const LONG_TTL_MS = 10 * 60_000;

let simulator: RunningSimulator;
let credentials: string[];
let redis: RedisProcess | undefined;
let t: TestApp | undefined;

beforeAll(async () => {
  simulator = await startSimulator({ port: 0, seed: 7, groups: 2, employees: 2, users: 4 });
  credentials = (await simControl(simulator.url).users()).map((user) => user.token);
});
afterAll(() => simulator.close());
afterEach(async () => {
  redis?.resume();
  await t?.close().catch(() => undefined);
  await redis?.close();
  t = undefined;
  redis = undefined;
});

async function start(feeds: { cacheTtlMs?: number } = {}, args: string[] = []): Promise<TestApp> {
  redis = await startRedisProcess(args);
  t = await startTestApp({
    env: { REDIS_URL: redis.url, UNIVERSITY_API_URL: simulator.url },
    feeds: { cacheTtlMs: LONG_TTL_MS, ...feeds },
  });
  return t;
}

const get = (app: TestApp, url: string, headers: Record<string, string> = {}) =>
  app.app.inject({ method: 'GET', url, headers });
const signUp = (app: TestApp, credential: string) =>
  app.app.inject({ method: 'POST', url: '/api/subscriptions', payload: { credential } });
const resync = (app: TestApp) =>
  app.app.inject({
    method: 'POST',
    url: '/admin/resync',
    headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
    payload: { source: 'group:4242' },
  });

function credential(index: number): string {
  const found = credentials[index];
  if (found === undefined) throw new Error(`the simulator has no user ${index}`);
  return found;
}

/** A 503 with a JSON error, a Retry-After of whole seconds, and no stack. */
function expectUnavailable(response: Awaited<ReturnType<typeof get>>, words: RegExp): void {
  expect(response.statusCode, response.body).toBe(503);
  expect(response.headers['retry-after']).toMatch(/^[1-9]\d*$/);
  expect(response.json()).toEqual({ error: expect.stringMatching(words) });
}

describe('Redis killed, then started again from its AOF', () => {
  it('serves cached feeds stale, refuses writes with 503, and recovers with invalidation and the token', async () => {
    const app = await start();
    const feed = await storeFeed(app.ctx, 'group:4242', calendar('before'));
    expect((await get(app, FEED_URL)).statusCode).toBe(200);
    const signedUp = await signUp(app, credential(0));
    expect(signedUp.statusCode, signedUp.body).toBe(201);
    const { token, source } = signedUp.json<{ token: string; source: string }>();
    await storeFeed(app.ctx, source, calendar('personal before'));
    const personalUrl = `/feeds/personal/${token}.ics`;
    expect((await get(app, personalUrl)).statusCode).toBe(200);
    // A second token of the same subscription, served before the crash too, revoked once Redis is back.
    const again = await signUp(app, credential(0));
    expect(again.statusCode, again.body).toBe(200);
    const revoked = again.json<{ token: string }>().token;
    expect((await get(app, `/feeds/personal/${revoked}.ics`)).statusCode).toBe(200);

    const killedAt = Date.now();
    await redis?.kill();
    // The cache learns of the outage when its connection's close event arrives, a moment after the kill.
    const statuses = new Set<number>();
    const stale = await until(
      async () => {
        const response = await get(app, FEED_URL);
        statuses.add(response.statusCode);
        return response;
      },
      (response) => response.headers['x-timetable-stale'] !== undefined,
      10_000,
    );
    expect([...statuses]).toEqual([200]);
    expect(stale.body).toContain('X-WR-CALNAME:before');
    expect(stale.headers.etag).toBe(feed.etag);
    expect(Date.parse(String(stale.headers['x-timetable-stale']))).toBeGreaterThanOrEqual(killedAt - 1_000);
    // Served from memory: no request waits for a reconnect.
    const started = performance.now();
    const notModified = await get(app, FEED_URL, { 'if-none-match': feed.etag });
    expect(performance.now() - started).toBeLessThan(500);
    expect(notModified.statusCode).toBe(304);
    expect(notModified.headers['x-timetable-stale']).toBe(stale.headers['x-timetable-stale']);

    expectUnavailable(await get(app, '/feeds/groups/999.ics'), /not available/);
    // A personal feed served before: found by its token from memory, served stale as its owner had it.
    const personal = await get(app, personalUrl);
    expect(personal.statusCode, personal.body).toBe(200);
    expect(personal.body).toContain('X-WR-CALNAME:personal before');
    expect(personal.headers['x-timetable-stale']).toBe(stale.headers['x-timetable-stale']);
    expect(personal.headers['cache-control']).toMatch(/^private/);
    expect((await get(app, `/feeds/personal/${revoked}.ics`)).statusCode).toBe(200);
    // A token never served is answered as today's outage answers it (503), never a 500 nor a guess.
    expectUnavailable(await get(app, `/feeds/personal/${'x'.repeat(43)}.ics`), /not available/);
    expectUnavailable(await signUp(app, credential(1)), /not available/);
    expectUnavailable(await resync(app), /not available/);
    const ready = await get(app, '/readyz');
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toMatchObject({ status: 'degraded', checks: { redis: 'unreachable' } });

    await redis?.restart();
    const fresh = await until(
      () => get(app, FEED_URL),
      (response) => response.headers['x-timetable-stale'] === undefined,
      30_000,
    );
    expect(fresh.statusCode).toBe(200);
    expect(fresh.headers['x-timetable-stale']).toBeUndefined();
    expect((await get(app, '/readyz')).json()).toMatchObject({ checks: { redis: 'ok' } });
    // The token handed out before the crash is in the AOF.
    expect(await app.ctx.subscriptions.idByToken(token)).toBeDefined();
    expect((await get(app, personalUrl)).headers['x-timetable-stale']).toBeUndefined();
    // A token revoked meanwhile stops working as soon as Redis is back, though it was served from memory.
    const { id } = signedUp.json<{ id: string }>();
    await app.ctx.subscriptions.revokeToken(id, revoked);
    expect((await get(app, `/feeds/personal/${revoked}.ics`)).statusCode).toBe(404);
    // Invalidation works again. First wait until the feed is trusted again (served from memory: a write nobody
    // announces does not show), then change it with an announcement: only the resubscribed channel can tell.
    let attempt = 0;
    const readThrough = await until(
      async () => {
        await get(app, FEED_URL);
        attempt += 1;
        await storeFeed(app.ctx, 'group:4242', calendar(`unannounced ${attempt}`), { announce: false });
        return (await get(app, FEED_URL)).body.includes(`unannounced ${attempt}`);
      },
      (read) => !read,
      30_000,
    );
    expect(readThrough).toBe(false);
    await storeFeed(app.ctx, 'group:4242', calendar('after'));
    const changed = await until(
      () => get(app, FEED_URL),
      (response) => response.body.includes('after'),
      15_000,
    );
    expect(changed.body).toContain('X-WR-CALNAME:after');
    expect((await signUp(app, credential(1))).statusCode).toBe(201);
  }, 120_000);
});

describe('Redis paused', () => {
  it('answers writes 503 within a bounded time, keeps serving feeds, and recovers after SIGCONT', async () => {
    const app = await start({ cacheTtlMs: 300 });
    await storeFeed(app.ctx, 'group:4242', calendar('paused'));
    expect((await get(app, FEED_URL)).statusCode).toBe(200);

    redis?.pause();
    let started = performance.now();
    expectUnavailable(await resync(app), /not available/);
    expect(performance.now() - started).toBeLessThan(10_000);
    started = performance.now();
    expectUnavailable(await signUp(app, credential(2)), /not available/);
    expect(performance.now() - started).toBeLessThan(10_000);
    // Past its TTL the feed cannot be read again: its last good copy answers, marked stale, never an error.
    const statuses = new Set<number>();
    const stale = await until(
      async () => {
        const response = await get(app, FEED_URL);
        statuses.add(response.statusCode);
        return response;
      },
      (response) => response.headers['x-timetable-stale'] !== undefined,
      30_000,
    );
    expect([...statuses]).toEqual([200]);
    expect(stale.body).toContain('X-WR-CALNAME:paused');
    expect((await get(app, '/readyz')).json()).toMatchObject({ status: 'degraded' });

    redis?.resume();
    await until(
      () => get(app, FEED_URL),
      (response) => response.headers['x-timetable-stale'] === undefined,
      30_000,
    );
    expect((await resync(app)).statusCode).toBe(202);
  }, 120_000);
});

describe('Redis full', () => {
  it('refuses writes with a clear 503, keeps every key and the feeds, and recovers when memory is raised', async () => {
    const app = await start({ cacheTtlMs: 300 });
    await storeFeed(app.ctx, 'group:4242', calendar('full'));
    expect((await get(app, FEED_URL)).statusCode).toBe(200);
    const admin = new Redis(redis?.url ?? '');
    try {
      const keysBefore = await admin.keys('*');
      await admin.config('SET', 'maxmemory', '1');

      expectUnavailable(await resync(app), /full/);
      expectUnavailable(await signUp(app, credential(3)), /full/);
      const served = await get(app, FEED_URL);
      expect(served.statusCode).toBe(200);
      expect(served.body).toContain('X-WR-CALNAME:full');
      // Refused writes lose nothing: every key stored before is still there.
      expect(await admin.keys('*')).toEqual(expect.arrayContaining(keysBefore));

      await admin.config('SET', 'maxmemory', '0');
      expect((await resync(app)).statusCode).toBe(202);
      expect((await signUp(app, credential(3))).statusCode).toBe(201);
    } finally {
      admin.disconnect();
    }
  }, 120_000);
});
