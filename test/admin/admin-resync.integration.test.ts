import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UnknownSubscriptionError } from '../../src/jobs/errors.ts';
import { requestResync } from '../../src/jobs/resync.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { InvalidSourceError } from '../../src/timetable/errors.ts';
import { eventually, waitUntil } from '../../testkit/poll.ts';
import { testContext } from '../support/service.ts';
import { adminApp, BEARER, type HeldWorker, holdingWorker } from './admin-app.ts';

describe('admin resync', () => {
  let ctx: ServiceContext;
  let app: FastifyInstance;
  let close: () => Promise<void>;
  const workers: HeldWorker[] = [];

  beforeEach(async () => {
    const opened = await testContext();
    ctx = opened.context;
    close = opened.close;
    app = await adminApp(ctx);
  });

  afterEach(async () => {
    for (const worker of workers.splice(0)) await worker.close();
    await app.close();
    await close();
  });

  const resync = (payload: unknown) =>
    app.inject({ method: 'POST', url: '/admin/resync', headers: BEARER, payload: payload as object });
  const job = (id: string) =>
    app.inject({ method: 'GET', url: `/admin/jobs/${encodeURIComponent(id)}`, headers: BEARER });

  it('queues exactly one refresh for a source, activates it, and answers 202 with the job id', async () => {
    const response = await resync({ source: 'group:4242' });
    expect(response.statusCode).toBe(202);
    const { jobs } = response.json() as { jobs: string[] };
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatch(/^group-4242-/);
    // Prioritized: an admin's resync goes before every background refresh.
    expect(await ctx.queues.refresh.getJobCounts('waiting', 'active', 'delayed', 'prioritized')).toEqual({
      waiting: 0,
      active: 0,
      delayed: 0,
      prioritized: 1,
    });
    const queued = await ctx.queues.refresh.getJob(jobs[0] as string);
    expect(queued?.data).toMatchObject({ source: 'group:4242', reason: 'resync' });
    expect(await ctx.registry.isActive('group:4242')).toBe(true);
  });

  it('gives the same job id to two resyncs of a source whose refresh is still waiting', async () => {
    const first = (await resync({ source: 'employee:17' })).json().jobs;
    const second = (await resync({ source: 'employee:17' })).json().jobs;
    expect(second).toEqual(first);
    expect(await ctx.queues.refresh.count()).toBe(1);
  });

  it('keeps exactly one follow-up behind a running refresh, answered as queued until it starts', async () => {
    const [first] = (await resync({ source: 'group:7' })).json().jobs as string[];
    const worker = holdingWorker(ctx);
    workers.push(worker);
    await waitUntil(
      async () => (await ctx.queues.refresh.getJobState(first as string)) === 'active',
      'the first refresh to run',
    );

    const followUps = [
      (await resync({ source: 'group:7' })).json().jobs,
      (await resync({ source: 'group:7' })).json().jobs,
    ];
    expect(followUps[0]).toEqual(followUps[1]);
    const followUp = (followUps[0] as string[])[0] as string;
    expect(followUp).toMatch(/^group-7-after-[0-9a-f]{12}$/);
    expect(followUp).not.toBe(first);
    const pending = await job(followUp);
    expect(pending.statusCode).toBe(200);
    expect(pending.json()).toEqual({
      id: followUp,
      queue: 'refresh',
      source: 'group:7',
      state: 'queued',
      note: 'starts when the running refresh of group:7 ends',
    });
    expect((await job(followUp.replace(/[0-9a-f]{12}$/, '000000000000'))).statusCode).toBe(404);
    expect((await job('group-8-after-000000000000')).statusCode).toBe(404);

    worker.release();
    const done = await eventually(async () => {
      const view = (await job(followUp)).json();
      return view.state === 'completed' ? view : undefined;
    }, 'the follow-up to complete');
    expect(done).toMatchObject({ id: followUp, source: 'group:7', attempts: 1, result: { outcome: 'unchanged' } });
    expect(worker.started).toEqual([first, followUp]);
    expect(await ctx.queues.refresh.getJobCounts('completed', 'waiting', 'active', 'delayed')).toEqual({
      completed: 2,
      waiting: 0,
      active: 0,
      delayed: 0,
    });
  });

  it('resyncs every active source, and only those, with {all: true}', async () => {
    for (const [index, source] of ['group:1', 'group:2', 'employee:3', 'group:4'].entries())
      await ctx.registry.activate(source, 1_000 + index);
    await ctx.registry.deactivate('group:4');
    const response = await resync({ all: true });
    expect(response.statusCode).toBe(202);
    const { jobs } = response.json() as { jobs: string[] };
    expect(jobs).toHaveLength(3);
    const sources = await Promise.all(jobs.map(async (id) => (await ctx.queues.refresh.getJob(id))?.data.source));
    expect(sources).toEqual(['group:1', 'group:2', 'employee:3']);
    // Not a feed request: resyncing everything must not keep sources alive.
    expect((await ctx.registry.get('group:1'))?.lastRequested).toBe(1_000);
  });

  it('pages through more than one page of active sources', async () => {
    const sources = Array.from({ length: 1_205 }, (_, index) => `group:${index + 1}`);
    const multi = ctx.redis.multi();
    for (const [index, source] of sources.entries()) multi.zadd(ctx.keys.activeSources, index, source);
    await multi.exec();
    const jobs = await requestResync(ctx, { all: true });
    expect(jobs).toHaveLength(1_205);
    expect(new Set(jobs).size).toBe(1_205);
    expect(jobs[1_204]).toMatch(/^group-1205-/);
    expect(await ctx.queues.refresh.count()).toBe(1_205);
  });

  it('resyncs a personal subscription, and answers 404 for one that does not exist', async () => {
    const { subscription } = await ctx.subscriptions.create({
      credential: 'secret-credential',
      name: 'Ivanov',
      upstreamUserId: 5,
      now: ctx.now(),
    });
    for (const payload of [{ subscription: subscription.id }, { source: `personal:${subscription.id}` }]) {
      const response = await resync(payload);
      expect(response.statusCode).toBe(202);
      expect((await ctx.queues.refresh.getJob(response.json().jobs[0]))?.data.source).toBe(
        `personal:${subscription.id}`,
      );
    }
    const ghost = 'A'.repeat(22);
    for (const payload of [{ subscription: ghost }, { source: `personal:${ghost}` }]) {
      const response = await resync(payload);
      expect(response.statusCode).toBe(404);
      expect(response.json().error).toContain(ghost);
    }
    expect(await ctx.registry.isActive(`personal:${ghost}`)).toBe(false);
    await expect(requestResync(ctx, { subscription: 'not an id' })).rejects.toBeInstanceOf(UnknownSubscriptionError);
    await expect(requestResync(ctx, { source: 'group:0' })).rejects.toBeInstanceOf(InvalidSourceError);
  });

  it('answers 400 naming what is wrong with a resync body', async () => {
    const cases: [unknown, RegExp][] = [
      [{}, /exactly one of "source".*"subscription".*"all"/],
      [undefined, /exactly one of/],
      [{ source: 'group:1', all: true }, /exactly one of/],
      [{ all: false }, /^all: must be true/],
      [{ source: 'group:abc' }, /^source: .*group id must be a whole number from 1 to 9007199254740991/],
      [{ source: 'room:1' }, /^source: .*not a source/],
      [{ source: 42 }, /^source: /],
      [{ subscription: 'x' }, /^subscription: must be a subscription id/],
      [{ everything: true }, /everything/],
      [[1], /^body must be a JSON object$/],
    ];
    for (const [payload, message] of cases) {
      const response =
        payload === undefined
          ? await app.inject({ method: 'POST', url: '/admin/resync', headers: BEARER })
          : await resync(payload);
      expect(response.statusCode, JSON.stringify(payload)).toBe(400);
      expect(response.json().error, JSON.stringify(payload)).toMatch(message);
    }
    expect(await ctx.queues.refresh.count()).toBe(0);
  });

  it('shows a job: waiting, then failed with its attempts and last error', async () => {
    const [id] = (await resync({ source: 'group:99' })).json().jobs as string[];
    const waiting = (await job(id as string)).json();
    expect(waiting).toMatchObject({
      id,
      queue: 'refresh',
      name: 'refresh',
      source: 'group:99',
      state: 'waiting',
      attempts: 0,
      maxAttempts: 2,
      lastError: null,
      result: null,
      processedAt: null,
      finishedAt: null,
    });
    expect(waiting.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const worker = holdingWorker(ctx);
    workers.push(worker);
    worker.release(new Error('upstream timed out'));
    const failed = await eventually(async () => {
      const view = (await job(id as string)).json();
      return view.state === 'failed' ? view : undefined;
    }, 'the job to fail');
    expect(failed).toMatchObject({ attempts: 2, maxAttempts: 2, lastError: 'upstream timed out', result: null });
    // ISO 8601 text in UTC sorts as time does.
    expect(failed.finishedAt >= failed.processedAt).toBe(true);
  });

  it('answers 404 for unknown jobs (BullMQ key names included) and 400 for malformed ids', async () => {
    await resync({ source: 'group:5' });
    for (const id of ['group-5-nope', 'meta', 'wait', 'events', 'id', '1']) {
      const response = await job(id);
      expect(response.statusCode, id).toBe(404);
      expect(response.json().error).toContain(id);
    }
    // Both limits of what is kept: a job can be gone well within the hour when many finished since.
    expect((await job('group-5-nope')).json().error).toMatch(/an hour and only the 10,000 most recent/);
    for (const id of ['de:group-5', 'a b', 'x!y']) expect((await job(id)).statusCode, id).toBe(400);
  });
});
