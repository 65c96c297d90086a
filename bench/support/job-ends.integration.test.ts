import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { deletePrefix, uniquePrefix } from '../../testkit/redis-prefix.ts';
import { collectJobEnds } from './job-ends.ts';

describe('collectJobEnds', () => {
  const redisUrl = inject('redisUrl');
  let prefix: string;
  let commands: Redis;
  let blocking: Redis;
  let queue: Queue;

  beforeEach(() => {
    prefix = uniquePrefix('job-ends');
    commands = new Redis(redisUrl);
    blocking = new Redis(redisUrl, { maxRetriesPerRequest: null });
    queue = new Queue('refresh', { connection: commands, prefix });
  });

  afterEach(async () => {
    await queue.close();
    blocking.disconnect();
    commands.disconnect();
    await deletePrefix(redisUrl, prefix);
  });

  it('has every job of a cycle larger than what the queue keeps, with its times and outcome', async () => {
    // The scale benchmark's cycles are larger than KEEP_COMPLETED.count: here 40 jobs, 3 kept of each end.
    const keep = { removeOnComplete: { count: 3 }, removeOnFail: { count: 3 }, attempts: 1 };
    const heard = await collectJobEnds(queue, commands, blocking);
    const workerConnection = new Redis(redisUrl, { maxRetriesPerRequest: null });
    const worker = new Worker(
      'refresh',
      async (job) => {
        if (job.data.fail) throw new Error('upstream answered 500');
        return { outcome: 'changed' };
      },
      { connection: workerConnection, prefix, concurrency: 4 },
    );
    try {
      const ids = Array.from({ length: 40 }, (_, index) => `job-${index}`);
      await queue.addBulk(
        ids.map((jobId, index) => ({ name: 'r', data: { fail: index % 10 === 9 }, opts: { ...keep, jobId } })),
      );
      const jobs = await heard.waitFor(ids, { label: 'test', timeoutMs: 15_000 });
      expect(await queue.getJobCounts('completed', 'failed')).toEqual({ completed: 3, failed: 3 });
      expect(jobs.map((job) => job.id)).toEqual(ids);
      expect(jobs.filter((job) => job.outcome === 'changed')).toHaveLength(36);
      expect(jobs.filter((job) => job.failedReason === 'upstream answered 500')).toHaveLength(4);
      for (const job of jobs) {
        expect(job.processedOn).toBeGreaterThan(0);
        expect(job.finishedOn).toBeGreaterThanOrEqual(job.processedOn);
      }
    } finally {
      await worker.close();
      workerConnection.disconnect();
      await heard.close();
    }
  });

  it('fails fast when the queue is idle and an end was never heard', async () => {
    const heard = await collectJobEnds(queue, commands, blocking);
    try {
      await expect(heard.waitFor(['never-queued'], { label: 'test', timeoutMs: 15_000, quietMs: 200 })).rejects.toThrow(
        'the ends of 1 jobs were never heard',
      );
    } finally {
      await heard.close();
    }
  });
});
