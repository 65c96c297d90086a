/**
 * Personal feeds through a Redis that stops answering, against a redis-server of the test's own: paused
 * (`SIGSTOP`, its sockets open, nothing answering) and killed (`kill -9`). A personal feed served before is
 * answered from the api's memory within 1.5 s end to end, over real HTTP, marked `X-Timetable-Stale`; a feed
 * URL revoked before Redis stopped (by a rotation, the owner's own way) is never served meanwhile.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import { until } from '../../testkit/poll.ts';
import { type RedisProcess, startRedisProcess } from '../../testkit/redis-process.ts';
import { simControl } from '../upstream/sim-control.ts';
import { calendar, startTestApp, storeFeed, type TestApp } from './helpers.ts';

/** What the api must answer in, end to end, once Redis stops answering. */
const WITHIN_MS = 1_500;
/** An answer from memory with nothing to wait for; generous for a machine shared with other test runs. */
const MEMORY_MS = 500;

let simulator: RunningSimulator;
let credentials: string[];
let redis: RedisProcess | undefined;
let t: TestApp | undefined;
let base = '';
/** Whether the test killed its redis-server and did not start it again yet. */
let killed = false;

beforeAll(async () => {
  simulator = await startSimulator({ port: 0, seed: 11, groups: 1, employees: 1, users: 3 });
  credentials = (await simControl(simulator.url).users()).map((user) => user.token);
});
afterAll(() => simulator.close());
afterEach(async () => {
  // Closing the app needs Redis: running again, whatever the test left it in.
  redis?.resume();
  if (killed) await redis?.restart();
  killed = false;
  await t?.close().catch(() => undefined);
  await redis?.close();
  t = undefined;
  redis = undefined;
});

/** An api on a redis-server of the test's own, listening on loopback (the feed cache trusts for 10 min). */
async function start(): Promise<TestApp> {
  redis = await startRedisProcess();
  t = await startTestApp({
    env: { REDIS_URL: redis.url, UNIVERSITY_API_URL: simulator.url },
    feeds: { cacheTtlMs: 10 * 60_000 },
  });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const address = t.app.server.address();
  if (address === null || typeof address === 'string') throw new Error('the app listens on no port');
  base = `http://127.0.0.1:${address.port}`;
  return t;
}

interface Answer {
  status: number;
  stale: string | null;
  etag: string | null;
  cacheControl: string | null;
  body: string;
  ms: number;
}

/** GET over HTTP on a connection of its own, timed from the request to the last byte. */
async function get(url: string, headers: Record<string, string> = {}): Promise<Answer> {
  const started = performance.now();
  const response = await fetch(`${base}${url}`, { headers: { connection: 'close', ...headers } });
  const body = await response.text();
  return {
    status: response.status,
    stale: response.headers.get('x-timetable-stale'),
    etag: response.headers.get('etag'),
    cacheControl: response.headers.get('cache-control'),
    body,
    ms: performance.now() - started,
  };
}

const personalUrl = (token: string) => `/feeds/personal/${token}.ics`;

/** Signs up with the simulator's user `index`, stores a feed for it and serves it once by its token. */
async function servedSubscription(app: TestApp, index: number, name: string) {
  const signedUp = await app.app.inject({
    method: 'POST',
    url: '/api/subscriptions',
    payload: { credential: credential(index) },
  });
  expect(signedUp.statusCode, signedUp.body).toBe(201);
  const subscription = signedUp.json<{ id: string; token: string; source: string }>();
  await storeFeed(app.ctx, subscription.source, calendar(name));
  const served = await get(personalUrl(subscription.token));
  expect(served.status, served.body).toBe(200);
  expect(served.stale).toBeNull();
  return subscription;
}

/** Rotates the feed URL as the owner's browser does (its cookie holds the token): the old URL is revoked. */
async function rotate(app: TestApp, id: string, token: string): Promise<void> {
  const answer = await app.app.inject({
    method: 'POST',
    url: '/timetables/personal/rotate',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `tts-personal=${id}.${token}` },
    payload: '',
  });
  expect(answer.headers.location, answer.body).toBe('/timetables/personal?done=rotated');
}

