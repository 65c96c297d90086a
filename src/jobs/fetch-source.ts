/**
 * One upstream fetch per refresh: the source's timetable, and for a personal source its study plan when that is
 * due (at most daily, see fetch-plan.ts).
 */
import type { GroupDirectory } from '../store/group-directory.ts';
import type { SnapshotStore } from '../store/snapshot-store.ts';
import type { SubscriptionStore } from '../store/subscription-store.ts';
import { calendarName, derivedName, isPlaceholderName } from '../timetable/calendar-name.ts';
import { type SourceKey, sourceOf } from '../timetable/source.ts';
import type { UniversityClient } from '../upstream/client.ts';
import type { ScheduleResult } from '../upstream/schemas.ts';
import { SubscriptionUnusableError } from './errors.ts';
import { refreshStudyPlan, type StudyPlanFetchDeps } from './fetch-plan.ts';
import type { RefreshRun } from './refresh-run.ts';

/** A timetable as fetched, with the name its calendar gets. */
export interface FetchedTimetable extends ScheduleResult {
  name: string;
}

/** What {@link fetchSource} uses: the university, what names a timetable, and the subscriptions' credentials. */
export type FetchDeps = StudyPlanFetchDeps & {
  readonly upstream: Pick<UniversityClient, 'groupSchedule' | 'employeeSchedule' | 'mySchedule'>;
  readonly snapshots: Pick<SnapshotStore, 'snapshot'>;
  readonly directory: Pick<GroupDirectory, 'name'>;
  readonly subscriptions: Pick<SubscriptionStore, 'get' | 'credentialFor'>;
};

/**
 * Fetches a source's timetable: one upstream request, and a second for a personal source whose study plan is
 * due. Personal sources use their subscription's credential; the fetch tells `run` which version it sent, so
 * that a rejection marks only the credential actually used.
 */
export async function fetchSource(ctx: FetchDeps, run: RefreshRun): Promise<FetchedTimetable> {
  const ref = sourceOf(run.source);
  const options = { signal: run.signal };
  if (ref.kind === 'group' || ref.kind === 'employee') {
    const id = Number(ref.id);
    const result =
      ref.kind === 'group'
        ? await ctx.upstream.groupSchedule(id, options)
        : await ctx.upstream.employeeSchedule(id, options);
    const subject = { kind: ref.kind, id };
    // Only when the entries do not name the timetable (none, or a tie): the name it had before, or the group
    // directory's (a group first seen with an empty timetable), not `Группа 4242`. The stored snapshot is read
    // and decoded only then.
    const known = derivedName(subject, result.entries) ?? (await earlierName(ctx, run.source, subject));
    return { ...result, name: calendarName(subject, result.entries, known) };
  }
  const subscription = await ctx.subscriptions.get(ref.id);
  if (!subscription) throw new SubscriptionUnusableError(`subscription ${ref.id} no longer exists`);
  if (subscription.status === 'needs-credential')
    throw new SubscriptionUnusableError(
      `subscription ${ref.id} needs a new credential: ${subscription.statusReason ?? 'the university rejected it'}`,
    );
  const stored = await ctx.subscriptions.credentialFor(ref.id);
  if (stored === undefined) throw new SubscriptionUnusableError(`subscription ${ref.id} has no credential`);
  run.sentCredential(stored.version);
  const result = await ctx.upstream.mySchedule(stored.credential, options);
  // After the timetable: a credential the university rejects fails the refresh there, before a plan is asked.
  await refreshStudyPlan(ctx, run, stored.credential);
  return { ...result, name: subscription.name };
}

/**
 * The name a group's or teacher's timetable had before when it is a real one, else the group directory's, else
 * whatever it had (a placeholder, or none).
 */
async function earlierName(
  ctx: FetchDeps,
  source: SourceKey,
  subject: { kind: 'group' | 'employee'; id: number },
): Promise<string | undefined> {
  const before = (await ctx.snapshots.snapshot(source))?.name;
  if (before !== undefined && !isPlaceholderName(subject, before)) return before;
  return (subject.kind === 'group' ? await ctx.directory.name(subject.id) : undefined) ?? before;
}
