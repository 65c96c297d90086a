import { type Job, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { QUEUE, type RefreshJobData } from '../../src/jobs/contract.ts';
import { enqueueRefresh, REFRESH_PRIORITY, RESYNC_ALL_PRIORITY } from '../../src/jobs/queues.ts';
import { requestResync } from '../../src/jobs/resync.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { waitUntil } from '../../testkit/poll.ts';
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

  it('keeps finished refreshes an hour (completed) or a week (failed), by count too', async () => {
    const job = await ctx.queues.refresh.getJob(await enqueue('group:1', 'demand'));
    // Bounded whatever the number of sources: about 15 MB of completed refreshes at most (docs/redis.md).
    expect(job?.opts.removeOnComplete).toEqual({ age: 3600, count: 10_000 });
    expect(job?.opts.removeOnFail).toEqual({ age: 7 * 24 * 3600, count: 2_000 });
  });

  it('keeps the stack of the last attempt only on a failed refresh', async () => {
    const id = await enqueue('group:1', 'demand');
    const connection = new Redis(inject('redisUrl'), { maxRetriesPerRequest: null });
    let attempts = 0;
    const worker = new Worker<RefreshJobData>(
      QUEUE.refresh,
      async () => {
        attempts += 1;
        throw new Error(`upstream down (attempt ${attempts})`);
      },
      { connection, prefix: ctx.keys.queuePrefix },
    );
    worker.on('error', () => {});
    worker.on('failed', () => {});
    stop = async () => {
      await worker.close();
      connection.disconnect();
    };
    await waitUntil(async () => (await ctx.queues.refresh.getJobState(id)) === 'failed', 'the refresh to fail');
    const failed = await ctx.queues.refresh.getJob(id);
    expect(failed?.attemptsMade).toBe(ctx.config.refreshAttempts);
    expect(ctx.config.refreshAttempts).toBeGreaterThan(1);
    expect(failed?.stacktrace).toHaveLength(1);
    expect(failed?.stacktrace?.[0]).toContain(`attempt ${ctx.config.refreshAttempts}`);
  });
});
