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
    await t.ctx.registry.rememberMissing('group:4242', 'Группа не найдена');
    const response = await get('/feeds/groups/4242.ics');
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({
      error: 'group 4242 is not known to the university: Группа не найдена',
      code: 'SOURCE_NOT_FOUND',
    });
    expect(await t.ctx.registry.get('group:4242')).toBeUndefined();
    expect(await queuedRefreshes(t.ctx, 'group:4242')).toEqual([]);
  });

  it('asks for a refresh without activating the source, and answers 503 with Retry-After when no feed comes in time', async () => {
    const started = performance.now();
    const response = await get('/feeds/groups/9001.ics');
    expect(performance.now() - started).toBeGreaterThanOrEqual(900);
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBe('10');
    expect(response.json<{ error: string }>().error).toMatch(/group 9001 is being fetched from the university/);
    // An id nobody has verified must not become a periodic refresh: the worker registers it once fetched.
    expect(await t.ctx.registry.get('group:9001')).toBeUndefined();
    expect(await t.ctx.registry.isActive('group:9001')).toBe(false);
    expect(await t.ctx.redis.zscore(t.ctx.keys.activeSources, 'group:9001')).toBeNull();
    expect(await queuedRefreshes(t.ctx, 'group:9001')).toEqual([
      { source: 'group:9001', reason: 'demand', requestedAt: clock },
    ]);
  });

  it('serves the feed as soon as the refresh stores it, and writes no request record right after', async () => {
    const pending = get('/feeds/employees/321.ics');
    await vi.waitFor(async () => expect(await queuedRefreshes(t.ctx, 'employee:321')).toHaveLength(1), {
      timeout: 2_000,
      interval: 10,
    });
    const feed = await storeFeed(t.ctx, 'employee:321', calendar('arrived'));
    const response = await pending;
    expect(response.statusCode).toBe(200);
    expect(response.headers.etag).toBe(feed.etag);
    expect((await get('/feeds/employees/321.ics')).statusCode).toBe(200);
    // A request of another stored, unregistered feed writes its record: once that is in Redis, a record of
    // employee:321 (whose requests came first, on the same connection) would be there too.
    await storeFeed(t.ctx, 'employee:322', calendar('witness'));
    expect((await get('/feeds/employees/322.ics')).statusCode).toBe(200);
    await vi.waitFor(async () => expect(await t.ctx.registry.get('employee:322')).toBeDefined(), { timeout: 5_000 });
    expect(await t.ctx.registry.get('employee:321')).toBeUndefined();
  });

  it('answers 404 when the refresh finds that the upstream does not know the source', async () => {
    const pending = get('/feeds/groups/9002.ics');
    await vi.waitFor(async () => expect(await queuedRefreshes(t.ctx, 'group:9002')).toHaveLength(1), {
      timeout: 2_000,
      interval: 10,
    });
    await t.ctx.registry.rememberMissing('group:9002', 'no such group');
    const response = await pending;
    expect(response.statusCode).toBe(404);
    expect(response.json<{ error: string }>().error).toBe('group 9002 is not known to the university: no such group');
  });

  it('lets concurrent first requests share one wait', async () => {
    const pending = Promise.all([
      get('/feeds/groups/9003.ics'),
      get('/feeds/groups/9003.ics'),
      get('/feeds/groups/9003.ics'),
    ]);
    await vi.waitFor(async () => expect(await queuedRefreshes(t.ctx, 'group:9003')).toHaveLength(1), {
      timeout: 2_000,
      interval: 10,
    });
    const feed = await storeFeed(t.ctx, 'group:9003', calendar('shared'));
    for (const response of await pending) expect(response.headers.etag).toBe(feed.etag);
    expect(await queuedRefreshes(t.ctx, 'group:9003')).toHaveLength(1);
  });
});

