/**
 * The study plan of a personal subscription next to what its timetable schedules, for the personal page: the
 * stored plan (jobs/fetch-plan.ts) compared with the stored timetable (timetable/plan-compare.ts). Reads Redis
 * only; never asks the university.
 */
import { expandSnapshot, type FeedSettings } from '../feeds/build-feed.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { RedisKeys } from '../store/keys.ts';
import type { SnapshotStore } from '../store/snapshot-store.ts';
import { StudyPlanStore } from '../store/study-plan-store.ts';
import type { Subscription } from '../store/subscription-store.ts';
import { mergeRows, publishedClassIds } from '../timetable/merge-rows.ts';
import { comparePlan, type PlanEnding, type PlanRow, type ScheduledClass } from '../timetable/plan-compare.ts';
import type { SourceKey } from '../timetable/source.ts';
import { studyPlanNotes } from '../timetable/study-plan.ts';
import { localDate } from '../timetable/zoned-time.ts';

export type { PlanEnding, PlanRow };

/** The plan part of the personal page. */
export type StudyPlanView =
  | {
      state: 'unavailable';
      /** `not-fetched`: no fetch tried yet (a new subscription); `failed`: no fetch has succeeded. */
      reason: 'not-fetched' | 'failed';
      fetchedAt: null;
    }
  | {
      state: 'ready';
      /** When the plan shown was fetched («данные на …»). */
      fetchedAt: number;
      /** The zone its times are shown in (`TIMEZONE`). */
      timezone: string;
      /** When the latest fetch failed (the plan shown is older); null when it succeeded. */
      refreshFailedAt: number | null;
      /** The current semester; null when the plan and the timetable share none. */
      semester: number | null;
      ends: PlanEnding[];
      rows: PlanRow[];
    };

/** What {@link studyPlanView} uses: the stored plan and timetable, and the feed settings they are shown with. */
export interface StudyPlanViewDeps {
  readonly config: FeedSettings;
  /** Plans are read with a {@link StudyPlanStore} on this connection. */
  readonly redis: RedisClient;
  readonly keys: RedisKeys;
  readonly snapshots: Pick<SnapshotStore, 'load'>;
  /** Epoch ms. */
  readonly now: () => number;
}

/** The plan view of `subscription`. */
export async function studyPlanView(ctx: StudyPlanViewDeps, subscription: Subscription): Promise<StudyPlanView> {
  const source = subscription.source as SourceKey;
  const plan = await new StudyPlanStore(ctx.redis, ctx.keys).load(source);
  if (plan === undefined || plan.fetchedAt === null)
    return { state: 'unavailable', reason: plan === undefined ? 'not-fetched' : 'failed', fetchedAt: null };
  const { snapshot, published } = await ctx.snapshots.load(source);
  const entries = snapshot?.entries ?? [];
  const notes = studyPlanNotes(plan.subjects, entries, localDate(ctx.now(), ctx.config.timezone));
  const scheduled: ScheduledClass[] = [];
  if (snapshot !== undefined) {
    // Occurrences carry their class's id: a merged class's, or its row's when the publication did not merge.
    const classIds = publishedClassIds(entries, published?.classIds);
    const classes = new Map([...entries, ...mergeRows(entries, classIds)].map((entry) => [entry.id, entry]));
    for (const occurrence of expandSnapshot(snapshot, published, ctx.config)) {
      const entry = classes.get(occurrence.entryId);
      if (entry !== undefined) scheduled.push({ entry, minutes: (occurrence.endUtc - occurrence.startUtc) / 60_000 });
    }
  }
  const comparison = comparePlan(notes, scheduled);
  return {
    state: 'ready',
    fetchedAt: plan.fetchedAt,
    timezone: ctx.config.timezone,
    refreshFailedAt: plan.failure === null ? null : plan.failure.at,
    ...comparison,
  };
}
