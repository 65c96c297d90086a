import { randomBytes } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerOperationsRoutes } from '../../src/http/operations-routes.ts';
import { feedCacheFillBytes } from '../../src/serving/feed-cache.ts';
import { FEED_OVERHEAD_BYTES } from '../../src/serving/feed-forms.ts';
import { encodeFeed } from '../../src/store/feed-store.ts';
import { TEST_ADMIN_TOKEN, testContext } from '../support/service.ts';
import { calendar, startTestApp, storeTimetable, type TestApp } from './helpers.ts';

let t: TestApp;
let clock = Date.UTC(2025, 9, 1, 8, 0, 0);

beforeAll(async () => {
  t = await startTestApp({ now: () => clock });
});
afterAll(() => t.close());

describe('operations', () => {
  it('answers /healthz without any I/O', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/healthz' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ status: 'ok' });
  });

  it('is not ready without a worker heartbeat, nor with an old one, and ready with a recent one', async () => {
    const notReady = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(notReady.statusCode).toBe(503);
    expect(notReady.json()).toEqual({
      error: expect.stringMatching(/^not ready: no worker sent a heartbeat in the last 30 s/),
      code: 'NOT_READY',
      checks: { redis: 'ok', workers: 0 },
    });

    await t.ctx.redis.zadd(t.ctx.keys.workers, clock - 45_000, 'worker-old');
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(503);

    await t.ctx.redis.zadd(t.ctx.keys.workers, clock - 2_000, 'worker-a');
    const ready = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({ status: 'ready', checks: { redis: 'ok', workers: 1 } });

    clock += 60_000;
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(503);
  });

  it('serves Prometheus metrics with feed counters, queue depths and stale sources', async () => {
    await t.app.inject({ method: 'GET', url: '/feeds/groups/abc.ics' });
    await t.ctx.redis.sadd(t.ctx.keys.staleSources, 'group:1', 'group:2');
    const response = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(response.body).toContain('timetable_feeds_served_total{kind="group",status="400"} 1');
    expect(response.body).toContain('timetable_stale_sources 2');
    expect(response.body).toMatch(/timetable_queue_jobs\{queue="refresh",state="waiting"\} \d+/);
    expect(response.body).toContain('timetable_feed_not_modified_ratio');
  });

  it('asks for METRICS_TOKEN on /metrics when it is set, and leaves /healthz open', async () => {
    const token = 'scrape-7Qx2-metrics-Lk9w';
    const guarded = await startTestApp({ env: { METRICS_TOKEN: token }, now: () => clock });
    // A worker's operations app has no error handler of the api's: the refusal must not depend on one.
    const worker = await testContext({ METRICS_TOKEN: token });
    const bare = Fastify() as unknown as FastifyInstance;
    await registerOperationsRoutes(bare, worker.context);
    try {
      for (const app of [guarded.app, bare]) {
        for (const authorization of [undefined, `Bearer ${token}x`, 'Bearer x', token, `Basic ${token}`]) {
          const refused = await app.inject({
            method: 'GET',
            url: '/metrics',
            headers: authorization === undefined ? {} : { authorization },
          });
          expect(refused.statusCode, authorization).toBe(401);
          expect(refused.headers['www-authenticate']).toBe('Bearer realm="metrics"');
          expect(refused.json()).toEqual({ error: expect.any(String), code: 'METRICS_UNAUTHORIZED' });
          expect(refused.body).not.toContain('timetable_');
        }
        const scraped = await app.inject({
          method: 'GET',
          url: '/metrics',
          headers: { authorization: `bearer ${token}` },
        });
        expect(scraped.statusCode).toBe(200);
        expect(scraped.body).toContain('timetable_stale_sources');
        expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
      }
    } finally {
      await bare.close();
      await worker.close();
      await guarded.close();
    }
  });

  it('shows how full the feed and variant caches are against their budgets', async () => {
    const budgeted = await startTestApp({ env: { FEED_CACHE_MB: '3' }, now: () => clock });
    try {
      await storeTimetable(budgeted.ctx, 'group:7');
      for (const url of ['/feeds/groups/7.ics', '/feeds/groups/7.ics?alarm=15'])
        expect((await budgeted.app.inject({ method: 'GET', url })).statusCode).toBe(200);
      const response = await budgeted.app.inject({ method: 'GET', url: '/metrics' });
      const sample = (name: string, cache: string): number => {
        const found = new RegExp(`^${name}\\{cache="${cache}"\\} (\\d+)$`, 'm').exec(response.body);
        expect(found, `${name}{cache="${cache}"}`).not.toBeNull();
        return Number(found?.[1]);
      };
      for (const cache of ['feeds', 'variants']) {
        expect(sample('timetable_feed_cache_bytes', cache)).toBeGreaterThan(FEED_OVERHEAD_BYTES);
        expect(sample('timetable_feed_cache_entries', cache)).toBe(1);
      }
      expect(sample('timetable_feed_cache_budget_bytes', 'feeds')).toBe(3 * 1024 * 1024);
      expect(sample('timetable_feed_cache_budget_bytes', 'variants')).toBe(64 * 1024 * 1024);
    } finally {
      await budgeted.close();
    }
  });

  it('fills three quarters of FEED_CACHE_MB with feeds: a feed between the two is served but not kept', async () => {
    const budgeted = await startTestApp({ env: { FEED_CACHE_MB: '1' }, now: () => clock });
    try {
      // Random hex compresses to about half: a gzip form near 960 KB, over 3/4 MiB and under 1 MiB counted.
      const feed = await encodeFeed(calendar(randomBytes(960_000).toString('hex')), clock);
      const counted = feed.gzip.length + FEED_OVERHEAD_BYTES;
      expect(counted).toBeGreaterThan(feedCacheFillBytes(1024 * 1024));
      expect(counted).toBeLessThan(1024 * 1024);
      await budgeted.ctx.feeds.write(budgeted.ctx.redis.multi(), 'group:9', feed).exec();
      const answer = await budgeted.app.inject({
        method: 'GET',
        url: '/feeds/groups/9.ics',
        headers: { 'accept-encoding': 'gzip' },
      });
      expect(answer.statusCode).toBe(200);
      const page = (await budgeted.app.inject({ method: 'GET', url: '/metrics' })).body;
      expect(page).toMatch(/^timetable_feed_cache_entries\{cache="feeds"\} 0$/m);
      expect(page).toMatch(/^timetable_feed_cache_budget_bytes\{cache="feeds"\} 1048576$/m);
    } finally {
      await budgeted.close();
    }
  });

  it('answers unknown routes and bad JSON bodies with a JSON error', async () => {
    const missing = await t.app.inject({ method: 'GET', url: '/nothing/here?x=1' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ error: 'no route GET /nothing/here', code: 'ROUTE_NOT_FOUND' });
    const badJson = await t.app.inject({
      method: 'POST',
      url: '/api/subscriptions',
      headers: { 'content-type': 'application/json' },
      payload: '{"credential":',
    });
    expect(badJson.statusCode).toBe(400);
    expect(badJson.json()).toEqual({ error: expect.any(String), code: 'INVALID_BODY' });
  });

  it('refuses bodies over 64 KiB', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/admin/resync',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
      payload: JSON.stringify({ all: true, pad: 'x'.repeat(70 * 1024) }),
    });
    expect(response.statusCode).toBe(413);
    expect(response.json()).toEqual({ error: expect.any(String), code: 'BODY_TOO_LARGE' });
  });

  it('says degraded, with a 200, when Redis does not answer', async () => {
    const down = await testContext({ REDIS_URL: 'redis://127.0.0.1:1' });
    // The queues report the refused connections too; they are expected here.
    for (const queue of [
      down.context.queues.refresh,
      down.context.queues.pushQueue('google'),
      down.context.queues.schedule,
    ])
      queue.on('error', () => {});
    const app = Fastify() as unknown as FastifyInstance;
    await registerOperationsRoutes(app, down.context);
    try {
      const started = performance.now();
      const response = await app.inject({ method: 'GET', url: '/readyz' });
      expect(performance.now() - started).toBeLessThan(3_000);
      expect(response.statusCode).toBe(200);
      const body = response.json<{ status: string; problems: string[]; checks: Record<string, unknown> }>();
      expect(body.status).toBe('degraded');
      expect(body.problems).toEqual([expect.stringMatching(/^Redis does not answer/)]);
      expect(body.checks).toEqual({ redis: 'unreachable', workers: 'unknown' });
      expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
      const metrics = await app.inject({ method: 'GET', url: '/metrics' });
      expect(metrics.statusCode).toBe(200);
      // A process without feed routes (a worker's) has no feed caches, and shows no samples of them.
      expect(metrics.body).toContain('# TYPE timetable_feed_cache_bytes gauge');
      expect(metrics.body).not.toMatch(/^timetable_feed_cache_\w+\{/m);
    } finally {
      await app.close();
      down.context.redis.disconnect();
    }
  });
});
