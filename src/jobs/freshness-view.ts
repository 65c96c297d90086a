/** How the admin table shows each source's next background refresh and why (docs/http-api.md). */
import type { RedisClient } from '../lib/redis-target.ts';
import type { FreshnessStore, ParkedBy } from '../store/freshness-store.ts';
import { type SourceKey, sourceToken } from '../timetable/source.ts';
import type { RefreshJobData } from './contract.ts';
import type { Queues } from './queues.ts';

/**
 * Why a source is refreshed next: its turn, a parked source's longest wait, a related change, its deadline
 * passed, or the pacer has queued it already (its refresh waits in the queue).
 */
export type NextRefreshWhy = 'rotation' | 'parked' | 'related' | 'overdue' | 'queued';

/** A source's next background refresh, as the admin table shows it. */
export interface NextRefresh {
  /**
   * Epoch ms: the planned time; for `overdue` the deadline that passed; for `related` and `queued` when its
   * refresh was queued.
   */
  at: number;
  why: NextRefreshWhy;
}

/** What the admin table shows of the planner for one source (nothing when it is not planned: `fixed` policy). */
export interface FreshnessView {
  nextRefresh: NextRefresh | undefined;
  parkedBy: ParkedBy | undefined;
}

/** What {@link freshnessViews} reads: the planner's store, and the refresh queue's jobs over `redis`. */
export interface FreshnessViewDeps {
  readonly freshness: Pick<FreshnessStore, 'planned'>;
  readonly queues: Pick<Queues, 'refresh'>;
  /** The connection the queue's keys are read over (every key of the deployment is in one Cluster slot). */
  readonly redis: RedisClient;
}

/**
 * The views of `sources` at `now`, whatever their number in two round trips: the plans and the refresh jobs
 * that stand for each source (its deduplication ids) together, then those jobs.
 */
export async function freshnessViews(
  ctx: FreshnessViewDeps,
  sources: readonly SourceKey[],
  now: number,
): Promise<FreshnessView[]> {
  const [plans, waiting] = await Promise.all([ctx.freshness.planned(sources), waitingBackground(ctx, sources)]);
  return sources.map((_, index) => {
    const plan = plans[index];
    const parkedBy = plan?.state?.parkedBy;
    const job = waiting[index];
    if (job?.reason === 'related') return { nextRefresh: { at: job.queuedAt, why: 'related' }, parkedBy };
    if (plan === undefined) return { nextRefresh: undefined, parkedBy };
    // Taken and queued by the pacer: its plan now holds the mark the take or the settling gave it, not a turn.
    if (job?.reason === 'schedule') return { nextRefresh: { at: job.queuedAt, why: 'queued' }, parkedBy };
    if (plan.deadline <= now) return { nextRefresh: { at: plan.deadline, why: 'overdue' }, parkedBy };
    return { nextRefresh: { at: plan.next, why: parkedBy === undefined ? 'rotation' : 'parked' }, parkedBy };
  });
}

/** A background refresh waiting in the queue (not started): why it was queued, and when. */
interface WaitingBackground {
  reason: 'related' | 'schedule';
  queuedAt: number;
}

/**
 * The background refresh (`related`, or the pacer's `schedule`) of each source that waits now (not started),
 * with when it was queued. A source's refresh job is the one its deduplication id names (`enqueueRefresh`
 * deduplicates by the source's token); all are read with one `MGET`, then the jobs found with one pipeline.
 * This reads BullMQ's own keys (the queue's `de` key, and a job's hash fields `data`, `timestamp`,
 * `processedOn`, `finishedOn`, as `Queue.getDeduplicationJobId` and `Queue.getJob` do), because BullMQ reads
 * them one job at a time: a page of 500 sources would cost a thousand commands.
 * test/jobs/freshness-view.integration.test.ts compares the outcome with BullMQ's own reading.
 */
async function waitingBackground(
  ctx: FreshnessViewDeps,
  sources: readonly SourceKey[],
): Promise<(WaitingBackground | undefined)[]> {
  if (sources.length === 0) return [];
  const queue = ctx.queues.refresh;
  const ids = await ctx.redis.mget(...sources.map((source) => `${queue.keys.de}:${sourceToken(source)}`));
  const found = ids.flatMap((id, index) => (id === null ? [] : [{ id, index }]));
  const pipeline = ctx.redis.pipeline();
  for (const { id } of found) pipeline.hmget(queue.toKey(id), 'data', 'timestamp', 'processedOn', 'finishedOn');
  const jobs = found.length === 0 ? [] : ((await pipeline.exec()) ?? []);
  const waiting: (WaitingBackground | undefined)[] = sources.map(() => undefined);
  found.forEach(({ index }, position) => {
    const [error, fields] = jobs[position] ?? [];
    if (error) throw error;
    const [data, timestamp, processedOn, finishedOn] = (fields ?? []) as (string | null)[];
    // A job removed since (its id outlives it until the deduplication key expires) has no fields.
    if (data === null || data === undefined || processedOn || finishedOn) return;
    const reason = reasonOf(data);
    if (reason !== 'related' && reason !== 'schedule') return;
    waiting[index] = { reason, queuedAt: Number(timestamp) };
  });
  return waiting;
}

/** The reason of a refresh job's stored data; undefined when unreadable. */
function reasonOf(data: string): string | undefined {
  try {
    return (JSON.parse(data) as Partial<RefreshJobData>).reason;
  } catch {
    return undefined;
  }
}
