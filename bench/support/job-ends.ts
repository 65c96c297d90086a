/**
 * The starts, ends and outcomes of a cycle's jobs, heard on the queue's event stream while the cycle runs.
 * Reading the jobs once the cycle has drained cannot work at scale: the queues keep at most
 * `KEEP_COMPLETED.count` completed jobs (src/jobs/queues.ts), fewer than one cycle of 20,000 sources, and the
 * benchmark must measure the service's own retention, not raise it.
 *
 * A job's times are the stream ids of its events (Redis's clock, in ms): its last `active` event is written
 * by the script that sets its `processedOn`, its `completed` or `failed` event by the one that sets its
 * `finishedOn`. A failed attempt that will be retried writes no `failed` event, so an end heard is final.
 */
import { type Queue, QueueEvents } from 'bullmq';
import type { RedisClient } from '../../src/lib/redis-target.ts';
import { sleep } from '../../testkit/processes.ts';

/** One job of a cycle, as its events told it. */
export interface JobEnd {
  id: string;
  /** When its last attempt started. */
  processedOn: number;
  finishedOn: number;
  /** The `outcome` of its return value when it completed (a refresh's `RefreshJobResult`). */
  outcome?: string;
  /** Its last attempt's failure when it failed. */
  failedReason?: string;
}

/** An open collection of a queue's job ends. */
export interface JobEnds {
  /**
   * Resolves with the end of every job of `ids` once each has ended. Rejects when `timeoutMs` passes first, or
   * when the queue has had nothing waiting or running for `quietMs` while ends are still unheard: their events
   * were trimmed from the stream before they were read, and no wait would hear them.
   */
  waitFor(ids: readonly string[], options: { label: string; timeoutMs: number; quietMs?: number }): Promise<JobEnd[]>;
  close(): Promise<void>;
}

/**
 * Starts hearing `queue`'s job starts and ends over `blocking` (a connection with `maxRetriesPerRequest: null`,
 * which the caller closes), from the stream's last event on: open it before queuing the jobs it will wait for.
 */
export async function collectJobEnds(queue: Queue, commands: RedisClient, blocking: RedisClient): Promise<JobEnds> {
  const [last] = (await commands.xrevrange(queue.keys.events as string, '+', '-', 'COUNT', 1)) as [string, unknown][];
  const starts = new Map<string, number>();
  const ends = new Map<string, JobEnd>();
  const events = new QueueEvents(queue.name, {
    connection: blocking,
    prefix: queue.opts.prefix ?? 'bull',
    lastEventId: last?.[0] ?? '0-0',
  });
  events.on('error', () => undefined); // The connection's own listener reports outages.
  events.on('active', ({ jobId }, eventId) => starts.set(jobId, streamTime(eventId)));
  const end = (jobId: string, eventId: string, outcome: Pick<JobEnd, 'outcome' | 'failedReason'>) =>
    ends.set(jobId, {
      id: jobId,
      processedOn: starts.get(jobId) ?? Number.NaN,
      finishedOn: streamTime(eventId),
      ...outcome,
    });
  events.on('completed', ({ jobId, returnvalue }, eventId) =>
    end(jobId, eventId, { outcome: (returnvalue as { outcome?: string } | null)?.outcome ?? 'completed' }),
  );
  events.on('failed', ({ jobId, failedReason }, eventId) =>
    end(jobId, eventId, { failedReason: failedReason || 'failed' }),
  );
  await events.waitUntilReady();

  return {
    close: () => events.close(),
    waitFor: async (ids, { label, timeoutMs, quietMs = 10_000 }) => {
      const deadline = Date.now() + timeoutMs;
      let quietSince: number | undefined;
      for (;;) {
        const unheard = ids.filter((id) => !ends.has(id));
        if (unheard.length === 0) return ids.map((id) => ends.get(id) as JobEnd);
        const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'waiting-children');
        const pending = Object.values(counts).reduce((sum, count) => sum + count, 0);
        quietSince = pending > 0 ? undefined : (quietSince ?? Date.now());
        if (quietSince !== undefined && Date.now() - quietSince > quietMs) {
          // Events trimmed before they were read: the jobs themselves tell, while the queue still keeps them.
          if ((await readKeptEnds(queue, unheard, ends)) === unheard.length) continue;
          throw new Error(
            `${label}: the queue is idle but the ends of ${unheard.length} jobs were never heard (e.g. ${unheard.slice(0, 3).join(', ')})`,
          );
        }
        if (Date.now() > deadline)
          throw new Error(
            `${label}: ${unheard.length} jobs had not ended within ${timeoutMs / 60_000} minutes: ${JSON.stringify(counts)}`,
          );
        await sleep(pending === 0 ? 100 : 500);
      }
    },
  };
}

/** Reads the ends of `ids` from the jobs the queue still keeps into `ends`; resolves to how many it found. */
async function readKeptEnds(queue: Queue, ids: readonly string[], ends: Map<string, JobEnd>): Promise<number> {
  let found = 0;
  for (const id of ids) {
    const job = await queue.getJob(id);
    if (job?.finishedOn === undefined || job.processedOn === undefined) continue;
    const outcome = (job.returnvalue as { outcome?: string } | null)?.outcome;
    ends.set(id, {
      id,
      processedOn: job.processedOn,
      finishedOn: job.finishedOn,
      ...(job.failedReason ? { failedReason: job.failedReason } : { outcome: outcome ?? 'completed' }),
    });
    found += 1;
  }
  return found;
}

/** The time (ms) of a stream entry: the first part of its id. */
function streamTime(eventId: string): number {
  return Number(eventId.slice(0, eventId.indexOf('-')));
}
