/**
 * The API's feed cache on a three-primary Redis Cluster when the node its feed-updates subscriber is on dies:
 * the cache must notice (drop what it trusted), subscribe again on another node, and hear the updates
 * published from then on. ioredis' own cluster subscriber moved to another node without a word, and the cache
 * kept serving feeds whose updates were published meanwhile.
 */
import type { FastifyInstance } from 'fastify';
import { type Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { silentLogger } from '../../src/logger.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import { eventually, until } from '../../testkit/poll.ts';
import { calendar, storeFeed } from '../http/helpers.ts';
import { type RedisClusterSet, type RedisProcess, startCluster } from '../support/redis-topologies.ts';
import { testContext, uniquePrefix } from '../support/service.ts';

const FEED_URL = '/feeds/groups/4242.ics';
/** Long enough that only an invalidation or a lost subscription, never the expiry, drops a cached feed. */
const LONG_TTL_MS = 10 * 60_000;

let simulator: RunningSimulator;
let redis: RedisClusterSet;
let ctx: ServiceContext;
let closeContext: (() => Promise<void>) | undefined;
let app: FastifyInstance | undefined;
const killed = new Set<RedisProcess>();

beforeAll(async () => {
  simulator = await startSimulator({ port: 0, seed: 13, groups: 2, employees: 2, users: 2 });
  redis = await startCluster(3);
  const opened = await testContext({
    ...redis.env,
    REDIS_PREFIX: `{${uniquePrefix('cluster-subscriber')}}`,
    UNIVERSITY_API_URL: simulator.url,
  });
  ctx = opened.context;
  closeContext = opened.close;
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

function get(url: string) {
  if (!app) throw new Error('no app');
  return app.inject({ method: 'GET', url });
}

/** Runs `command` on `node` alone; undefined when it does not answer. */
async function onNode(node: RedisProcess, ...command: [string, ...string[]]): Promise<unknown> {
  const connection = new Redis({
    host: '127.0.0.1',
    port: node.port,
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    connectTimeout: 2_000,
  });
  connection.on('error', () => undefined);
  try {
    await connection.connect();
    return await connection.call(...command);
  } catch {
    return undefined;
  } finally {
    connection.disconnect();
  }
}

/** The live node on which the feed cache's connection is subscribed to a channel, if any. */
async function subscriberNode(): Promise<RedisProcess | undefined> {
  for (const node of redis.nodes.filter((candidate) => !killed.has(candidate))) {
    const lines = String((await onNode(node, 'CLIENT', 'LIST')) ?? '').split('\n');
    // ioredis' cluster subscriber prefixes the name (`ioredis-cluster(subscriber):timetable-sync:feed-updates`).
    if (lines.some((line) => /name=\S*timetable-sync:feed-updates /.test(line) && / sub=[1-9]/.test(line))) return node;
  }
  return undefined;
}

/** The node serving the hash slot of every key of the service. */
async function slotPrimary(): Promise<RedisProcess> {
  const cluster = ctx.redis as Cluster;
  const slot = Number(await cluster.call('CLUSTER', 'KEYSLOT', ctx.config.redisPrefix));
  const address = cluster.slots[slot]?.[0];
  const found = redis.nodes.find((node) => address === `127.0.0.1:${node.port}`);
  if (!found) throw new Error(`no node serves slot ${slot} (${address})`);
  return found;
}

it('drops cached feeds and hears updates again when the node of its subscriber dies', async () => {
  // The node to kill must not serve the service's slot (no replicas here: writes would fail for good). The
  // subscriber picks its node at random: build the app again until it is elsewhere.
  const primary = await slotPrimary();
  // The other nodes' slots are lost with the node killed: the slot of the service must stay writable.
  for (const node of redis.nodes) await onNode(node, 'CONFIG', 'SET', 'cluster-require-full-coverage', 'no');
  let doomed: RedisProcess | undefined;
  for (let attempt = 0; doomed === undefined; attempt += 1) {
    if (attempt === 20) throw new Error('the subscriber was on the slot primary 20 times');
    app = await buildApp(ctx, { logger: silentLogger(), feeds: { cacheTtlMs: LONG_TTL_MS } });
    const node = await eventually(subscriberNode, 'the feed cache to subscribe', 30_000);
    if (node !== primary) doomed = node;
    else {
      await app.close();
      await until(subscriberNode, (found) => found === undefined, 30_000);
    }
  }

  // Unannounced: an announcement still in flight would make the cache drop the copy it reads now.
  await storeFeed(ctx, 'group:4242', calendar('before'), { announce: false });
  expect((await get(FEED_URL)).body).toContain('X-WR-CALNAME:before');
  // Cached: a change nobody announces is not seen.
  await storeFeed(ctx, 'group:4242', calendar('unannounced'), { announce: false });
  expect((await get(FEED_URL)).body).toContain('X-WR-CALNAME:before');

  await doomed.kill();
  killed.add(doomed);
  // Stands for an update published while the subscriber was away (lost whichever way it was sent).
  await storeFeed(ctx, 'group:4242', calendar('while-away'), { announce: false });
  const moved = await eventually(subscriberNode, 'the feed cache to subscribe on another node', 60_000);
  expect(moved).not.toBe(doomed);

  // The cache went dark when its connection closed: once subscribed again it reads Redis, not its old copy
  // (meanwhile it may answer its last good copy, marked stale).
  const fresh = await until(
    () => get(FEED_URL),
    (response) => response.headers['x-timetable-stale'] === undefined,
    30_000,
  );
  expect(fresh.statusCode).toBe(200);
  expect(fresh.body).toContain('X-WR-CALNAME:while-away');

  // And it is live again: cached, and an update published now reaches it.
  await storeFeed(ctx, 'group:4242', calendar('hidden'), { announce: false });
  expect((await get(FEED_URL)).body).toContain('X-WR-CALNAME:while-away');
  await storeFeed(ctx, 'group:4242', calendar('after'));
  const updated = await until(
    async () => (await get(FEED_URL)).body,
    (body) => body.includes('X-WR-CALNAME:after'),
    15_000,
  );
  expect(updated).toContain('X-WR-CALNAME:after');
}, 240_000);
