/**
 * Waiting for a set of jobs to end, for an operator who asked for them (`resync --wait`). The queue's event
 * stream says when each job completes or fails for good (a retry is not an end); it is read from the point
 * where the watch opened, before the jobs were queued, so that no end is missed however fast the workers are.
 * If the stream stays silent a while (events trimmed while this process was away), the pending jobs' states
 * are read once instead.
 */
import { type Queue, QueueEvents } from 'bullmq';
import type { RedisClient } from '../lib/redis-target.ts';
import { followUpJobId } from './queues.ts';

/** How the watched jobs ended so far. */
export interface JobOutcomes {
  total: number;
  done: number;
  /** Failed jobs by failure reason (the message of their last attempt). */
  failed: Map<string, string[]>;
  /** Jobs that have not ended (when the wait was stopped). */
  pending: Set<string>;
}

/** Options of {@link JobWatch.wait}. */
export interface WaitOptions {
  /** Stops waiting (the jobs go on); `wait` then resolves with what ended so far. */
  signal?: AbortSignal;
  /** Called after every change. */
  onChange?: (outcomes: JobOutcomes) => void;
  /** Read the pending jobs' states after this long without an event (default 30 s). */
  sweepAfterMs?: number;
}

/** An open watch of one queue's job ends. */
export interface JobWatch {
  /** Resolves when every job of `ids` has ended, or when `signal` aborts. */
  wait(ids: readonly string[], options?: WaitOptions): Promise<JobOutcomes>;
  close(): Promise<void>;
}

/** A job that is gone without an end we saw (removed by hand, or trimmed before we looked). */
export const GONE_REASON = 'job no longer exists';

/**
 * Opens a watch of `queue`'s job ends over `blocking` (a connection with `maxRetriesPerRequest: null`, which
 * the caller closes). Open it before queuing the jobs it will wait for.
 */
export async function watchJobs(queue: Queue, commands: RedisClient, blocking: RedisClient): Promise<JobWatch> {
  const [last] = (await commands.xrevrange(queue.keys.events as string, '+', '-', 'COUNT', 1)) as [string, unknown][];
  const ended = new Map<string, string | undefined>();
  let wake: () => void = () => undefined;
  const events = new QueueEvents(queue.name, {
    connection: blocking,
    prefix: queue.opts.prefix ?? 'bull',
    lastEventId: last?.[0] ?? '0-0',
  });
  events.on('error', () => undefined); // The connection's own listener reports outages.
  events.on('completed', ({ jobId }) => {
    ended.set(jobId, undefined);
    wake();
  });
  events.on('failed', ({ jobId, failedReason }) => {
    ended.set(jobId, failedReason || 'failed');
    wake();
  });
  await events.waitUntilReady();

  return {
    close: () => events.close(),
    wait: async (ids, options = {}) => {
      const outcomes: JobOutcomes = { total: ids.length, done: 0, failed: new Map(), pending: new Set(ids) };
      const settle = (id: string, reason: string | undefined) => {
        if (!outcomes.pending.delete(id)) return;
        if (reason === undefined) outcomes.done += 1;
        else {
          // Appended in place: a copy per failure made thousands of failures for one reason quadratic.
          const ids = outcomes.failed.get(reason);
          if (ids === undefined) outcomes.failed.set(reason, [id]);
          else ids.push(id);
        }
      };
      const { signal } = options;
      const unknown = new Set<string>();
      while (outcomes.pending.size > 0 && !signal?.aborted) {
        const before = outcomes.pending.size;
        for (const id of [...outcomes.pending]) if (ended.has(id)) settle(id, ended.get(id));
        if (outcomes.pending.size !== before) options.onChange?.(outcomes);
        if (outcomes.pending.size === 0) break;
        const heard = await nextEvent(options.sweepAfterMs ?? 30_000, signal, (resolve) => (wake = resolve));
        if (!heard && !signal?.aborted) await sweep(queue, outcomes.pending, ended, unknown);
      }
      return outcomes;
    },
  };
}

/** Resolves true on the next event, false after `ms` without one or when `signal` aborts. */
function nextEvent(ms: number, signal: AbortSignal | undefined, listen: (wake: () => void) => void): Promise<boolean> {
  return new Promise((resolve) => {
    const finish = (heard: boolean) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve(heard);
    };
    const onAbort = () => finish(false);
    const timer = setTimeout(() => finish(false), ms);
    signal?.addEventListener('abort', onAbort, { once: true });
    listen(() => finish(true));
  });
}

/**
 * Reads the states of pending jobs (a few at a time) and records those that ended. A job unknown to the queue
 * counts as gone only when it was unknown at the previous sweep too, and is not the follow-up of a refresh
 * that has not ended: a follow-up exists only once the refresh it follows has ended, which may take longer
 * than any number of sweeps.
 */
async function sweep(
  queue: Queue,
  pending: Set<string>,
  ended: Map<string, string | undefined>,
  unknown: Set<string>,
): Promise<void> {
  const ids = [...pending];
  for (let start = 0; start < ids.length; start += 20) {
    await Promise.all(
      ids.slice(start, start + 20).map(async (id) => {
        const state = await queue.getJobState(id);
        if (state === 'completed') ended.set(id, undefined);
        else if (state === 'failed') ended.set(id, (await queue.getJob(id))?.failedReason || 'failed');
        else if (state !== 'unknown' || (await awaitedFollowUp(queue, id))) unknown.delete(id);
        else if (unknown.has(id)) ended.set(id, GONE_REASON);
        else unknown.add(id);
      }),
    );
  }
}

/**
 * Whether `id` is the follow-up of a refresh that is still queued, running or waiting for a retry: the job
 * its source's deduplication id points to, of which `id` is the follow-up id (see `followUpJobId`).
 */
async function awaitedFollowUp(queue: Queue, id: string): Promise<boolean> {
  const marker = id.lastIndexOf('-after-');
  if (marker <= 0) return false;
  const token = id.slice(0, marker);
  const parent = await queue.getDeduplicationJobId(token);
  if (!parent || followUpJobId(token, parent) !== id) return false;
  const state = await queue.getJobState(parent);
  return state !== 'completed' && state !== 'failed' && state !== 'unknown';
}
