/** How the admin table shows each source's next background refresh and why (docs/http-api.md). */
import type { FreshnessStore, ParkedBy } from '../store/freshness-store.ts';
import { type SourceKey, sourceToken } from '../timetable/source.ts';
import type { Queues } from './queues.ts';

/** Why a source is refreshed next: its turn, a parked source's longest wait, a related change, its deadline passed. */
export type NextRefreshWhy = 'rotation' | 'parked' | 'related' | 'overdue';

/** A source's next background refresh, as the admin table shows it. */
export interface NextRefresh {
  /** Epoch ms: the planned time; for `overdue` the deadline that passed; for `related` when it was queued. */
  at: number;
  why: NextRefreshWhy;
}

/** What the admin table shows of the planner for one source (nothing when it is not planned: `fixed` policy). */
export interface FreshnessView {
  nextRefresh: NextRefresh | undefined;
  parkedBy: ParkedBy | undefined;
}

/** What {@link freshnessViews} reads: the planner's store and the refresh queue. */
export interface FreshnessViewDeps {
  readonly freshness: Pick<FreshnessStore, 'planned'>;
  readonly queues: Pick<Queues, 'refresh'>;
}

/** The views of `sources` at `now`: the plans read in one round trip, the queued related refreshes alongside. */
export async function freshnessViews(
  ctx: FreshnessViewDeps,
  sources: readonly SourceKey[],
  now: number,
): Promise<FreshnessView[]> {
  const [plans, related] = await Promise.all([ctx.freshness.planned(sources), queuedRelated(ctx, sources)]);
  return sources.map((_, index) => {
    const plan = plans[index];
    const parkedBy = plan?.state?.parkedBy;
    const queuedAt = related[index];
    if (queuedAt !== undefined) return { nextRefresh: { at: queuedAt, why: 'related' }, parkedBy };
    if (plan === undefined) return { nextRefresh: undefined, parkedBy };
    if (plan.deadline <= now) return { nextRefresh: { at: plan.deadline, why: 'overdue' }, parkedBy };
    return { nextRefresh: { at: plan.next, why: parkedBy === undefined ? 'rotation' : 'parked' }, parkedBy };
  });
}

/** When a related refresh of each source was queued, if one waits now (not started). */
async function queuedRelated(ctx: FreshnessViewDeps, sources: readonly SourceKey[]): Promise<(number | undefined)[]> {
  return Promise.all(
    sources.map(async (source) => {
      const id = await ctx.queues.refresh.getDeduplicationJobId(sourceToken(source));
      if (id === null) return undefined;
      const job = await ctx.queues.refresh.getJob(id);
      if (job === undefined || job.data.reason !== 'related' || job.processedOn || job.finishedOn) return undefined;
      return job.timestamp;
    }),
  );
}
