/**
 * The API through Redis Cluster faults, on a three-primary cluster without replicas of the test's own: the
 * primary serving the prefix's slot killed (that slot is then down for good), then every node. Feeds served
 * before keep being served from memory, marked stale, never a 500; writes answer 503, and soon.
 */
import type { FastifyInstance } from 'fastify';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { RedisUnavailableError } from '../../src/lib/errors.ts';
import { DEFAULT_COMMAND_TIMEOUT_MS } from '../../src/lib/redis-connection.ts';
import { redisFailure } from '../../src/lib/redis-failure.ts';
import { silentLogger } from '../../src/logger.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import { until } from '../../testkit/poll.ts';
import { calendar, storeFeed } from '../http/helpers.ts';
import { type RedisClusterSet, type RedisProcess, startCluster } from '../support/redis-topologies.ts';
import { testContext, uniquePrefix } from '../support/service.ts';
import { simControl } from '../upstream/sim-control.ts';

const FEED_URL = '/feeds/groups/4242.ics';

let simulator: RunningSimulator;
let redis: RedisClusterSet;
let ctx: ServiceContext;
let closeContext: (() => Promise<void>) | undefined;
let app: FastifyInstance;
let credentials: string[];

beforeAll(async () => {
  simulator = await startSimulator({ port: 0, seed: 11, groups: 2, employees: 2, users: 4 });
  credentials = (await simControl(simulator.url).users()).map((user) => user.token);
  redis = await startCluster(3);
  const opened = await testContext({
    ...redis.env,
    REDIS_PREFIX: `{${uniquePrefix('cluster-outage')}}`,
    UNIVERSITY_API_URL: simulator.url,
  });
  ctx = opened.context;
  closeContext = opened.close;
  // Every request reads Redis (a cached copy would hide the failure): only the last good copy is in memory.
  app = await buildApp(ctx, { logger: silentLogger(), feeds: { cacheTtlMs: 1, demandWaitMs: 400 } });
}, 120_000);
afterAll(async () => {
  try {
    await app?.close();
    await closeContext?.();
  } finally {
    await redis?.stop();
    await simulator?.close();
  }
}, 60_000);

const get = (url: string) => app.inject({ method: 'GET', url });
const signUp = (credential: string) =>
  app.inject({ method: 'POST', url: '/api/subscriptions', payload: { credential } });

/** The node process serving the hash slot of every key of the service. */
async function slotPrimary(): Promise<RedisProcess> {
  const cluster = ctx.redis as Cluster;
  const slot = Number(await cluster.call('CLUSTER', 'KEYSLOT', ctx.config.redisPrefix));
  const address = cluster.slots[slot]?.[0];
  const found = redis.nodes.find((node) => address === `127.0.0.1:${node.port}`);
  if (!found) throw new Error(`no node serves slot ${slot} (${address})`);
  return found;
}

it('serves feeds stale and refuses sign-ups with 503 when the primary of the slot is dead', async () => {
  await storeFeed(ctx, 'group:4242', calendar('before'));
  expect((await get(FEED_URL)).statusCode).toBe(200);
  const signedUp = await signUp(credentials[0] ?? '');
  expect(signedUp.statusCode, signedUp.body).toBe(201);

  await (await slotPrimary()).kill();
  const statuses = new Set<number>();
  const stale = await until(
    async () => {
      const response = await get(FEED_URL);
      statuses.add(response.statusCode);
      return response;
    },
    (response) => response.headers['x-timetable-stale'] !== undefined,
    30_000,
  );
  expect([...statuses]).toEqual([200]);
  expect(stale.body).toContain('X-WR-CALNAME:before');

  const refused = await signUp(credentials[1] ?? '');
  expect(refused.statusCode, refused.body).toBe(503);
  expect(refused.headers['retry-after']).toMatch(/^[1-9]\d*$/);
}, 120_000);

it('fails commands and sign-ups within the command timeout when every node is down', async () => {
  await Promise.all(redis.nodes.map((node) => node.kill()));
  const cluster = ctx.redis as Cluster;
  // The client reconnects the cluster as a whole once its last node connection is gone; a connection to a
  // dead node that nothing used since (ioredis connects lazily) would stay, so each is used once.
  const status = await until(
    async () => {
      await Promise.all(cluster.nodes().map((node) => settleWithin(node.ping(), 1_000)));
      return cluster.status;
    },
    (now) => now !== 'ready',
    30_000,
  );
  expect(status).not.toBe('ready');

  const started = performance.now();
  const read = await settleWithin(ctx.redis.get(`${ctx.config.redisPrefix}:anything`), 10_000);
  expect(read).toMatchObject({ rejected: true });
  expect(redisFailure((read as { error: unknown }).error)).toBeInstanceOf(RedisUnavailableError);
  expect(performance.now() - started).toBeLessThan(DEFAULT_COMMAND_TIMEOUT_MS + 2_000);

  const signUpStarted = performance.now();
  const refused = await settleWithin(signUp(credentials[2] ?? ''), 10_000);
  expect(refused).toMatchObject({ rejected: false });
  const response = (refused as { value: Awaited<ReturnType<typeof signUp>> }).value;
  expect(response.statusCode, response.body).toBe(503);
  expect(performance.now() - signUpStarted).toBeLessThan(DEFAULT_COMMAND_TIMEOUT_MS + 2_000);
  // The feed served before is still served from memory.
  expect((await get(FEED_URL)).statusCode).toBe(200);
}, 120_000);

/** How `promise` settled, or 'pending' if it had not within `ms` (a hang fails the assertion, not the run). */
async function settleWithin<T>(
  promise: Promise<T>,
  ms: number,
): Promise<{ rejected: false; value: T } | { rejected: true; error: unknown } | 'pending'> {
  let timer: NodeJS.Timeout | undefined;
  const pending = new Promise<'pending'>((done) => {
    timer = setTimeout(() => done('pending'), ms);
  });
  try {
    return await Promise.race([
      promise.then(
        (value) => ({ rejected: false as const, value }),
        (error: unknown) => ({ rejected: true as const, error }),
      ),
      pending,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
