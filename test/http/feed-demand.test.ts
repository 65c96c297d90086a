import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RefreshJobData } from '../../src/jobs/contract.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { memoryLogger } from '../upstream/local-server.ts';
import { calendar, startTestApp, storeFeed, type TestApp } from './helpers.ts';

let t: TestApp;
let clock = Date.UTC(2025, 9, 1, 8, 0, 0);
const log = memoryLogger();

beforeAll(async () => {
  t = await startTestApp({ now: () => clock, feeds: { demandWaitMs: 1_000 }, logger: log.logger });
});
afterAll(() => t.close());

const get = (url: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url, headers });

async function queuedRefreshes(ctx: ServiceContext, source: string): Promise<RefreshJobData[]> {
  const jobs = await ctx.queues.refresh.getJobs(['waiting', 'prioritized', 'delayed', 'active']);
  return jobs.map((job) => job.data).filter((data) => data.source === source);
}

describe('the first request for a source without a feed', () => {
  it('answers 404 with the upstream’s words when the university does not know it, without activating it', async () => {
    await t.ctx.redis.set(t.ctx.keys.missing('group:4242'), 'Группа не найдена', 'EX', 3600);
    const response = await get('/feeds/groups/4242.ics');
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ error: 'group 4242 is not known to the university: Группа не найдена' });
    expect(await t.ctx.registry.get('group:4242')).toBeUndefined();
    expect(await queuedRefreshes(t.ctx, 'group:4242')).toEqual([]);
  });

  it('activates the source, asks for a refresh and answers 503 with Retry-After when no feed comes in time', async () => {
    const started = performance.now();
    const response = await get('/feeds/groups/9001.ics');
    expect(performance.now() - started).toBeGreaterThanOrEqual(900);
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBe('10');
    expect(response.json<{ error: string }>().error).toMatch(/group 9001 is being fetched from the university/);
    const state = await t.ctx.registry.get('group:9001');
    expect(state?.active).toBe(true);
    expect(state?.lastRequested).toBe(clock);
    expect(await queuedRefreshes(t.ctx, 'group:9001')).toEqual([{ source: 'group:9001', reason: 'demand', requestedAt: clock }]);
  });

  it('serves the feed as soon as the refresh stores it', async () => {
    const pending = get('/feeds/employees/321.ics');
    await sleep(150);
    const feed = await storeFeed(t.ctx, 'employee:321', calendar('arrived'));
    const response = await pending;
    expect(response.statusCode).toBe(200);
    expect(response.headers.etag).toBe(feed.etag);
    expect(await t.ctx.registry.isActive('employee:321')).toBe(true);
  });

  it('answers 404 when the refresh finds that the upstream does not know the source', async () => {
    const pending = get('/feeds/groups/9002.ics');
    await sleep(150);
    await t.ctx.redis.set(t.ctx.keys.missing('group:9002'), 'no such group', 'EX', 3600);
    const response = await pending;
    expect(response.statusCode).toBe(404);
    expect(response.json<{ error: string }>().error).toBe('group 9002 is not known to the university: no such group');
  });

  it('lets concurrent first requests share one wait', async () => {
    const pending = Promise.all([get('/feeds/groups/9003.ics'), get('/feeds/groups/9003.ics'), get('/feeds/groups/9003.ics')]);
    await sleep(150);
    const feed = await storeFeed(t.ctx, 'group:9003', calendar('shared'));
    for (const response of await pending) expect(response.headers.etag).toBe(feed.etag);
    expect(await queuedRefreshes(t.ctx, 'group:9003')).toHaveLength(1);
  });
});

describe('requests of a stored feed', () => {
  it('reactivates a source that was deactivated and serves its old feed at once', async () => {
    const feed = await storeFeed(t.ctx, 'group:600', calendar('old'));
    await t.ctx.registry.activate('group:600', clock - 40 * 86_400_000);
    await t.ctx.registry.deactivate('group:600');
    const response = await get('/feeds/groups/600.ics');
    expect(response.statusCode).toBe(200);
    expect(response.headers.etag).toBe(feed.etag);
    await vi.waitFor(async () => expect(await t.ctx.registry.isActive('group:600')).toBe(true), { timeout: 2_000 });
    await vi.waitFor(async () => expect(await queuedRefreshes(t.ctx, 'group:600')).toHaveLength(1), { timeout: 2_000 });
  });

  it('records requests in the registry at most once per source per 10 minutes', async () => {
    await storeFeed(t.ctx, 'group:601', calendar('hot'));
    const start = clock;
    await t.ctx.registry.activate('group:601', start - 3_600_000);
    await get('/feeds/groups/601.ics');
    await vi.waitFor(async () => expect((await t.ctx.registry.get('group:601'))?.lastRequested).toBe(start));
    clock += 60_000;
    for (let i = 0; i < 5; i += 1) await get('/feeds/groups/601.ics');
    await sleep(100);
    expect((await t.ctx.registry.get('group:601'))?.lastRequested).toBe(start);
    clock += 10 * 60_000;
    await get('/feeds/groups/601.ics');
    await vi.waitFor(async () => expect((await t.ctx.registry.get('group:601'))?.lastRequested).toBe(clock));
    expect(Number(await t.ctx.redis.zscore(t.ctx.keys.activeSources, 'group:601'))).toBe(clock);
  });

  it('counts every feed response by kind and status', async () => {
    await storeFeed(t.ctx, 'group:602', calendar('counted'));
    const counts = async () => {
      const { values } = await t.ctx.metrics.feedsServed.get();
      const of = (status: string) => values.find((v) => v.labels.kind === 'group' && String(v.labels.status) === status)?.value ?? 0;
      return { ok: of('200'), notModified: of('304'), bad: of('400') };
    };
    const before = await counts();
    const ok = await get('/feeds/groups/602.ics');
    await get('/feeds/groups/602.ics', { 'if-none-match': ok.headers.etag as string });
    await get('/feeds/groups/x.ics');
    await vi.waitFor(async () => expect(await counts()).toEqual({ ok: before.ok + 1, notModified: before.notModified + 1, bad: before.bad + 1 }));
  });
});

describe('personal feeds', () => {
  it('serves the feed of a subscription token, privately, and 404 for unknown or malformed tokens', async () => {
    const { subscription, token } = await t.ctx.subscriptions.create({ credential: 'secret-credential', name: 'Иван Петров', upstreamUserId: 7, now: clock });
    const feed = await storeFeed(t.ctx, subscription.source, calendar('mine'));
    const response = await get(`/feeds/personal/${token}.ics`);
    expect(response.statusCode).toBe(200);
    expect(response.headers.etag).toBe(feed.etag);
    expect(response.headers['cache-control']).toBe('private, max-age=300');
    for (const bad of ['A'.repeat(43), 'short', 'has.dot-but-long-enough-to-count']) {
      const missing = await get(`/feeds/personal/${bad}.ics`);
      expect(missing.statusCode, bad).toBe(404);
      expect(missing.json<{ error: string }>().error).toMatch(/no such personal feed/);
    }
    await t.ctx.subscriptions.delete(subscription.id);
    expect((await get(`/feeds/personal/${token}.ics`)).statusCode).toBe(404);
    expect(log.output()).not.toContain(token);
  });
});
