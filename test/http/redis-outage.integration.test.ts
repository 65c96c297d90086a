/**
 * The API through Redis faults, against a redis-server of the test's own: killed (`kill -9`) and started again
 * from its AOF, paused (`SIGSTOP`), and full (`maxmemory` under `noeviction`). Feeds served before keep being
 * served from memory, marked stale; writes answer 503 with Retry-After; everything recovers by itself. A feed
 * URL that Redis no longer knows (rotated, deleted) is never served from memory, during an outage or not.
 */
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, type Logger } from '../../src/logger.ts';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import { SubscriptionStore } from '../../src/store/subscription-store.ts';
import { until } from '../../testkit/poll.ts';
import { type RedisProcess, startRedisProcess } from '../../testkit/redis-process.ts';
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

async function start(feeds: { cacheTtlMs?: number } = {}, args: string[] = [], logger?: Logger): Promise<TestApp> {
  redis = await startRedisProcess(args);
  t = await startTestApp({
    env: { REDIS_URL: redis.url, UNIVERSITY_API_URL: simulator.url },
    feeds: { cacheTtlMs: LONG_TTL_MS, ...feeds },
    ...(logger ? { logger } : {}),
  });
  return t;
}

/**
 * A debug logger whose lines a test can wait for: `next(words)` resolves as soon as a line with those words is
 * written from then on (synchronously, so the test acts before the app's next step).
 */
function watchedLogger(): { logger: Logger; next(words: string): Promise<void> } {
  const waiting: { words: string; done: () => void }[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      const line = chunk.toString();
      for (const waiter of waiting.filter((entry) => line.includes(entry.words))) {
        waiting.splice(waiting.indexOf(waiter), 1);
        waiter.done();
      }
      callback();
    },
  });
  return {
    logger: createLogger({ level: 'debug', destination, pretty: false }),
    next: (words) => new Promise((done) => waiting.push({ words, done })),
  };
}

/** Resolves `promise`, or rejects naming `what` after `ms`. */
async function within<T>(promise: Promise<T>, what: string, ms = 20_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Signs up with the simulator's user `index`, stores a feed for it and serves it once by its token. */
async function servedSubscription(app: TestApp, index: number, name: string) {
  const signedUp = await signUp(app, credential(index));
  expect(signedUp.statusCode, signedUp.body).toBe(201);
  const subscription = signedUp.json<{ id: string; token: string; source: string }>();
  await storeFeed(app.ctx, subscription.source, calendar(name));
  expect((await get(app, personalUrl(subscription.token))).statusCode).toBe(200);
  return subscription;
}

const personalUrl = (token: string) => `/feeds/personal/${token}.ics`;

/**
 * Rotates the feed URL as the owner's browser does (a browser signed in before sessions: its cookie holds the
 * token); answers the new token, the URL its personal page shows from then on (it gets a session cookie).
 */
async function rotate(app: TestApp, id: string, token: string): Promise<string> {
  const answer = await app.app.inject({
    method: 'POST',
    url: '/timetables/personal/rotate',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `tts-personal=${id}.${token}` },
    payload: '',
  });
  expect(answer.headers.location).toBe('/timetables/personal?done=rotated');
  const session = /(tts-session=[^;]+);/.exec(String(answer.headers['set-cookie']))?.[1];
  if (session === undefined) throw new Error(`no session cookie: ${String(answer.headers['set-cookie'])}`);
  const page = await app.app.inject({ method: 'GET', url: '/timetables/personal', headers: { cookie: session } });
  const shown = /\/feeds\/personal\/([\w-]+)\.ics/.exec(page.body)?.[1];
  if (shown === undefined) throw new Error(`no feed URL on the personal page (${page.statusCode})`);
  return shown;
}

