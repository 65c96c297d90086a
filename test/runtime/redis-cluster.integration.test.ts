/**
 * The service on a three-primary Redis Cluster, for real (`redis-cli --cluster create` on loopback): the whole
 * service (workers, api and its feed cache's subscriber, Google push, the rate-limit scripts) connected through
 * REDIS_CLUSTER_NODES only, with a hash-tagged prefix so that every key and queue shares one slot.
 */
import type { FastifyInstance } from 'fastify';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { primaryFor } from '../../src/lib/redis-node.ts';
import { silentLogger } from '../../src/logger.ts';
import { until } from '../../testkit/poll.ts';
import { PushHarness } from '../google/push-harness.ts';
import { runCli } from '../support/cli.ts';
import { jobEnded } from '../support/jobs.ts';
import { type RedisClusterSet, startCluster } from '../support/redis-topologies.ts';
import { uniquePrefix } from '../support/service.ts';

let redis: RedisClusterSet;
let h: PushHarness;
let app: FastifyInstance;
const prefix = `{${uniquePrefix('cluster')}}`;

beforeAll(async () => {
  redis = await startCluster(3);
  h = await PushHarness.start({ ...redis.env, REDIS_PREFIX: prefix });
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

it('runs on the cluster client: refresh, feed, Google push, sign-up and resync', async () => {
  expect(h.ctx.redis).toBeInstanceOf(Cluster);
  const source = await h.smallGroup(2);
  const groupId = source.split(':')[1];

  // A first request queues the refresh; the feed is then served (and cached by the api).
  const feedPath = `/feeds/groups/${groupId}.ics`;
  const served = await until(
    async () => app.inject({ method: 'GET', url: feedPath }),
    (response) => response.statusCode === 200,
    30_000,
  );
  expect(served.statusCode).toBe(200);
  expect(served.headers['content-type']).toMatch(/^text\/calendar/);

  // Google: a connected calendar holds exactly the feed.
  const { target, push } = await h.connect(source);
  expect(push).toMatchObject({ state: 'completed' });
  expect(h.calendar(target.calendarId)).toEqual(await h.desired(source));

  // A personal sign-up through the api (rate-limit scripts, subscription scripts) gets its feed.
  const [user] = await h.sim.users();
  if (!user) throw new Error('the simulator has no users');
  const created = await app.inject({ method: 'POST', url: '/api/subscriptions', payload: { credential: user.token } });
  expect(created.statusCode).toBe(201);
  const personal = new URL(created.json<{ feedUrl: string }>().feedUrl).pathname;
  const personalFeed = await until(
    async () => (await app.inject({ method: 'GET', url: personal })).statusCode,
    (status) => status === 200,
    30_000,
  );
  expect(personalFeed).toBe(200);

  // A resync by the admin API, and one by the command line (its own probe and connections).
  const resync = await app.inject({
    method: 'POST',
    url: '/admin/resync',
    headers: { authorization: `Bearer ${h.ctx.config.adminToken}` },
    payload: { source },
  });
  expect(resync.statusCode).toBe(202);
  const cli = await runCli(['resync', '--group', groupId ?? ''], {
    env: { REDIS_CLUSTER_NODES: redis.env.REDIS_CLUSTER_NODES ?? '', REDIS_PREFIX: prefix, LOG_LEVEL: 'warn' },
    timeoutMs: 60_000,
  });
  expect(cli.stderr).toBe('');
  expect(cli.code).toBe(0);
  const { state } = await jobEnded(h.ctx.queues.refresh, cli.stdout.trim(), 60_000);
  expect(state).toBe('completed');

  // Every key of the service is in the prefix's one slot.
  const slot = Number(await h.ctx.redis.call('CLUSTER', 'KEYSLOT', prefix));
  const cluster = h.ctx.redis as Cluster;
  const keys: string[] = [];
  for (const node of cluster.nodes('master')) keys.push(...(await node.keys(`${prefix}*`)));
  expect(keys.length).toBeGreaterThan(20);
  const slots = new Set(
    await Promise.all(keys.map(async (key) => Number(await cluster.call('CLUSTER', 'KEYSLOT', key)))),
  );
  expect([...slots]).toEqual([slot]);
  // The primary probed for the slot's memory (Redis-full guard) holds the keys: it answers without MOVED.
  const primary = await primaryFor(cluster, prefix);
  expect(await primary.exists(keys[0] ?? '')).toBe(1);
  expect(await primary.info('memory')).toMatch(/^used_memory:\d+/m);
}, 240_000);
