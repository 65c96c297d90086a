/**
 * What became of a job someone was given the id of (`POST /admin/resync` answers ids): its state, attempts,
 * last error and result, read from the queues; also the follow-up refresh that exists only once the running
 * one ends, and the push pending for a push target.
 */
import type { Queue } from 'bullmq';
import type { TargetKind } from '../store/push-target-record.ts';
import type { SourceKey } from '../timetable/source.ts';
import { followUpJobId, pushDeduplicationId, type Queues } from './queues.ts';

/** What job lookups use: the refresh and push queues. */
export interface JobStatusDeps {
  readonly queues: Pick<Queues, 'refresh' | 'pushQueues' | 'pushQueue'>;
}

/** Job ids we and BullMQ make never contain `:`; this also keeps lookups off BullMQ's own keys (`de:…`). */
export const JOB_ID = /^[\w.=-]{1,200}$/;
/** A follow-up queued behind a running refresh: `<source token>-after-<12 hex of sha1(running job id)>`. */
const FOLLOW_UP_ID = /^(group|employee|personal)-(.+)-after-([0-9a-f]{12})$/;

/** A job as stored by BullMQ. Times are epoch milliseconds. */
export interface JobStatus {
  id: string;
  queue: string;
  name: string;
  source: SourceKey | null;
  state: string;
  attempts: number;
  maxAttempts: number;
  lastError: string | null;
  result: unknown;
  createdAt: number;
  processedAt: number | null;
  finishedAt: number | null;
}

/** A follow-up refresh asked for while its source's refresh runs: queued, not a job yet. */
export interface PendingFollowUp {
  id: string;
  queue: string;
  source: SourceKey;
  state: 'queued';
  note: string;
}

/** The refresh or push job `id` (or a follow-up not queued yet); undefined when there is none. */
export async function findJob(ctx: JobStatusDeps, id: string): Promise<JobStatus | PendingFollowUp | undefined> {
  if (!JOB_ID.test(id)) return undefined;
  for (const queue of [ctx.queues.refresh, ...ctx.queues.pushQueues.values()]) {
    const stored = await storedJob(queue, id);
    if (stored !== undefined) return stored;
  }
  return pendingFollowUp(ctx, id);
}

async function storedJob(
  queue: Queue<{ source?: SourceKey | undefined }, unknown, string>,
  id: string,
): Promise<JobStatus | undefined> {
  // The state first: it answers `unknown` for anything that is not a job, without reading the key as a hash.
  const state = await queue.getJobState(id);
  if (state === 'unknown') return undefined;
  const job = await queue.getJob(id);
  if (!job) return undefined;
  return {
    id,
    queue: queue.name,
    name: job.name,
    source: job.data.source ?? null,
    // Every refresh has a priority (see `REFRESH_PRIORITY`); to whoever holds its id, it is simply waiting.
    state: state === 'prioritized' ? 'waiting' : state,
    attempts: job.attemptsMade,
    maxAttempts: job.opts.attempts ?? 1,
    lastError: job.failedReason || null,
    result: job.returnvalue ?? null,
    createdAt: job.timestamp,
    processedAt: job.processedOn ?? null,
    finishedAt: job.finishedOn ?? null,
  };
}

/**
 * A follow-up resync asked for while the source's refresh runs exists as a job only once that refresh ends;
 * until then its id is answered as queued. The running job is checked against the id's digest (see
 * `enqueueRefresh`), so that a made-up id is still unknown.
 */
async function pendingFollowUp(ctx: JobStatusDeps, id: string): Promise<PendingFollowUp | undefined> {
  const match = FOLLOW_UP_ID.exec(id);
  if (!match) return undefined;
  const [, kind = '', sourceId = ''] = match;
  const token = `${kind}-${sourceId}`;
  const running = await ctx.queues.refresh.getDeduplicationJobId(token);
  if (running === null || followUpJobId(token, running) !== id) return undefined;
  const state = await ctx.queues.refresh.getJobState(running);
  // Active, or waiting for a retry of that same refresh: the follow-up stays stored until it ends.
  if (state === 'completed' || state === 'failed' || state === 'unknown') return undefined;
  const source = `${kind}:${sourceId}`;
  return {
    id,
    queue: ctx.queues.refresh.name,
    source,
    state: 'queued',
    note: `starts when the running refresh of ${source} ends`,
  };
}

/** The push job queued or running for a target of `kind` (its changes are not in the calendar yet), or null. */
export async function pendingPush(
  ctx: { readonly queues: Pick<Queues, 'pushQueue'> },
  kind: TargetKind,
  target: string,
): Promise<{ job: string; state: string } | null> {
  const queue = ctx.queues.pushQueue(kind);
  const job = await queue.getDeduplicationJobId(pushDeduplicationId(kind, target));
  if (job === null) return null;
  const state = await queue.getJobState(job);
  return state === 'completed' || state === 'failed' || state === 'unknown' ? null : { job, state };
}
