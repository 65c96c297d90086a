/**
 * The freshness pacer on the run's Redis: the wait guarantee and the budget (stepped with a clock of the test's
 * own, the refresh queue drained as workers would), then with real workers and the simulator: the upstream rate
 * limit over several worker sets, first requests before the background, a leader's death, a prompt close.
 */
import { once } from 'node:events';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { deadlineLead, FreshnessPacer, type PacerDeps, RETAKE_MS } from '../../src/jobs/freshness-pacer.ts';
import { planAfterRefresh } from '../../src/jobs/freshness-plan.ts';
import { enqueueRefresh, REFRESH_PRIORITY } from '../../src/jobs/queues.ts';
import { reconcile } from '../../src/jobs/schedule.ts';
import { startWorkers, type WorkerSet } from '../../src/jobs/workers.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import { waitUntil } from '../../testkit/poll.ts';
import { testContext } from '../support/service.ts';
import { simControl } from '../upstream/sim-control.ts';
import { REFERENCE_DATE, waitForJob } from './helpers.ts';

const MINUTE = 60_000;
const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function context(env: Record<string, string>, now: () => number): Promise<ServiceContext> {
  const { context: ctx, close } = await testContext(env, { now });
  cleanup.push(close);
  return ctx;
}

/**
 * Runs the refresh queue as workers would, in BullMQ's order (priority, then first queued), up to `limit` jobs:
 * each starts its fetch at `now` (counted, as the refresh job counts a background fetch) and is planned anew.
 */
async function drain(
  ctx: ServiceContext,
  now: number,
  parked: ReadonlySet<string>,
  limit = Number.POSITIVE_INFINITY,
): Promise<{ source: string; reason: string }[]> {
  const end = Number.isFinite(limit) ? limit - 1 : -1;
  const jobs = limit <= 0 ? [] : await ctx.queues.refresh.getJobs(['prioritized'], 0, end, true);
  for (const job of jobs) {
    const { source, reason } = job.data;
    await ctx.freshness.countBackgroundFetch(reason);
    const parkedBy = parked.has(source) ? 'group:1' : undefined;
    // A third of the unparked sources change on every fetch: they come back sooner.
    const changed = !parked.has(source) && source.endsWith('3');
    await planAfterRefresh(ctx, source, now, { changed, parkedBy, relatedQueued: 0, classSoon: false });
    await job.remove();
  }
  return jobs.map((job) => ({ source: job.data.source, reason: job.data.reason }));
}

/** Queues a related refresh of `source` (as a refresh job that saw a change would). */
async function queueRelated(ctx: ServiceContext, source: string, now: number): Promise<void> {
  await enqueueRefresh(ctx.queues, ctx.config, source, { reason: 'related', now, followUp: true, cause: 'group:1' });
}

/**
 * A context on a test clock whose planner holds 40 active groups (`group:10` … `group:49`), reconciled at the
 * clock's start: what the stepped tests share.
 */
async function plannedGroups(
  env: Record<string, string>,
): Promise<{ ctx: ServiceContext; clock: { now: number }; sources: string[]; planned: unknown }> {
  const clock = { now: REFERENCE_DATE.getTime() };
  const ctx = await context(env, () => clock.now);
  const sources = Array.from({ length: 40 }, (_, index) => `group:${index + 10}`);
  for (const source of sources) await ctx.registry.activate(source, clock.now);
  return { ctx, clock, sources, planned: await reconcile(ctx) };
}