/** Waits until `url` is served marked stale: the API learnt of the outage. */
async function servedStale(app: TestApp, url: string) {
  const response = await until(
    () => get(app, url),
    (answer) => answer.headers['x-timetable-stale'] !== undefined,
    30_000,
  );
  expect(response.statusCode, response.body).toBe(200);
  expect(response.headers['x-timetable-stale']).toBeDefined();
  return response;
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
  const code = words.source === 'full' ? 'REDIS_FULL' : 'REDIS_UNAVAILABLE';
  expect(response.json()).toEqual({ error: expect.stringMatching(words), code });
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

describe('Feed URLs that Redis no longer knows', () => {
  /** The API dropped what it kept of subscription `id`'s tokens, its announcement heard. */
  const tokensDropped = (id: string) => `"subscription":"${id}","tokens"`;

  it('are not served from memory during an outage after a rotation; the new URL served before is', async () => {
    const log = watchedLogger();
    const app = await start({}, [], log.logger);
    const { id, token } = await servedSubscription(app, 2, 'personal');
    const dropped = log.next(tokensDropped(id));
    const rotated = await rotate(app, id, token);
    // Not asked of Redis again (that alone would forget it): memory must have learnt of the rotation.
    await within(dropped, 'the rotation to be heard');
    expect((await get(app, personalUrl(rotated))).statusCode).toBe(200);

    await redis?.kill();
    const stale = await servedStale(app, personalUrl(rotated));
    expect(stale.body).toContain('X-WR-CALNAME:personal');
    expectUnavailable(await get(app, personalUrl(token)), /not available/);
    // Closing the app needs Redis.
    await redis?.restart();
  }, 90_000);

  it('are not served from memory during an outage after a deletion, other subscriptions are', async () => {
    const log = watchedLogger();
    const app = await start({}, [], log.logger);
    const kept = await servedSubscription(app, 0, 'kept');
    const { id, token } = await servedSubscription(app, 1, 'deleted');
    const again = await signUp(app, credential(1));
    expect(again.statusCode, again.body).toBe(200);
    const second = again.json<{ token: string }>().token;
    expect((await get(app, personalUrl(second))).statusCode).toBe(200);
    const dropped = log.next(tokensDropped(id));
    const deleted = await app.app.inject({
      method: 'DELETE',
      url: `/api/subscriptions/${id}`,
      headers: { authorization: `Bearer ${token}` },
    });
    expect(deleted.statusCode, deleted.body).toBe(204);
    await within(dropped, 'the deletion to be heard');

    await redis?.kill();
    expect((await servedStale(app, personalUrl(kept.token))).body).toContain('X-WR-CALNAME:kept');
    expectUnavailable(await get(app, personalUrl(token)), /not available/);
    expectUnavailable(await get(app, personalUrl(second)), /not available/);
    await redis?.restart();
  }, 90_000);

  it('answer 404 while Redis is up, though the feed-updates connection was just lost', async () => {
    const log = watchedLogger();
    const app = await start({}, [], log.logger);
    const rotatedAway = await servedSubscription(app, 0, 'rotated');
    const unannounced = await servedSubscription(app, 1, 'revoked');
    const dropped = log.next(tokensDropped(rotatedAway.id));
    await rotate(app, rotatedAway.id, rotatedAway.token);
    await within(dropped, 'the rotation to be heard');
    // Revoked with its announcement lost (sent on a channel nobody hears): only Redis can tell.
    const deaf = new SubscriptionStore(
      app.ctx.redis,
      { ...app.ctx.keys, feedUpdates: `${app.ctx.keys.feedUpdates}:nobody` },
      app.ctx.config.secretKey,
    );
    await deaf.revokeToken(unannounced.id, unannounced.token);

    const admin = new Redis(redis?.url ?? '');
    try {
      // The feed cache takes the lost connection for an outage until it has subscribed again.
      const lost = log.next('Redis cannot be read');
      expect(await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub')).toBeGreaterThanOrEqual(1);
      await within(lost, 'the feed cache to lose its connection');
      const [first, second] = await Promise.all([
        get(app, personalUrl(rotatedAway.token)),
        get(app, personalUrl(unannounced.token)),
      ]);
      expect(first.statusCode, first.body).toBe(404);
      expect(second.statusCode, second.body).toBe(404);
    } finally {
      admin.disconnect();
    }
  }, 90_000);
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
