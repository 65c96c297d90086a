/**
 * The service's BullMQ worker never hands `setTimeout` a negative wait for a rate limit: BullMQ checks the limit
 * against one reading of the clock and computes the wait from the next, and a worker of the refresh-cycle benchmark
 * printed `TimeoutNegativeWarning: -2 is a negative number` when the clock moved between them. Both readings are
 * played here with a stubbed clock, on a real worker over the test Redis, and the wait handed to `setTimeout` read.
 */
import { Worker as BullWorker } from 'bullmq';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { Worker } from '../../src/jobs/bullmq-worker.ts';
import { connectRedis } from '../../src/lib/redis-connection.ts';
import { RedisOutageLog } from '../../src/lib/redis-outage.ts';
import { silentLogger } from '../../src/logger.ts';
import { uniquePrefix } from '../support/service.ts';

/** What BullMQ keeps private and this test plays with: the rate limit's end and the wait for it. */
interface RateLimited {
  limitUntil: number;
  waitForRateLimit(): Promise<void>;
}

const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const close of closing.splice(0)) await close();
});

/** A worker of `kind` over the test Redis that runs nothing (only its rate-limit wait is driven). */
function idle(kind: typeof BullWorker): RateLimited {
  const connection = connectRedis(inject('redisUrl'), {
    name: 'test-bullmq-worker',
    outage: new RedisOutageLog(silentLogger()),
    blocking: true,
  });
  const worker = new kind('clamp', async () => undefined, {
    connection,
    prefix: uniquePrefix('bullmq-worker'),
    autorun: false,
  });
  worker.on('error', () => undefined);
  closing.push(async () => {
    await worker.close();
    connection.disconnect();
  });
  return worker as unknown as RateLimited;
}

/**
 * Waits out a rate limit that ends 1 ms after the first reading of the clock, the second reading coming 3 ms
 * later: the waits handed to `setTimeout` meanwhile. (Node warns of a negative one only once per process, so the
 * waits themselves are what is checked.)
 */
async function waitsOfALateRead(worker: RateLimited): Promise<number[]> {
  const waits: number[] = [];
  const setTimer = globalThis.setTimeout;
  vi.spyOn(globalThis, 'setTimeout').mockImplementation(((callback: () => void, ms?: number) => {
    waits.push(ms ?? 0);
    return setTimer(callback, Math.max(ms ?? 0, 1));
  }) as typeof setTimeout);
  const start = Date.now();
  worker.limitUntil = start + 1;
  vi.spyOn(Date, 'now')
    .mockReturnValueOnce(start)
    .mockReturnValueOnce(start + 3);
  await worker.waitForRateLimit();
  vi.restoreAllMocks();
  return waits;
}

describe("the service's BullMQ worker", () => {
  it('waits 1 ms instead of a negative time when the rate limit ended between two readings of the clock', async () => {
    expect(await waitsOfALateRead(idle(Worker))).toEqual([1]);
  });

  it("is needed: BullMQ's own worker hands setTimeout the negative wait (drop the class once it no longer does)", async () => {
    expect(await waitsOfALateRead(idle(BullWorker))).toEqual([-2]);
  });
});