function credential(index: number): string {
  const found = credentials[index];
  if (found === undefined) throw new Error(`the simulator has no user ${index}`);
  return found;
}

describe('Personal feeds with Redis paused (SIGSTOP)', () => {
  it('answer from memory within 1.5 s marked stale; a URL revoked before the pause is never served', async () => {
    const app = await start();
    const kept = await servedSubscription(app, 0, 'kept');
    const revoked = await servedSubscription(app, 1, 'revoked');
    await rotate(app, revoked.id, revoked.token);
    expect((await get(personalUrl(revoked.token))).status).toBe(404);

    const pausedAt = Date.now();
    redis?.pause();
    // Revoked before the pause: memory dropped it when the rotation was announced, so it waits for Redis.
    const refusedFirst = await get(personalUrl(revoked.token));
    expect(refusedFirst.status, refusedFirst.body).not.toBe(200);
    // The first request of a kept URL finds out that Redis does not answer, within the bound; the next ones know.
    const first = await get(personalUrl(kept.token));
    expect(first.status, first.body).toBe(200);
    expect(first.ms).toBeLessThan(WITHIN_MS);
    expect(first.body).toContain('X-WR-CALNAME:kept');
    expect(first.cacheControl).toMatch(/^private/);
    expect(first.stale).not.toBeNull();
    expect(Date.parse(first.stale ?? '')).toBeGreaterThanOrEqual(pausedAt - 1_000);
    const again = await get(personalUrl(kept.token));
    expect(again.status).toBe(200);
    expect(again.ms).toBeLessThan(MEMORY_MS);
    expect(again.stale).toBe(first.stale);
    const notModified = await get(personalUrl(kept.token), { 'if-none-match': first.etag ?? '' });
    expect(notModified.status).toBe(304);
    expect(notModified.ms).toBeLessThan(MEMORY_MS);
    expect(notModified.stale).toBe(first.stale);
    // Memory answers kept URLs now without asking Redis; never the revoked one.
    for (let attempt = 0; attempt < 2; attempt++) {
      const refused = await get(personalUrl(revoked.token));
      expect(refused.status, refused.body).not.toBe(200);
      expect(refused.body).not.toContain('X-WR-CALNAME:revoked');
    }

    redis?.resume();
    const fresh = await until(
      () => get(personalUrl(kept.token)),
      (answer) => answer.stale === null,
      30_000,
    );
    expect(fresh.status).toBe(200);
    expect((await get(personalUrl(revoked.token))).status).toBe(404);
  }, 90_000);
});

describe('Personal feeds with Redis killed (kill -9)', () => {
  it('answer from memory within 1.5 s marked stale; a URL revoked before the kill is never served', async () => {
    const app = await start();
    const kept = await servedSubscription(app, 0, 'kept');
    const revoked = await servedSubscription(app, 2, 'revoked');
    await rotate(app, revoked.id, revoked.token);

    const killedAt = Date.now();
    killed = true;
    await redis?.kill();
    const first = await get(personalUrl(kept.token));
    expect(first.status, first.body).toBe(200);
    expect(first.ms).toBeLessThan(WITHIN_MS);
    expect(first.body).toContain('X-WR-CALNAME:kept');
    expect(Date.parse(first.stale ?? '')).toBeGreaterThanOrEqual(killedAt - 1_000);
    const again = await get(personalUrl(kept.token));
    expect(again.status).toBe(200);
    expect(again.ms).toBeLessThan(MEMORY_MS);
    expect(again.stale).toBe(first.stale);
    const refused = await get(personalUrl(revoked.token));
    expect(refused.status, refused.body).not.toBe(200);
    expect(refused.body).not.toContain('X-WR-CALNAME:revoked');

    await redis?.restart();
    killed = false;
    const fresh = await until(
      () => get(personalUrl(kept.token)),
      (answer) => answer.stale === null,
      30_000,
    );
    expect(fresh.status).toBe(200);
  }, 90_000);
});
