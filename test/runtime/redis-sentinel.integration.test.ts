/**
 * The service on Redis Sentinel, for real: a primary, a replica and a sentinel on loopback, the whole service
 * (workers, api, feed cache, Google push to the fake Google) connected through REDIS_SENTINELS only. The
 * primary is killed with SIGKILL; after the sentinel promotes the replica, refreshes, feeds, sign-ups and
 * pushes go on, with no Google event written twice and no subscription lost.
 */
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { silentLogger } from '../../src/logger.ts';
import { until } from '../../testkit/poll.ts';
import { PushHarness } from '../google/push-harness.ts';
import { type SentinelSet, startSentinelSet } from '../support/redis-topologies.ts';

let redis: SentinelSet;
let h: PushHarness;
let app: FastifyInstance;

beforeAll(async () => {
  redis = await startSentinelSet();
  h = await PushHarness.start(redis.env);
  app = await buildApp(h.ctx, { logger: silentLogger() });
}, 120_000);
afterAll(async () => {
  try {
    await app?.close();
    await h?.close();
  } finally {
    await redis?.stop();
  }
}, 60_000);

/** Moves a class to 18:00–19:30 in the simulator. */
async function moveClass(entryId: number): Promise<void> {
  await h.sim.raw(`/_sim/entries/${entryId}`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ begin_time_schedule: '18:00', end_time_schedule: '19:30' }),
  });
}

/** Signs a simulator user up; answers the subscription and waits for its first feed. */
async function signUp(token: string): Promise<{ id: string; feedPath: string; bearer: string }> {
  const created = await app.inject({ method: 'POST', url: '/api/subscriptions', payload: { credential: token } });
  expect(created.statusCode).toBe(201);
  const body = created.json<Record<string, string>>();
  const feedPath = new URL(body.feedUrl ?? '').pathname;
  const served = await until(
    async () => (await app.inject({ method: 'GET', url: feedPath })).statusCode,
    (status) => status === 200,
    30_000,
  );
  expect(served).toBe(200);
  return { id: body.id ?? '', feedPath, bearer: `Bearer ${body.token}` };
}

it('fails over: refreshes, feeds, sign-ups and pushes go on after the primary is killed', async () => {
  // Before: a group published and pushed to a new Google calendar, and a personal subscription.
  const source = await h.smallGroup(2);
  const { target } = await h.connect(source);
  const added = await h.addOneDayClass(source);
  await h.refresh(source);
  await h.settled(target.id, 2);
  const groupFeed = `/feeds/groups/${source.split(':')[1]}.ics`;
  expect((await app.inject({ method: 'GET', url: groupFeed })).statusCode).toBe(200);
  const [first, second] = await h.sim.users();
  if (!first || !second) throw new Error('the simulator has two users');
  const before = await signUp(first.token);
  // Replication is asynchronous: what the primary acknowledged in its last milliseconds can be lost with it
  // (docs/redis.md). The test kills it once the replica holds the subscription, as it does a moment later.
  expect(await until(() => replicaHas(h.ctx.keys.subscription(before.id)), Boolean, 10_000)).toBe(true);
  h.fake.resetCounts();

  await redis.primary.kill();
  const promoted = await until(redis.currentPrimaryPort, (port) => port === redis.replica.port, 60_000);
  expect(promoted).toBe(redis.replica.port);

  // A refresh after the failover publishes the moved class; its push is exactly one patch.
  await moveClass(added.entryId);
  await until(
    () =>
      h.refresh(source).then(
        () => true,
        () => false,
      ),
    (done) => done,
    60_000,
  );
  const pushes = await h.settled(target.id, 3, 60_000);
  expect(pushes.at(-1)).toMatchObject({ state: 'completed', result: { patched: 1, inserted: 0, deleted: 0 } });
  expect(h.fake.counts().byMethod).toEqual({ 'events.patch': 1 });
  expect(h.calendar(target.calendarId)).toEqual(await h.desired(source));
  expect(h.fake.events(target.calendarId)).toHaveLength((await h.desired(source)).length);

  // Feeds are served, the moved class included; the subscription made before the failover is still there.
  const feed = await app.inject({ method: 'GET', url: groupFeed });
  expect(feed.statusCode).toBe(200);
  expect(feed.body).toContain('T180000');
  const kept = await app.inject({
    method: 'GET',
    url: `/api/subscriptions/${before.id}`,
    headers: { authorization: before.bearer },
  });
  expect(kept.statusCode).toBe(200);
  expect((await app.inject({ method: 'GET', url: before.feedPath })).statusCode).toBe(200);

  // A sign-up after the failover is stored on the new primary and gets its feed.
  const after = await signUp(second.token);
  expect(after.id).not.toBe(before.id);
}, 240_000);

/** Whether the replica (the primary-to-be) holds `key`. */
async function replicaHas(key: string): Promise<boolean> {
  const direct = new Redis({
    host: '127.0.0.1',
    port: redis.replica.port,
    lazyConnect: true,
    retryStrategy: () => null,
  });
  direct.on('error', () => undefined);
  try {
    await direct.connect();
    return (await direct.exists(key)) === 1;
  } catch {
    return false;
  } finally {
    direct.disconnect();
  }
}
