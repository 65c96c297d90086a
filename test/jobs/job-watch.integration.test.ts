import { Queue, Worker } from 'bullmq';
import { afterEach, beforeEach, describe, expect, inject, it, vi } from 'vitest';
import { GONE_REASON, watchJobs } from '../../src/jobs/job-watch.ts';
import { followUpJobId } from '../../src/jobs/queues.ts';
import { connectRedis } from '../../src/lib/redis-connection.ts';
import { RedisOutageLog } from '../../src/lib/redis-outage.ts';
import { silentLogger } from '../../src/logger.ts';
import { until } from '../../testkit/poll.ts';
import { deletePrefix, uniquePrefix } from '../support/service.ts';
import { type Pipeline, startPipeline } from './helpers.ts';

describe('watchJobs', () => {
  let pipeline: Pipeline;
  let blocking: ReturnType<typeof connectRedis>;

  beforeEach(async () => {
    pipeline = await startPipeline();
    blocking = connectRedis(inject('redisUrl'), {
      name: 'test-watch',
      outage: new RedisOutageLog(silentLogger()),
      blocking: true,
    });
  });

  afterEach(async () => {
    await blocking.quit();
    await pipeline.close();
  });

  it('hears ends from the event stream, failures with their reason', async () => {
    const watch = await watchJobs(pipeline.ctx.queues.refresh, pipeline.ctx.redis, blocking);
    try {
      const [group] = await pipeline.sim.groups();
      const ok = await pipeline.refresh(`group:${group?.id}`);
      const bad = await pipeline.refresh('group:999999');
      const changes: number[] = [];
      // A sweep would need 60 s: only the events can end this wait within the test's time.
      const outcomes = await watch.wait([ok.id, bad.id], {
        sweepAfterMs: 60_000,
        onChange: (now) => changes.push(now.pending.size),
      });
      expect(outcomes.done).toBe(1);
      expect([...outcomes.failed.entries()]).toEqual([[bad.failedReason, [bad.id]]]);
      expect(outcomes.pending.size).toBe(0);
      expect(changes.at(-1)).toBe(0);
    } finally {
      await watch.close();
    }
  });

  it('reads the states of jobs whose ends it did not hear, and calls a job gone only when unknown twice', async () => {
    const [group] = await pipeline.sim.groups();
    const before = await pipeline.refresh(`group:${group?.id}`);
    // Opened after the job ended: its event is older than the watch.
    const watch = await watchJobs(pipeline.ctx.queues.refresh, pipeline.ctx.redis, blocking);
    try {
      const started = Date.now();
      const outcomes = await watch.wait([before.id, 'no-such-job'], { sweepAfterMs: 200 });
      expect(outcomes.done).toBe(1);
      expect([...outcomes.failed.entries()]).toEqual([[GONE_REASON, ['no-such-job']]]);
      expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    } finally {
      await watch.close();
    }
  });

  it('waits for a follow-up as long as the refresh it follows has not ended, however many sweeps', async () => {
    // A queue of its own, whose one job runs until the test lets it end (the pipeline's workers would not wait).
    const prefix = uniquePrefix('watch');
    const queue = new Queue('refresh', { connection: pipeline.ctx.redis, prefix });
    const workerConnection = connectRedis(inject('redisUrl'), {
      name: 'test-watch-worker',
      outage: new RedisOutageLog(silentLogger()),
      blocking: true,
    });
    let release: () => void = () => undefined;
    const gate = new Promise<void>((done) => {
      release = done;
    });
    const worker = new Worker('refresh', () => gate, { connection: workerConnection, prefix });
    const watch = await watchJobs(queue, pipeline.ctx.redis, blocking);
    try {
      const deduplication = { id: 'group-7', keepLastIfActive: true };
      await queue.add('refresh', {}, { jobId: 'running-1', deduplication });
      expect(
        await until(
          () => queue.getJobState('running-1'),
          (state) => state === 'active',
        ),
      ).toBe('active');
      // As enqueueRefresh queues a follow-up: kept by BullMQ, and a job only once the running one ends.
      const followUp = followUpJobId('group-7', 'running-1');
      await queue.add('refresh', {}, { jobId: followUp, deduplication });
      expect(await queue.getJobState(followUp)).toBe('unknown');

      const states = vi.spyOn(queue, 'getJobState');
      const waiting = watch.wait([followUp], { sweepAfterMs: 50 });
      const sweeps = () => states.mock.calls.filter(([id]) => id === followUp).length;
      expect(
        await until(
          async () => sweeps(),
          (count) => count >= 4,
        ),
      ).toBeGreaterThanOrEqual(4);
      release();
      const outcomes = await waiting;
      expect([...outcomes.failed.entries()]).toEqual([]);
      expect(outcomes.done).toBe(1);
    } finally {
      release();
      await watch.close();
      await worker.close();
      await queue.close();
      await workerConnection.quit();
      await deletePrefix(inject('redisUrl'), prefix);
    }
  });

  it('stops waiting when the signal aborts, leaving the jobs pending', async () => {
    const watch = await watchJobs(pipeline.ctx.queues.refresh, pipeline.ctx.redis, blocking);
    try {
      const stop = new AbortController();
      setTimeout(() => stop.abort(), 100);
      const outcomes = await watch.wait(['later-1', 'later-2'], { signal: stop.signal, sweepAfterMs: 60_000 });
      expect([...outcomes.pending]).toEqual(['later-1', 'later-2']);
      expect(outcomes.done).toBe(0);
    } finally {
      await watch.close();
    }
  });
});