describe('the cap on sources fetched on demand at once', () => {
  let capped: TestApp;
  beforeAll(async () => {
    capped = await startTestApp({ now: () => clock, feeds: { demandWaitMs: 2_000, maxDemands: 2 } });
  });
  afterAll(() => capped.close());
  const getCapped = (url: string) => capped.app.inject({ method: 'GET', url });

  it('answers 503 at once beyond the cap, queueing nothing, while requests for a source already awaited share its wait', async () => {
    const first = getCapped('/feeds/groups/7001.ics');
    const second = getCapped('/feeds/groups/7002.ics');
    await vi.waitFor(async () => expect(await queuedRefreshes(capped.ctx, 'group:7002')).toHaveLength(1), {
      timeout: 1_000,
      interval: 10,
    });
    const started = performance.now();
    const refused = await getCapped('/feeds/groups/7003.ics');
    expect(performance.now() - started).toBeLessThan(500);
    expect(refused.statusCode).toBe(503);
    expect(refused.headers['retry-after']).toBe('10');
    expect(refused.json<{ error: string }>().error).toMatch(/too many timetables are being fetched/);
    expect(await queuedRefreshes(capped.ctx, 'group:7003')).toEqual([]);
    const sharing = getCapped('/feeds/groups/7001.ics');
    await storeFeed(capped.ctx, 'group:7001', calendar('7001'));
    await storeFeed(capped.ctx, 'group:7002', calendar('7002'));
    for (const response of await Promise.all([first, second, sharing])) expect(response.statusCode).toBe(200);
    // Room again once the waits are over.
    const pending = getCapped('/feeds/groups/7003.ics');
    await vi.waitFor(async () => expect(await queuedRefreshes(capped.ctx, 'group:7003')).toHaveLength(1), {
      timeout: 1_000,
      interval: 10,
    });
    await storeFeed(capped.ctx, 'group:7003', calendar('7003'));
    expect((await pending).statusCode).toBe(200);
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
    // A source requested after them records its request: once that is in Redis, a record of the five before
    // it (on the same connection) would be there too.
    await storeFeed(t.ctx, 'group:603', calendar('witness'));
    await t.ctx.registry.activate('group:603', start - 3_600_000);
    await get('/feeds/groups/603.ics');
    await vi.waitFor(async () => expect((await t.ctx.registry.get('group:603'))?.lastRequested).toBe(clock), {
      timeout: 5_000,
    });
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
      const of = (status: string) =>
        values.find((v) => v.labels.kind === 'group' && String(v.labels.status) === status)?.value ?? 0;
      return { ok: of('200'), notModified: of('304'), bad: of('400') };
    };
    const before = await counts();
    const ok = await get('/feeds/groups/602.ics');
    await get('/feeds/groups/602.ics', { 'if-none-match': ok.headers.etag as string });
    await get('/feeds/groups/x.ics');
    await vi.waitFor(async () =>
      expect(await counts()).toEqual({ ok: before.ok + 1, notModified: before.notModified + 1, bad: before.bad + 1 }),
    );
  });
});

describe('personal feeds', () => {
  it('serves the feed of a subscription token, privately, and 404 for unknown or malformed tokens', async () => {
    const { subscription, token } = await t.ctx.subscriptions.create({
      credential: 'secret-credential',
      name: 'Иван Петров',
      upstreamUserId: 7,
      now: clock,
    });
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

  it('answers 409 at once, naming the subscription but not its token, when the credential was rejected', async () => {
    const { subscription, token } = await t.ctx.subscriptions.create({
      credential: 'rejected-credential',
      name: 'n',
      upstreamUserId: 8,
      now: clock,
    });
    await t.ctx.subscriptions.markNeedsCredential(
      subscription.id,
      'University API mySchedule: credential rejected, HTTP 401',
      clock,
    );
    const started = performance.now();
    const response = await get(`/feeds/personal/${token}.ics`);
    expect(performance.now() - started).toBeLessThan(500);
    expect(response.statusCode).toBe(409);
    expect(response.json()).toEqual({
      error: `this subscription needs a new university credential: send it with PATCH /api/subscriptions/${subscription.id}`,
      code: 'CREDENTIAL_NEEDED',
    });
    expect(response.body).not.toContain(token);
    expect(await queuedRefreshes(t.ctx, subscription.source)).toEqual([]);
    expect(log.output()).not.toContain(token);
  });

  it('answers 409 as soon as the first refresh finds the credential rejected', async () => {
    const { subscription, token } = await t.ctx.subscriptions.create({
      credential: 'soon-rejected',
      name: 'n',
      upstreamUserId: 9,
      now: clock,
    });
    const started = performance.now();
    const pending = get(`/feeds/personal/${token}.ics`);
    await vi.waitFor(async () => expect(await queuedRefreshes(t.ctx, subscription.source)).toHaveLength(1), {
      timeout: 500,
      interval: 10,
    });
    await t.ctx.subscriptions.markNeedsCredential(subscription.id, 'rejected', clock);
    const response = await pending;
    expect(performance.now() - started).toBeLessThan(800);
    expect(response.statusCode).toBe(409);
  });
});
