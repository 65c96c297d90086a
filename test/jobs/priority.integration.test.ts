import { type Job, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { QUEUE, type RefreshJobData } from '../../src/jobs/contract.ts';
import {
  enqueueRefresh,
  KEEP_COMPLETED_REFRESHES,
  KEEP_FAILED,
  REFRESH_PRIORITY,
  RESYNC_ALL_PRIORITY,
} from '../../src/jobs/queues.ts';
import { requestResync } from '../../src/jobs/resync.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { waitUntil } from '../support/poll.ts';
import { testContext } from '../support/service.ts';

/** Starts one worker that runs a job at a time and records the order of the sources it ran. */
function recordingWorker(ctx: ServiceContext): { order: string[]; close: () => Promise<void> } {
  const connection = new Redis(inject('redisUrl'), { maxRetriesPerRequest: null });
  const order: string[] = [];
  const worker = new Worker<RefreshJobData>(
    QUEUE.refresh,
    async (job: Job<RefreshJobData>) => {
      order.push(job.data.source);
      return { outcome: 'unchanged', occurrences: 0, pushJobs: 0 };
    },
    { connection, prefix: ctx.keys.queuePrefix, concurrency: 1 },
  );
  worker.on('error', () => {});
  return {
    order,
    close: async () => {
      await worker.close();
      connection.disconnect();
    },
  };
}

describe('refresh priorities', () => {
  let ctx: ServiceContext;
  let close: () => Promise<void>;
  let stop: (() => Promise<void>) | undefined;

  beforeEach(async () => {
    ({ context: ctx, close } = await testContext());
  });

  afterEach(async () => {
    await stop?.();
    stop = undefined;
    await close();
  });

  const enqueue = (source: string, reason: RefreshJobData['reason']) =>
    enqueueRefresh(ctx.queues, ctx.config, source, { reason, now: Date.now() });

  it('runs an admin resync, then first requests, before background ticks queued earlier', async () => {
    for (let id = 1; id <= 20; id += 1) await enqueue(`group:${id}`, 'schedule');
    await enqueue('group:500', 'demand');
    await enqueue('group:900', 'resync');
    const worker = recordingWorker(ctx);
    stop = worker.close;
    await waitUntil(() => worker.order.length === 22, 'every refresh to run');
    expect(worker.order.slice(0, 2)).toEqual(['group:900', 'group:500']);
    expect(worker.order.slice(2)).toEqual(Array.from({ length: 20 }, (_, index) => `group:${index + 1}`));
  });

  it('runs resync --all after first requests queued later, and before background ticks', async () => {
    for (let id = 11; id <= 13; id += 1) await enqueue(`group:${id}`, 'schedule');
    for (let id = 1; id <= 5; id += 1) await ctx.registry.activate(`group:${id}`, id);
    const all = await requestResync(ctx, { all: true });
    expect((await ctx.queues.refresh.getJob(all[0] as string))?.priority).toBe(RESYNC_ALL_PRIORITY);
    // Someone waits for these: a first request and a sign-up, and one source an admin resyncs by name.
    await enqueue('group:500', 'demand');
    await enqueue('personal:AAAAAAAAAAAAAAAAAAAAAA', 'subscription');
    const [named] = await requestResync(ctx, { source: 'group:900' });
    expect((await ctx.queues.refresh.getJob(named as string))?.priority).toBe(REFRESH_PRIORITY.resync);
    const worker = recordingWorker(ctx);
    stop = worker.close;
    await waitUntil(() => worker.order.length === 11, 'every refresh to run');
    expect(worker.order).toEqual([
      'group:900',
      'group:500',
      'personal:AAAAAAAAAAAAAAAAAAAAAA',
      ...[1, 2, 3, 4, 5].map((id) => `group:${id}`),
      ...[11, 12, 13].map((id) => `group:${id}`),
    ]);
  });

  it('hurries a queued tick when an admin resync is answered by it, and never slows a job down', async () => {
    for (let id = 1; id <= 10; id += 1) await enqueue(`group:${id}`, 'schedule');
    const tick = await enqueue('group:7', 'schedule');
    const resync = await enqueue('group:7', 'resync');
    expect(resync).toBe(tick);
    expect((await ctx.queues.refresh.getJob(tick))?.priority).toBe(REFRESH_PRIORITY.resync);
    // A later tick of the same source is answered by the same job and leaves its priority alone.
    expect(await enqueue('group:7', 'schedule')).toBe(tick);
    expect((await ctx.queues.refresh.getJob(tick))?.priority).toBe(REFRESH_PRIORITY.resync);
    const worker = recordingWorker(ctx);
    stop = worker.close;
    await waitUntil(() => worker.order.length === 10, 'every refresh to run');
    expect(worker.order[0]).toBe('group:7');
  });

  it('keeps finished refreshes by count as well as by age', async () => {
    const job = await ctx.queues.refresh.getJob(await enqueue('group:1', 'demand'));
    expect(job?.opts.removeOnFail).toEqual({ age: 7 * 24 * 3600, count: KEEP_FAILED });
    expect(job?.opts.removeOnComplete).toEqual({ age: 24 * 3600, count: KEEP_COMPLETED_REFRESHES });
    // An id answered to an admin still resolves after an hour of refreshes at the full upstream rate.
    expect(ctx.config.upstreamRateLimit).toBe(10);
    expect(KEEP_COMPLETED_REFRESHES).toBeGreaterThanOrEqual(3600 * ctx.config.upstreamRateLimit);
  });
});
