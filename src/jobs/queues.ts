import { createHash, randomBytes } from 'node:crypto';
import { type JobsOptions, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Config } from '../config.ts';
import type { RedisKeys } from '../sources/keys.ts';
import { type SourceKey, sourceToken } from '../sources/source.ts';
import {
  type PushJobData,
  type PushJobResult,
  type PushReason,
  QUEUE,
  type RefreshJobData,
  type RefreshJobResult,
  type RefreshReason,
  type TickJobData,
} from './contract.ts';

/** The service's queues, sharing one connection. */
export interface Queues {
  refresh: Queue<RefreshJobData, RefreshJobResult>;
  push: Queue<PushJobData, PushJobResult>;
  schedule: Queue<TickJobData | Record<string, never>>;
  close(): Promise<void>;
}

/**
 * Opens the queues on `connection` (which the caller owns and closes). Queue errors are connection errors,
 * which the connection's own listener already logs once per outage; without a listener BullMQ would print
 * a stack trace on every reconnect attempt.
 */
export function createQueues(connection: Redis, keys: RedisKeys): Queues {
  const options = { connection, prefix: keys.queuePrefix };
  const refresh = new Queue<RefreshJobData, RefreshJobResult>(QUEUE.refresh, options);
  const push = new Queue<PushJobData, PushJobResult>(QUEUE.push, options);
  const schedule = new Queue<TickJobData | Record<string, never>>(QUEUE.schedule, options);
  for (const queue of [refresh, push, schedule]) queue.on('error', () => undefined);
  return {
    refresh,
    push,
    schedule,
    close: async () => {
      await Promise.all([refresh.close(), push.close(), schedule.close()]);
    },
  };
}

/**
 * How many finished jobs a queue keeps at most, besides their age limits. Redis runs `noeviction`: a flood of
 * failing requests must not fill it (a failed refresh holds about 2.8 KB). BullMQ trims the oldest beyond the
 * count, whatever job finishes, so the counts are large enough that an id answered to an admin still resolves
 * for hours on a busy deployment (10,000 completed refreshes ≈ 20 min at 18,000 sources every 30 min).
 */
export const KEEP_COMPLETED = 10_000;
export const KEEP_FAILED = 5_000;

/**
 * Refresh priorities (BullMQ: 1 runs first; a job without one would run before every prioritized job, so every
 * refresh has one). A refresh someone waits for goes before background ones: an admin's resync first, then a
 * first request or a new subscription, then a confirming re-fetch, then scheduled ticks and re-renders.
 */
export const REFRESH_PRIORITY: Readonly<Record<RefreshReason, number>> = {
  resync: 1,
  demand: 2,
  subscription: 2,
  confirm: 3,
  schedule: 5,
  rerender: 5,
};

/** Retry and retention options of refresh jobs. */
export function refreshJobOptions(config: Pick<Config, 'refreshAttempts' | 'refreshBackoffMs'>): JobsOptions {
  return {
    attempts: config.refreshAttempts,
    backoff: { type: 'exponential', delay: config.refreshBackoffMs, jitter: 0.5 },
    removeOnComplete: { age: 24 * 3600, count: KEEP_COMPLETED },
    removeOnFail: { age: 7 * 24 * 3600, count: KEEP_FAILED },
  };
}

/** How to ask for a refresh. */
export interface RefreshRequest {
  reason: RefreshReason;
  now: number;
  /**
   * When a refresh of the source is running, keep one follow-up refresh queued behind it (an admin resync
   * must see data fetched after it asked). Without it, a running or queued refresh answers the request.
   */
  followUp?: boolean;
  /** Run no earlier than this many ms from now (a confirming re-fetch). */
  delayMs?: number;
  /** The job's id (without `:`) when none is running: a stable one makes repeated requests one job. */
  jobId?: string;
}

/**
 * Queues a refresh of `source`, deduplicated per source: at most one refresh is queued and one running, ever.
 * Resolves to the id of the job that will do the work: the new job, the one already queued, or the follow-up
 * that will start when the running one ends.
 */