describe('stepped with a test clock', () => {
  it('queues every unparked source within REFRESH_INTERVAL and every parked one within REFRESH_MAX_WAIT, spending B', async () => {
    const { ctx, clock, sources, planned } = await plannedGroups({
      REFRESH_INTERVAL: '1m',
      REFRESH_MAX_WAIT: '3m',
      UPSTREAM_RATE_LIMIT: '100',
    });
    // A quarter parked (as their first fetch will tell).
    const parked = new Set(sources.slice(0, 10));
    expect(planned).toMatchObject({ planned: { added: 40, removed: 0 }, created: 0 });
    const pacer = new FreshnessPacer(ctx);
    const start = clock.now;
    const lastQueued = new Map(sources.map((source) => [source, start]));
    const longest = new Map<string, number>();
    let queued = 0;
    let related = 0;
    const stepMs = 500;
    const runMs = 8 * MINUTE;
    for (let t = 0; t < runMs; t += stepMs) {
      clock.now += stepMs;
      // Some related refreshes queued by refresh jobs (under a tenth of B): the rotation spends that much less.
      if (t % 20_000 === 0) await queueRelated(ctx, `employee:${900 + t / 20_000}`, clock.now);
      await pacer.step();
      const ran = await drain(ctx, clock.now, parked);
      related += ran.filter((job) => job.reason === 'related').length;
      const taken = ran.filter((job) => job.reason === 'schedule').map((job) => job.source);
      queued += taken.length;
      for (const source of taken) {
        const waited = clock.now - (lastQueued.get(source) ?? start);
        longest.set(source, Math.max(longest.get(source) ?? 0, waited));
        lastQueued.set(source, clock.now);
      }
    }
    for (const source of sources) {
      const waited = Math.max(longest.get(source) ?? 0, clock.now - (lastQueued.get(source) ?? start));
      const limit = parked.has(source) ? 3 * MINUTE : MINUTE;
      expect(waited, source).toBeLessThanOrEqual(limit + stepMs);
    }
    // B = 40 sources / 60 s; rotation and related together spend it (within the carry of one step's credit).
    const budget = (40 / 60) * (runMs / 1000);
    expect(Math.abs(queued + related - budget) / budget).toBeLessThan(0.03);
    // Parking frees budget: the unparked sources come back more often than once an interval.
    const unparkedRefreshes = queued - [...parked].length * Math.floor(runMs / (3 * MINUTE));
    expect(unparkedRefreshes / 30).toBeGreaterThan(runMs / MINUTE);
    expect(await ctx.freshness.parkedCount()).toBe(10);
  });

  it('starts every refresh within REFRESH_INTERVAL of the last, with related backlogs queued ahead', async () => {
    const { ctx, clock, sources } = await plannedGroups({ REFRESH_INTERVAL: '1m', UPSTREAM_RATE_LIMIT: '100' });
    const pacer = new FreshnessPacer(ctx);
    // The planner's deadlines count from the reconcile: that stands for every source's last refresh.
    const lastStart = new Map(sources.map((source) => [source, clock.now]));
    let longest = 0;
    // Workers start 2 refreshes a second (B is 0.67/s). Every 20 s a change queues 8 related refreshes of
    // sources the planner does not hold (4 s of work; 60 % of B, so the rotation is mostly in debt and the
    // deadlines decide), ahead of whatever the pacer queues after them: the first at 57 s, as the sources'
    // first deadlines come.
    let capacity = 0;
    const stepMs = 250;
    for (let t = 0; t < 6 * MINUTE; t += stepMs) {
      clock.now += stepMs;
      if (t % 20_000 === 17_000)
        for (let index = 0; index < 8; index += 1)
          await queueRelated(ctx, `employee:${1000 + t / 100 + index}`, clock.now);
      await pacer.step();
      // Idle workers bank nothing: at most one step's starts.
      capacity = Math.min(capacity + (2 * stepMs) / 1000, 1);
      const ran = await drain(ctx, clock.now, new Set(), Math.floor(capacity));
      capacity -= ran.length;
      for (const { source } of ran) {
        const last = lastStart.get(source);
        if (last === undefined) continue;
        longest = Math.max(longest, clock.now - last);
        lastStart.set(source, clock.now);
      }
    }
    for (const last of lastStart.values()) longest = Math.max(longest, clock.now - last);
    expect(longest).toBeLessThanOrEqual(MINUTE);
  });

  it('queues a taken source again within 30 s when its refresh was never queued, an interval on once it was', async () => {
    const clock = { now: REFERENCE_DATE.getTime() };
    const ctx = await context({ REFRESH_INTERVAL: '10m', UPSTREAM_RATE_LIMIT: '100' }, () => clock.now);
    await ctx.registry.activate('group:7', clock.now);
    await reconcile(ctx);
    // A pacer took it and died before queueing it.
    const timing = { leadMs: deadlineLead(ctx.config), retakeMs: RETAKE_MS };
    expect(await ctx.freshness.take(clock.now, 1, 0, timing)).toHaveLength(1);
    const taken = clock.now;
    const pacer = new FreshnessPacer(ctx);
    let queuedAt: number | undefined;
    while (queuedAt === undefined && clock.now - taken <= 2 * MINUTE) {
      clock.now += 1_000;
      if ((await pacer.step()).queued > 0) queuedAt = clock.now;
    }
    expect(queuedAt).toBeDefined();
    expect((queuedAt ?? 0) - taken).toBeGreaterThanOrEqual(RETAKE_MS - 1_000);
    expect((queuedAt ?? 0) - taken).toBeLessThanOrEqual(RETAKE_MS + 1_000);
    expect(await ctx.queues.refresh.getJobCounts('prioritized')).toMatchObject({ prioritized: 1 });
    // Queued as overdue, at the related priority; settled one interval on.
    const [job] = await ctx.queues.refresh.getJobs(['prioritized']);
    expect(job?.priority).toBe(REFRESH_PRIORITY.related);
    const [plan] = await ctx.freshness.planned(['group:7']);
    expect(plan).toMatchObject({ next: (queuedAt ?? 0) + 10 * MINUTE, deadline: (queuedAt ?? 0) + 10 * MINUTE });
  });

  it("charges related refreshes when they run: with nothing parked, spend is the deadlines' floor plus related", async () => {
    const interval = 2 * MINUTE;
    const { ctx, clock, sources } = await plannedGroups({ REFRESH_INTERVAL: '2m', UPSTREAM_RATE_LIMIT: '100' });
    const pacer = new FreshnessPacer(ctx);
    const lastStart = new Map(sources.map((source) => [source, clock.now]));
    let longest = 0;
    let fetched = 0;
    let related = 0;
    const stepMs = 500;
    const runMs = 8 * interval;
    for (let t = 0; t < runMs; t += stepMs) {
      clock.now += stepMs;
      // Related refreshes of the planned sources, 30 % of B (B = 40 / 120 s): one every 10 s.
      if (t % 10_000 === 0) await queueRelated(ctx, sources[((t / 10_000) * 7) % sources.length] ?? '', clock.now);
      await pacer.step();
      const ran = await drain(ctx, clock.now, new Set());
      fetched += ran.length;
      related += ran.filter((job) => job.reason === 'related').length;
      for (const { source } of ran) {
        longest = Math.max(longest, clock.now - (lastStart.get(source) ?? clock.now));
        lastStart.set(source, clock.now);
      }
    }
    // Every source is refreshed at least every interval less the lead: that floor is above B here, by
    // 1 / (1 − 1/20), and the rotation gives way to it and to the related refreshes (30 % of B, charged as they
    // run): spend is at most the floor plus what related refreshes cost, and the guarantee holds.
    const budget = (40 / (interval / 1000)) * (runMs / 1000);
    const floor = budget / (1 - deadlineLead(ctx.config) / interval);
    expect(related).toBeGreaterThanOrEqual(0.3 * budget - 1);
    expect(fetched).toBeGreaterThanOrEqual(budget);
    expect(fetched).toBeLessThanOrEqual(floor + related);
    expect(longest).toBeLessThanOrEqual(interval);
  });

  it('holds back while the refresh queue holds two seconds of background work, and charges nothing for it', async () => {
    const clock = { now: REFERENCE_DATE.getTime() };
    const ctx = await context({ REFRESH_INTERVAL: '1m', UPSTREAM_RATE_LIMIT: '100' }, () => clock.now);
    const sources = Array.from({ length: 300 }, (_, index) => `employee:${index + 1}`);
    for (const source of sources) await ctx.registry.activate(source, clock.now);
    await reconcile(ctx);
    // Every source refreshed just now: none comes due by its deadline during the test.
    await ctx.redis.zadd(ctx.keys.freshnessDeadline, ...sources.flatMap((source) => [clock.now + MINUTE, source]));
    const pacer = new FreshnessPacer(ctx);
    // Nobody takes jobs (an upstream outage): the backlog stops at 2 s of B = 5/s.
    for (let step = 0; step < 40; step += 1) {
      clock.now += 250;
      await pacer.step();
    }
    const waiting = await ctx.queues.refresh.getJobCounts('prioritized');
    expect(waiting.prioritized).toBe(10);
    expect((await pacer.step()).held).toBe(true);
  });
});