export async function enqueueRefresh(
  queues: Queues,
  config: Pick<Config, 'refreshAttempts' | 'refreshBackoffMs'>,
  source: SourceKey,
  request: RefreshRequest,
): Promise<string> {
  const token = sourceToken(source);
  const running = request.followUp ? await runningJob(queues, token) : undefined;
  // Every follow-up of one running job gets the same id, so that ids answered to several callers all resolve.
  const jobId =
    running === undefined
      ? (request.jobId ?? `${token}-${request.now.toString(36)}-${randomBytes(3).toString('hex')}`)
      : followUpJobId(token, running);
  const job = await queues.refresh.add(
    'refresh',
    { source, reason: request.reason, requestedAt: request.now },
    {
      ...refreshJobOptions(config),
      priority: REFRESH_PRIORITY[request.reason],
      jobId,
      ...(request.delayMs === undefined ? {} : { delay: request.delayMs }),
      // No `reschedule`: a request must never pull a delayed confirmation or retry forward.
      deduplication: { id: token, ...(request.followUp ? { keepLastIfActive: true } : {}) },
    },
  );
  if (running !== undefined && job.id === running) return jobId;
  const id = job.id ?? jobId;
  if (id !== jobId) {
    if (request.reason !== 'rerender') await takeOverRerender(queues, id, request);
    await raisePriority(queues, id, REFRESH_PRIORITY[request.reason]);
  }
  return id;
}

/**
 * A queued re-render only renders the stored snapshot again, without fetching; a request deduplicated into it
 * (an admin resync, a schedule tick) wants fresh data, so the queued job becomes a fetching refresh of that
 * reason. A job that started meanwhile keeps its reason: followUp callers queue behind a running job anyway.
 */
async function takeOverRerender(queues: Queues, id: string, request: RefreshRequest): Promise<void> {
  const queued = await queues.refresh.getJob(id);
  if (queued?.data.reason !== 'rerender') return;
  const state = await queued.getState();
  if (state !== 'waiting' && state !== 'prioritized' && state !== 'delayed') return;
  await queued.updateData({ ...queued.data, reason: request.reason, requestedAt: request.now });
}

/**
 * A request answered by a refresh already queued (deduplicated) lends it its own priority when higher: an
 * admin's resync of a source whose scheduled tick waits must not wait behind every other tick. A job that
 * started or ended meanwhile is left alone.
 */
async function raisePriority(queues: Queues, id: string, priority: number): Promise<void> {
  const existing = await queues.refresh.getJob(id);
  // Priority 0 is a job queued before priorities existed: it already runs before every prioritized one.
  if (existing === undefined || existing.priority === 0 || existing.priority <= priority) return;
  const state = await existing.getState();
  if (state !== 'waiting' && state !== 'prioritized' && state !== 'delayed') return;
  // It may have been removed since (finished and trimmed): nothing is left to hurry.
  await existing.changePriority({ priority }).catch(() => undefined);
}

/**
 * The id of the follow-up refresh queued behind the running job `runningId` of a source: the same for every
 * caller, so that all of them can look it up, and it exists only once the running job has ended.
 */
export function followUpJobId(token: string, runningId: string): string {
  return `${token}-after-${createHash('sha1').update(runningId).digest('hex').slice(0, 12)}`;
}

/** The id of the source's refresh job if it is running right now. */
async function runningJob(queues: Queues, token: string): Promise<string | undefined> {
  const current = await queues.refresh.getDeduplicationJobId(token);
  if (current === null) return undefined;
  return (await queues.refresh.getJobState(current)) === 'active' ? current : undefined;
}

/**
 * Retry and retention options of push jobs. Transient Google failures retry with backoff; rate limits do not
 * use attempts (the push queue is paused instead), and permanent failures end the job at once.
 */
export function pushJobOptions(): JobsOptions {
  return {
    attempts: 8,
    backoff: { type: 'exponential', delay: 5_000, jitter: 0.5 },
    removeOnComplete: { age: 24 * 3600, count: KEEP_COMPLETED },
    removeOnFail: { age: 7 * 24 * 3600, count: KEEP_FAILED },
  };
}

/** The deduplication id of a target's push jobs (also how the admin API finds a pending push). */
export function pushDeduplicationId(target: string): string {
  return `push-${target}`;
}

/**
 * Queues a push of `target`, deduplicated per target: while one is queued, it answers the request; while one
 * runs, exactly one follow-up is kept behind it (the running one may have read the old timetable). Resolves
 * to the id of the job that will do the work. A `reconcile` asked for while a plain push is queued is carried
 * by the target's `reconcileRequested` flag, which callers set first.
 */
export async function enqueuePush(
  ctx: { queues: Queues },
  target: string,
  source: SourceKey,
  reason: PushReason,
): Promise<string> {
  const job = await ctx.queues.push.add(
    QUEUE.push,
    { target, source, reason },
    {
      ...pushJobOptions(),
      deduplication: { id: pushDeduplicationId(target), keepLastIfActive: true },
    },
  );
  return job.id ?? '';
}