/** A proxy in front of the simulator that notes when each request arrived. */
async function recordingProxy(target: string): Promise<{ url: string; arrivals: number[]; close(): Promise<void> }> {
  const arrivals: number[] = [];
  const upstream = new URL(target);
  const server: Server = createServer((req, res) => {
    if (!req.url?.startsWith('/_sim')) arrivals.push(performance.now());
    const forward = httpRequest(
      { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    arrivals,
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

/** The most requests in any one second (a window starting at each arrival). */
function busiestSecond(arrivals: readonly number[]): number {
  const sorted = [...arrivals].sort((a, b) => a - b);
  let most = 0;
  let end = 0;
  for (let start = 0; start < sorted.length; start += 1) {
    while (end < sorted.length && (sorted[end] ?? 0) < (sorted[start] ?? 0) + 1000) end += 1;
    most = Math.max(most, end - start);
  }
  return most;
}

describe('with workers and the simulator', () => {
  async function simulator(groupCount: number) {
    const sim = await startSimulator({
      port: 0,
      seed: 5,
      referenceDate: REFERENCE_DATE,
      groups: groupCount,
      employees: 10,
      users: 1,
    });
    cleanup.push(() => sim.close());
    const groups = (await simControl(sim.url).groups()).map((group) => `group:${group.id}`);
    return { url: sim.url, groups };
  }
  /** The service clock runs from the simulator's reference date at the wall clock's pace. */
  const startedAt = Date.now();
  const movingClock = () => REFERENCE_DATE.getTime() + (Date.now() - startedAt);

  it('keeps the upstream rate limit over three worker sets, one of them pacing', async () => {
    const sim = await simulator(60);
    const proxy = await recordingProxy(sim.url);
    cleanup.push(proxy.close);
    const env = { UNIVERSITY_API_URL: proxy.url, UPSTREAM_RATE_LIMIT: '10', REFRESH_INTERVAL: '1m' };
    const first = await context(env, movingClock);
    const contexts = [
      first,
      ...(await Promise.all(
        [1, 2].map(() => context({ ...env, REDIS_PREFIX: first.config.redisPrefix }, movingClock)),
      )),
    ];
    const sets: WorkerSet[] = [];
    for (const ctx of contexts) {
      const set = await startWorkers(ctx, first.config.redisUrl ?? '', { pacer: { stepMs: 100, lockMs: 1_000 } });
      sets.push(set);
      cleanup.push(() => set.close(2_000));
    }
    const sources = sim.groups;
    // Every source asked for at once (as after a restart of every page), while the pacer refreshes them too.
    for (const source of sources) await first.registry.activate(source, movingClock());
    await reconcile(first);
    const ids = await Promise.all(
      sources.map((source) =>
        enqueueRefresh(first.queues, first.config, source, { reason: 'demand', now: movingClock() }),
      ),
    );
    for (const id of new Set(ids)) expect((await waitForJob(first, id, 30_000)).state).toBe('completed');
    expect(sets.filter((set) => set.pacer?.leading)).toHaveLength(1);
    expect(proxy.arrivals.length).toBeGreaterThanOrEqual(60);
    // The token bucket lets a second hold the rate plus its burst (a tenth of a second's worth, at least 2).
    expect(busiestSecond(proxy.arrivals)).toBeLessThanOrEqual(10 + 2);
  }, 60_000);

  it("runs a first request before the pacer's backlog of background refreshes", async () => {
    const sim = await simulator(40);
    const env = {
      UNIVERSITY_API_URL: sim.url,
      UPSTREAM_RATE_LIMIT: '5',
      WORKER_CONCURRENCY: '1',
      REFRESH_INTERVAL: '10m',
    };
    const ctx = await context(env, movingClock);
    const [demanded, ...background] = sim.groups.slice(0, 31);
    if (demanded === undefined) throw new Error('no group');
    // Planned sources, every one past its deadline (as after an outage): the pacer queues them all at once.
    for (const source of background) await ctx.registry.activate(source, movingClock());
    expect(await reconcile(ctx)).toMatchObject({ planned: { added: 30 } });
    const overdue = movingClock() - MINUTE;
    await ctx.redis.zadd(ctx.keys.freshnessDeadline, ...background.flatMap((source) => [overdue, source]));
    // And related refreshes queued by refresh jobs that saw a change.
    for (const source of background.slice(0, 10))
      await enqueueRefresh(ctx.queues, ctx.config, source, { reason: 'related', now: movingClock(), cause: demanded });
    const set = await startWorkers(ctx, ctx.config.redisUrl ?? '', { pacer: { stepMs: 100 } });
    cleanup.push(() => set.close(2_000));
    const pacerJobs = async () =>
      (await ctx.queues.refresh.getJobs(['prioritized', 'waiting', 'active', 'completed'])).filter(
        (job) => job.data.reason === 'schedule',
      );
    await waitUntil(async () => (await pacerJobs()).length >= 20, 'the pacer to queue the overdue sources', 5_000);
    const demand = await enqueueRefresh(ctx.queues, ctx.config, demanded, { reason: 'demand', now: movingClock() });
    const queued = (await ctx.queues.refresh.getJobs(['prioritized', 'waiting', 'active', 'completed'])).filter(
      (job) => job.id !== demand,
    );
    const startedBefore = (await Promise.all(queued.map((job) => job.getState()))).filter(
      (state) => state === 'active' || state === 'completed',
    ).length;
    const done = await waitForJob(ctx, demand, 20_000);
    expect(done.state).toBe('completed');
    const demandEnd = (await ctx.queues.refresh.getJob(demand))?.finishedOn ?? 0;
    const ends = await Promise.all(
      queued.map(async (job) => (await ctx.queues.refresh.getJob(job.id ?? ''))?.finishedOn),
    );
    const before = ends.filter((end) => end !== undefined && end < demandEnd).length;
    // Only those already started (one runs at a time) may finish first; the pacer's backlog waits.
    expect(before).toBeLessThanOrEqual(startedBefore + 1);
    const pacerLeft = queued.filter((job, index) => job.data.reason === 'schedule' && ends[index] === undefined);
    expect(pacerLeft.length).toBeGreaterThan(10);
  }, 40_000);
});

describe('leadership', () => {
  /** A pacer on a connection of its own (which the test may cut, as a dying process's is). */
  async function pacerOn(ctx: ServiceContext, tuning = { stepMs: 50, lockMs: 1_000 }) {
    const redis = new Redis(ctx.config.redisUrl ?? '', { maxRetriesPerRequest: 1, lazyConnect: false });
    redis.on('error', () => undefined);
    const deps: PacerDeps = { ...ctx, redis };
    const pacer = new FreshnessPacer(deps, tuning);
    cleanup.push(async () => {
      await pacer.stop();
      redis.disconnect();
    });
    return { pacer, redis };
  }

  it('has one leader, and another takes over within the lease when it dies', async () => {
    const ctx = await context({}, Date.now);
    const a = await pacerOn(ctx);
    const b = await pacerOn(ctx);
    a.pacer.start();
    await waitUntil(() => a.pacer.leading, 'the first pacer to lead', 3_000);
    b.pacer.start();
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(b.pacer.leading).toBe(false);
    // The leader's process dies: its connection is gone, its lease is never released nor renewed.
    a.redis.disconnect();
    const died = performance.now();
    // What was left of the dead leader's lease: it runs out no earlier than that from its death.
    const left = await ctx.redis.pttl(ctx.keys.lock('freshness-pacer'));
    expect(left).toBeGreaterThan(0);
    await waitUntil(() => b.pacer.leading, 'the second pacer to take over', 5_000);
    // Not before the lease ran out (Redis expires it to the millisecond; a little for the two clocks), and
    // within it plus one try (a third of it).
    const tookOver = performance.now() - died;
    expect(tookOver).toBeGreaterThanOrEqual(left - 10);
    expect(tookOver).toBeLessThanOrEqual(1_000 + 400 + 200);
    await waitUntil(() => !a.pacer.leading, 'the dead leader to stop pacing', 3_000);
  });

  it('stops within a second on close, giving the lease up at once, also with Redis gone', async () => {
    const ctx = await context({}, Date.now);
    const a = await pacerOn(ctx, { stepMs: 250, lockMs: 10_000 });
    a.pacer.start();
    await waitUntil(() => a.pacer.leading, 'the pacer to lead', 3_000);
    let started = performance.now();
    await a.pacer.stop();
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(await ctx.redis.get(ctx.keys.lock('freshness-pacer'))).toBeNull();
    const b = await pacerOn(ctx, { stepMs: 250, lockMs: 10_000 });
    b.pacer.start();
    await waitUntil(() => b.pacer.leading, 'the next pacer to lead at once', 3_000);
    b.redis.disconnect();
    started = performance.now();
    await b.pacer.stop();
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});
